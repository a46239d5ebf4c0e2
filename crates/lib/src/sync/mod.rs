//! Moving the channel folder between machines: git and rclone.
//!
//! Owns the exchange with a remote and nothing else: which of the folder's
//! files this device publishes (only the feeds it writes, `feeds/*/<device>/`),
//! and how they travel (`git` commit/fetch/merge/push, or `rclone copy` up
//! and down). It never writes or rewrites a record, never deletes a file of
//! another writer, never force-pushes and never runs `rclone sync`/`bisync`;
//! folding what arrived into the index is the caller's job (a catch-up
//! ingest). Sits beside `store` and uses it for paths, locks and prefs; `app`
//! decides when to sync.

pub mod backoff;
mod command;
pub mod git;
pub mod rclone;

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::store::error::{IoContext as _, PathError};
use crate::store::folder::segments;
use crate::store::folder::survey;
use crate::store::home::lock::FileLock;
use crate::store::home::prefs::Remote;
use crate::store::{ChannelDir, StoreError};

/// What can go wrong while syncing. The local channel is untouched by all of them.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// The remote refused or could not be reached; `detail` is the tool's stderr.
    #[error("sync with {remote} failed while trying to {action}: {detail}")]
    Remote {
        /// The remote as configured (`git URL`, `rclone REMOTE:PATH`).
        remote: String,
        /// What was being done (`push`, `fetch`, `copy up` …).
        action: String,
        /// The tool's own words (stderr).
        detail: String,
    },
    /// Every try lost a race with other machines until the time budget was
    /// spent. This device's records stay in the folder (under git, committed)
    /// and the next sync publishes them.
    #[error(
        "sync with {remote} gave up after {tries} tries in {spent:.1?}: {action} lost the race to \
         other machines every time; nothing is lost (this device's records stay in the folder and \
         the next sync publishes them); the last refusal: {detail}"
    )]
    GaveUp {
        /// The remote as configured.
        remote: String,
        /// What kept losing (`the push`, `the copy` …).
        action: String,
        /// Tries made.
        tries: u32,
        /// Time from the first try to giving up.
        spent: Duration,
        /// The tool's words on the last try.
        detail: String,
    },
    /// git or rclone is not installed (or cannot be started).
    #[error("cannot run `{tool}` (needed to sync with {remote}): {source}; install it and retry")]
    Missing {
        /// The program.
        tool: String,
        /// The remote.
        remote: String,
        /// Why it could not start.
        #[source]
        source: std::io::Error,
    },
    /// The folder is not set up for this kind of remote.
    #[error("{0}")]
    Setup(String),
    /// A file of the channel folder.
    #[error(transparent)]
    Io(#[from] PathError),
    /// The store (locks, feeds).
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What one sync did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SyncReport {
    /// This device's new records were recorded locally for the remote (a git commit).
    pub committed: bool,
    /// Something new arrived from the remote.
    pub pulled: bool,
    /// This device's files went up.
    pub pushed: bool,
    /// Tries made (more than one: a race with another machine was lost and
    /// the exchange tried again after a pause).
    pub attempts: u32,
    /// Time from the first try to the end of the exchange.
    pub spent: Duration,
    /// The remote was not chosen on this device but taken from the git
    /// clone's `origin`, and saved as this channel's remote (said once).
    pub adopted_origin: bool,
}

/// The file that serializes syncs of one channel on this machine.
pub const SYNC_LOCK: &str = "sync.lock";

/// Waits for this machine's sync lock of the channel whose state folder is `state_dir`.
pub fn lock(state_dir: &Path) -> Result<FileLock, SyncError> {
    Ok(FileLock::exclusive(&state_dir.join(SYNC_LOCK))?)
}

/// Takes the sync lock if free; `None` means another process is syncing now.
pub fn try_lock(state_dir: &Path) -> Result<Option<FileLock>, SyncError> {
    Ok(FileLock::try_exclusive(&state_dir.join(SYNC_LOCK))?)
}

/// Exchanges the folder with `remote` once, trying again after a lost race
/// with another machine while less than `budget` has passed
/// ([`backoff`]). `state_dir` is the channel's state folder on this machine
/// (rclone remembers there what it last copied up). Call under [`lock`] or
/// [`try_lock`].
pub fn run(
    dir: &ChannelDir,
    state_dir: &Path,
    device: &str,
    remote: &Remote,
    budget: Duration,
) -> Result<SyncReport, SyncError> {
    checked(remote)?;
    let own = own_feeds(dir, device)?;
    let mut backoff = backoff::Backoff::new(budget);
    match remote {
        Remote::Git(url) => git::sync(dir.root(), &own, device, url, &mut backoff),
        Remote::Rclone(target) => {
            let up = rclone::Upload {
                own: &own,
                device,
                target,
                memory: &state_dir.join(rclone::PUBLISHED),
            };
            rclone::sync(dir.root(), &up, &mut backoff)
        }
    }
}

/// Makes the folder ready for `remote` (git: its own repository with
/// `origin`). Returns a note for the person when there is something to do.
pub fn attach(
    dir: &ChannelDir,
    device: &str,
    remote: &Remote,
) -> Result<Option<String>, SyncError> {
    checked(remote)?;
    match remote {
        Remote::Git(url) => git::attach(dir.root(), &own_feeds(dir, device)?, url),
        Remote::Rclone(_) => Ok(None),
    }
}

/// Refuses a remote whose target git or rclone could read as anything but a
/// place (an option, a command transport): checked again before every run,
/// whoever chose the remote and however long ago.
fn checked(remote: &Remote) -> Result<(), SyncError> {
    remote.check().map_err(|e| {
        SyncError::Setup(format!(
            "the {} remote '{}' is refused: {e}; choose another with `countersign remote set`",
            remote.kind().as_str(),
            remote.target().escape_debug()
        ))
    })
}

/// The remote a git clone of the channel already knows (its `origin`), if
/// the folder is one.
pub fn clone_origin(dir: &ChannelDir) -> Result<Option<Remote>, SyncError> {
    Ok(git::origin(dir.root())?.map(Remote::Git))
}

/// The fixed files every channel folder holds, relative to its root.
pub const FIXED_FILES: [&str; 3] = ["channel.json", ".gitattributes", "README.md"];

/// One feed this device writes, as files relative to the channel root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnFeed {
    /// `feeds/<role>/<device>`.
    pub dir: String,
    /// Segments that no longer grow (every one but the newest).
    pub sealed: Vec<String>,
    /// The growing segment.
    pub newest: Option<String>,
    /// `head.json`, if present.
    pub head: Option<String>,
    /// `api.json` (whether this device's model API works) and
    /// `api-key.json` (the shared API key, sealed), if present: they travel
    /// as the head does.
    pub api: Vec<String>,
}

impl OwnFeed {
    /// Every file of the feed.
    pub fn files(&self) -> impl Iterator<Item = &String> {
        self.sealed
            .iter()
            .chain(&self.newest)
            .chain(&self.head)
            .chain(&self.api)
    }
}

/// The feeds this device writes (`feeds/*/<device>/`), with their files.
/// Nothing else in the folder is ever published by this device.
pub fn own_feeds(dir: &ChannelDir, device: &str) -> Result<Vec<OwnFeed>, SyncError> {
    let mut out = Vec::new();
    for (feed, path) in survey::list_feeds(&dir.feeds())? {
        if feed.device() != device {
            continue;
        }
        let rel = format!("feeds/{}/{}", feed.role(), feed.device());
        let mut segments: Vec<(u64, String)> = Vec::new();
        let mut head = None;
        let mut api = Vec::new();
        for entry in fs::read_dir(&path).at(&path)? {
            let entry = entry.at(&path)?;
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
                continue;
            };
            // Only regular files travel: a symlink or anything else planted
            // in this device's folder is never published (ingest reports it).
            if !entry.file_type().is_ok_and(|t| t.is_file()) {
                continue;
            }
            if name == "head.json" {
                head = Some(format!("{rel}/{name}"));
            } else if name == crate::core::api_presence::API_FILE
                || name == crate::core::sealed_key::KEY_FILE
            {
                api.push(format!("{rel}/{name}"));
            } else if let Some(seq) = segment_seq(&name) {
                segments.push((seq, format!("{rel}/{name}")));
            }
        }
        segments.sort();
        let newest = segments.pop().map(|(_, n)| n);
        out.push(OwnFeed {
            dir: rel,
            sealed: segments.into_iter().map(|(_, n)| n).collect(),
            newest,
            head,
            api,
        });
    }
    Ok(out)
}

/// A fingerprint of this device's feed files (names and sizes, and the
/// heads' bytes): it changes whenever this device appends a record or
/// rewrites a head as a heartbeat (`store::channel::heartbeat`).
pub fn own_fingerprint(root: &Path, own: &[OwnFeed]) -> u64 {
    use std::hash::{Hash as _, Hasher as _};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for f in own.iter().flat_map(OwnFeed::files) {
        f.hash(&mut h);
        let meta = fs::symlink_metadata(root.join(f)).ok();
        meta.as_ref().map_or(0, |m| m.len()).hash(&mut h);
        // `api.json` and `api-key.json` are rewritten whole, often to the
        // same size: their time tells the change.
        if !f.ends_with(".jsonl") && !f.ends_with(".jsonl.gz") && !f.ends_with("/head.json") {
            meta.and_then(|m| m.modified().ok()).hash(&mut h);
        }
        // A heartbeat rewrites the head to the same size with a new time:
        // its bytes (a few hundred) tell the change.
        if f.ends_with("/head.json") {
            crate::store::folder_file::read(
                &root.join(f),
                crate::store::folder::segments::MAX_HEAD_BYTES,
            )
            .unwrap_or_default()
            .hash(&mut h);
        }
    }
    h.finish()
}

/// The first seq of a segment file, plain or gzip; `None` for anything else
/// (temporary files, partial downloads, conflict copies).
fn segment_seq(name: &str) -> Option<u64> {
    segments::parse_segment_name(name.strip_suffix(".gz").unwrap_or(name))
}

/// An absolute, symlink-free form of `p` for comparisons (the path itself if
/// it cannot be resolved).
fn canonical(p: &Path) -> PathBuf {
    fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_names_plain_and_sealed() {
        assert_eq!(segment_seq("00000001.jsonl"), Some(1));
        assert_eq!(segment_seq("00000501.jsonl.gz"), Some(501));
        assert_eq!(segment_seq("00000001.jsonl.tmp"), None);
        assert_eq!(segment_seq("00000001.jsonl.partial"), None);
        assert_eq!(segment_seq("00000001 (conflicted copy).jsonl"), None);
        assert_eq!(segment_seq("head.json"), None);
    }

    #[test]
    fn a_head_rewritten_to_the_same_size_changes_the_fingerprint() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("feeds/a/dev");
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("00000001.jsonl"), "{}\n").unwrap();
        fs::write(dir.join("head.json"), "{\"as_of\":1000}\n").unwrap();
        let own = [OwnFeed {
            dir: "feeds/a/dev".into(),
            sealed: vec![],
            newest: Some("feeds/a/dev/00000001.jsonl".into()),
            head: Some("feeds/a/dev/head.json".into()),
            api: vec![],
        }];
        let before = own_fingerprint(tmp.path(), &own);
        assert_eq!(own_fingerprint(tmp.path(), &own), before);
        fs::write(dir.join("head.json"), "{\"as_of\":2000}\n").unwrap();
        assert_ne!(own_fingerprint(tmp.path(), &own), before);
    }
}
