//! Whether Claude Code trusts the folder a session starts in, for the
//! compactor: Claude Code connects a project subagent's own MCP servers only
//! in a folder whose trust dialog was accepted, and otherwise starts the
//! subagent with no tools and blames its frontmatter. It records the trust
//! in its user file (`projects.<folder>.hasTrustDialogAccepted`), for the
//! folder, its repository or any folder above it. Read only: trusting a
//! folder is the user's act, never install's.

use std::path::Path;

use serde_json::Value;

use super::claude::{claude_project, claude_user_config};
use super::file::read;

/// What Claude Code's user file says of a folder's trust.
#[derive(Debug, PartialEq, Eq)]
enum Trust {
    /// Trusted, through this folder (the session's or one above it).
    Trusted(String),
    /// Not trusted yet.
    NotYet,
    /// The file cannot be read or parsed: why.
    Unknown(String),
}

/// The folders whose trust covers a session started in `cwd`, as Claude
/// Code looks for them: its project (the main worktree), then `cwd` and
/// every folder above it.
fn covering(cwd: &Path) -> Vec<String> {
    let cwd = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
    let mut out = vec![claude_project(&cwd)];
    out.extend(cwd.ancestors().map(|d| d.display().to_string()));
    out
}

fn trust(cwd: &Path) -> Trust {
    let path = match claude_user_config() {
        Ok(p) => p,
        Err(e) => return Trust::Unknown(format!("{e:#}")),
    };
    let text = match read(&path) {
        Ok(Some(t)) => t,
        Ok(None) => return Trust::NotYet,
        Err(e) => return Trust::Unknown(format!("{e:#}")),
    };
    let Ok(config) = serde_json::from_str::<Value>(&text) else {
        return Trust::Unknown(format!("{} is not valid JSON", path.display()));
    };
    covering(cwd)
        .into_iter()
        .find(|d| config["projects"][d.as_str()]["hasTrustDialogAccepted"] == Value::Bool(true))
        .map_or(Trust::NotYet, Trust::Trusted)
}

/// What `install claude` says of the compactor, whose own server (`exe mcp
/// --tools jobs`) Claude Code connects only in a trusted folder: whether
/// `cwd` is trusted, and how to trust it when it is not.
pub(super) fn compactor_note(cwd: &Path, exe: &str) -> String {
    let what = format!(
        "The memory's compactor: /countersign-compact starts the subagent \
         countersign-compactor, whose own server ({exe} mcp --tools jobs) serves it the job tools \
         and no other session."
    );
    match trust(cwd) {
        Trust::Trusted(d) => {
            format!("{what} Claude Code trusts {d}, so it connects that server for the subagent.")
        }
        Trust::NotYet => format!(
            "{what} Claude Code does not trust {} yet, and it connects a project subagent's \
             servers only in a trusted folder (until then the subagent starts with no tools): \
             start `claude` in that folder once and accept the trust dialog.",
            cwd.display()
        ),
        Trust::Unknown(why) => format!(
            "{what} Whether Claude Code trusts {} cannot be told ({why}); it connects a project \
             subagent's servers only in a trusted folder: start `claude` there once and accept \
             the trust dialog if it asks.",
            cwd.display()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_is_covered_by_every_folder_above_it() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("a").join("b");
        std::fs::create_dir_all(&sub).unwrap();
        let all = covering(&sub);
        let root = dir.path().canonicalize().unwrap().display().to_string();
        assert!(all.contains(&root), "{all:?}");
        assert!(all.contains(&"/".to_owned()), "{all:?}");
    }
}
