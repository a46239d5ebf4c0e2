//! Marked text blocks: a block between a begin and an end line, found,
//! appended after a blank line, replaced or cut out with the blank lines
//! around it closed up (the notes in CLAUDE.md / AGENTS.md, the git exclude
//! block, a table appended to Codex's config). It must not know what the
//! blocks say.

use std::ops::Range;
use std::path::Path;

use anyhow::bail;

use super::edit::Edit;
use super::file::read;

/// `text` with `block` appended after a blank line.
pub(super) fn append_block(text: &str, block: &str) -> String {
    let sep = match text {
        "" => "",
        t if t.ends_with("\n\n") => "",
        t if t.ends_with('\n') => "\n",
        _ => "\n\n",
    };
    format!("{text}{sep}{block}")
}

/// `text` without the block at `r`, blank lines around it closed up; `None`
/// if nothing but whitespace is left (the file is then removed).
pub(super) fn cut_block(text: &str, r: Range<usize>) -> Option<String> {
    let head = text[..r.start].trim_end_matches('\n');
    let tail = text[r.end..].trim_start_matches('\n');
    let rest = match (head.is_empty(), tail.is_empty()) {
        (true, _) => tail.to_owned(),
        (false, true) => format!("{head}\n"),
        (false, false) => format!("{head}\n\n{tail}"),
    };
    if rest.trim().is_empty() {
        None
    } else {
        Some(rest)
    }
}

/// The byte range of the block from the line starting with `begin` to the
/// end of the line `end`.
pub(super) fn find_marked(
    path: &Path,
    text: &str,
    begin: &str,
    end: &str,
) -> anyhow::Result<Option<Range<usize>>> {
    let lines = line_starts(text);
    let Some(&(start, _)) = lines
        .iter()
        .find(|(_, l)| l.trim_start().starts_with(begin))
    else {
        return Ok(None);
    };
    match lines.iter().find(|(at, l)| *at > start && l.trim() == end) {
        Some(&(at, l)) => Ok(Some(start..at + l.len())),
        None => bail!(
            "{} has a countersign begin marker but no end marker ({end}); fix it by hand — nothing was changed",
            path.display()
        ),
    }
}

/// Each line with its byte offset, line endings included.
pub(super) fn line_starts(text: &str) -> Vec<(usize, &str)> {
    let mut at = 0;
    text.split_inclusive('\n')
        .map(|l| {
            let here = at;
            at += l.len();
            (here, l)
        })
        .collect()
}

/// Adds or updates (`Some`) or removes (`None`) the block between `begin`
/// and `end`.
pub(super) fn marked(
    path: &Path,
    new: Option<&str>,
    begin: &str,
    end: &str,
) -> anyhow::Result<Edit> {
    let before = read(path)?;
    let text = before.clone().unwrap_or_default();
    let found = find_marked(path, &text, begin, end)?;
    let mut notes = Vec::new();
    let after = match (new, found) {
        (Some(new), Some(r)) if &text[r.clone()] == new => {
            notes.push("the countersign section is already there".into());
            before.clone()
        }
        (Some(new), Some(r)) => {
            notes.push(format!("replace the countersign section with:\n{new}"));
            Some(format!("{}{new}{}", &text[..r.start], &text[r.end..]))
        }
        (Some(new), None) => {
            notes.push(format!("append the countersign section:\n{new}"));
            Some(append_block(&text, new))
        }
        (None, Some(r)) => {
            notes.push("remove the countersign section".into());
            cut_block(&text, r)
        }
        (None, None) => before.clone(),
    };
    Ok(Edit::new(path, before, after, notes))
}
