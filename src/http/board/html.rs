//! HTML text: the one escaper every board page and answer goes through.
//!
//! Owns how text reaches an HTML document. Everything shown on the board
//! that a peer wrote (topics, bodies, role and device names from records,
//! pin keys, file names in alarms, the channel's name) is untrusted, so it
//! is written only through [`escape`], which is safe both between tags and
//! inside a quoted attribute value. Nothing here builds markup from parts.

use std::fmt::Write as _;

use crate::core::peer_text::is_hazard;

/// `text` with every character that could end a text node or a quoted
/// attribute written as a character reference (`&`, `<`, `>`, `"`, `'`).
/// Controls other than tab and line breaks, and the bidirectional controls
/// that reorder what is shown (`core::peer_text`'s hazards), are written as
/// U+FFFD, so no peer text can hide or disguise itself.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if is_hazard(c) => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// Appends `text`, escaped, to `out`.
pub fn push(out: &mut String, text: &str) {
    out.push_str(&escape(text));
}

/// Appends `format_args!`-style text to `out` (for numbers and the page's
/// own words, never peer text).
pub fn push_fmt(out: &mut String, args: std::fmt::Arguments<'_>) {
    let _ = out.write_fmt(args);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_script_tag_becomes_text() {
        assert_eq!(
            escape("<script>alert(1)</script>"),
            "&lt;script&gt;alert(1)&lt;/script&gt;"
        );
    }

    #[test]
    fn quotes_cannot_leave_an_attribute() {
        let attr = format!("<p title=\"{}\">", escape(r#"" onmouseover="alert(1)"#));
        assert_eq!(attr, "<p title=\"&quot; onmouseover=&quot;alert(1)\">");
        let single = format!("<p title='{}'>", escape("' onclick='x"));
        assert!(!single[10..single.len() - 2].contains('\''), "{single}");
    }

    #[test]
    fn ampersands_are_escaped_first_and_once() {
        assert_eq!(escape("a &lt; b & c"), "a &amp;lt; b &amp; c");
    }

    #[test]
    fn controls_are_replaced_and_plain_text_is_kept() {
        assert_eq!(escape("a\u{1b}[2Jb\u{0}"), "a\u{fffd}[2Jb\u{fffd}");
        assert_eq!(escape("ab\u{202e}cd"), "ab\u{fffd}cd");
        assert_eq!(escape("line\nnext\tcol é ✓"), "line\nnext\tcol é ✓");
    }
}
