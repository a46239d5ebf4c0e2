//! How the board's pages link to each other: relative links (so a board
//! served behind a proxy under a prefix still works), built from where the
//! page is, with every part from the channel escaped for a URL and then for
//! HTML.
//!
//! Owns the board's URL layout below `/board/<channel>`: `m/<id>` (a
//! message), `pin/<key>` (a pin), `activity?before=<cursor>` (older moves).
//! It draws no markup but the `href` values.

use super::html::escape;

/// Where a page is, which decides how its links start.
#[derive(Clone, Debug)]
pub struct Links {
    /// What leads from the page to `/board/<channel>/` (a folder).
    to_root: String,
    /// What leads from the page to `/board/<channel>` (the board itself).
    to_board: String,
}

impl Links {
    /// Links from the board at `/board/<channel>`.
    pub fn board(channel: &str) -> Self {
        let ch = segment(channel);
        Self {
            to_root: format!("{ch}/"),
            to_board: ch,
        }
    }

    /// Links from a page one level below the board
    /// (`/board/<channel>/activity`).
    pub fn below(channel: &str) -> Self {
        Self {
            to_root: String::new(),
            to_board: format!("../{}", segment(channel)),
        }
    }

    /// Links from a page two levels below the board
    /// (`/board/<channel>/m/<id>`, `/board/<channel>/pin/<key>`).
    pub fn deep(channel: &str) -> Self {
        Self {
            to_root: "../".to_owned(),
            to_board: format!("../../{}", segment(channel)),
        }
    }

    /// The board itself, escaped for an attribute.
    pub fn board_href(&self) -> String {
        escape(&self.to_board)
    }

    /// The page of message `id` (a short id), escaped for an attribute.
    pub fn message(&self, id: &str) -> String {
        escape(&format!("{}m/{}", self.to_root, segment(id)))
    }

    /// The page of pin `key`, escaped for an attribute.
    pub fn pin(&self, key: &str) -> String {
        escape(&format!("{}pin/{}", self.to_root, segment(key)))
    }

    /// The page of moves before `cursor`, escaped for an attribute.
    pub fn activity(&self, cursor: &str) -> String {
        escape(&format!(
            "{}activity?before={}",
            self.to_root,
            segment(cursor)
        ))
    }
}

/// `text` as one URL path segment (or query value): every byte but the
/// unreserved ones percent-encoded, so a `/`, `?`, `#` or `..` in a peer's
/// pin key never leaves its segment.
pub fn segment(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'~') {
            out.push(b as char);
        } else if b == b'.' && text != "." && text != ".." {
            out.push('.');
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hostile_key_stays_in_its_segment() {
        assert_eq!(segment("style"), "style");
        assert_eq!(segment("../x?y#z"), "..%2Fx%3Fy%23z");
        assert_eq!(segment(".."), "%2E%2E");
        assert_eq!(segment("é \"<"), "%C3%A9%20%22%3C");
    }

    #[test]
    fn links_resolve_below_the_board_from_every_page() {
        let b = Links::board("local");
        assert_eq!(b.message("abc123"), "local/m/abc123");
        assert_eq!(b.pin("a/b"), "local/pin/a%2Fb");
        assert_eq!(b.activity("1.0.ab"), "local/activity?before=1.0.ab");
        let d = Links::deep("local");
        assert_eq!(d.message("abc123"), "../m/abc123");
        assert_eq!(d.board_href(), "../../local");
        assert_eq!(Links::below("local").message("abc"), "m/abc");
        assert_eq!(Links::below("local").board_href(), "../local");
    }
}
