//! The planned edit of one file and its report: what `install` and
//! `uninstall` print, and, with `--apply`, write, keeping each file's record
//! in the backups folder. The writes are all or nothing: what was written is
//! put back when a later write fails, or when the report cannot be printed.
//! It must not know any client's file format: the other modules plan the
//! edits.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::Context as _;

use super::file::{read, write_file};
use crate::cli::output::outln;
use crate::store::backup::{Backups, Saved};
use crate::store::binding;

/// One file's planned change.
pub(super) struct Edit {
    pub(super) path: PathBuf,
    /// The content now (`None`: no such file).
    pub(super) before: Option<String>,
    /// The content after (`None`: the file is removed).
    pub(super) after: Option<String>,
    /// What changes (or why nothing does), in words.
    pub(super) notes: Vec<String>,
    /// The text of this kind of file holding nothing (`{}` for JSON).
    pub(super) empty: &'static str,
    /// True for a file install writes whole (no one else's part in it).
    pub(super) whole: bool,
    /// True when what is left holds nothing but empty objects and lists.
    pub(super) hollow: bool,
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
            empty: "",
            whole: false,
            hollow: false,
        }
    }

    pub(super) fn changed(&self) -> bool {
        self.before != self.after
    }

    /// Makes this removal the undoing of install's edits of the same file,
    /// `saved` its record. Only countersign's part comes out, as planned,
    /// whatever happened to the file since: the file is never put back from
    /// a copy. A file that was there before install stays, even with nothing
    /// left in it; a file install wrote whole and someone changed since
    /// stays as it is (the binding excepted: uninstall is for taking it out).
    pub(super) fn undo(&mut self, saved: &Saved) {
        let since = saved.after != self.before;
        if self.whole && since && !self.path.ends_with(binding::FILE) {
            if self.after.is_none() && self.before.is_some() {
                self.after = self.before.clone();
                self.notes = vec![
                    "changed since install: left as it is (remove it yourself if you no longer \
                     want it)"
                        .into(),
                ];
            }
            return;
        }
        if since && self.changed() && !self.whole {
            self.notes
                .push("changed since install: only countersign's part is taken out".into());
        }
        if self.hollow && saved.created && self.changed() {
            self.after = None;
        }
        if self.after.is_none() && self.before.is_some() && !saved.created {
            self.after = Some(self.empty.to_owned());
            self.notes
                .push("it was there before install: it stays, with nothing else left in it".into());
        }
    }
}

/// What `--apply` wrote, to put back if what follows fails: each file's
/// content and each record as they were.
pub(super) struct Written {
    backups: Backups,
    files: Vec<(PathBuf, Option<String>)>,
    records: Vec<(PathBuf, Option<Saved>)>,
}

impl Written {
    fn new(backups: &Backups) -> Self {
        Self {
            backups: backups.clone(),
            files: Vec::new(),
            records: Vec::new(),
        }
    }

    /// True when any file was written or removed.
    pub(super) fn any(&self) -> bool {
        !self.files.is_empty()
    }

    fn record(&mut self, saved: Option<&Saved>, path: &Path) -> anyhow::Result<()> {
        let old = self.backups.get(path)?;
        self.records.push((path.to_path_buf(), old));
        self.backups.set(path, saved)?;
        Ok(())
    }

    /// Puts back every file and record as it was, the last written first.
    /// Says on stderr what could not be put back, and returns whether all was.
    pub(super) fn undo(self) -> bool {
        let mut all = true;
        for (path, text) in self.files.iter().rev() {
            let back = match text {
                Some(t) => write_file(path, t),
                None => match fs::remove_file(path) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                        Err(e).with_context(|| format!("cannot remove {}", path.display()))
                    }
                    _ => Ok(()),
                },
            };
            if let Err(e) = back {
                eprintln!("countersign: could not put {} back: {e:#}", path.display());
                all = false;
            }
        }
        for (path, saved) in self.records.iter().rev() {
            if let Err(e) = self.backups.set(path, saved.as_ref()) {
                eprintln!(
                    "countersign: could not put the install record of {} back: {e}",
                    path.display()
                );
                all = false;
            }
        }
        all
    }
}

/// Prints the plan; with `apply`, makes it, keeping each file's record in
/// `backups` (install: kept and updated; uninstall, `bound` `None`: dropped
/// once the file is gone). `bound` is the binding install writes and the
/// client it is for; `keep` keeps the records of files uninstall leaves in
/// place. Returns what was written; when a write fails, what was written
/// before it is put back and the error returned.
pub(super) fn report(
    edits: &[Edit],
    apply: bool,
    backups: &Backups,
    bound: Option<(&Path, &str)>,
    keep: bool,
) -> anyhow::Result<Written> {
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
    let mut written = Written::new(backups);
    // The binding records which clients use it, even when its text stays.
    if let (true, Some((path, tool))) = (apply, bound)
        && let Some(mut saved) = backups.get(path)?
        && !saved.tools.iter().any(|t| t == tool)
        && edits.iter().any(|e| e.path == path && !e.changed())
    {
        saved.tools.push(tool.to_owned());
        written.record(Some(&saved), path)?;
    }
    let todo: Vec<&Edit> = edits.iter().filter(|e| e.changed()).collect();
    if todo.is_empty() {
        outln!("Nothing to change.");
        return Ok(written);
    }
    if !apply {
        outln!("Dry run: nothing was written. Run again with --apply to make these changes.");
        return Ok(written);
    }
    for e in todo {
        if let Err(err) = write_one(e, bound, keep, &mut written) {
            let back = written.undo();
            return Err(err.context(if back {
                "nothing was changed: every file written before this one was put back"
            } else {
                "some files could not be put back (see above)"
            }));
        }
    }
    Ok(written)
}

/// Writes one planned file and its record, noting in `written` what was there.
fn write_one(
    e: &Edit,
    bound: Option<(&Path, &str)>,
    keep: bool,
    written: &mut Written,
) -> anyhow::Result<()> {
    let backups = written.backups.clone();
    let old = backups.get(&e.path)?;
    let record = match bound {
        Some((binding, tool)) => {
            let mut tools = old.as_ref().map(|s| s.tools.clone()).unwrap_or_default();
            if e.path == binding && !tools.iter().any(|t| t == tool) {
                tools.push(tool.to_owned());
            }
            Some(Saved {
                path: e.path.clone(),
                created: old.as_ref().map_or(e.before.is_none(), |s| s.created),
                after: e.after.clone(),
                tools,
            })
        }
        // Uninstall: a file that is gone needs no record; one that stays
        // keeps it while `keep`, with how uninstall left it.
        None => old.filter(|_| keep && e.after.is_some()).map(|s| Saved {
            after: e.after.clone(),
            ..s
        }),
    };
    written.record(record.as_ref(), &e.path)?;
    written.files.push((e.path.clone(), e.before.clone()));
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
                let inside =
                    d.ends_with(".claude") || d.parent().is_some_and(|p| p.ends_with(".claude"));
                if !inside || fs::remove_dir(d).is_err() {
                    break;
                }
                dir = d.parent();
            }
        }
    }
    let verb = if e.after.is_some() {
        "wrote"
    } else {
        "removed"
    };
    match (bound, record) {
        (Some(_), Some(_)) => outln!(
            "{verb} {} (record: {})",
            e.path.display(),
            backups.record_path(&e.path).display()
        ),
        _ => outln!("{verb} {}", e.path.display()),
    }
    Ok(())
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
    let mut e = Edit::new(path, before, text.map(str::to_owned), notes);
    e.whole = true;
    Ok(e)
}
