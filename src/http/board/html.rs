//! HTML text: the one escaper every board page and answer goes through.
//!
//! Owns how text reaches an HTML document. Everything shown on the board
//! that a peer wrote (topics, bodies, role and device names from records,
//! pin keys, file names in alarms, the channel's name) is untrusted, so it
//! is written only through [`escape`], which is safe both between tags and
//! inside a quoted attribute value. Nothing here builds markup from parts.

use std::fmt::Write as _;

pub use crate::core::peer_text::html as escape;

/// Appends `text`, escaped, to `out`.
pub fn push(out: &mut String, text: &str) {
    out.push_str(&escape(text));
}

/// Appends `text`, escaped, in a `<bdi>`: a run of peer text isolated in
/// its own direction, so that a right-to-left name or topic is neither
/// reordered nor reorders what stands around it.
pub fn push_bdi(out: &mut String, text: &str) {
    out.push_str("<bdi>");
    push(out, text);
    out.push_str("</bdi>");
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
    fn isolated_text_is_escaped_too() {
        let mut out = String::new();
        push_bdi(&mut out, "<b>שלום</b>");
        assert_eq!(out, "<bdi>&lt;b&gt;שלום&lt;/b&gt;</bdi>");
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
