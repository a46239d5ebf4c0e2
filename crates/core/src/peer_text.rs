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
//!   lines on;
//! - invisible characters (U+200B zero width space, U+2060–U+2064 word
//!   joiner and invisible operators, U+FEFF, the interlinear annotation
//!   marks U+FFF9–U+FFFB and the tag characters U+E0000–U+E007F), which
//!   carry text a reader cannot see, or split a word so that it reads as
//!   another. The zero width joiner and non-joiner (U+200C, U+200D) are not
//!   among them: emoji and several scripts need them.
//!
//! A one-line field (a topic, a key, a title, a summary) holds none of them,
//! at write and at ingest; a note may hold line breaks and tabs and no other
//! ([`first_hazard_in_lines`]). Bodies keep every byte, so every printer
//! neutralizes what they hold.
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
    ) || is_invisible(c)
}

/// True for a character that shows nothing and is not a control: zero width
/// space, word joiner and invisible operators, the byte order mark,
/// interlinear annotation marks and tag characters.
pub fn is_invisible(c: char) -> bool {
    matches!(c,
        '\u{200b}'                // zero width space
        | '\u{2060}'..='\u{2064}'  // word joiner, invisible operators
        | '\u{feff}'                // zero width no-break space (BOM)
        | '\u{fff9}'..='\u{fffb}'  // interlinear annotation marks
        | '\u{e0000}'..='\u{e007f}' // tag characters
    )
}

/// True if `s` holds a hazard. Printable ASCII holds none, and is passed
/// over [`CLEAN_RUN`] bytes at a time with a check that has no early exit
/// (which the compiler vectorizes); a character is decoded only where a
/// byte is something else. A tool's answer is tens of kilobytes, mostly
/// ASCII with now and then an accent or a dash: decoding every character
/// after the first of those cost more than the rest of the check.
fn has_hazard(s: &str) -> bool {
    let bytes = s.as_bytes();
    let printable = |b: &u8| (0x20..0x7f).contains(b);
    // Always at a character's start: it only steps over printable ASCII
    // and whole characters.
    let mut at = 0;
    while at < bytes.len() {
        if let Some(run) = bytes.get(at..at + CLEAN_RUN)
            && run.iter().fold(true, |clean, b| clean & printable(b))
        {
            at += CLEAN_RUN;
        } else if printable(&bytes[at]) {
            at += 1;
        } else {
            let Some(c) = s[at..].chars().next() else {
                break;
            };
            if is_hazard(c) {
                return true;
            }
            at += c.len_utf8();
        }
    }
    false
}

/// How many bytes [`has_hazard`] checks together.
const CLEAN_RUN: usize = 64;

/// The first hazard in `s`: its position (in characters, from 1) and itself.
/// A one-line field (a topic, a title, a key) must hold none.
pub fn first_hazard(s: &str) -> Option<(usize, char)> {
    s.chars()
        .enumerate()
        .find(|(_, c)| is_hazard(*c))
        .map(|(i, c)| (i + 1, c))
}

/// The first hazard in `s` other than a line break (`\n`) or a tab: what a
/// multi-line text that is still checked (a note) must not hold.
pub fn first_hazard_in_lines(s: &str) -> Option<(usize, char)> {
    s.chars()
        .enumerate()
        .find(|(_, c)| *c != '\n' && *c != '\t' && is_hazard(*c))
        .map(|(i, c)| (i + 1, c))
}

/// What a hazard is, in words, for refusals.
pub fn describe(c: char) -> &'static str {
    match c {
        c if is_invisible(c) => "an invisible character",
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

/// A serialized JSON text with every hazard that stands as itself in it
/// (DEL, C1, bidirectional, separators, invisibles: the C0 controls are
/// escaped by every JSON writer) written as a `\uXXXX` escape, UTF-16 pairs
/// past U+FFFF. The JSON decodes to exactly the same values; read as text,
/// nothing in it reorders, hides or breaks a line. `json` must be JSON as a
/// writer made it: outside strings it holds nothing but ASCII. Without a
/// hazard it comes back as it is, not copied (a listing's answer is tens of
/// kilobytes).
pub fn json(json: String) -> String {
    if !has_hazard(&json) {
        return json;
    }
    let mut out = String::with_capacity(json.len() + 16);
    let mut units = [0u16; 2];
    for c in json.chars() {
        if (is_hazard(c) && !c.is_ascii()) || c == '\u{7f}' {
            for u in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{u:04x}"));
            }
        } else {
            out.push(c);
        }
    }
    out
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

    #[test]
    fn invisible_characters_are_hazards_and_joiners_are_not() {
        for c in [
            '\u{200b}', '\u{2060}', '\u{2064}', '\u{feff}', '\u{fff9}', '\u{fffb}',
        ]
        .into_iter()
        .chain('\u{e0000}'..='\u{e007f}')
        {
            assert!(is_hazard(c), "{:x}", c as u32);
            assert_eq!(describe(c), "an invisible character");
            assert_eq!(
                one_line(&format!("a{c}b")),
                format!("a\\u{{{:x}}}b", c as u32)
            );
        }
        // Emoji sequences and several scripts need the joiners.
        let plain = "👩‍💻 क्‍ष";
        assert_eq!(first_hazard(plain), None);
        assert_eq!(first_hazard("ad\u{200b}min"), Some((3, '\u{200b}')));
        assert_eq!(html("x\u{e0041}y"), "x\u{fffd}y");
    }

    #[test]
    fn a_note_may_hold_line_breaks_and_tabs_and_nothing_else() {
        assert_eq!(first_hazard_in_lines("one\n\ttwo"), None);
        assert_eq!(first_hazard_in_lines("a\r\nb"), Some((2, '\r')));
        assert_eq!(first_hazard_in_lines("a\nb\u{2028}"), Some((4, '\u{2028}')));
        assert_eq!(first_hazard_in_lines("\u{202e}"), Some((1, '\u{202e}')));
    }

    #[test]
    fn json_text_escapes_hazards_and_decodes_to_the_same_value() {
        let value = serde_json::json!({
            "topic": "a\u{2028}b\u{202e}c\u{7f}\u{85}\u{200b}\u{e0041}\n\u{1b}",
            "plain": "Zürich 👩‍💻",
        });
        let raw = serde_json::to_string(&value).unwrap();
        let shown = json(raw);
        assert!(!shown.chars().any(is_hazard), "{shown}");
        assert!(
            shown.contains("\\u2028") && shown.contains("\\udb40\\udc41"),
            "{shown}"
        );
        assert!(shown.contains("Zürich 👩‍💻"));
        let back: serde_json::Value = serde_json::from_str(&shown).unwrap();
        assert_eq!(back, value);
        assert_eq!(json("{\"a\":1}".to_owned()), "{\"a\":1}");
    }

    use proptest::strategy::Strategy as _;

    proptest::proptest! {
        /// The fast check and a walk through every character agree, on text
        /// mixing long ASCII runs, accents, emoji and hazards anywhere.
        #[test]
        fn the_fast_check_finds_what_a_walk_through_every_character_finds(
            parts in proptest::collection::vec(
                proptest::prop_oneof![
                    "[ -~]{0,150}",
                    proptest::sample::select(vec![
                        "é", "—", "漢", "👩‍💻", "\u{7f}", "\u{85}", "\u{202e}", "\u{2028}",
                        "\u{e0041}", "\u{1b}", "\n", "\u{feff}", "\u{200d}",
                    ]).prop_map(str::to_owned),
                ],
                0..12,
            )
        ) {
            let s: String = parts.concat();
            proptest::prop_assert_eq!(has_hazard(&s), s.chars().any(is_hazard));
        }
    }

    #[test]
    fn a_hazard_is_found_wherever_it_stands_after_plain_ascii() {
        for hazard in ['\u{7f}', '\u{1b}', '\u{85}', '\u{202e}', '\u{e0041}'] {
            for at in [0, 1, 63, 64, 200] {
                let s = format!("{}{hazard}{}", "a".repeat(at), "b".repeat(70));
                assert!(has_hazard(&s), "{hazard:?} at {at}");
                // Other non-ASCII text before it does not hide it.
                assert!(has_hazard(&format!("é{s}")), "{hazard:?} after é, at {at}");
            }
        }
        assert!(!has_hazard(&format!(
            "{}Zürich 👩‍💻{}",
            "a".repeat(100),
            "b".repeat(100)
        )));
        assert!(!has_hazard(""));
    }
}
