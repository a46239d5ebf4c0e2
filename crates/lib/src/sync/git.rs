//! git mode: the channel folder is a git work tree of its own.
//!
//! One sync is: stage and commit this device's feed files only (`commit --
//! <paths>`, so nothing else that happens to be staged or lying around is
//! ever recorded), fetch, merge (`.gitattributes` merges `*.jsonl` by union,
//! and every file has a single writer, so a merge does not stop), push; a
//! rejected push (the remote moved) fetches, merges and pushes again after a
//! random pause that grows, for as long as the time budget lasts
//! ([`Backoff`]). Never `--force`, never a rebase: records are immutable and
//! so is the history that carries them.

use std::path::Path;

use super::backoff::Backoff;
use super::command::Tool;
use super::{FIXED_FILES, OwnFeed, SyncError, SyncReport, canonical};

/// The committer of sync commits: no global git configuration is needed, and
/// no signing key or hook of the user's ever runs (not even the post-commit,
/// post-merge or pre-push ones that `--no-verify` leaves alone).
const IDENTITY: [&str; 8] = [
    "-c",
    "user.name=countersign",
    "-c",
    "user.email=countersign@localhost",
    "-c",
    "commit.gpgsign=false",
    "-c",
    "core.hooksPath=/dev/null",
];

fn tool(root: &Path, url: &str) -> Tool {
    Tool::new("git", root, format!("git remote {url}"))
}

fn with_identity<'a>(args: &[&'a str]) -> Vec<&'a str> {
    IDENTITY
        .iter()
        .copied()
        .chain(args.iter().copied())
        .collect()
}

/// Makes `root` its own git repository (if it is not one yet) with this
/// channel's files committed, and points `origin` at `url`. A folder inside
/// another work tree (a project's `.countersign/`) becomes a repository of its
/// own, nested; the answer is then a note asking to ignore it in the project.
pub fn attach(root: &Path, own: &[OwnFeed], url: &str) -> Result<Option<String>, SyncError> {
    let git = tool(root, url);
    let mut note = None;
    match toplevel(&git)? {
        Some(top) if canonical(Path::new(&top)) == canonical(root) => {}
        outer => {
            if let Some(top) = outer {
                note = Some(format!(
                    "the channel folder now has a repository of its own inside the work tree \
                     {top}; add it to that project's .gitignore so the project never commits it"
                ));
            }
            // The branch is git's default, the same one `git init --bare` gives
            // the remote, so that `git clone` checks it out.
            git.ok("create the channel repository", &["init", "-q"])?;
            let mut files: Vec<&str> = FIXED_FILES
                .iter()
                .copied()
                .filter(|f| root.join(f).exists())
                .collect();
            files.extend(own.iter().flat_map(OwnFeed::files).map(String::as_str));
            let mut add = vec!["add", "--"];
            add.extend(&files);
            git.ok("stage the channel's files", &add)?;
            let mut commit = with_identity(&[
                "commit",
                "--no-verify",
                "-q",
                "-m",
                "countersign: new channel",
                "--",
            ]);
            commit.extend(&files);
            git.ok("commit the channel's files", &commit)?;
        }
    }
    harden(&git)?;
    let has_origin = git
        .output(&["remote", "get-url", "origin"])?
        .status
        .success();
    let set = if has_origin {
        ["remote", "set-url", "--", "origin", url]
    } else {
        ["remote", "add", "--", "origin", url]
    };
    git.ok("set the remote", &set)?;
    Ok(note)
}

/// The URL of `origin` when `root` is the top of a git work tree of its own
/// (a `git clone` of a channel), `None` otherwise: a folder that is no
/// repository, or that lies inside a project's, has no remote to offer.
pub fn origin(root: &Path) -> Result<Option<String>, SyncError> {
    let git = tool(root, "origin");
    match toplevel(&git)? {
        Some(top) if canonical(Path::new(&top)) == canonical(root) => {}
        _ => return Ok(None),
    }
    let out = git.output(&["remote", "get-url", "origin"])?;
    let url = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    Ok((out.status.success() && !url.is_empty()).then_some(url))
}

/// Makes sure a pull can never put a symlink into the folder: with
/// `core.symlinks=false` in the channel repository's own configuration, git
/// checks a committed link out as a plain file holding the link's text
/// (which ingest reports as garbage), never as a link that a reader or the
/// writer could follow out of the folder. Checked before every sync, since
/// anyone with the folder may have changed it.
fn harden(git: &Tool) -> Result<(), SyncError> {
    let now = git.output(&["config", "--local", "--get", "core.symlinks"])?;
    if String::from_utf8_lossy(&now.stdout).trim() != "false" {
        git.ok(
            "keep symlinks out of the channel (core.symlinks=false)",
            &["config", "--local", "core.symlinks", "false"],
        )?;
    }
    Ok(())
}

/// The work tree's top folder, `None` when `root` is not inside one.
fn toplevel(git: &Tool) -> Result<Option<String>, SyncError> {
    let out = git.output(&["rev-parse", "--show-toplevel"])?;
    Ok(out
        .status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned()))
}

fn inside_other_repo(root: &Path, top: &str) -> SyncError {
    SyncError::Setup(format!(
        "the channel folder {} lies inside the git work tree {top} and has no repository of \
         its own; a channel syncs through its own repository (never the project's working \
         branch): run `countersign remote set git URL`, which makes it one",
        root.display()
    ))
}

/// One sync: commit this device's feeds, merge the remote's, push; after a
/// push rejected because another machine pushed first, again, within
/// `backoff`'s budget.
pub fn sync(
    root: &Path,
    own: &[OwnFeed],
    device: &str,
    url: &str,
    backoff: &mut Backoff,
) -> Result<SyncReport, SyncError> {
    let git = tool(root, url);
    match toplevel(&git)? {
        Some(top) if canonical(Path::new(&top)) == canonical(root) => {}
        Some(top) => return Err(inside_other_repo(root, &top)),
        None => {
            return Err(SyncError::Setup(format!(
                "{} is not a git repository; run `countersign remote set git {url}` to make it \
                 one, or get the channel with `git clone {url} DIR`",
                root.display()
            )));
        }
    }
    harden(&git)?;
    let mut report = SyncReport {
        committed: commit_own(&git, own, device)?,
        ..SyncReport::default()
    };
    let branch = git
        .ok(
            "read the current branch",
            &["symbolic-ref", "--short", "HEAD"],
        )?
        .trim()
        .to_owned();
    let tracking = format!("refs/remotes/origin/{branch}");
    loop {
        report.attempts = backoff.begin_try();
        git.ok("fetch", &["fetch", "-q", "origin"])?;
        let theirs = rev(&git, &tracking)?;
        let before = rev(&git, "HEAD")?;
        if theirs.is_some() {
            let merge = git.output(&with_identity(&[
                "merge",
                "--no-edit",
                "--no-verify",
                "-q",
                &tracking,
            ]))?;
            if !merge.status.success() {
                let err = git.failure("merge what the remote holds", &merge);
                let _ = git.output(&["merge", "--abort"]);
                return Err(err);
            }
        }
        let head = rev(&git, "HEAD")?;
        report.pulled |= head != before;
        if head == theirs {
            break; // the remote already holds everything this device has
        }
        let refspec = format!("HEAD:refs/heads/{branch}");
        let push = git.output(&with_identity(&[
            "push",
            "-q",
            "--no-verify",
            "origin",
            &refspec,
        ]))?;
        if push.status.success() {
            report.pushed = true;
            // Remember the pushed state as the remote's, so the next sync
            // knows there is nothing to send.
            let _ = git.output(&["update-ref", &tracking, "HEAD"]);
            break;
        }
        if !moved_meanwhile(&push.stderr) {
            // Not a race (no access, no such repository…): retrying cannot help.
            return Err(git.failure("push", &push));
        }
        // The remote moved: fetch, merge and try again after a random pause
        // that grows, so that machines that collided do not collide again.
        if !backoff.pause() {
            return Err(SyncError::GaveUp {
                remote: format!("git remote {url}"),
                action: "the push".to_owned(),
                tries: backoff.tries(),
                spent: backoff.spent(),
                detail: super::command::words(&push.stderr),
            });
        }
    }
    report.spent = backoff.spent();
    Ok(report)
}

/// Stages and commits this device's feed files (and only those). `false` when
/// there was nothing new to commit.
fn commit_own(git: &Tool, own: &[OwnFeed], device: &str) -> Result<bool, SyncError> {
    let files: Vec<&str> = own
        .iter()
        .flat_map(OwnFeed::files)
        .map(String::as_str)
        .collect();
    if files.is_empty() {
        return Ok(false);
    }
    let mut add = vec!["add", "--"];
    add.extend(&files);
    git.ok("stage this device's feeds", &add)?;
    let mut diff = vec!["diff", "--cached", "--quiet", "--"];
    diff.extend(&files);
    if git.output(&diff)?.status.success() {
        return Ok(false);
    }
    let message = format!("countersign: records of {device}");
    let mut commit = with_identity(&["commit", "--no-verify", "-q", "-m", &message, "--"]);
    commit.extend(&files);
    git.ok("commit this device's feeds", &commit)?;
    Ok(true)
}

/// Whether a failed push was refused because the remote branch moved
/// between our fetch and our push (another machine pushed first), which a
/// fetch, a merge and another push resolve.
fn moved_meanwhile(stderr: &[u8]) -> bool {
    let text = String::from_utf8_lossy(stderr);
    if text.contains("hook declined") {
        return false; // the remote said no, whatever the branch
    }
    [
        "rejected",
        "fetch first",
        "non-fast-forward",
        "failed to update ref",
        "cannot lock ref",
    ]
    .iter()
    .any(|m| text.contains(m))
}

/// The commit `name` points at, `None` if it does not exist (yet).
fn rev(git: &Tool, name: &str) -> Result<Option<String>, SyncError> {
    let out = git.output(&["rev-parse", "-q", "--verify", &format!("{name}^{{commit}}")])?;
    Ok(out
        .status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned()))
}
