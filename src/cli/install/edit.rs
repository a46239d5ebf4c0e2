//! The planned edit of one file and its report: what `install` and
//! `uninstall` print, and, with `--apply`, write, saving each file's states in
//! the backups first. It must not know any client's file format: the other
//! modules plan the edits.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::Context as _;

use super::file::{read, write_file};
use crate::cli::output::outln;
use crate::store::backup::{Backups, Saved};

/// One file's planned change.
pub(super) struct Edit {
    pub(super) path: PathBuf,
    /// The content now (`None`: no such file).
    pub(super) before: Option<String>,
    /// The content after (`None`: the file is removed).
    pub(super) after: Option<String>,
    /// What changes (or why nothing does), in words.
    pub(super) notes: Vec<String>,
}

impl Edit {
    /// The edit of the file at `path` from `before` to `after`.
    pub(super) fn new(
        path: &Path,
        before: Option<String>,
        after: Option<String>,
        notes: Vec<String>,
    ) -> Self {
        Self {
            path: path.to_path_buf(),
            before,
            after,
            notes,
        }
    }

    pub(super) fn changed(&self) -> bool {
        self.before != self.after
    }

    /// Makes this removal the undoing of install's edit `saved` of the same
    /// file: a file nobody changed since goes back byte for byte; otherwise
    /// only countersign's part is taken out, as planned.
    pub(super) fn undo(&mut self, saved: Saved) {
        if saved.after == self.before {
            if self.after != saved.before {
                self.notes.push("put back as it was before install".into());
            }
            self.after = saved.before;
        } else if self.changed() {
            self.notes
                .push("changed since install: only countersign's part is taken out".into());
        }
    }
}

/// Prints the plan; with `apply`, makes it, saving each file's states in
/// `backups` first (install: kept and updated; uninstall, `bound` `None`:
/// dropped once the file is back). `bound` is the binding install writes and
/// the client it is for. Returns whether anything was written.
pub(super) fn report(
    edits: &[Edit],
    apply: bool,
    backups: &Backups,
    bound: Option<(&Path, &str)>,
) -> anyhow::Result<bool> {
    for e in edits.iter().filter(|e| !e.notes.is_empty()) {
        let state = match (&e.before, &e.after) {
            (None, Some(_)) => " (new file)",
            (Some(_), None) => " (nothing else left in it: the file is removed)",
            _ if !e.changed() => " (unchanged)",
            _ => "",
        };
        outln!("{}{state}", e.path.display());
        for n in &e.notes {
            for (i, line) in n.lines().enumerate() {
                outln!("{}{line}", if i == 0 { "  - " } else { "      " });
            }
        }
    }
    // The binding records which clients use it, even when its text stays.
    let mut tool_added = false;
    if let (true, Some((path, tool))) = (apply, bound)
        && let Some(mut saved) = backups.get(path)?
        && !saved.tools.iter().any(|t| t == tool)
        && edits.iter().any(|e| e.path == path && !e.changed())
    {
        saved.tools.push(tool.to_owned());
        backups.put(&saved)?;
        tool_added = true;
    }
    let todo: Vec<&Edit> = edits.iter().filter(|e| e.changed()).collect();
    if todo.is_empty() {
        outln!("Nothing to change.");
        return Ok(tool_added);
    }
    if !apply {
        outln!("Dry run: nothing was written. Run again with --apply to make these changes.");
        return Ok(false);
    }
    for e in todo {
        let record = match bound {
            Some((binding, tool)) => {
                let old = backups.get(&e.path)?;
                let mut tools = old.as_ref().map(|s| s.tools.clone()).unwrap_or_default();
                if e.path == binding && !tools.iter().any(|t| t == tool) {
                    tools.push(tool.to_owned());
                }
                let saved = Saved {
                    path: e.path.clone(),
                    before: old.map_or_else(|| e.before.clone(), |s| s.before),
                    after: e.after.clone(),
                    tools,
                };
                Some(backups.put(&saved)?)
            }
            None => None,
        };
        match &e.after {
            Some(text) => write_file(&e.path, text)?,
            None => {
                fs::remove_file(&e.path)
                    .with_context(|| format!("cannot remove {}", e.path.display()))?;
                // The .claude folder install made goes too once empty, and
                // its agents/ and commands/ (a folder with anything left in
                // it stays: remove_dir refuses).
                let mut dir = e.path.parent();
                while let Some(d) = dir {
                    let inside = d.ends_with(".claude")
                        || d.parent().is_some_and(|p| p.ends_with(".claude"));
                    if !inside || fs::remove_dir(d).is_err() {
                        break;
                    }
                    dir = d.parent();
                }
            }
        }
        if bound.is_none() {
            backups.forget(&e.path)?;
        }
        let verb = if e.after.is_some() {
            "wrote"
        } else {
            "removed"
        };
        match record {
            Some(b) => outln!("{verb} {} (backup: {})", e.path.display(), b.display()),
            None => outln!("{verb} {}", e.path.display()),
        }
    }
    Ok(true)
}

/// Writes (`Some`) or removes (`None`) a file install owns whole.
pub(super) fn plain_file(path: &Path, text: Option<&str>) -> anyhow::Result<Edit> {
    let before = read(path)?;
    let notes = match (&before, text) {
        (Some(b), Some(t)) if b == t => vec!["already there".into()],
        (_, Some(t)) => vec![format!("write:\n{}", t.trim_end())],
        (Some(_), None) => vec!["remove it".into()],
        (None, None) => vec![],
    };
    Ok(Edit::new(path, before, text.map(str::to_owned), notes))
}
