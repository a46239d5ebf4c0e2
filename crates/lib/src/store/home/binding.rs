//! The project binding: `.countersign.local.json` in a project (or git
//! worktree) folder, naming the role and the channel folder that commands and
//! agent sessions started inside that folder use when no `--role` or
//! `--channel` is given.
//!
//! `countersign install` writes it and keeps it out of git (it is personal:
//! two worktrees of one project hold two bindings, for two roles). A binding
//! that git tracks came with a checkout, written by someone else, and is
//! refused. This module only finds and reads it; it never writes it and
//! knows nothing of clients or channels.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::store::error::{StoreError, StoreResult};

/// The binding's file name, looked for in the working directory and above.
pub const FILE: &str = ".countersign.local.json";

/// The most a binding file may hold (it is a few lines).
const MAX_BYTES: u64 = 16 * 1024;

/// What a binding says.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Binding {
    /// The role sessions in this folder act as.
    pub role: String,
    /// The channel folder (absolute).
    pub channel: PathBuf,
}

/// A binding and the file it was read from.
#[derive(Clone, Debug)]
pub struct Found {
    /// The file.
    pub path: PathBuf,
    /// Its content.
    pub binding: Binding,
}

impl Binding {
    /// The file's text, as `install` writes it.
    pub fn to_text(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).expect("a binding serializes");
        text.push('\n');
        text
    }
}

/// The nearest binding in `from` or above it, `None` if there is none,
/// refused if git tracks it ([`Found::refuse_if_tracked`]). A file that is
/// there but unreadable is an error naming it: a session must not quietly
/// fall back to another role.
pub fn find(from: &Path) -> StoreResult<Option<Found>> {
    let found = find_unchecked(from)?;
    if let Some(f) = &found {
        f.refuse_if_tracked()?;
    }
    Ok(found)
}

/// [`find`] without asking git whether the binding is tracked: for a caller
/// that asks it later ([`Found::refuse_if_tracked`]) and trusts the binding
/// with nothing before. `countersign mcp` does, on the thread that opens
/// its session: asking git starts a process, which on the start's path
/// cost a server about 2 ms before its first answer.
pub fn find_unchecked(from: &Path) -> StoreResult<Option<Found>> {
    for dir in from.ancestors() {
        let path = dir.join(FILE);
        let bytes = match crate::store::folder_file::read(&path, MAX_BYTES) {
            Ok(b) => b,
            Err(e) if e.is_not_found() => continue,
            Err(source) => {
                return Err(StoreError::Unreadable {
                    path,
                    source,
                    fix: "it is a project binding: fix or remove it (`countersign uninstall \
                          --apply` removes it)",
                });
            }
        };
        let binding: Binding =
            serde_json::from_slice(&bytes).map_err(|e| StoreError::CorruptFile {
                path: path.clone(),
                reason: format!(
                    "not valid as a project binding ({e}); fix or remove it (`countersign install` \
                     writes it again)"
                ),
            })?;
        return Ok(Some(Found { path, binding }));
    }
    Ok(None)
}

impl Found {
    /// Refuses a binding that git tracks: it came with a checkout, and
    /// whoever committed it would choose this user's role and channel.
    pub fn refuse_if_tracked(&self) -> StoreResult<()> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        if tracked_by_git(dir) {
            return Err(StoreError::TrackedBinding {
                path: self.path.clone(),
            });
        }
        Ok(())
    }
}

/// True when git tracks the binding in `dir`: it came with a checkout, and
/// whoever committed it would choose this user's role and channel. No git,
/// or not a repository: not tracked.
fn tracked_by_git(dir: &Path) -> bool {
    std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["ls-files", "--error-unmatch", "--", FILE])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nearest_binding_above_is_found_and_a_broken_one_refused() {
        let dir = tempfile::tempdir().unwrap();
        let deep = dir.path().join("a/b");
        std::fs::create_dir_all(&deep).unwrap();
        assert!(find(&deep).unwrap().is_none());
        let b = Binding {
            role: "web".into(),
            channel: "/ch".into(),
        };
        std::fs::write(dir.path().join("a").join(FILE), b.to_text()).unwrap();
        let found = find(&deep).unwrap().unwrap();
        assert_eq!(found.binding, b);
        assert_eq!(found.path, dir.path().join("a").join(FILE));
        std::fs::write(deep.join(FILE), "{\"role\": 3}").unwrap();
        let e = find(&deep).unwrap_err().to_string();
        assert!(e.contains("not valid") && e.contains(FILE), "{e}");
    }

    #[test]
    fn a_binding_that_came_with_a_checkout_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let git = |args: &[&str]| {
            let ok = std::process::Command::new("git")
                .arg("-C")
                .arg(dir.path())
                .args(args)
                .output()
                .unwrap()
                .status
                .success();
            assert!(ok, "git {args:?}");
        };
        git(&["init", "-q"]);
        let b = Binding {
            role: "web".into(),
            channel: "/ch".into(),
        };
        std::fs::write(dir.path().join(FILE), b.to_text()).unwrap();
        assert!(find(dir.path()).unwrap().is_some(), "untracked: used");
        git(&["add", FILE]);
        let e = find(dir.path()).unwrap_err().to_string();
        assert!(e.contains("committed to git"), "{e}");
        // Read without asking git, the same binding is refused when asked.
        let unchecked = find_unchecked(dir.path())
            .unwrap()
            .expect("the file is there");
        assert_eq!(unchecked.binding, b);
        let e = unchecked.refuse_if_tracked().unwrap_err().to_string();
        assert!(e.contains("committed to git"), "{e}");
    }
}
