//! search_messages: ranked full-text search, with a scan for short terms.
//!
//! FTS5's trigram index cannot see a term shorter than 3 characters, so a
//! query holding one is answered by scanning the messages with the same
//! grammar and semantics (`match: "substring"` instead of `"fts"`).
//!
//! Ranked answers come from one of two paths with the same result: a query of
//! one phrase (a word, most searches) is ranked and cut here from the matching
//! rows' text (`one_phrase_hits`); any other query, or a phrase matching many
//! rows, leaves bm25 and the snippet to FTS5 (`ranked_hits`).

use rusqlite::types::Value as Sql;
use serde_json::{Value, json};

use super::refusal::{AppError, AppResult, check_limit};
use super::rows::{
    AFTER_MESSAGE_COLUMNS, FieldsArg, MESSAGE_COLUMNS, MESSAGE_FIELDS, MESSAGE_HEADERS, MessageRow,
    Projection, listing, project,
};
use super::session::Session;
use crate::core::bm25::Bm25;
use crate::core::query::SearchQuery;
use crate::core::snippet::{SnippetStyle, snippet};
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

/// Searches topic and body; best match first (scan: newest first).
pub fn search_messages(
    s: &mut Session,
    query: &str,
    f: &SearchFilter,
    limit: i64,
    fields: Option<&FieldsArg>,
) -> AppResult<Value> {
    let q = SearchQuery::parse(query).map_err(|e| AppError::value(e.to_string()))?;
    let limit = check_limit(limit)?;
    let proj = Projection::parse(fields, MESSAGE_FIELDS, MESSAGE_HEADERS)?;
    let mut cond = vec!["m.deleted_ms IS NULL".to_owned()];
    let mut args: Vec<Sql> = Vec::new();
    let scan = q.needs_scan();
    if scan {
        q.check_scannable()
            .map_err(|e| AppError::value(e.to_string()))?;
    } else {
        args.push(Sql::Text(q.fts_match()));
    }
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
    let single = "(SELECT {c} FROM deliveries t WHERE t.message_id = m.id AND m.multi = 0)";
    let cols = format!(
        "{MESSAGE_COLUMNS}, {}, {}",
        single.replace("{c}", "read_ms"),
        single.replace("{c}", "opened_ms")
    );
    s.catch_up_for_search()?;
    let ix = s.index();
    let cond = cond.join(" AND ");
    let one_phrase = match q.single_phrase() {
        Some(needle) if !scan => one_phrase_hits(ix, needle, &cols, &cond, &args, limit)?,
        _ => None,
    };
    let mut hits = match one_phrase {
        Some(hits) => hits,
        None if scan => scan_hits(ix, &q, &cols, &cond, &args, limit)?,
        None => ranked_hits(ix, &cols, &cond, &args, limit)?,
    };
    let overflow = hits.len() > limit;
    hits.truncate(limit);
    let how = if scan { "substring" } else { "fts" };
    let out = hits
        .into_iter()
        .map(|(row, snippet)| {
            let mut m = row.to_json(None);
            m.insert("snippet".into(), json!(snippet));
            m.insert("match".into(), json!(how));
            project(proj.as_ref(), m)
        })
        .collect();
    Ok(listing(
        out,
        limit,
        overflow,
        "more messages match; refine the query or raise 'limit' (at most 1000)",
    ))
}

/// A hit: the message and its snippet.
type Hit = (MessageRow, String);

/// The scan: newest first, the first `limit + 1` messages the query matches.
fn scan_hits(
    ix: &Index,
    q: &SearchQuery,
    cols: &str,
    cond: &str,
    args: &[Sql],
    limit: usize,
) -> AppResult<Vec<Hit>> {
    let sql = format!(
        "SELECT {cols} FROM messages m WHERE {cond} ORDER BY m.ms DESC, m.c DESC, m.id DESC"
    );
    let mut st = ix.conn().prepare_cached(&sql).db(ix.path())?;
    let mut rows = st
        .query(rusqlite::params_from_iter(args.iter()))
        .db(ix.path())?;
    let mut hits = Vec::new();
    while let Some(r) = rows.next().db(ix.path())? {
        let row = MessageRow::from_sql(r).db(ix.path())?;
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
/// first, with FTS5 computing rank and snippet.
///
/// SQLite computes the snippet of every match before keeping the best ones.
/// Letting FTS5 sort instead (`ORDER BY rank` alone, then the tie-breaks
/// here) computes it only for the rows returned, but FTS5 then sorts every
/// match with its position lists, unbounded: a common word took 92 ms
/// instead of 164 but the server's peak memory grew by 3 to 6 MB, past its
/// budget. The bounded sort below keeps memory to `limit + 1` rows.
fn ranked_hits(
    ix: &Index,
    cols: &str,
    cond: &str,
    args: &[Sql],
    limit: usize,
) -> AppResult<Vec<Hit>> {
    let mut args = args.to_vec();
    args.push(Sql::Integer(limit as i64 + 1));
    let sql = format!(
        "SELECT {cols}, snippet(bodies_fts, -1, '[', ']', '…', 12) FROM bodies_fts \
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
                r.get::<_, String>(AFTER_MESSAGE_COLUMNS)?,
            ))
        })
        .db(ix.path())?;
    let mut hits = Vec::new();
    for r in rows {
        hits.push(r.db(ix.path())?);
    }
    Ok(hits)
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

/// A query of one phrase (most searches: a word): the same hits, ranks and
/// snippets as [`ranked_hits`], computed here from the matching rows' text.
/// FTS5 then only finds the rows, once; its bm25 would evaluate the phrase a
/// second time for the IDF, and its snippet needs the FTS cursor. `None` when
/// the phrase matches too many rows for this to pay, or the index's totals
/// cannot be read.
fn one_phrase_hits(
    ix: &Index,
    needle: &str,
    cols: &str,
    cond: &str,
    args: &[Sql],
    limit: usize,
) -> AppResult<Option<Vec<Hit>>> {
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
        let (t_freq, t_size) = phrase_count(text(4)?, needle, &mut scratch);
        let (b_freq, b_size) = phrase_count(text(5)?, needle, &mut scratch);
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
        let (topic, body): (String, String) = texts
            .query_row([rowid], |r| Ok((r.get(0)?, r.get(1)?)))
            .db(ix.path())?;
        let cols = [TrigramText::new(&topic), TrigramText::new(&body)];
        hits.push((row, snippet(&cols, &needle, &SNIPPET)));
    }
    Ok(Some(hits))
}
