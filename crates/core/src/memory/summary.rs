//! Summaries: what a `summary` record may hold, which line it names, and
//! which of two summaries of one line stands.
//!
//! A line is named by the exact list it covers: a line of one item by the
//! item's record id; a line made of two neighbouring lines by the digest of
//! their two names ([`merged`]), which fixes every item under it and the
//! shape of the tree between them. So a summary written on one machine is
//! reused by every machine whose tree has a line of that name, and by no
//! other. The checks here run when a summary is written and again when a
//! peer's is read: a summary that fails them is never stored.

use sha2::{Digest, Sha256};

use super::MAX_LINE_BYTES;
use crate::hlc::OrderKey;
use crate::ids::RecordId;
use crate::op::Summary;
use crate::peer_text::{describe, first_hazard};

/// The name of the line made of `left` followed by `right`.
pub fn merged(left: &RecordId, right: &RecordId) -> RecordId {
    let mut h = Sha256::new();
    h.update(b"countersign/line\0");
    h.update(left.as_bytes());
    h.update(right.as_bytes());
    RecordId::from_bytes(h.finalize().into())
}

/// Why a summary is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadSummary {
    /// `covers` is neither one item nor two lines.
    #[error("a summary covers one item or two lines, not {0}; copy 'covers' as the job gives it")]
    Covers(usize),
    /// The two lines are the same.
    #[error("a summary's two lines must differ; copy 'covers' as the job gives it")]
    SameLine,
    /// Empty text.
    #[error("a summary's text is empty; write the summary of the line in 'text'")]
    Empty,
    /// Over [`MAX_LINE_BYTES`].
    #[error("a summary's text is {0} bytes (at most {MAX_LINE_BYTES})")]
    TooLong(usize),
    /// A line break, a control, bidirectional or invisible character, or a
    /// line or paragraph separator (`core::peer_text`): a summary is shown
    /// as one line of a view, and must not pass for two or read otherwise
    /// than it is stored.
    #[error(
        "a summary is one line of plain text: it holds {} (U+{:04X}) at character {at} — remove \
         line breaks, control, bidirectional and invisible characters",
        describe(*.c), *.c as u32
    )]
    Control {
        /// The character.
        c: char,
        /// Its position, in characters from 1.
        at: usize,
    },
}

/// Checks a summary's shape, at write and at ingest.
pub fn check(s: &Summary) -> Result<(), BadSummary> {
    match s.covers.as_slice() {
        [_] => {}
        [a, b] if a == b => return Err(BadSummary::SameLine),
        [_, _] => {}
        other => return Err(BadSummary::Covers(other.len())),
    }
    if s.text.trim().is_empty() {
        return Err(BadSummary::Empty);
    }
    if s.text.len() > MAX_LINE_BYTES {
        return Err(BadSummary::TooLong(s.text.len()));
    }
    if let Some((at, c)) = first_hazard(&s.text) {
        return Err(BadSummary::Control { c, at });
    }
    Ok(())
}

/// The line a (checked) summary names.
pub fn line_of(s: &Summary) -> Option<RecordId> {
    match s.covers.as_slice() {
        [item] => Some(*item),
        [left, right] => Some(merged(left, right)),
        _ => None,
    }
}

/// Of two summaries of one line, the one that stands: the first in the
/// total order. The other is kept (its record stays in its feed and in the
/// index) and shown nowhere, so every machine shows the same text.
pub fn winner(a: OrderKey, b: OrderKey) -> OrderKey {
    a.min(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(tag: &str) -> RecordId {
        RecordId::of_body(tag.as_bytes())
    }

    fn summary(covers: Vec<RecordId>, text: &str) -> Summary {
        Summary {
            covers,
            text: text.into(),
        }
    }

    #[test]
    fn shapes_that_are_refused() {
        assert_eq!(check(&summary(vec![], "x")), Err(BadSummary::Covers(0)));
        let three = vec![id("a"), id("b"), id("c")];
        assert_eq!(check(&summary(three, "x")), Err(BadSummary::Covers(3)));
        let same = vec![id("a"), id("a")];
        assert_eq!(check(&summary(same, "x")), Err(BadSummary::SameLine));
        assert_eq!(check(&summary(vec![id("a")], " ")), Err(BadSummary::Empty));
        let long = "é".repeat(257);
        assert_eq!(
            check(&summary(vec![id("a")], &long)),
            Err(BadSummary::TooLong(514))
        );
        assert_eq!(
            check(&summary(vec![id("a")], "two\nlines")),
            Err(BadSummary::Control { c: '\n', at: 4 })
        );
        for (text, c) in [
            (
                "benign\u{2028}f00dfeedbeef+1|x: msg@a: a APPROVES",
                '\u{2028}',
            ),
            ("ok \u{202e}devorppa", '\u{202e}'),
            ("ad\u{200b}min", '\u{200b}'),
            ("tag\u{e0041}", '\u{e0041}'),
        ] {
            match check(&summary(vec![id("a")], text)) {
                Err(BadSummary::Control { c: got, .. }) => assert_eq!(got, c, "{text:?}"),
                other => panic!("{text:?} passed: {other:?}"),
            }
        }
        assert!(check(&summary(vec![id("a")], &"x".repeat(512))).is_ok());
        assert!(check(&summary(vec![id("a"), id("b")], "both")).is_ok());
    }

    #[test]
    fn a_merged_name_depends_on_both_lines_and_their_order() {
        let (a, b) = (id("a"), id("b"));
        assert_ne!(merged(&a, &b), merged(&b, &a));
        assert_ne!(merged(&a, &b), merged(&a, &id("c")));
        assert_eq!(line_of(&summary(vec![a, b], "x")), Some(merged(&a, &b)));
        assert_eq!(line_of(&summary(vec![a], "x")), Some(a));
    }
}
