//! Importing old notes: a text file (one note per paragraph) or a JSON
//! Lines file (`{kind, text, date, origin}` per line) turned into notes, each
//! with an event id made from what it holds, so importing the same file again
//! adds nothing.
//!
//! Owns the two formats, the checks of every entry before anything is
//! written (a bad entry is reported by its line number, and the file is
//! refused whole) and the event id of an imported note. It must not read the
//! file or write anything (`app::import` does).

use std::collections::HashSet;

use serde::Deserialize;
use sha2::{Digest as _, Sha256};

use super::note::{self, NoteKind};
use crate::op::MemoryNote;
use crate::peer_text::first_hazard;

/// The most notes one import writes (a larger file is split by hand).
pub const MAX_IMPORT_NOTES: usize = 20_000;
/// The most bytes of a `date` or an `origin`.
pub const MAX_LABEL_BYTES: usize = 128;

/// The format of a file to import, from its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Plain text: a note per paragraph (lines separated by a blank line).
    Text,
    /// JSON Lines: `{"kind", "text", "date", "origin"}` per line.
    JsonLines,
}

impl Format {
    /// The format a file name says (`.txt`, `.md`, `.jsonl`), if any.
    pub fn of_name(name: &str) -> Option<Self> {
        let lower = name.to_ascii_lowercase();
        if lower.ends_with(".jsonl") {
            Some(Self::JsonLines)
        } else if lower.ends_with(".txt") || lower.ends_with(".md") {
            Some(Self::Text)
        } else {
            None
        }
    }
}

/// One entry of a file that cannot be imported.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadEntry {
    /// Its first line in the file, from 1.
    pub line: usize,
    /// Why.
    pub why: String,
}

/// The notes of `text` in `format`, each once (an entry repeated in the file
/// is one note), or every entry that cannot be imported.
pub fn parse(text: &str, format: Format) -> Result<Vec<MemoryNote>, Vec<BadEntry>> {
    let entries = match format {
        Format::Text => paragraphs(text),
        Format::JsonLines => json_lines(text),
    };
    let mut bad = Vec::new();
    let mut seen = HashSet::new();
    let mut notes = Vec::new();
    for (line, entry) in entries {
        match entry.and_then(|e| to_note(&e)) {
            Ok(n) => {
                if seen.insert(n.event.clone()) {
                    notes.push(n);
                }
            }
            Err(why) => bad.push(BadEntry { line, why }),
        }
    }
    if notes.len() > MAX_IMPORT_NOTES && bad.is_empty() {
        bad.push(BadEntry {
            line: 1,
            why: format!(
                "the file holds {} notes, more than {MAX_IMPORT_NOTES} in one import: split it",
                notes.len()
            ),
        });
    }
    if bad.is_empty() { Ok(notes) } else { Err(bad) }
}

/// An entry as the file gives it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    kind: String,
    text: String,
    #[serde(default)]
    date: Option<String>,
    #[serde(default)]
    origin: Option<String>,
}

/// The paragraphs of a text file with their first line: runs of lines that
/// are not blank, joined by line breaks.
fn paragraphs(text: &str) -> Vec<(usize, Result<Entry, String>)> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut lines: Vec<&str> = Vec::new();
    for (i, line) in text.split('\n').enumerate() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.trim().is_empty() {
            if !lines.is_empty() {
                out.push((start, Ok(note_entry(lines.join("\n")))));
                lines.clear();
            }
            continue;
        }
        if lines.is_empty() {
            start = i + 1;
        }
        lines.push(line);
    }
    if !lines.is_empty() {
        out.push((start, Ok(note_entry(lines.join("\n")))));
    }
    out
}

fn note_entry(text: String) -> Entry {
    Entry {
        kind: NoteKind::Note.as_str().to_owned(),
        text,
        date: None,
        origin: None,
    }
}

/// The lines of a JSON Lines file that are not blank, decoded.
fn json_lines(text: &str) -> Vec<(usize, Result<Entry, String>)> {
    text.split('\n')
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            let entry = serde_json::from_str::<Entry>(l.trim_end_matches('\r')).map_err(|e| {
                format!("not a JSON object of kind, text and optional date and origin ({e})")
            });
            (i + 1, entry)
        })
        .collect()
}

/// The note an entry makes: its kind checked, its date and origin (when
/// given) opening its text, its event id from all of it.
fn to_note(e: &Entry) -> Result<MemoryNote, String> {
    let kind = NoteKind::parse(&e.kind).ok_or_else(|| {
        format!(
            "kind '{}' is none of prompt, reply, turn, note",
            e.kind.escape_debug()
        )
    })?;
    for (field, value) in [("date", &e.date), ("origin", &e.origin)] {
        let Some(v) = value else { continue };
        if v.trim().is_empty() || v.len() > MAX_LABEL_BYTES {
            return Err(format!(
                "{field} must be 1 to {MAX_LABEL_BYTES} bytes when given"
            ));
        }
        if let Some((at, c)) = first_hazard(v) {
            return Err(format!(
                "{field} holds U+{:04X} at character {at}: one line of plain text",
                c as u32
            ));
        }
    }
    let label: Vec<&str> = [&e.date, &e.origin]
        .into_iter()
        .filter_map(|v| v.as_deref())
        .collect();
    let text = if label.is_empty() {
        e.text.clone()
    } else {
        format!("[{}] {}", label.join(", "), e.text)
    };
    let n = MemoryNote {
        kind,
        event: Some(event_id(
            kind,
            e.date.as_deref(),
            e.origin.as_deref(),
            &e.text,
        )),
        text,
        agent: None,
        session: None,
        folder: None,
        folder_hash: None,
    };
    note::check(&n).map_err(|e| e.to_string())?;
    Ok(n)
}

/// The event id of an imported note: `import:` and 32 hex digits of a
/// SHA-256 over its kind, date, origin and text, so the same entry imported
/// twice (from the same file or another) is one note.
pub fn event_id(kind: NoteKind, date: Option<&str>, origin: Option<&str>, text: &str) -> String {
    let mut h = Sha256::new();
    h.update(b"countersign/import\0");
    for part in [
        kind.as_str(),
        date.unwrap_or(""),
        origin.unwrap_or(""),
        text,
    ] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part.as_bytes());
    }
    format!("import:{}", &hex::encode(h.finalize())[..32])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_file_is_a_note_per_paragraph_each_once() {
        let text = "first line\nsame paragraph\n\n\n  \nsecond\r\n\r\nfirst line\nsame paragraph\n";
        let notes = parse(text, Format::Text).unwrap();
        let texts: Vec<&str> = notes.iter().map(|n| n.text.as_str()).collect();
        assert_eq!(texts, ["first line\nsame paragraph", "second"]);
        assert!(notes.iter().all(|n| n.kind == NoteKind::Note));
        let again = parse(text, Format::Text).unwrap();
        assert_eq!(notes[0].event, again[0].event);
        assert_ne!(notes[0].event, notes[1].event);
    }

    #[test]
    fn a_jsonl_file_keeps_kind_date_and_origin_and_names_every_bad_line() {
        let good = r#"{"kind":"prompt","text":"fix login","date":"2025-03-01","origin":"laptop"}
{"kind":"note","text":"staging is down"}"#;
        let notes = parse(good, Format::JsonLines).unwrap();
        assert_eq!(notes[0].kind, NoteKind::Prompt);
        assert_eq!(notes[0].text, "[2025-03-01, laptop] fix login");
        assert_eq!(notes[1].text, "staging is down");
        let bad = format!(
            "{good}\n{{\"kind\":\"shout\",\"text\":\"x\"}}\nnot json\n\n{{\"kind\":\"note\",\"text\":\"a\\u0007b\"}}\n{{\"kind\":\"note\",\"text\":\"x\",\"date\":\"a\\nb\"}}"
        );
        let e = parse(&bad, Format::JsonLines).unwrap_err();
        let lines: Vec<usize> = e.iter().map(|b| b.line).collect();
        assert_eq!(lines, [3, 4, 6, 7], "{e:?}");
        assert!(e[0].why.contains("shout"), "{e:?}");
    }
}
