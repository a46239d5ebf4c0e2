//! A column of text as FTS5's trigram tokenizer sees it, and where a phrase
//! occurs in it: what [`super::bm25`] and [`super::snippet`] need to rank and
//! cut a hit without asking FTS5 for it again.
//!
//! The tokenizer (`tokenize='trigram'`, its defaults) reads the text one
//! character at a time, skips NULs, folds each character ([`fold`]) and emits
//! one token per run of three characters: token `k` covers characters
//! `k..k + 3`, from the byte where character `k` starts to the byte where
//! character `k + 3` starts (or the end of the text). A column of `n` such
//! characters therefore holds `n - 2` tokens (none under 3), and a phrase of
//! `m >= 3` characters is `m - 2` consecutive tokens: it occurs at token `k`
//! exactly when the folded characters `k..k + m` spell it.

use super::query::fold;

/// One column's text, tokenized as the trigram tokenizer does.
#[derive(Debug)]
pub struct TrigramText<'a> {
    text: &'a str,
    /// Byte offset of each character the tokenizer reads (NULs skipped).
    starts: Vec<usize>,
    /// Those characters, folded.
    folded: Vec<char>,
}

impl<'a> TrigramText<'a> {
    /// Reads `text`.
    pub fn new(text: &'a str) -> Self {
        let starts: Vec<usize> = text
            .char_indices()
            .filter(|&(_, c)| c != '\0')
            .map(|(i, _)| i)
            .collect();
        let folded: Vec<char> = fold(text).chars().collect();
        debug_assert_eq!(starts.len(), folded.len());
        Self {
            text,
            starts,
            folded,
        }
    }

    /// The original text.
    pub fn text(&self) -> &'a str {
        self.text
    }

    /// How many tokens FTS5 counts for this column (its `docsize`).
    pub fn tokens(&self) -> usize {
        self.folded.len().saturating_sub(2)
    }

    /// Byte range of token `k` in the original text, as the tokenizer reports it.
    pub fn token_bytes(&self, k: usize) -> (usize, usize) {
        let end = self.starts.get(k + 3).copied().unwrap_or(self.text.len());
        (self.starts[k], end)
    }

    /// The token offset of every occurrence of `needle` (folded, 3 characters
    /// or more), overlapping ones included, in order: FTS5's phrase instances.
    pub fn occurrences(&self, needle: &[char]) -> Vec<usize> {
        if needle.len() < 3 || needle.len() > self.folded.len() {
            return Vec::new();
        }
        self.folded
            .windows(needle.len())
            .enumerate()
            .filter(|(_, w)| *w == needle)
            .map(|(k, _)| k)
            .collect()
    }
}

/// How many tokens a phrase of this folded text spans.
pub fn phrase_tokens(needle: &[char]) -> usize {
    needle.len().saturating_sub(2)
}

/// How often the folded `needle` (3 characters or more) occurs in `text` as
/// FTS5 counts instances, and how many tokens `text` holds: what bm25 needs of
/// one column. The same as [`TrigramText::occurrences`] and
/// [`TrigramText::tokens`], without building one: a search ranks every
/// matching row but cuts snippets for the returned ones only, and most text
/// is ASCII, where folding is `to_ascii_lowercase` and characters are bytes.
pub fn phrase_count(text: &str, needle: &str, scratch: &mut Vec<u8>) -> (usize, usize) {
    let bytes = text.as_bytes();
    if !(text.is_ascii() && needle.is_ascii()) || bytes.contains(&0) {
        let t = TrigramText::new(text);
        let needle: Vec<char> = needle.chars().collect();
        return (t.occurrences(&needle).len(), t.tokens());
    }
    let needle = needle.as_bytes();
    let tokens = bytes.len().saturating_sub(2);
    let Some(&first) = needle.first() else {
        return (0, tokens);
    };
    if needle.len() < 3 {
        return (0, tokens);
    }
    scratch.clear();
    scratch.extend(bytes.iter().map(u8::to_ascii_lowercase));
    let mut count = 0;
    let mut from = 0;
    while let Some(p) = scratch
        .get(from..)
        .and_then(|s| s.iter().position(|&b| b == first))
    {
        let at = from + p;
        if scratch[at..].starts_with(needle) {
            count += 1;
        }
        from = at + 1;
    }
    (count, tokens)
}
