//! Where an item of the memory came from, as its lines say it:
//! `kind@folder~hash/agent@device#session`.
//!
//! A note recorded by a hook knows the folder its session worked in (relative
//! to the project root, with a short hash of the absolute folder so two
//! checkouts of one project stay apart), the agent, and the session, and the
//! device whose feed holds it. A message was sent, not recorded: its role is
//! where it came from. The parts an item does not have are left out, so a
//! line never claims more than its record holds.
//!
//! It owns the short forms and the way they are written into a line, and
//! the check of a recorded folder; it must not read files or the index (the
//! hook makes the folder, the store joins the device).

use sha2::{Digest, Sha256};

use crate::peer_text::{is_hazard, is_invisible};

/// The most bytes of a recorded folder.
pub const MAX_FOLDER_BYTES: usize = 128;
/// The hex digits of a folder's hash.
pub const FOLDER_HEX: usize = 6;
/// The hex digits of a session shown in a line.
pub const SESSION_SHOWN: usize = 6;

/// The characters a folder may not hold, besides spaces and the hazards of
/// `core::peer_text`: the separators of a line's provenance and of its text.
const RESERVED: &[char] = &['@', '#', '~', '|', ':', '\\'];

/// Where an item came from: every part it has.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Provenance {
    /// The role whose feed holds it.
    pub role: String,
    /// The device whose feed holds it.
    pub device: Option<String>,
    /// The folder its session worked in, relative to the project root (`.`
    /// for the root itself).
    pub folder: Option<String>,
    /// A short hash of that folder's absolute path.
    pub folder_hash: Option<String>,
    /// The agent that recorded it (`claude`, `codex`).
    pub agent: Option<String>,
    /// The session hash a note holds (`core::memory::note::session_hash`).
    pub session: Option<String>,
}

impl Provenance {
    /// The provenance as a line shows it after `kind@`:
    /// `folder~hash/agent@device#session`. The folder is named from the
    /// role's project root (`web` for the root of role web's project,
    /// `web/src/cli` below it); the parts the item lacks are left out (a
    /// message: `role`).
    pub fn shown(&self) -> String {
        let mut out = self.role.clone();
        if let Some(f) = self
            .folder
            .as_deref()
            .filter(|f| *f != "." && !f.is_empty())
        {
            out.push('/');
            out.push_str(f);
        }
        if let Some(h) = &self.folder_hash {
            out.push('~');
            out.push_str(h);
        }
        if let Some(a) = &self.agent {
            out.push('/');
            out.push_str(a);
        }
        if let Some(d) = &self.device {
            out.push('@');
            out.push_str(d);
        }
        if let Some(s) = &self.session {
            out.push('#');
            out.push_str(s.get(..SESSION_SHOWN).unwrap_or(s));
        }
        out
    }
}

/// The short hash of an absolute folder: enough to tell two checkouts of a
/// project apart, and nothing of the path itself.
pub fn folder_hash(absolute: &str) -> String {
    let mut h = Sha256::new();
    h.update(b"countersign/folder\0");
    h.update(absolute.as_bytes());
    let mut hex = hex::encode(h.finalize());
    hex.truncate(FOLDER_HEX);
    hex
}

/// `relative` (a folder below the project root, `/`-separated) as a note
/// records it: `.` for the root, every character a line could not show
/// plainly (a space, a separator of the provenance, a control, bidirectional
/// or invisible character) replaced by `_`, cut to [`MAX_FOLDER_BYTES`] at a
/// character boundary. The hash keeps folders apart that this makes alike.
pub fn folder_label(relative: &str) -> String {
    let parts: Vec<String> = relative
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .map(|p| {
            p.chars()
                .map(|c| {
                    if c.is_whitespace() || is_hazard(c) || is_invisible(c) || RESERVED.contains(&c)
                    {
                        '_'
                    } else {
                        c
                    }
                })
                .collect()
        })
        .map(|p: String| if p == ".." { "__".to_owned() } else { p })
        .collect();
    if parts.is_empty() {
        return ".".to_owned();
    }
    let mut label = parts.join("/");
    if label.len() > MAX_FOLDER_BYTES {
        let mut end = MAX_FOLDER_BYTES;
        while !label.is_char_boundary(end) {
            end -= 1;
        }
        label.truncate(end);
        while label.ends_with('/') {
            label.pop();
        }
    }
    label
}

/// True when `folder` is a folder as [`folder_label`] makes them: `.`, or
/// non-empty `/`-separated parts that are not `.` or `..`, holding no space,
/// no separator of the provenance and no control, bidirectional or
/// invisible character, within [`MAX_FOLDER_BYTES`].
pub fn is_folder(folder: &str) -> bool {
    if folder == "." {
        return true;
    }
    !folder.is_empty()
        && folder.len() <= MAX_FOLDER_BYTES
        && folder
            .split('/')
            .all(|p| !p.is_empty() && p != "." && p != "..")
        && !folder
            .chars()
            .any(|c| c.is_whitespace() || is_hazard(c) || is_invisible(c) || RESERVED.contains(&c))
}

/// True when `hash` is [`FOLDER_HEX`] lowercase hex digits.
pub fn is_folder_hash(hash: &str) -> bool {
    hash.len() == FOLDER_HEX && hash.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_shows_the_parts_an_item_has() {
        let note = Provenance {
            role: "web".into(),
            device: Some("laptop-a1b2c3".into()),
            folder: Some("src/cli".into()),
            folder_hash: Some("3f9a2c".into()),
            agent: Some("claude".into()),
            session: Some("0b6c1d2e3f40".into()),
        };
        assert_eq!(
            note.shown(),
            "web/src/cli~3f9a2c/claude@laptop-a1b2c3#0b6c1d"
        );
        let root = Provenance {
            folder: Some(".".into()),
            ..note.clone()
        };
        assert_eq!(root.shown(), "web~3f9a2c/claude@laptop-a1b2c3#0b6c1d");
        // A note recorded before folders were: no folder part.
        let old = Provenance {
            folder: None,
            folder_hash: None,
            ..note
        };
        assert_eq!(old.shown(), "web/claude@laptop-a1b2c3#0b6c1d");
        let by_hand = Provenance {
            role: "backend".into(),
            device: Some("desk-000001".into()),
            ..Provenance::default()
        };
        assert_eq!(by_hand.shown(), "backend@desk-000001");
        let message = Provenance {
            role: "backend".into(),
            ..Provenance::default()
        };
        assert_eq!(message.shown(), "backend");
    }

    #[test]
    fn folders_are_made_plain_and_checked() {
        assert_eq!(folder_label(""), ".");
        assert_eq!(folder_label("./"), ".");
        assert_eq!(folder_label("src//cli/"), "src/cli");
        assert_eq!(folder_label("my dir/a@b#c~d|e:f"), "my_dir/a_b_c_d_e_f");
        assert_eq!(folder_label("x\u{202e}y/../z"), "x_y/__/z");
        let long = folder_label(&"é/".repeat(200));
        assert!(long.len() <= MAX_FOLDER_BYTES && is_folder(&long), "{long}");
        for ok in [".", "src", "src/cli", "日本/語"] {
            assert!(is_folder(ok), "{ok}");
        }
        for bad in [
            "",
            "/abs",
            "a//b",
            "a/./b",
            "../up",
            "a b",
            "a@b",
            "x\u{200b}",
            "a\nb",
        ] {
            assert!(!is_folder(bad), "{bad:?}");
        }
        let h = folder_hash("/home/me/project");
        assert!(is_folder_hash(&h));
        assert_ne!(h, folder_hash("/home/me/other"));
        assert!(!is_folder_hash("ABCDEF"));
    }
}
