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
    chars: Chars,
}

/// The characters the tokenizer reads, folded, and where each starts.
#[derive(Debug)]
enum Chars {
    /// ASCII without NUL (most text): character `k` is byte `k`, and folding
    /// is `to_ascii_lowercase`, so no offsets need keeping.
    Ascii(Vec<u8>),
    /// Anything else: the byte offset of each character read (NULs skipped),
    /// and those characters folded.
    Wide {
        starts: Vec<usize>,
        folded: Vec<char>,
    },
}

impl<'a> TrigramText<'a> {
    /// Reads `text`.
    pub fn new(text: &'a str) -> Self {
        let bytes = text.as_bytes();
        if text.is_ascii() && !bytes.contains(&0) {
            let folded = bytes.iter().map(u8::to_ascii_lowercase).collect();
            return Self {
                text,
                chars: Chars::Ascii(folded),
            };
        }
        let starts: Vec<usize> = text
            .char_indices()
            .filter(|&(_, c)| c != '\0')
            .map(|(i, _)| i)
            .collect();
        let folded: Vec<char> = fold(text).chars().collect();
        debug_assert_eq!(starts.len(), folded.len());
        Self {
            text,
            chars: Chars::Wide { starts, folded },
        }
    }

    /// The original text.
    pub fn text(&self) -> &'a str {
        self.text
    }

    /// How many characters the tokenizer reads.
    fn len(&self) -> usize {
        match &self.chars {
            Chars::Ascii(folded) => folded.len(),
            Chars::Wide { folded, .. } => folded.len(),
        }
    }

    /// How many tokens FTS5 counts for this column (its `docsize`).
    pub fn tokens(&self) -> usize {
        self.len().saturating_sub(2)
    }

    /// Byte range of token `k` in the original text, as the tokenizer reports it.
    pub fn token_bytes(&self, k: usize) -> (usize, usize) {
        match &self.chars {
            Chars::Ascii(folded) => (k, (k + 3).min(folded.len())),
            Chars::Wide { starts, .. } => {
                let end = starts.get(k + 3).copied().unwrap_or(self.text.len());
                (starts[k], end)
            }
        }
    }

    /// The token offset of every occurrence of `needle` (folded, 3 characters
    /// or more), overlapping ones included, in order: FTS5's phrase instances.
    /// Linear in the text and the needle together, whatever they hold.
    pub fn occurrences(&self, needle: &[char]) -> Vec<usize> {
        let mut out = Vec::new();
        self.each_occurrence(needle, |k| out.push(k));
        out
    }

    /// [`Self::occurrences`] as FTS5's token offsets (`i64`), in a list
    /// allocated once: a run of one character holds one at every offset.
    pub(crate) fn instances(&self, needle: &[char]) -> Vec<i64> {
        let mut out = Vec::with_capacity(if needle.len() < 3 { 0 } else { self.tokens() });
        self.each_occurrence(needle, |k| out.push(k as i64));
        out
    }

    fn each_occurrence(&self, needle: &[char], found: impl FnMut(usize)) {
        if needle.len() < 3 {
            return;
        }
        match &self.chars {
            Chars::Ascii(folded) => {
                // A folded character beyond ASCII never equals one of these.
                if needle.iter().all(char::is_ascii) {
                    let needle: Vec<u8> = needle.iter().map(|&c| c as u8).collect();
                    find_all(folded, &needle, found);
                }
            }
            Chars::Wide { folded, .. } => find_all(folded, needle, found),
        }
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
    if needle.len() < 3 {
        return (0, tokens);
    }
    scratch.clear();
    scratch.extend(bytes.iter().map(u8::to_ascii_lowercase));
    let mut count = 0;
    find_all(scratch, needle, |_| count += 1);
    (count, tokens)
}

/// Calls `found` with the start of every occurrence of `needle` in `hay`,
/// overlapping ones included, in order.
///
/// Knuth–Morris–Pratt: each element of `hay` is compared a bounded number of
/// times, so the cost is linear in `hay` plus `needle` whatever they hold. A
/// naive check at every candidate costs their product, which a run of one
/// character turns into the square of the run (`xxx…x` in a 256 KiB body of
/// `x`). Between partial matches it skips to the next element equal to the
/// needle's first with `position`, as fast as the naive scan on ordinary text.
fn find_all<T: PartialEq>(hay: &[T], needle: &[T], mut found: impl FnMut(usize)) {
    let Some(first) = needle.first() else {
        return;
    };
    if needle.len() > hay.len() {
        return;
    }
    // border[i]: length of the longest proper prefix of needle[..=i] that is
    // also its suffix.
    let mut border = vec![0; needle.len()];
    let mut k = 0;
    for i in 1..needle.len() {
        while k > 0 && needle[i] != needle[k] {
            k = border[k - 1];
        }
        if needle[i] == needle[k] {
            k += 1;
        }
        border[i] = k;
    }
    let mut matched = 0;
    let mut i = 0;
    while i < hay.len() {
        if matched == 0 {
            match hay[i..].iter().position(|c| c == first) {
                Some(p) => i += p,
                None => return,
            }
        }
        let c = &hay[i];
        while matched > 0 && *c != needle[matched] {
            matched = border[matched - 1];
        }
        if *c == needle[matched] {
            matched += 1;
        }
        if matched == needle.len() {
            found(i + 1 - needle.len());
            matched = border[matched - 1];
        }
        i += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The naive definition the linear search must agree with.
    fn naive(hay: &[u8], needle: &[u8]) -> Vec<usize> {
        if needle.is_empty() || needle.len() > hay.len() {
            return Vec::new();
        }
        (0..=hay.len() - needle.len())
            .filter(|&i| hay[i..].starts_with(needle))
            .collect()
    }

    fn all(hay: &[u8], needle: &[u8]) -> Vec<usize> {
        let mut out = Vec::new();
        find_all(hay, needle, |k| out.push(k));
        out
    }

    #[test]
    fn finds_what_the_naive_search_finds() {
        let hays: [&[u8]; 6] = [
            b"",
            b"aaaaaaa",
            b"abababab",
            b"abaabaabaab",
            b"the key, the keys, then the key",
            b"xaxaxxaaxaxa",
        ];
        let needles: [&[u8]; 9] = [
            b"a", b"aa", b"aaa", b"aba", b"abab", b"key", b"the", b"xax", b"aab",
        ];
        for hay in hays {
            for needle in needles {
                assert_eq!(all(hay, needle), naive(hay, needle), "{hay:?} {needle:?}");
            }
        }
        // Exhaustive over a two-letter alphabet.
        for n in 0..10u32 {
            for h in 0..(1u32 << n) {
                let hay: Vec<u8> = (0..n).map(|b| b'a' + ((h >> b) & 1) as u8).collect();
                for m in 1..4u32 {
                    for q in 0..(1u32 << m) {
                        let needle: Vec<u8> = (0..m).map(|b| b'a' + ((q >> b) & 1) as u8).collect();
                        assert_eq!(all(&hay, &needle), naive(&hay, &needle));
                    }
                }
            }
        }
    }

    /// A run of one character holds a phrase of it at every offset; finding
    /// them all must cost what any text of that length costs. The naive
    /// search compared about 4096 × 256 Ki characters here.
    #[test]
    fn a_long_phrase_in_a_long_run_is_linear() {
        let run = "x".repeat(256 * 1024);
        let needle = "x".repeat(4096);
        let mut scratch = Vec::new();
        let started = std::time::Instant::now();
        let (count, tokens) = phrase_count(&run, &needle, &mut scratch);
        assert_eq!((count, tokens), (256 * 1024 - 4096 + 1, 256 * 1024 - 2));
        let text = TrigramText::new(&run);
        let needle: Vec<char> = needle.chars().collect();
        assert_eq!(text.occurrences(&needle).len(), count);
        let non_ascii = "é".repeat(64 * 1024);
        let t = TrigramText::new(&non_ascii);
        let (n, _) = phrase_count(&non_ascii, &"é".repeat(1000), &mut scratch);
        assert_eq!(n, 64 * 1024 - 1000 + 1);
        assert_eq!(t.tokens(), 64 * 1024 - 2);
        // Generous even for an unoptimized build: the naive search took minutes.
        assert!(started.elapsed().as_secs() < 20, "{:?}", started.elapsed());
    }
}
