//! What `install` asks git (the repository a folder is in, its
//! `.git/info/exclude`) and the block of that file that keeps the personal
//! files out of git. It must not change the repository otherwise: git is
//! only read.

use std::path::{Path, PathBuf};

use super::block::marked;
use super::edit::Edit;

/// The block of `.git/info/exclude` that keeps the personal files out of git.
const EXCLUDE_BEGIN: &str = "# countersign:begin";
const EXCLUDE_END: &str = "# countersign:end";
const EXCLUDE_BLOCK: &str = "# countersign:begin (personal files of `countersign install`; `countersign uninstall` removes this)\n\
    .countersign.local.json\n\
    CLAUDE.local.md\n\
    **/.claude/settings.local.json\n\
    **/.claude/agents/countersign-compactor.md\n\
    **/.claude/commands/countersign-compact.md\n\
    # countersign:end\n";

/// The `.git/info/exclude` of the repository `dir` is in (shared by its
/// worktrees), `None` outside git.
pub(super) fn git_exclude(dir: &Path) -> Option<PathBuf> {
    git(
        dir,
        &[
            "rev-parse",
            "--path-format=absolute",
            "--git-path",
            "info/exclude",
        ],
    )
    .map(PathBuf::from)
}

/// Adds (`true`) or removes (`false`) the countersign block of the exclude
/// file at `path`.
pub(super) fn exclude_block(path: &Path, keep_out: bool) -> anyhow::Result<Edit> {
    marked(
        path,
        keep_out.then_some(EXCLUDE_BLOCK),
        EXCLUDE_BEGIN,
        EXCLUDE_END,
    )
}

/// Runs git in `dir`; its trimmed output, `None` if it fails or is absent.
pub(super) fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    (out.status.success() && !text.trim().is_empty()).then(|| text.trim().to_owned())
}
