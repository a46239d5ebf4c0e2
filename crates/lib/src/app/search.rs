//! search_messages: ranked full-text search, with a scan for short terms.
//!
//! FTS5's trigram index cannot see a term shorter than 3 characters, so a
//! query holding one is answered by scanning the messages with the same
//! grammar and semantics (`match: "substring"` instead of `"fts"`).
//!
//! Ranked answers come from one of two paths with the same result: a query of
//! one phrase (a word, most searches) is ranked and cut here from the matching
//! rows' text (`one_phrase_hits`, which finds them through one of the
//! phrase's rarer trigrams when it can); any other query, or a phrase matching many
//! rows, leaves bm25 to FTS5 (`ranked_hits`) and asks it for the snippets of
//! the returned rows.
//!
//! Bodies are peer input, so every search has a bounded cost ([`Budget`]):
//! what it does with the text is linear in the bytes it examines, FTS5 is not
//! asked for what would cost it the square of a row (`index_cost`,
//! [`fts5_snippet_cost`]), and past the budget the answer is what was found,
//! marked truncated.

use std::collections::HashMap;

use super::budget::{Budget, Stop};
use super::refusal::{AppError, AppResult, check_limit};
use super::rows::{
    FieldsArg, Listing, MESSAGE_FIELDS, MESSAGE_HEADERS, MessageRow, MessageView, Projected,
    Projection, listing, project,
};
use super::session::Session;
use crate::core::bm25::Bm25;
use crate::core::query::{ScanReason, SearchQuery, fold};
use crate::core::snippet::{SnippetStyle, fts5_snippet_cost, snippet};
use crate::core::trigram::{TrigramText, phrase_count};
use crate::core::vocab::{DebtStatus, Kind};
use crate::store::index::{Index, PhraseHit, SearchScope};

/// The filters of search_messages.
#[derive(Clone, Debug, Default, serde::Deserialize, schemars::JsonSchema)]
pub struct SearchFilter {
    /// Only from this role.
    #[serde(default)]
    pub from_role: Option<String>,
    /// Only to this role.
    #[serde(default)]
    pub to_role: Option<String>,
    /// bug, feat, proc, status, question or answer.
    #[serde(default)]
    pub kind: Option<String>,
    /// Debt status: open or resolved.
    #[serde(default)]
    pub status: Option<String>,
}

/// What search_messages was asked for: the tool's parameters.
#[derive(Clone, Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct SearchRequest {
    /// Words (all must match), "phrases", OR, NOT, (), prefix*, topic: or body:.
    pub query: String,
    /// Which messages.
    #[serde(flatten)]
    pub filter: SearchFilter,
    /// How many hits, and which fields.
    #[serde(flatten)]
    pub page: super::request::Page<{ super::request::LIMIT_FIFTY }>,
}

/// Searches topic and body; best match first (scan: newest first). The
/// search spends at most `budget`: when it runs out, the answer holds the
/// hits found so far and says it was cut short; when the caller cancels, the
/// search ends with a refusal nobody waits for.
pub fn search_messages(
    s: &mut Session,
    query: &str,
    f: &SearchFilter,
    limit: i64,
    fields: Option<&FieldsArg>,
    budget: &mut Budget<'_>,
) -> AppResult<Listing<Projected<MessageView>>> {
    let q = SearchQuery::parse(query).map_err(|e| AppError::value(e.to_string()))?;
    let limit = check_limit(limit)?;
    let proj = Projection::parse(fields, MESSAGE_FIELDS, MESSAGE_HEADERS)?;
    let mut scan = q.needs_scan();
    if scan {
        q.check_scannable()
            .map_err(|e| AppError::value(e.to_string()))?;
    }
    // Checked before any work, so a refusal costs nothing.
    let scope = scope(f)?;
    s.catch_up_for_search()?;
    let ix = s.index();
    if !scan && index_cost(ix, &q)? > INDEX_STEPS {
        q.check_scannable_for(ScanReason::Cost)
            .map_err(|e| AppError::value(e.to_string()))?;
        scan = true;
    }
    let fts = q.fts_match();
    let one_phrase = match q.single_phrase() {
        Some(needle) if !scan => one_phrase_hits(
            ix,
            needle,
            q.index_terms().concat(),
            &fts,
            &scope,
            limit,
            budget,
        )
        .map_err(stopped)?,
        _ => None,
    };
    let mut hits = match one_phrase {
        Some(hits) => hits,
        None if scan => scan_hits(ix, &q, &scope, limit, budget).map_err(stopped)?,
        None => ranked_hits(ix, &q, &fts, &scope, limit, budget).map_err(stopped)?,
    };
    let overflow = hits.len() > limit;
    hits.truncate(limit);
    let how = if scan { "substring" } else { "fts" };
    let out = hits
        .into_iter()
        .map(|(row, snippet)| {
            let m = MessageView {
                snippet: Some(snippet),
                match_: Some(how.to_owned()),
                ..MessageView::of(row, None)
            };
            project(proj.as_ref(), m)
        })
        .collect();
    if budget.exhausted() {
        let mut answer = listing(out, limit, true, WORK_NOTE);
        if let Some(t) = &mut answer.truncated {
            t.reason = Some("work".to_owned());
        }
        return Ok(answer);
    }
    Ok(listing(
        out,
        limit,
        overflow,
        "more messages match; refine the query or raise 'limit' (at most 1000)",
    ))
}

/// The note of an answer cut short by the budget.
const WORK_NOTE: &str = "the search stopped early: the text it had to examine was too large or \
     too repetitive to finish at once. These are the hits found before it stopped, not \
     necessarily the best; narrow it with from_role, to_role, kind or status, or with more \
     specific terms";

/// Past this estimate of FTS5's steps to match a query ([`index_cost`]),
/// the query is answered by the scan, whose cost the budget bounds.
const INDEX_STEPS: u64 = 8 << 20;

/// A query of at most this many trigram tokens in all is not weighed: FTS5
/// then spends at most this many steps per position of its tokens, which is
/// about what reading those positions costs anyway.
const UNWEIGHED_TERMS: usize = 32;

/// About how many steps FTS5 takes to match `q`: a phrase of `k` trigram
/// tokens is compared `k` tokens at a time at each position of its rarest
/// token. On ordinary text that is small; on a run of one character every
/// position of `xxx` is a candidate, and a phrase of 4000 `x` took FTS5 34 s
/// over one 256 KiB body (a minute with bm25).
fn index_cost(ix: &Index, q: &SearchQuery) -> AppResult<u64> {
    let phrases = q.index_terms();
    if phrases.iter().map(Vec::len).sum::<usize>() <= UNWEIGHED_TERMS {
        return Ok(0);
    }
    let mut counts: HashMap<&str, u64> = HashMap::new();
    let mut cost = 0u64;
    for terms in &phrases {
        let mut rarest = u64::MAX;
        for t in terms {
            let n = match counts.get(t.as_str()) {
                Some(&n) => n,
                None => {
                    let n = u64::try_from(ix.term_instances(t)?).unwrap_or(0);
                    counts.insert(t, n);
                    n
                }
            };
            rarest = rarest.min(n);
        }
        if rarest != u64::MAX {
            cost = cost.saturating_add((terms.len() as u64).saturating_mul(rarest));
        }
    }
    Ok(cost)
}

/// What the filters narrow a search to. Refuses a bad `kind` or `status`.
fn scope(f: &SearchFilter) -> AppResult<SearchScope> {
    let mut scope = SearchScope {
        from_role: f.from_role.as_ref().map(|r| r.trim().to_owned()),
        to_role: f.to_role.as_ref().map(|r| r.trim().to_owned()),
        ..SearchScope::default()
    };
    if let Some(k) = &f.kind {
        Kind::parse_field(k, "kind").map_err(|e| AppError::value(e.to_string()))?;
        scope.kind = Some(k.clone());
    }
    if let Some(st) = &f.status {
        scope.status = Some(
            DebtStatus::parse_field(st, "status").map_err(|e| AppError::value(e.to_string()))?,
        );
    }
    Ok(scope)
}

/// Why a path gave up: a fault, or the caller cancelled (the budget running
/// out is not a failure: the path returns what it found).
enum Halt {
    Fault(AppError),
    Cancelled,
}

impl<E: Into<AppError>> From<E> for Halt {
    fn from(e: E) -> Self {
        Self::Fault(e.into())
    }
}

/// What a path's [`Halt`] becomes for the caller.
fn stopped(h: Halt) -> AppError {
    match h {
        Halt::Fault(e) => e,
        Halt::Cancelled => AppError::value(
            "search_messages was cancelled by the client; call it again for an answer",
        ),
    }
}

/// Spends `steps`: `Ok(true)` when spent, `Ok(false)` when the budget ran
/// out (the path stops and returns what it found), `Err` when cancelled.
fn spend(budget: &mut Budget<'_>, steps: u64) -> Result<bool, Halt> {
    match budget.take(steps) {
        Ok(()) => Ok(true),
        Err(Stop::Exhausted) => Ok(false),
        Err(Stop::Cancelled) => Err(Halt::Cancelled),
    }
}

/// The length in bytes of a row's texts, as steps.
fn text_steps(topic: &str, body: &str) -> u64 {
    (topic.len() + body.len()) as u64
}

/// A hit: the message and its snippet.
type Hit = (MessageRow, String);

/// The scan: newest first, the first `limit + 1` messages the query matches.
/// Each row costs a pass over its text per phrase of the query, plus one.
fn scan_hits(
    ix: &Index,
    q: &SearchQuery,
    scope: &SearchScope,
    limit: usize,
    budget: &mut Budget<'_>,
) -> Result<Vec<Hit>, Halt> {
    let passes = q.phrase_count() as u64 + 1;
    let mut hits = Vec::new();
    ix.scan_messages(scope, |row| {
        if !spend(
            budget,
            text_steps(&row.topic, &row.body).saturating_mul(passes),
        )? {
            return Ok(false);
        }
        if q.matches(&row.topic, &row.body) {
            let snippet: String = row.body.chars().take(200).collect();
            hits.push((row, snippet));
            if hits.len() > limit {
                return Ok(false);
            }
        }
        Ok::<_, Halt>(true)
    })?;
    Ok(hits)
}

/// Any query by the index: the first `limit + 1` hits by bm25, then newest
/// first, with FTS5 computing the rank, then the snippets of those hits.
///
/// The snippet is not asked for in the ranking query: SQLite would cut one
/// for every match before keeping the best ones, and FTS5's snippet costs the
/// square of a row's instances (minutes for a run of one character). The
/// returned rows' snippets are cut here for a query of one phrase (a common
/// word gives way to this path), and otherwise asked of FTS5 in one more
/// statement, rows it would cost too much cut here (see [`Cutter`]). Letting
/// FTS5 sort instead (`ORDER BY rank` alone, then the tie-breaks here) made
/// it sort every match with its position lists, unbounded: the server's peak
/// memory grew by 3 to 6 MB, past its budget. The bounded sort below keeps
/// memory to `limit + 1` rows.
fn ranked_hits(
    ix: &Index,
    q: &SearchQuery,
    fts: &str,
    scope: &SearchScope,
    limit: usize,
    budget: &mut Budget<'_>,
) -> Result<Vec<Hit>, Halt> {
    let ranked = ix.ranked_matches(fts, scope, limit)?;
    let mut cutter = Cutter {
        needles: q.shown_needles(),
        single: q.single_phrase().map(|n| n.chars().collect()),
        scratch: Vec::new(),
    };
    // (row, its snippet, or None for FTS5's, body rowid)
    let mut planned: Vec<(MessageRow, Option<String>, i64)> = Vec::with_capacity(ranked.len());
    for (row, rowid) in ranked {
        if planned.len() == limit {
            // It only tells that more match: its snippet is never shown.
            planned.push((row, Some(String::new()), rowid));
            break;
        }
        match cutter.plan(&row, budget)? {
            Cut::Stop => break,
            Cut::Fts5 => planned.push((row, None, rowid)),
            Cut::Here(text) => planned.push((row, Some(text), rowid)),
        }
    }
    let wanted: Vec<i64> = planned
        .iter()
        .filter(|p| p.1.is_none())
        .map(|p| p.2)
        .collect();
    let mut from_fts5 = ix.fts5_snippets(fts, &wanted)?;
    Ok(planned
        .into_iter()
        .map(|(row, text, rowid)| {
            let text = text.unwrap_or_else(|| from_fts5.remove(&rowid).unwrap_or_default());
            (row, text)
        })
        .collect())
}

/// Past this estimate of FTS5's steps to cut one row's snippet
/// ([`fts5_snippet_cost`]), the row's snippet is cut here instead.
const FTS5_SNIPPET_STEPS: u64 = 1 << 20;

/// Steps charged per byte of text for a snippet cut here: it reads the text,
/// folds it, finds the instances, the sentences, then copies the window.
const SNIPPET_STEPS_PER_BYTE: u64 = 8;

/// How a row's snippet is cut by [`ranked_hits`].
enum Cut {
    /// By FTS5: the row is ordinary.
    Fts5,
    /// Here: for a query of one phrase, or a row that would cost FTS5 too much.
    Here(String),
    /// Not at all: the budget ran out.
    Stop,
}

/// Decides and cuts snippets for [`ranked_hits`].
struct Cutter<'q> {
    needles: Vec<&'q str>,
    /// The query's folded text when it is one phrase.
    single: Option<Vec<char>>,
    scratch: Vec<u8>,
}

impl Cutter<'_> {
    /// For a query of one phrase, the snippet cut here: FTS5's, byte for byte
    /// (see `one_phrase_hits`). Otherwise FTS5's for an ordinary row; for a
    /// row where it would cost too much (a phrase repeated thousands of times,
    /// a long run of spaces), the one-phrase snippet of the first of the
    /// query's phrases that occurs in it, cut here in linear time.
    fn plan(&mut self, row: &MessageRow, budget: &mut Budget<'_>) -> Result<Cut, Halt> {
        let (topic, body) = (row.topic.as_str(), row.body.as_str());
        let len = text_steps(topic, body);
        if let Some(needle) = &self.single {
            if !spend(budget, len.saturating_mul(SNIPPET_STEPS_PER_BYTE))? {
                return Ok(Cut::Stop);
            }
            let cols = [TrigramText::new(topic), TrigramText::new(body)];
            return Ok(Cut::Here(snippet(&cols, needle, &SNIPPET)));
        }
        if !spend(budget, len.saturating_mul(self.needles.len() as u64 + 1))? {
            return Ok(Cut::Stop);
        }
        let mut instances = 0u64;
        let mut shown = None;
        for needle in &self.needles {
            let (t, _) = phrase_count(topic, needle, &mut self.scratch);
            let (b, _) = phrase_count(body, needle, &mut self.scratch);
            instances += (t + b) as u64;
            if t + b > 0 && shown.is_none() {
                shown = Some(*needle);
            }
        }
        let fts5 = fts5_snippet_cost(&[topic, body], instances).saturating_add(len);
        if fts5 <= FTS5_SNIPPET_STEPS && budget.affords(fts5) {
            return Ok(if spend(budget, fts5)? {
                Cut::Fts5
            } else {
                Cut::Stop
            });
        }
        if !spend(budget, len.saturating_mul(SNIPPET_STEPS_PER_BYTE))? {
            return Ok(Cut::Stop);
        }
        let needle: Vec<char> = shown
            .or_else(|| self.needles.first().copied())
            .unwrap_or_default()
            .chars()
            .collect();
        let cols = [TrigramText::new(topic), TrigramText::new(body)];
        Ok(Cut::Here(snippet(&cols, &needle, &SNIPPET)))
    }
}

/// Past this many matching body rows, [`one_phrase_hits`] gives way to
/// [`ranked_hits`]: it reads and folds the text of every match, which for a
/// common word costs more than FTS5's own ranking.
const ONE_PHRASE_MAX_MATCHES: usize = 1000;

/// The snippet search_messages shows: `snippet(bodies_fts, -1, '[', ']', '…', 12)`.
const SNIPPET: SnippetStyle<'static> = SnippetStyle {
    open: "[",
    close: "]",
    ellipsis: "…",
    tokens: 12,
};

/// Past this many bytes of matching rows' text, [`one_phrase_hits`] gives
/// way to [`ranked_hits`] too: FTS5 ranks from its position lists without
/// reading the text again.
const ONE_PHRASE_MAX_BYTES: u64 = 16 << 20;

/// At most this many trigrams of a phrase are probed for a rare one
/// ([`rare_trigram`]). A probe costs about 9 µs however rare its trigram
/// (FTS5 opens a cursor on every segment), so a phrase of common trigrams
/// pays at most three before it is matched as a phrase.
const PROBED_TRIGRAMS: usize = 3;

/// A probe counts at most this many rows of its trigram (each about 0.06
/// µs more) in a small channel: a phrase whose probed trigrams all reach
/// the cap is matched as a phrase. Each candidate row costs its text's
/// check (3–4 µs for the bench's bodies) where FTS5 spends about 0.06 µs
/// per row of each of the phrase's trigrams, so a trigram pays when it is
/// in a small share of the rows ([`probe_cap`]).
const PROBE_CAP_MIN: usize = 128;

/// The share of all body rows under which a trigram is rare enough to pay
/// ([`probe_cap`]): one in 256. The phrase's other trigrams are words'
/// pieces, many of them in a large share of the rows.
const RARE_SHARE: i64 = 256;

/// How many rows a probe counts, for a full-text index of `rows` rows:
/// [`PROBE_CAP_MIN`] or one in [`RARE_SHARE`] of them, at most
/// [`ONE_PHRASE_MAX_MATCHES`] (the most candidates the one-phrase path
/// reads). A probe of a common trigram then costs at most what FTS5 would
/// spend on that trigram's rows in the phrase anyway.
fn probe_cap(rows: i64) -> usize {
    usize::try_from(rows / RARE_SHARE)
        .unwrap_or(0)
        .clamp(PROBE_CAP_MIN, ONE_PHRASE_MAX_MATCHES)
}

/// Characters of text from the most common to the least, space first: the
/// order in which [`rare_trigram`] probes a phrase's trigrams (those of the
/// rarest letters first). Any other character counts as rarer than `z`.
const COMMON_CHARS: &str = " etaoinshrdlcumwfgypbvkjxqz";

/// One of a phrase's `trigrams` (folded, as the index holds its tokens:
/// [`SearchQuery::index_terms`]) in fewer
/// than `cap` body rows ([`probe_cap`]), if one is found among the first
/// [`PROBED_TRIGRAMS`] probed, rarest letters first. FTS5 matches a phrase
/// by walking the position list of every trigram in it, so a rare word with
/// a common trigram costs that trigram's whole list (in the bench's channel,
/// "idempotency" is in 1% of the bodies, its `ten`, `enc` and `ncy` in two
/// thirds: the phrase took FTS5 seven times what `mpo` alone did). The rows
/// holding one of its trigrams hold every row of the phrase, and their text
/// says which ones do ([`phrase_count`] finds exactly FTS5's matches:
/// tests/it/search_snippet.rs).
fn rare_trigram(ix: &Index, mut trigrams: Vec<String>, cap: usize) -> AppResult<Option<String>> {
    trigrams.sort_unstable();
    trigrams.dedup();
    // One trigram is the phrase itself; a trigram the tokenizer would fold
    // again (none known) could miss rows, so the phrase is matched instead.
    if trigrams.len() < 2 || trigrams.iter().any(|t| fold(t) != *t) {
        return Ok(None);
    }
    let commonness = |t: &String| -> usize {
        t.chars()
            .map(|c| COMMON_CHARS.len() - COMMON_CHARS.find(c).unwrap_or(COMMON_CHARS.len()))
            .sum()
    };
    trigrams.sort_by_cached_key(commonness);
    for t in trigrams.iter().take(PROBED_TRIGRAMS) {
        if ix.rows_matching(&quoted(t), cap)? < cap {
            return Ok(Some(t.clone()));
        }
    }
    Ok(None)
}

/// `text` as an FTS5 string: in double quotes, its own doubled.
fn quoted(text: &str) -> String {
    format!("\"{}\"", text.replace('"', "\"\""))
}

/// A row [`one_phrase_hits`] may return, as its first pass saw it.
struct Kept {
    /// The phrase's occurrences in the row.
    freq: usize,
    /// The row's tokens.
    size: usize,
    /// The message's clock time, counter and full id: the tie-break.
    ms: i64,
    c: i64,
    id: String,
    /// The message's row in the index.
    row: i64,
}

/// A query of one phrase (most searches: a word): the same hits, ranks and
/// snippets as [`ranked_hits`], computed here from the matching rows' text.
/// FTS5 then only finds the rows, once; its bm25 would evaluate the phrase a
/// second time for the IDF, and its snippet needs the FTS cursor. `None` when
/// the phrase matches too many rows or too much text for this to pay, or the
/// index's totals cannot be read.
fn one_phrase_hits(
    ix: &Index,
    needle: &str,
    trigrams: Vec<String>,
    fts: &str,
    scope: &SearchScope,
    limit: usize,
    budget: &mut Budget<'_>,
) -> Result<Option<Vec<Hit>>, Halt> {
    let Some((rows, tokens)) = ix.fts_totals()? else {
        return Ok(None);
    };
    let rare = rare_trigram(ix, trigrams, probe_cap(rows))?;
    let narrowed = rare.is_some();
    let query = rare.map_or_else(|| fts.to_owned(), |t| quoted(&t));
    // The matching rows are counted before any text is read: a common
    // word gives way here, past the most rows this path reads (reading and
    // checking a thousand rows' text first cost a fifth of its search).
    let Some(found) = ix.phrase_matches(&query, scope, ONE_PHRASE_MAX_MATCHES)? else {
        return Ok(None);
    };
    // Every matching body row counts for the IDF, kept or not, as in FTS5.
    // The phrase's own MATCH finds only rows that hold it, so a row that
    // only counts needs no text; a trigram's finds candidates, and their
    // text says which hold the phrase.
    let mut matches = 0;
    let mut to_read = Vec::with_capacity(found.len());
    let mut hit_of: HashMap<i64, PhraseHit> = HashMap::new();
    for f in found {
        match f.message {
            Some(hit) => {
                to_read.push(f.body_row);
                hit_of.insert(f.body_row, hit);
            }
            None if narrowed => to_read.push(f.body_row),
            None => matches += 1,
        }
    }
    let mut scratch = Vec::new();
    let mut read = 0u64;
    let mut gave_way = false;
    // Each row that may be returned, without its text: keeping theirs
    // raised the server's peak memory.
    let mut kept: Vec<Kept> = Vec::new();
    ix.each_body_text(&to_read, |body_row, topic, body| {
        let len = text_steps(topic, body);
        read += len;
        if read > ONE_PHRASE_MAX_BYTES || !budget.affords(len) {
            gave_way = true;
            return Ok(false);
        }
        spend(budget, len)?;
        let (t_freq, t_size) = phrase_count(topic, needle, &mut scratch);
        let (b_freq, b_size) = phrase_count(body, needle, &mut scratch);
        if t_freq + b_freq == 0 {
            return Ok(true);
        }
        matches += 1;
        if let Some(hit) = hit_of.remove(&body_row) {
            kept.push(Kept {
                freq: t_freq + b_freq,
                size: t_size + b_size,
                ms: hit.ms,
                c: hit.c,
                id: hit.id,
                row: hit.row,
            });
        }
        Ok::<_, Halt>(true)
    })?;
    if gave_way {
        return Ok(None);
    }
    let bm25 = Bm25::new(rows, tokens, matches as i64);
    let mut ranked: Vec<(f64, Kept)> = kept
        .into_iter()
        .map(|k| (bm25.score(k.freq, k.size), k))
        .collect();
    ranked.sort_by(|(x, a), (y, b)| {
        x.total_cmp(y)
            .then_with(|| (b.ms, b.c, &b.id).cmp(&(a.ms, a.c, &a.id)))
    });
    ranked.truncate(limit + 1);
    // Every hit's row in one query, not one query per hit.
    let at: Vec<(i64, &str)> = ranked.iter().map(|(_, k)| (k.row, k.id.as_str())).collect();
    let rows = ix.message_rows_at(&at)?;
    let needle: Vec<char> = needle.chars().collect();
    let mut hits = Vec::with_capacity(rows.len());
    for row in rows.into_iter().flatten() {
        if hits.len() == limit {
            // It only tells that more match: its snippet is never shown.
            hits.push((row, String::new()));
            break;
        }
        let steps = text_steps(&row.topic, &row.body).saturating_mul(SNIPPET_STEPS_PER_BYTE);
        if !spend(budget, steps)? {
            break;
        }
        let cols = [TrigramText::new(&row.topic), TrigramText::new(&row.body)];
        let cut = snippet(&cols, &needle, &SNIPPET);
        hits.push((row, cut));
    }
    Ok(Some(hits))
}
