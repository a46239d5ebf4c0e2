//! Text written by peers, shown to a person.
//!
//! Topics, bodies, notes, keys — and file names found in the folder — come
//! from other writers and reach a terminal through the CLI. This module owns
//! which characters must never reach a terminal as themselves, and how they
//! are shown instead:
//!
//! - C0 controls, DEL and C1 controls: ESC alone can clear the screen,
//!   retitle the terminal or hide text, and a line break or carriage return
//!   would let a peer forge a line that looks like the CLI's own;
//! - bidirectional controls (U+202A–U+202E, U+2066–U+2069, U+200E, U+200F,
//!   U+061C), which reorder what is shown without changing what is stored;
//! - the Unicode line and paragraph separators, which some renderers break
//!   lines on.
//!
//! Each is written as a visible escape (`\n`, `\r`, `\t`, else `\u{1b}`).
//! Backslashes are left as they are: the aim is that nothing acts on the
//! terminal and no line can be forged, not that the text can be decoded back
//! (the JSON output of every command carries the exact bytes).

/// True for a character that must not reach a terminal as itself.
pub fn is_hazard(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{1f}'        // C0, line breaks and tabs included
        | '\u{7f}'                 // DEL
        | '\u{80}'..='\u{9f}'      // C1 (NEL, CSI …)
        | '\u{61c}'                // Arabic letter mark
        | '\u{200e}' | '\u{200f}'  // left-to-right and right-to-left marks
        | '\u{202a}'..='\u{202e}'  // embeddings and overrides
        | '\u{2066}'..='\u{2069}'  // isolates
        | '\u{2028}' | '\u{2029}'  // line and paragraph separators
    )
}

/// The first hazard in `s`: its position (in characters, from 1) and itself.
/// A one-line field (a topic, a title, a key) must hold none.
pub fn first_hazard(s: &str) -> Option<(usize, char)> {
    s.chars()
        .enumerate()
        .find(|(_, c)| is_hazard(*c))
        .map(|(i, c)| (i + 1, c))
}

/// What a hazard is, in words, for refusals.
pub fn describe(c: char) -> &'static str {
    match c {
        '\n' | '\r' | '\u{85}' | '\u{2028}' | '\u{2029}' => "a line break",
        '\t' => "a tab",
        '\u{61c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => {
            "a bidirectional control"
        }
        _ => "a control character",
    }
}

/// `s` as one line: every hazard, line breaks included, escaped visibly.
pub fn one_line(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        push(&mut out, c);
    }
    out
}

/// `s` laid out as lines, each starting with `prefix`, so that no line of
/// the text can pass for a line the CLI writes itself. The text's own line
/// breaks (`\n`, or `\r\n`) are kept as line breaks; every other hazard,
/// a lone `\r` included, is escaped. Empty text gives one bare prefix.
pub fn block(s: &str, prefix: &str) -> String {
    let mut out = String::with_capacity(s.len() + prefix.len());
    for (i, line) in s.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(prefix);
        let line = line.strip_suffix('\r').unwrap_or(line);
        for c in line.chars() {
            push(&mut out, c);
        }
    }
    out
}

fn push(out: &mut String, c: char) {
    if !is_hazard(c) {
        out.push(c);
        return;
    }
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        _ => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
    }
}

/// `text` for an HTML document: every character that could end a text node
/// or a quoted attribute written as a character reference (`&`, `<`, `>`,
/// `"`, `'`). Controls other than tab and line breaks, and the hazards above
/// (bidirectional controls that reorder what is shown), are written as
/// U+FFFD, so no peer text can hide or disguise itself on a page.
pub fn html(text: &str) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_topic_never_spans_lines_and_never_acts_on_the_terminal() {
        let forged = "deploy done\n#0123456789ab 2026-01-01T00:00:00.000Z from a\r\u{1b}[2J\u{1b}]0;owned\u{7}";
        let shown = one_line(forged);
        assert!(!shown.chars().any(is_hazard), "{shown:?}");
        assert!(!shown.contains('\n') && !shown.contains('\r'));
        assert_eq!(
            shown,
            "deploy done\\n#0123456789ab 2026-01-01T00:00:00.000Z from a\\r\\u{1b}[2J\\u{1b}]0;owned\\u{7}"
        );
    }

    #[test]
    fn every_class_of_hazard_is_escaped_and_plain_text_is_kept() {
        for c in [
            '\0', '\u{1b}', '\u{7f}', '\u{85}', '\u{9b}', '\u{61c}', '\u{200e}', '\u{200f}',
        ]
        .into_iter()
        .chain('\u{202a}'..='\u{202e}')
        .chain('\u{2066}'..='\u{2069}')
        .chain(['\u{2028}', '\u{2029}'])
        {
            let shown = one_line(&format!("a{c}b"));
            assert_eq!(shown, format!("a\\u{{{:x}}}b", c as u32), "{:x}", c as u32);
        }
        assert_eq!(one_line("tab\there"), "tab\\there");
        let plain = "Zürich — naïve 日本語 \\u{1b} \"quoted\" ‍emoji👩‍💻";
        assert_eq!(one_line(plain), plain);
    }

    #[test]
    fn a_body_keeps_its_lines_but_each_is_prefixed() {
        let body = "first\r\n#abcdef012345 2026-01-01T00:00:00.000Z from a\n\nlast\u{1b}[31m\rover";
        assert_eq!(
            block(body, "  | "),
            "  | first\n  | #abcdef012345 2026-01-01T00:00:00.000Z from a\n  | \n  | \
             last\\u{1b}[31m\\rover"
        );
        assert_eq!(block("", "  | "), "  | ");
        for line in block("x\n\u{202e}y\u{2028}z", "> ").lines() {
            assert!(line.starts_with("> "), "{line:?}");
            assert!(!line.chars().any(is_hazard), "{line:?}");
        }
    }

    #[test]
    fn the_first_hazard_is_named_by_position() {
        assert_eq!(first_hazard("plain topic"), None);
        assert_eq!(first_hazard("ab\ncd"), Some((3, '\n')));
        assert_eq!(first_hazard("é\u{202e}"), Some((2, '\u{202e}')));
        assert_eq!(describe('\n'), "a line break");
        assert_eq!(describe('\u{2066}'), "a bidirectional control");
        assert_eq!(describe('\u{1b}'), "a control character");
    }
}
