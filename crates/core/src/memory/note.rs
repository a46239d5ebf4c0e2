//! Notes: what a `note` record may hold, and how a recorded event becomes one.
//!
//! A note is an item of the memory written by a role for itself: a prompt its
//! user typed, its agent's final reply, the tool calls of one turn in one
//! short line, or a note added by hand. It names where it came from (the
//! agent and a short hash of the agent's session id, never the id itself)
//! and, when a hook recorded it, the event it came from, so a second delivery
//! of one event is recognized. The checks here run when a note is written and
//! again when a peer's is read: a note that fails them is never stored.
//!
//! It owns the bounds and the shape of a note's fields, the event id and the
//! session hash; it must not read files or decide how a client's hook input
//! looks (the hook does).

use sha2::{Digest, Sha256};

use super::provenance::{FOLDER_HEX, MAX_FOLDER_BYTES, is_folder, is_folder_hash};
use crate::op::MemoryNote;
use crate::peer_text::{describe, first_hazard_in_lines, is_hazard, is_invisible};
// The kinds are wire vocabulary (`core::vocab`, where `op` reads them);
// notes are made here, so their kind is named here too.
pub use crate::vocab::NoteKind;

/// The most bytes of text one note holds (a longer prompt or reply is cut
/// by the hook, saying how much: [`cut`]).
pub const MAX_NOTE_BYTES: usize = 64 * 1024;
/// The most bytes of an event id.
pub const MAX_EVENT_BYTES: usize = 128;
/// The most bytes of an agent's name.
pub const MAX_AGENT_BYTES: usize = 32;
/// The hex digits of a session hash.
pub const SESSION_HEX: usize = 12;
/// The most characters a subagent's report, an approved plan or another
/// session's message keeps (the recording hook cuts them: [`cut_chars`]).
pub const MAX_KEPT_CHARS: usize = 4_000;

/// Why a note is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadNote {
    /// Empty text.
    #[error("a note's text is empty; give the note some text")]
    Empty,
    /// Over [`MAX_NOTE_BYTES`].
    #[error("a note's text is {0} bytes (at most {MAX_NOTE_BYTES})")]
    TooLong(usize),
    /// A control, bidirectional or invisible character, or a line or
    /// paragraph separator (`core::peer_text`); line breaks and tabs are
    /// kept.
    #[error(
        "a note's text holds {} (U+{:04X}) at character {at} — a note may hold line breaks and \
         tabs, but no other control, bidirectional or invisible character",
        describe(*.c), *.c as u32
    )]
    Control {
        /// The character.
        c: char,
        /// Its position, in characters from 1.
        at: usize,
    },
    /// An event id that is empty, too long or not made of `[A-Za-z0-9._:-]`.
    #[error("a note's event id must be 1 to {MAX_EVENT_BYTES} characters of A-Z a-z 0-9 . _ : -")]
    Event,
    /// An agent name that is empty, too long or not made of `[a-z0-9-]`.
    #[error("a note's agent must be 1 to {MAX_AGENT_BYTES} characters of a-z 0-9 -")]
    Agent,
    /// A session that is not [`SESSION_HEX`] lowercase hex digits.
    #[error("a note's session must be {SESSION_HEX} lowercase hex digits")]
    Session,
    /// A folder that is not relative, plain and short
    /// (`core::memory::provenance::is_folder`).
    #[error(
        "a note's folder must be `.` or a relative folder of at most {MAX_FOLDER_BYTES} bytes, \
         without spaces, `@ # ~ | : \\`, `.` or `..` parts, or control, bidirectional or \
         invisible characters"
    )]
    Folder,
    /// A folder hash that is not [`FOLDER_HEX`] lowercase hex digits, or
    /// one without its folder.
    #[error(
        "a note's folder_hash must be {FOLDER_HEX} lowercase hex digits, given with its folder"
    )]
    FolderHash,
}

/// Checks a note, at write and at ingest.
pub fn check(n: &MemoryNote) -> Result<(), BadNote> {
    if n.text.trim().is_empty() {
        return Err(BadNote::Empty);
    }
    if n.text.len() > MAX_NOTE_BYTES {
        return Err(BadNote::TooLong(n.text.len()));
    }
    if let Some((at, c)) = first_hazard_in_lines(&n.text) {
        return Err(BadNote::Control { c, at });
    }
    if let Some(e) = &n.event {
        let ok = e.len() <= MAX_EVENT_BYTES
            && !e.is_empty()
            && e.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b".-_:".contains(&b));
        if !ok {
            return Err(BadNote::Event);
        }
    }
    if let Some(a) = &n.agent {
        let ok = a.len() <= MAX_AGENT_BYTES
            && !a.is_empty()
            && a.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        if !ok {
            return Err(BadNote::Agent);
        }
    }
    if let Some(s) = &n.session {
        let ok =
            s.len() == SESSION_HEX && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        if !ok {
            return Err(BadNote::Session);
        }
    }
    if n.folder.as_deref().is_some_and(|f| !is_folder(f)) {
        return Err(BadNote::Folder);
    }
    if let Some(h) = &n.folder_hash
        && (!is_folder_hash(h) || n.folder.is_none())
    {
        return Err(BadNote::FolderHash);
    }
    Ok(())
}

/// The short hash a note names a session by: enough to tell one session's
/// notes from another's, and nothing of the id itself (a client's session id
/// may open its transcript).
pub fn session_hash(session_id: &str) -> String {
    let mut h = Sha256::new();
    h.update(b"countersign/session\0");
    h.update(session_id.as_bytes());
    let mut hex = hex::encode(h.finalize());
    hex.truncate(SESSION_HEX);
    hex
}

/// The id of a recorded event, from the parts that make it one (the agent,
/// its session, the hook event, what tells two events of a session apart):
/// the same parts give the same id, so a second delivery adds nothing.
pub fn event_id(parts: &[&str]) -> String {
    let mut h = Sha256::new();
    h.update(b"countersign/event");
    for p in parts {
        h.update(b"\0");
        h.update(p.as_bytes());
    }
    hex::encode(h.finalize())
}

/// `text` made fit for a note: line breaks (line and paragraph separators
/// too) as `\n`, invisible characters dropped, every other control or
/// bidirectional character but a tab replaced by a space, and, past [`MAX_NOTE_BYTES`],
/// cut at a character boundary with a last line saying how much was cut.
pub fn cut(text: &str) -> String {
    let clean: String = text
        .replace("\r\n", "\n")
        .chars()
        .filter_map(|c| match c {
            '\n' | '\t' => Some(c),
            '\u{85}' | '\u{2028}' | '\u{2029}' => Some('\n'),
            c if is_invisible(c) => None,
            c if is_hazard(c) => Some(' '),
            c => Some(c),
        })
        .collect();
    if clean.len() <= MAX_NOTE_BYTES {
        return clean;
    }
    // The marker's own length, with room for the widest count.
    let room = MAX_NOTE_BYTES - 64;
    let mut end = room;
    while !clean.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n[… {} more bytes not recorded]",
        &clean[..end],
        clean.len() - end
    )
}

/// `text` cut to [`MAX_KEPT_CHARS`] characters, with a last line saying how
/// many were not kept; shorter text as it is.
pub fn cut_chars(text: &str) -> String {
    let total = text.chars().count();
    if total <= MAX_KEPT_CHARS {
        return text.to_owned();
    }
    let kept: String = text.chars().take(MAX_KEPT_CHARS).collect();
    format!(
        "{kept}\n[… {} more characters not recorded]",
        total - MAX_KEPT_CHARS
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note(text: &str) -> MemoryNote {
        MemoryNote {
            kind: NoteKind::Note,
            text: text.into(),
            event: None,
            agent: None,
            session: None,
            folder: None,
            folder_hash: None,
        }
    }

    #[test]
    fn shapes_that_are_refused() {
        assert_eq!(check(&note(" \n")), Err(BadNote::Empty));
        assert_eq!(
            check(&note("a\u{1b}[31m")),
            Err(BadNote::Control { c: '\u{1b}', at: 2 })
        );
        assert_eq!(
            check(&note("a\nb\u{2029}")),
            Err(BadNote::Control {
                c: '\u{2029}',
                at: 4
            })
        );
        assert_eq!(
            check(&note("x\u{2066}")),
            Err(BadNote::Control {
                c: '\u{2066}',
                at: 2
            })
        );
        assert_eq!(
            check(&note("\u{feff}x")),
            Err(BadNote::Control {
                c: '\u{feff}',
                at: 1
            })
        );
        assert_eq!(check(&note("lines\n\tand tabs")), Ok(()));
        assert!(check(&note("two\nlines\tand a tab")).is_ok());
        let long = "é".repeat(MAX_NOTE_BYTES / 2 + 1);
        assert_eq!(check(&note(&long)), Err(BadNote::TooLong(long.len())));
        let bad_event = MemoryNote {
            event: Some("a b".into()),
            ..note("x")
        };
        assert_eq!(check(&bad_event), Err(BadNote::Event));
        let long_event = MemoryNote {
            event: Some("e".repeat(MAX_EVENT_BYTES + 1)),
            ..note("x")
        };
        assert_eq!(check(&long_event), Err(BadNote::Event));
        let bad_agent = MemoryNote {
            agent: Some("Claude".into()),
            ..note("x")
        };
        assert_eq!(check(&bad_agent), Err(BadNote::Agent));
        let bad_session = MemoryNote {
            session: Some("not-hex".into()),
            ..note("x")
        };
        assert_eq!(check(&bad_session), Err(BadNote::Session));
        let good = MemoryNote {
            kind: NoteKind::Prompt,
            text: "fix the login".into(),
            event: Some(event_id(&["claude", "s", "UserPromptSubmit"])),
            agent: Some("claude".into()),
            session: Some(session_hash("0b6c…")),
            folder: Some("src/cli".into()),
            folder_hash: Some("3f9a2c".into()),
        };
        assert!(check(&good).is_ok());
        let bad_folder = MemoryNote {
            folder: Some("/home/me".into()),
            ..good.clone()
        };
        assert_eq!(check(&bad_folder), Err(BadNote::Folder));
        let lone_hash = MemoryNote {
            folder: None,
            ..good.clone()
        };
        assert_eq!(check(&lone_hash), Err(BadNote::FolderHash));
        let bad_hash = MemoryNote {
            folder_hash: Some("3F9A2C".into()),
            ..good
        };
        assert_eq!(check(&bad_hash), Err(BadNote::FolderHash));
    }

    #[test]
    fn a_session_hash_is_short_and_hides_the_id() {
        let h = session_hash("3f0e2a8c-1111-4222-8333-944445555666");
        assert_eq!(h.len(), SESSION_HEX);
        assert!(!"3f0e2a8c-1111-4222-8333-944445555666".contains(&h));
        assert_ne!(h, session_hash("another"));
    }

    #[test]
    fn cutting_keeps_short_text_and_bounds_long_text() {
        assert_eq!(cut("a\r\nb\u{7}c"), "a\nb c");
        let hostile = "x\u{2028}y\u{202e}z ad\u{200b}min\u{e0041}";
        assert_eq!(cut(hostile), "x\ny z admin");
        assert!(check(&note(&cut(hostile))).is_ok());
        let long = "日本".repeat(MAX_NOTE_BYTES);
        let c = cut(&long);
        assert!(c.len() <= MAX_NOTE_BYTES, "{}", c.len());
        assert!(c.ends_with("more bytes not recorded]"));
        assert!(check(&note(&c)).is_ok());
        assert_eq!(cut_chars("short"), "short");
        let report = "é".repeat(MAX_KEPT_CHARS + 5);
        let kept = cut_chars(&report);
        assert!(kept.starts_with(&"é".repeat(MAX_KEPT_CHARS)));
        assert!(
            kept.ends_with("[… 5 more characters not recorded]"),
            "{kept}"
        );
    }

    #[test]
    fn kinds_round_trip() {
        for k in [
            NoteKind::Prompt,
            NoteKind::Reply,
            NoteKind::Turn,
            NoteKind::Note,
            NoteKind::Answer,
            NoteKind::Report,
            NoteKind::Plan,
            NoteKind::Peer,
        ] {
            assert_eq!(NoteKind::parse(k.as_str()), Some(k));
        }
        assert_eq!(NoteKind::parse("message"), None);
    }
}
