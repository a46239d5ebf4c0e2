//! FTS5's `snippet()` for a query of one phrase, computed outside SQLite.
//!
//! `search_messages` shows `snippet(bodies_fts, -1, '[', ']', '…', 12)` for each
//! hit. SQLite can only evaluate it on the cursor that ran the query, for
//! every match before the best ones are kept; for a one-phrase query the
//! phrase instances are simply its occurrences ([`TrigramText::occurrences`]),
//! so the same text is cut here, for the returned rows only.
//!
//! This follows `fts5SnippetFunction`, `fts5SnippetScore`,
//! `fts5SentenceFinderCb`, `fts5CInstIterNext` and `fts5HighlightCb` of SQLite
//! 3.54 step by step (token offsets as `i64`, C's truncating division), down to
//! their quirks: text is appended as C strings are, so it stops at a NUL. The
//! integration tests `snippet_and_bm25_match_fts5` and
//! `runs_and_repeats_match_fts5` (search_snippet) compare the two over many
//! texts and phrases, and `store::index::fts_layout` compares them once per process
//! with the linked SQLite.

use super::trigram::{TrigramText, phrase_tokens};

/// The markers and window of a snippet.
#[derive(Clone, Copy, Debug)]
pub struct SnippetStyle<'s> {
    /// Opens a highlighted instance.
    pub open: &'s str,
    /// Closes it.
    pub close: &'s str,
    /// Marks text left out before or after the window.
    pub ellipsis: &'s str,
    /// Most tokens in the window (FTS5 clamps it to 0..=64).
    pub tokens: i64,
}

/// `snippet(tbl, -1, open, close, ellipsis, tokens)` for a row whose columns
/// are `cols` (in table order) and a query that is the one phrase `needle`
/// (folded characters, 3 or more).
pub fn snippet(cols: &[TrigramText<'_>], needle: &[char], style: &SnippetStyle<'_>) -> String {
    let phrase = phrase_tokens(needle) as i64;
    let n_token = style.tokens.clamp(0, 64);
    let instances: Vec<Vec<i64>> = cols.iter().map(|c| c.instances(needle)).collect();

    let mut best_score = 0;
    let mut best_col = 0;
    let mut best_start = 0;
    let mut col_size = 0;
    // No window scores more than this (every token of it an instance, at the
    // column's first sentence): once reached, later windows cannot win.
    let ceiling = 1000 + n_token - 1 + 120;
    'columns: for (i, col) in cols.iter().enumerate() {
        let doc_size = col.tokens() as i64;
        // Read only as far as the instances reach: the loop may stop early.
        let mut sentences = Sentences::new(col).peekable();
        let mut first = sentences.next().unwrap_or(0);
        // FTS5 scores a window at each instance and at the start of the
        // sentence holding it, recounting every instance each time: the
        // square of their number, minutes for a run of one character. Both
        // kinds of window only move forward here, so two cursors give the
        // same scores in one pass.
        let mut at_instance = Windows::new(&instances[i], phrase, n_token);
        let mut at_sentence = Windows::new(&instances[i], phrase, n_token);
        for &io in &instances[i] {
            let (score, adj) = at_instance.score(doc_size, io);
            if score > best_score {
                (best_score, best_col, best_start, col_size) = (score, i, adj, doc_size);
            }
            // A column holding an instance has a token, so a first sentence.
            if doc_size > n_token {
                // The start of the sentence holding the instance: FTS5 looks
                // for it from the first sentence each time; instances come in
                // order, so it only moves forward.
                while let Some(next) = sentences.next_if(|&s| s <= io) {
                    first = next;
                }
                if first < io {
                    let (score, _) = at_sentence.score(doc_size, first);
                    let score = score + if first == 0 { 120 } else { 100 };
                    if score > best_score {
                        (best_score, best_col, best_start, col_size) = (score, i, first, doc_size);
                    }
                }
            }
            if best_score >= ceiling {
                break 'columns;
            }
        }
    }

    let Some(col) = cols.get(best_col) else {
        return String::new();
    };
    if col_size == 0 {
        col_size = col.tokens() as i64;
    }
    let mut h = Highlight {
        text: col.text(),
        out: String::new(),
        iter: Coalesced::new(&instances[best_col], phrase),
        range_start: best_start,
        range_end: best_start + n_token - 1,
        off: 0,
        open: false,
        style,
    };
    if best_start > 0 {
        h.out.push_str(style.ellipsis);
    }
    while h.iter.start >= 0 && h.iter.start < best_start {
        h.iter.next();
    }
    // FTS5 hands every token of the column to the highlighter, which ignores
    // those outside the window; only the window's are visited here.
    let window = best_start.max(0)..(h.range_end + 1).clamp(0, col.tokens() as i64);
    for k in window {
        let (s, e) = col.token_bytes(k as usize);
        h.token(k, s, e);
    }
    if h.open {
        h.out.push_str(style.close);
    }
    if h.range_end >= col_size - 1 {
        let rest = h.text.len() as i64 - h.off as i64;
        append(&mut h.out, h.text, h.off, rest);
    } else {
        h.out.push_str(style.ellipsis);
    }
    h.out
}

/// About how many steps FTS5's own `snippet()` takes on a row, beyond reading
/// it once, when the query's phrases occur `instances` times in its columns
/// `cols`: it scores a window at each instance and at the start of that
/// instance's sentence, recounting every instance each time, and looks back
/// from each token over the whitespace before it. [`snippet`] does the same
/// work in linear time; a caller asking FTS5 for a snippet of a query this
/// module cannot cut (several phrases) weighs this first.
pub fn fts5_snippet_cost(cols: &[&str], instances: u64) -> u64 {
    let mut sentences = 0u64;
    let mut looked_back = 0u64;
    for text in cols {
        let mut run = 0u64;
        for &b in text.as_bytes() {
            if matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
                run += 1;
                looked_back = looked_back.saturating_add(run);
            } else {
                run = 0;
                sentences += u64::from(b == b'.' || b == b':');
            }
        }
    }
    instances
        .saturating_mul(instances)
        .saturating_mul(2)
        .saturating_add(instances.saturating_mul(sentences))
        .saturating_add(looked_back)
}

/// `fts5SnippetScore` over one column's instances (in order), for windows of
/// `n_token` tokens whose starts never decrease: the instances inside the
/// current window are `instances[lo..hi]`, and both ends only move forward.
struct Windows<'i> {
    instances: &'i [i64],
    phrase: i64,
    n_token: i64,
    lo: usize,
    hi: usize,
    last_pos: i64,
}

impl<'i> Windows<'i> {
    fn new(instances: &'i [i64], phrase: i64, n_token: i64) -> Self {
        Self {
            instances,
            phrase,
            n_token,
            lo: 0,
            hi: 0,
            last_pos: i64::MIN,
        }
    }

    /// The score of the window from `pos` (1000 for the phrase's first
    /// instance in it, 1 for each further one) and where a window centred on
    /// those instances would start.
    fn score(&mut self, doc_size: i64, pos: i64) -> (i64, i64) {
        if pos < self.last_pos {
            // Not a use this module makes; start over rather than miscount.
            (self.lo, self.hi) = (0, 0);
        }
        self.last_pos = pos;
        let end = pos + self.n_token;
        let inst = self.instances;
        while self.lo < inst.len() && inst[self.lo] < pos {
            self.lo += 1;
        }
        self.hi = self.hi.max(self.lo);
        while self.hi < inst.len() && inst[self.hi] < end {
            self.hi += 1;
        }
        let inside = &inst[self.lo..self.hi];
        let (score, first, last) = match (inside.first(), inside.last()) {
            (Some(&first), Some(&last)) => {
                (1000 + inside.len() as i64 - 1, first, last + self.phrase)
            }
            _ => (0, -1, 0),
        };
        let n_token = self.n_token;
        let mut adj = first - (n_token - (last - first)) / 2;
        if adj + n_token > doc_size {
            adj = doc_size - n_token;
        }
        if adj < 0 {
            adj = 0;
        }
        (score, adj)
    }
}

/// `fts5SentenceFinderCb`: the tokens that start a sentence (the first one,
/// and each whose text follows whitespace after a `.` or `:`), in order, read
/// only as far as asked.
///
/// FTS5 looks back from each token over the whitespace before it, which costs
/// the square of a long run of spaces; this walks the text once, remembering
/// the last byte that is not whitespace.
struct Sentences<'c, 't> {
    col: &'c TrigramText<'t>,
    /// The next token to look at.
    k: usize,
    /// Bytes of the text walked so far.
    read: usize,
    /// The last of them that is not whitespace.
    last_solid: Option<u8>,
}

impl<'c, 't> Sentences<'c, 't> {
    fn new(col: &'c TrigramText<'t>) -> Self {
        Self {
            col,
            k: 0,
            read: 0,
            last_solid: None,
        }
    }
}

impl Iterator for Sentences<'_, '_> {
    type Item = i64;

    fn next(&mut self) -> Option<i64> {
        let bytes = self.col.text().as_bytes();
        let is_space = |c: u8| matches!(c, b' ' | b'\t' | b'\n' | b'\r');
        while self.k < self.col.tokens() {
            let k = self.k;
            self.k += 1;
            if k == 0 {
                return Some(0);
            }
            let (start, _) = self.col.token_bytes(k);
            while self.read < start {
                if !is_space(bytes[self.read]) {
                    self.last_solid = Some(bytes[self.read]);
                }
                self.read += 1;
            }
            let after_space = is_space(bytes[start - 1]);
            if after_space && matches!(self.last_solid, Some(b'.' | b':')) {
                return Some(k as i64);
            }
        }
        None
    }
}

/// `fts5CInstIterNext`: the phrase's instances in one column with overlapping
/// ones merged, as (first token, last token); -1 when exhausted.
struct Coalesced<'i> {
    instances: &'i [i64],
    phrase: i64,
    next: usize,
    start: i64,
    end: i64,
}

impl<'i> Coalesced<'i> {
    fn new(instances: &'i [i64], phrase: i64) -> Self {
        let mut it = Self {
            instances,
            phrase,
            next: 0,
            start: -1,
            end: -1,
        };
        it.next();
        it
    }

    fn next(&mut self) {
        self.start = -1;
        self.end = -1;
        while let Some(&io) = self.instances.get(self.next) {
            let end = io - 1 + self.phrase;
            if self.start < 0 {
                self.start = io;
                self.end = end;
            } else if io <= self.end {
                self.end = self.end.max(end);
            } else {
                break;
            }
            self.next += 1;
        }
    }
}

/// `HighlightContext` with `fts5HighlightCb`, restricted to a window as
/// snippet() uses it.
struct Highlight<'t, 'i, 's> {
    text: &'t str,
    out: String,
    iter: Coalesced<'i>,
    range_start: i64,
    range_end: i64,
    /// Bytes of `text` copied so far.
    off: usize,
    open: bool,
    style: &'s SnippetStyle<'s>,
}

impl Highlight<'_, '_, '_> {
    fn token(&mut self, pos: i64, start: usize, end: usize) {
        if pos < self.range_start || pos > self.range_end {
            return;
        }
        if self.range_start != 0 && pos == self.range_start {
            self.off = start;
        }
        if self.open && (pos <= self.iter.start || self.iter.start < 0) && start > self.off {
            self.out.push_str(self.style.close);
            self.open = false;
        }
        if pos == self.iter.start && !self.open {
            self.copy_to(start);
            self.out.push_str(self.style.open);
            self.off = start;
            self.open = true;
        }
        if pos == self.iter.end {
            if !self.open {
                self.out.push_str(self.style.open);
                self.open = true;
            }
            self.copy_to(end);
            self.off = end;
            self.iter.next();
        }
        if pos == self.range_end {
            if self.open {
                if self.iter.start >= 0 && pos >= self.iter.start {
                    self.copy_to(end);
                    self.off = end;
                }
                self.out.push_str(self.style.close);
                self.open = false;
            }
            self.copy_to(end);
            self.off = end;
        }
    }

    /// Appends the text from `off` to `to` (C's `%.*s` of the difference).
    fn copy_to(&mut self, to: usize) {
        append(
            &mut self.out,
            self.text,
            self.off,
            to as i64 - self.off as i64,
        );
    }
}

/// `fts5HighlightAppend(…, &text[from], n)`: `n` bytes, or up to the end when
/// negative, and in either case no further than a NUL (a C string).
fn append(out: &mut String, text: &str, from: usize, n: i64) {
    let rest = &text[from.min(text.len())..];
    let upto = if n < 0 {
        rest.len()
    } else {
        (n as usize).min(rest.len())
    };
    let piece = &rest[..upto];
    let piece = piece.find('\0').map_or(piece, |z| &piece[..z]);
    out.push_str(piece);
}

#[cfg(test)]
mod tests {
    use super::*;

    const STYLE: SnippetStyle<'static> = SnippetStyle {
        open: "[",
        close: "]",
        ellipsis: "…",
        tokens: 12,
    };

    fn cut(topic: &str, body: &str, needle: &str) -> String {
        let cols = [TrigramText::new(topic), TrigramText::new(body)];
        let needle: Vec<char> = needle.chars().collect();
        snippet(&cols, &needle, &STYLE)
    }

    /// The expected snippets are FTS5's (and this module's before it was made
    /// linear) for the same texts at 4 KiB, where both answer in well under a
    /// second; at 256 KiB FTS5's algorithm takes minutes.
    #[test]
    fn a_run_of_one_character_costs_its_length() {
        let started = std::time::Instant::now();
        for kib in [4, 256] {
            let run = "x".repeat(kib * 1024);
            assert_eq!(cut("t", &run, "xxx"), "[xxxxxxxxxxxxxx]…", "{kib} KiB");
            let spaces = format!("a{}b. c", " ".repeat(kib * 1024));
            assert_eq!(cut("t", &spaces, "b. "), "…          [b. ]c", "{kib} KiB");
            let words = "abc ".repeat(kib * 256);
            assert_eq!(
                cut("t", &words, "abc"),
                "[abc] [abc] [abc] ab…",
                "{kib} KiB"
            );
            let sentences = "Go. ".repeat(kib * 256);
            assert_eq!(
                cut("t", &sentences, "go."),
                "[Go.] [Go.] [Go.] Go…",
                "{kib} KiB"
            );
        }
        // Generous for an unoptimized build: the quadratic version took over a
        // minute on 64 KiB alone.
        assert!(started.elapsed().as_secs() < 20, "{:?}", started.elapsed());
    }

    #[test]
    fn fts5s_cost_grows_with_the_square_of_instances_and_space_runs() {
        assert_eq!(fts5_snippet_cost(&["t", "plain words here"], 1), 2 + 2);
        // 4 KiB of x: FTS5 took a quarter of a second over it.
        assert_eq!(
            fts5_snippet_cost(&["t", &"x".repeat(4096)], 4094),
            2 * 4094 * 4094
        );
        // Sentences: each instance also looks for its sentence.
        assert_eq!(fts5_snippet_cost(&["Go. Go. Go."], 3), 18 + 3 * 3 + 2);
        // A run of n spaces: 1 + 2 + … + n steps looking back.
        assert_eq!(
            fts5_snippet_cost(&[&format!("a{}b", " ".repeat(100))], 1),
            2 + 5050
        );
    }
}
