//! rclone mode: the folder is copied to and from a remote `REMOTE:PATH`.
//!
//! Up: this device's feed folders only, with `rclone copy` — sealed segments
//! with `--immutable` (a sealed segment never changes; a remote copy that
//! differs is an error, never overwritten), the growing segment by size and
//! time, `head.json` with `--ignore-times` (it is rewritten in place and may
//! keep its size). The channel's fixed files go up once (`--ignore-existing`)
//! so that a second machine can copy the channel down. Down: everything
//! except this device's own feeds. Never `sync` or `bisync`: they delete
//! files, and a file another writer has not yet copied elsewhere would be lost.
//!
//! Copying up costs one rclone run per kind of file, each listing the remote;
//! when this device has written nothing since its last complete copy up to
//! the same remote (its feed files have the same names, sizes and times, as
//! remembered in the channel's state folder), the copy up is skipped and a
//! sync with nothing new is the copy down alone. The next own write copies
//! every kind up again, which also puts back anything the remote lost.
//!
//! A copy that meets a file another machine is replacing at that moment (a
//! growing segment or a `head.json` going up) fails with rclone's words for
//! it; that lost race is tried again, the whole exchange, after a random
//! pause that grows, for as long as the time budget lasts ([`Backoff`]).

use std::io::Write as _;
use std::path::Path;

use super::backoff::Backoff;
use super::command::Tool;
use super::{FIXED_FILES, OwnFeed, SyncError, SyncReport};
use crate::store::error::IoContext as _;

/// Options every call takes: one attempt per call (the next sync is the
/// retry), bounded waits, and only errors on stderr.
const COMMON: [&str; 6] = ["--retries", "1", "--contimeout", "15s", "--timeout", "60s"];

/// The file of the channel's state folder remembering this device's last
/// complete copy up (a fingerprint of its feed files and the remote).
pub const PUBLISHED: &str = "rclone-published";

/// What one sync copies up, and where.
pub struct Upload<'a> {
    /// This device's feeds.
    pub own: &'a [OwnFeed],
    /// This device.
    pub device: &'a str,
    /// `REMOTE:PATH`.
    pub target: &'a str,
    /// The [`PUBLISHED`] file.
    pub memory: &'a Path,
}

/// One sync: copy this device's feeds up, then everything else down; after
/// a copy that lost a race with another machine, again, within `backoff`'s
/// budget.
pub fn sync(root: &Path, up: &Upload, backoff: &mut Backoff) -> Result<SyncReport, SyncError> {
    loop {
        let tries = backoff.begin_try();
        match exchange(root, up) {
            Ok(report) => {
                return Ok(SyncReport {
                    attempts: tries,
                    spent: backoff.spent(),
                    ..report
                });
            }
            Err(SyncError::Remote {
                remote,
                action,
                detail,
            }) if lost_race(&detail) => {
                if !backoff.pause() {
                    return Err(SyncError::GaveUp {
                        remote,
                        action: format!("the step \"{action}\""),
                        tries: backoff.tries(),
                        spent: backoff.spent(),
                        detail,
                    });
                }
            }
            Err(e) => return Err(e),
        }
    }
}

/// Whether rclone failed because a file changed or vanished under it while
/// it copied (another machine replacing its own files on the remote, or
/// this device's copy down meeting them half-way), which another try
/// resolves. Anything else (no such remote, no access, an immutable file
/// that differs) is not retried.
fn lost_race(detail: &str) -> bool {
    [
        "source file is being updated",
        "corrupted on transfer",
        "sizes differ",
    ]
    .iter()
    .any(|m| detail.to_ascii_lowercase().contains(m))
}

/// The fingerprint of this device's feed files (names, sizes, modification
/// times) and the remote: when it is what [`PUBLISHED`] holds, everything
/// went up already.
fn fingerprint(root: &Path, own: &[OwnFeed], target: &str) -> String {
    use std::hash::{Hash as _, Hasher as _};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    target.hash(&mut h);
    for f in own.iter().flat_map(OwnFeed::files) {
        f.hash(&mut h);
        let meta = std::fs::symlink_metadata(root.join(f)).ok();
        meta.as_ref().map(std::fs::Metadata::len).hash(&mut h);
        meta.and_then(|m| m.modified().ok()).hash(&mut h);
    }
    format!("{:016x}\n", h.finish())
}

/// Remembers a complete copy up (written aside and renamed, so the file is
/// never half a fingerprint). A failure only costs a copy up next time.
fn remember(memory: &Path, fingerprint: &str) {
    let tmp = memory.with_extension("tmp");
    if std::fs::write(&tmp, fingerprint).is_ok() {
        let _ = std::fs::rename(&tmp, memory);
    }
}

/// One try of the exchange.
fn exchange(root: &Path, up: &Upload) -> Result<SyncReport, SyncError> {
    let Upload {
        own,
        device,
        target,
        memory,
    } = *up;
    // Taken before copying: a write during the copy changes it, and the next
    // sync copies up again.
    let now = fingerprint(root, own, target);
    let done_before = std::fs::read_to_string(memory).is_ok_and(|m| m == now);
    let rclone = Tool::new("rclone", root, format!("rclone remote {target}"));
    let src = root.to_str().ok_or_else(|| {
        SyncError::Setup(format!(
            "the channel folder {} is not valid UTF-8, which rclone cannot be given",
            root.display()
        ))
    })?;
    let fixed: Vec<&str> = FIXED_FILES
        .iter()
        .copied()
        .filter(|f| root.join(f).exists())
        .collect();
    let sealed: Vec<&str> = own
        .iter()
        .flat_map(|f| &f.sealed)
        .map(String::as_str)
        .collect();
    let newest: Vec<&str> = own.iter().filter_map(|f| f.newest.as_deref()).collect();
    let heads: Vec<&str> = own
        .iter()
        .flat_map(|f| f.head.iter().chain(&f.api))
        .map(String::as_str)
        .collect();
    let steps: [(&str, &[&str], &str); 4] = [
        (
            "copy the channel's fixed files up",
            &fixed,
            "--ignore-existing",
        ),
        ("copy sealed segments up", &sealed, "--immutable"),
        ("copy the growing segments up", &newest, ""),
        ("copy head.json files up", &heads, "--ignore-times"),
    ];
    for (action, files, flag) in steps {
        if files.is_empty() || done_before {
            continue;
        }
        let list = file_list(files)?;
        let list_path = list.path().to_str().expect("temporary paths are UTF-8");
        let mut args = vec!["copy", "--files-from-raw", list_path, "-q"];
        if !flag.is_empty() {
            args.push(flag);
        }
        args.extend(COMMON);
        // After `--` both are places, whatever they start with.
        args.extend(["--", src, target]);
        rclone.ok(action, &args)?;
    }
    if !done_before {
        remember(memory, &now);
    }
    let own_feeds = format!("/feeds/*/{device}/**");
    let mut down = vec![
        "copy",
        "--exclude",
        &own_feeds,
        "--exclude",
        "*.partial",
        "--exclude",
        "*.tmp",
        "--exclude",
        "/.git/**",
        "-v",
    ];
    down.extend(COMMON);
    down.extend(["--", target, src]);
    let out = rclone.output(&down)?;
    if !out.status.success() {
        return Err(rclone.failure("copy the other writers' feeds down", &out));
    }
    let log = String::from_utf8_lossy(&out.stderr);
    Ok(SyncReport {
        committed: false,
        pulled: log.lines().any(|l| l.contains(": Copied (")),
        pushed: !(done_before || (sealed.is_empty() && newest.is_empty() && heads.is_empty())),
        ..SyncReport::default()
    })
}

/// A temporary file listing `files`, one a line, for `--files-from-raw`.
fn file_list(files: &[&str]) -> Result<tempfile::NamedTempFile, SyncError> {
    let mut f = tempfile::NamedTempFile::new().at(std::env::temp_dir())?;
    for name in files {
        writeln!(f, "{name}").at(f.path())?;
    }
    f.flush().at(f.path())?;
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_file_changing_under_the_copy_is_a_lost_race() {
        for race in [
            "ERROR : feeds/a/d/00000001.jsonl: Failed to copy: can't copy - source file is being \
             updated (size changed from 10 to 20)",
            "ERROR : feeds/a/d/head.json: corrupted on transfer: sizes differ 120 vs 96",
        ] {
            assert!(lost_race(race), "{race}");
        }
        for other in [
            "ERROR : : error reading source root directory: directory not found",
            "ERROR : feeds/a/d/00000001.jsonl: Source and destination exist but do not match: \
             immutable file modified",
            "Failed to create file system for \"gdrive:x\": didn't find section in config file",
            "",
        ] {
            assert!(!lost_race(other), "{other}");
        }
    }
}
