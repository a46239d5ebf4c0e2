//! FTS5's `bm25()` for a query of one phrase, computed outside SQLite.
//!
//! `search_messages` orders hits by `bm25(bodies_fts)`. Asking FTS5 for it costs
//! a second evaluation of the whole query per statement (the phrase's document
//! count, for its IDF); a one-phrase query already knows that count from its
//! own matches, so the score can be computed here. The arithmetic is FTS5's
//! (`fts5Bm25Function`, default weights), operation for operation, so the
//! doubles and therefore the order are the same.

/// FTS5's `k1`.
const K1: f64 = 1.2;
/// FTS5's `b`.
const B: f64 = 0.75;

/// What bm25 needs about the whole table and the query, fixed for one search.
#[derive(Clone, Copy, Debug)]
pub struct Bm25 {
    idf: f64,
    avgdl: f64,
}

impl Bm25 {
    /// `rows` and `tokens`: the table's row count and total token count over
    /// all columns (FTS5's averages record); `hits`: rows holding the phrase.
    pub fn new(rows: i64, tokens: i64, hits: i64) -> Self {
        let avgdl = tokens as f64 / rows as f64;
        let mut idf = (((rows - hits) as f64 + 0.5) / (hits as f64 + 0.5)).ln();
        if idf <= 0.0 {
            idf = 1e-6;
        }
        Self { idf, avgdl }
    }

    /// The score of a row where the phrase occurs `freq` times, `size` tokens
    /// long over all columns. Lower is better, as FTS5 returns it.
    pub fn score(&self, freq: usize, size: usize) -> f64 {
        let f = freq as f64;
        let d = size as f64;
        let score = self.idf * ((f * (K1 + 1.0)) / (f + K1 * (1.0 - B + B * d / self.avgdl)));
        // FTS5 returns `-1.0 * score`: the same double as the negation.
        -score
    }
}
