//! search_messages: ranked full-text search, with a scan for short terms.
//!
//! FTS5's trigram index cannot see a term shorter than 3 characters, so a
//! query holding one is answered by scanning the messages with the same
//! grammar and semantics (`match: "substring"` instead of `"fts"`).
//!
//! Ranked answers come from one of two paths with the same result: a query of
//! one phrase (a word, most searches) is ranked and cut here from the matching
//! rows' text (`one_phrase_hits`); any other query, or a phrase matching many
//! rows, leaves bm25 to FTS5 (`ranked_hits`) and asks it for the snippets of
//! the returned rows.
//!
//! Bodies are peer input, so every search has a bounded cost ([`Budget`]):
//! what it does with the text is linear in the bytes it examines, FTS5 is not
//! asked for what would cost it the square of a row (`index_cost`,
//! [`fts5_snippet_cost`]), and past the budget the answer is what was found,
//! marked truncated.

use std::collections::HashMap;

use rusqlite::types::Value as Sql;

use super::budget::{Budget, Stop};
use super::refusal::{AppError, AppResult, check_limit};
use super::rows::{
    AFTER_MESSAGE_COLUMNS, FieldsArg, Listing, MESSAGE_COLUMNS, MESSAGE_FIELDS, MESSAGE_HEADERS,
    MessageRow, MessageView, Projected, Projection, listing, project,
};
use super::session::Session;
use crate::core::bm25::Bm25;
use crate::core::query::{ScanReason, SearchQuery};
use crate::core::snippet::{SnippetStyle, fts5_snippet_cost, snippet};
use crate::core::trigram::{TrigramText, phrase_count};
use crate::core::vocab::{DebtStatus, Kind};
use crate::store::error::SqlContext as _;
use crate::store::index::Index;

/// The filters of search_messages.
#[derive(Clone, Debug, Default)]
pub struct SearchFilter {
    /// Author.
    pub from_role: Option<String>,
    /// A recipient.
    pub to_role: Option<String>,
    /// Kind.
    pub kind: Option<String>,
    /// Debt status.
    pub status: Option<String>,
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
    filters(f, None)?;
    let single = "(SELECT {c} FROM deliveries t WHERE t.message_id = m.id AND m.multi = 0)";
    let cols = format!(
        "{MESSAGE_COLUMNS}, {}, {}",
        single.replace("{c}", "read_ms"),
        single.replace("{c}", "opened_ms")
    );
    s.catch_up_for_search()?;
    let ix = s.index();
    if !scan && index_cost(ix, &q)? > INDEX_STEPS {
        q.check_scannable_for(ScanReason::Cost)
            .map_err(|e| AppError::value(e.to_string()))?;
        scan = true;
    }
    let (cond, args) = filters(f, (!scan).then(|| q.fts_match()))?;
    let one_phrase = match q.single_phrase() {
        Some(needle) if !scan => {
            one_phrase_hits(ix, needle, &cols, &cond, &args, limit, budget).map_err(stopped)?
        }
        _ => None,
    };
    let mut hits = match one_phrase {
        Some(hits) => hits,
        None if scan => scan_hits(ix, &q, &cols, &cond, &args, limit, budget).map_err(stopped)?,
        None => ranked_hits(ix, &q, &cols, &cond, &args, limit, budget).map_err(stopped)?,
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
                ..row.view(None)
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

/// The SQL conditions and arguments of the filters (and of the index's
/// `MATCH` text, which comes first as `?1` when given). Refuses a bad
/// `kind` or `status`.
fn filters(f: &SearchFilter, fts: Option<String>) -> AppResult<(String, Vec<Sql>)> {
    let mut cond = vec!["m.deleted_ms IS NULL".to_owned()];
    let mut args: Vec<Sql> = fts.into_iter().map(Sql::Text).collect();
    if let Some(r) = &f.from_role {
        args.push(Sql::Text(r.trim().to_owned()));
        cond.push(format!("m.from_role = ?{}", args.len()));
    }
    if let Some(r) = &f.to_role {
        args.push(Sql::Text(r.trim().to_owned()));
        cond.push(format!(
            "EXISTS (SELECT 1 FROM deliveries t WHERE t.message_id = m.id AND t.role = ?{})",
            args.len()
        ));
    }
    if let Some(k) = &f.kind {
        Kind::parse_field(k, "kind").map_err(|e| AppError::value(e.to_string()))?;
        args.push(Sql::Text(k.clone()));
        cond.push(format!("m.kind = ?{}", args.len()));
    }
    if let Some(st) = &f.status {
        let st =
            DebtStatus::parse_field(st, "status").map_err(|e| AppError::value(e.to_string()))?;
        cond.push(format!("m.status = '{}'", st.as_str()));
    }
    Ok((cond.join(" AND "), args))
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
        Halt::Cancelled => AppError::value("search_messages was cancelled by the client"),
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
    cols: &str,
    cond: &str,
    args: &[Sql],
    limit: usize,
    budget: &mut Budget<'_>,
) -> Result<Vec<Hit>, Halt> {
    let sql = format!(
        "SELECT {cols} FROM messages m WHERE {cond} ORDER BY m.ms DESC, m.c DESC, m.id DESC"
    );
    let mut st = ix.conn().prepare_cached(&sql).db(ix.path())?;
    let mut rows = st
        .query(rusqlite::params_from_iter(args.iter()))
        .db(ix.path())?;
    let passes = q.phrase_count() as u64 + 1;
    let mut hits = Vec::new();
    while let Some(r) = rows.next().db(ix.path())? {
        let row = MessageRow::from_sql(r).db(ix.path())?;
        if !spend(
            budget,
            text_steps(&row.topic, &row.body).saturating_mul(passes),
        )? {
            break;
        }
        if q.matches(&row.topic, &row.body) {
            let snippet: String = row.body.chars().take(200).collect();
            hits.push((row, snippet));
            if hits.len() > limit {
                break;
            }
        }
    }
    Ok(hits)
}

/// A body row a search by the index may return: the message's current one
/// (a revised message keeps its earlier bodies in the index).
const CURRENT_BODY: &str = "(m.revised_ms IS NULL OR b.rowid = \
    (SELECT max(x.rowid) FROM bodies x WHERE x.message_id = m.id))";

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
    cols: &str,
    cond: &str,
    args: &[Sql],
    limit: usize,
    budget: &mut Budget<'_>,
) -> Result<Vec<Hit>, Halt> {
    let mut args = args.to_vec();
    args.push(Sql::Integer(limit as i64 + 1));
    let sql = format!(
        "SELECT {cols}, b.rowid FROM bodies_fts \
         JOIN bodies b ON b.rowid = bodies_fts.rowid JOIN messages m ON m.id = b.message_id \
         WHERE bodies_fts MATCH ?1 AND {CURRENT_BODY} AND {cond} \
         ORDER BY bm25(bodies_fts), m.ms DESC, m.c DESC, m.id DESC LIMIT ?{}",
        args.len()
    );
    let mut st = ix.conn().prepare_cached(&sql).db(ix.path())?;
    let rows = st
        .query_map(rusqlite::params_from_iter(args.iter()), |r| {
            Ok((
                MessageRow::from_sql(r)?,
                r.get::<_, i64>(AFTER_MESSAGE_COLUMNS)?,
            ))
        })
        .db(ix.path())?;
    let mut ranked = Vec::new();
    for r in rows {
        ranked.push(r.db(ix.path())?);
    }
    let texts = ix
        .conn()
        .prepare_cached("SELECT topic, body FROM bodies WHERE rowid = ?1")
        .db(ix.path())?;
    let mut cutter = Cutter {
        needles: q.shown_needles(),
        single: q.single_phrase().map(|n| n.chars().collect()),
        texts,
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
        match cutter.plan(ix, rowid, budget)? {
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
    let mut from_fts5 = fts5_snippets(ix, &args[0], &wanted)?;
    Ok(planned
        .into_iter()
        .map(|(row, text, rowid)| {
            let text = text.unwrap_or_else(|| from_fts5.remove(&rowid).unwrap_or_default());
            (row, text)
        })
        .collect())
}

/// FTS5's snippets of the body rows `rowids` for the query `fts` (the `MATCH`
/// text), in one statement. `+rowid` keeps SQLite from looking each row up
/// through the index, which cost a seek per trigram per row (about 0.1 ms a
/// row); instead the query is matched once and the listed rows are cut.
fn fts5_snippets(ix: &Index, fts: &Sql, rowids: &[i64]) -> Result<HashMap<i64, String>, Halt> {
    if rowids.is_empty() {
        return Ok(HashMap::new());
    }
    let list = rowids
        .iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(",");
    let mut st = ix
        .conn()
        .prepare_cached(
            "SELECT rowid, snippet(bodies_fts, -1, '[', ']', '…', 12) FROM bodies_fts \
             WHERE bodies_fts MATCH ?1 AND +rowid IN (SELECT value FROM json_each(?2))",
        )
        .db(ix.path())?;
    let rows = st
        .query_map(rusqlite::params![fts, format!("[{list}]")], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .db(ix.path())?;
    let mut out = HashMap::new();
    for r in rows {
        let (rowid, text) = r.db(ix.path())?;
        out.insert(rowid, text);
    }
    Ok(out)
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
struct Cutter<'q, 'c> {
    needles: Vec<&'q str>,
    /// The query's folded text when it is one phrase.
    single: Option<Vec<char>>,
    texts: rusqlite::CachedStatement<'c>,
    scratch: Vec<u8>,
}

impl Cutter<'_, '_> {
    /// For a query of one phrase, the snippet cut here: FTS5's, byte for byte
    /// (see `one_phrase_hits`). Otherwise FTS5's for an ordinary row; for a
    /// row where it would cost too much (a phrase repeated thousands of times,
    /// a long run of spaces), the one-phrase snippet of the first of the
    /// query's phrases that occurs in it, cut here in linear time.
    fn plan(&mut self, ix: &Index, rowid: i64, budget: &mut Budget<'_>) -> Result<Cut, Halt> {
        let (topic, body): (String, String) = self
            .texts
            .query_row([rowid], |r| Ok((r.get(0)?, r.get(1)?)))
            .db(ix.path())?;
        let len = text_steps(&topic, &body);
        if let Some(needle) = &self.single {
            if !spend(budget, len.saturating_mul(SNIPPET_STEPS_PER_BYTE))? {
                return Ok(Cut::Stop);
            }
            let cols = [TrigramText::new(&topic), TrigramText::new(&body)];
            return Ok(Cut::Here(snippet(&cols, needle, &SNIPPET)));
        }
        if !spend(budget, len.saturating_mul(self.needles.len() as u64 + 1))? {
            return Ok(Cut::Stop);
        }
        let mut instances = 0u64;
        let mut shown = None;
        for needle in &self.needles {
            let (t, _) = phrase_count(&topic, needle, &mut self.scratch);
            let (b, _) = phrase_count(&body, needle, &mut self.scratch);
            instances += (t + b) as u64;
            if t + b > 0 && shown.is_none() {
                shown = Some(*needle);
            }
        }
        let fts5 = fts5_snippet_cost(&[&topic, &body], instances).saturating_add(len);
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
        let cols = [TrigramText::new(&topic), TrigramText::new(&body)];
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

/// A query of one phrase (most searches: a word): the same hits, ranks and
/// snippets as [`ranked_hits`], computed here from the matching rows' text.
/// FTS5 then only finds the rows, once; its bm25 would evaluate the phrase a
/// second time for the IDF, and its snippet needs the FTS cursor. `None` when
/// the phrase matches too many rows or too much text for this to pay, or the
/// index's totals cannot be read.
fn one_phrase_hits(
    ix: &Index,
    needle: &str,
    cols: &str,
    cond: &str,
    args: &[Sql],
    limit: usize,
    budget: &mut Budget<'_>,
) -> Result<Option<Vec<Hit>>, Halt> {
    let Some((rows, tokens)) = ix.fts_totals()? else {
        return Ok(None);
    };
    let mut scratch = Vec::new();
    // Every matching body row counts for the IDF, kept or not, as in FTS5.
    let sql = format!(
        "SELECT b.rowid, m.ms, m.c, m.id, b.topic, b.body, \
         m.id IS NOT NULL AND {CURRENT_BODY} AND {cond} \
         FROM bodies_fts JOIN bodies b ON b.rowid = bodies_fts.rowid \
         LEFT JOIN messages m ON m.id = b.message_id WHERE bodies_fts MATCH ?1"
    );
    let mut st = ix.conn().prepare_cached(&sql).db(ix.path())?;
    let mut found = st
        .query(rusqlite::params_from_iter(args.iter()))
        .db(ix.path())?;
    let mut matches = 0;
    let mut read = 0u64;
    // (freq, size, ms, c, id, body rowid) of each row that may be returned.
    // Not the text: a common word reads up to ONE_PHRASE_MAX_MATCHES rows
    // before giving way, and keeping theirs raised the server's peak memory.
    let mut kept: Vec<(usize, usize, i64, i64, String, i64)> = Vec::new();
    while let Some(r) = found.next().db(ix.path())? {
        matches += 1;
        if matches > ONE_PHRASE_MAX_MATCHES {
            return Ok(None);
        }
        if r.get::<_, Option<bool>>(6).db(ix.path())? != Some(true) {
            continue;
        }
        let text = |i| r.get_ref(i).and_then(|v| Ok(v.as_str()?)).db(ix.path());
        let (topic, body) = (text(4)?, text(5)?);
        let len = text_steps(topic, body);
        read += len;
        if read > ONE_PHRASE_MAX_BYTES || !budget.affords(len) {
            return Ok(None);
        }
        spend(budget, len)?;
        let (t_freq, t_size) = phrase_count(topic, needle, &mut scratch);
        let (b_freq, b_size) = phrase_count(body, needle, &mut scratch);
        kept.push((
            t_freq + b_freq,
            t_size + b_size,
            r.get(1).db(ix.path())?,
            r.get(2).db(ix.path())?,
            r.get(3).db(ix.path())?,
            r.get(0).db(ix.path())?,
        ));
    }
    drop(found);
    let bm25 = Bm25::new(rows, tokens, matches as i64);
    let mut ranked: Vec<(f64, _)> = kept
        .into_iter()
        .map(|k| (bm25.score(k.0, k.1), k))
        .collect();
    ranked.sort_by(|a, b| {
        a.0.total_cmp(&b.0)
            .then_with(|| (b.1.2, b.1.3, &b.1.4).cmp(&(a.1.2, a.1.3, &a.1.4)))
    });
    ranked.truncate(limit + 1);
    let needle: Vec<char> = needle.chars().collect();
    let sql = format!("SELECT {cols} FROM messages m WHERE m.id = ?1");
    let mut message = ix.conn().prepare_cached(&sql).db(ix.path())?;
    let mut texts = ix
        .conn()
        .prepare_cached("SELECT topic, body FROM bodies WHERE rowid = ?1")
        .db(ix.path())?;
    let mut hits = Vec::with_capacity(ranked.len());
    for (_, (_, _, _, _, id, rowid)) in ranked {
        let row = message
            .query_row([&id], MessageRow::from_sql)
            .db(ix.path())?;
        if hits.len() == limit {
            // It only tells that more match: its snippet is never shown.
            hits.push((row, String::new()));
            break;
        }
        let (topic, body): (String, String) = texts
            .query_row([rowid], |r| Ok((r.get(0)?, r.get(1)?)))
            .db(ix.path())?;
        let steps = text_steps(&topic, &body).saturating_mul(SNIPPET_STEPS_PER_BYTE);
        if !spend(budget, steps)? {
            break;
        }
        let cols = [TrigramText::new(&topic), TrigramText::new(&body)];
        hits.push((row, snippet(&cols, &needle, &SNIPPET)));
    }
    Ok(Some(hits))
}
