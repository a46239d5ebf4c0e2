//! Full-text search over the index: the FTS5 table of body rows, the scan
//! for what trigrams cannot see, and what FTS5 keeps about its rows.
//!
//! Owns every statement search runs on SQLite. It decides nothing about
//! ranking, snippets or cost (bm25 and the snippet algorithm are `core`'s,
//! the budget and the choice of path are the use case's): rows are handed to
//! the caller one at a time, and the caller says when to stop.

use std::collections::HashMap;

use rusqlite::types::Value as Sql;

use super::Index;
use super::messages::{JOINED_STATE, MESSAGE_COLUMNS, MessageRow, SINGLE_RECIPIENT_JOIN};
use crate::core::vocab::DebtStatus;
use crate::store::StoreError;
use crate::store::error::{SqlContext as _, StoreResult};
use crate::store::index::fts_layout;

/// What a search is narrowed to. Values are taken as given: the use case
/// validates them first.
#[derive(Clone, Debug, Default)]
pub struct SearchScope {
    /// Author.
    pub from_role: Option<String>,
    /// A recipient.
    pub to_role: Option<String>,
    /// Kind.
    pub kind: Option<String>,
    /// Debt status.
    pub status: Option<DebtStatus>,
}

/// Joins to a body row (`b`, or FTS5's own row) the message `m` whose
/// current text it is, if any: a search returns only those (a revised
/// message keeps its earlier bodies in the index, and so does a message
/// whose upload was sealed after it arrived). It goes through
/// `messages_body_row`, which also holds what a match is filtered and
/// sorted by, so no message row is read for a match that is not kept.
/// Through `bodies.message_id` it took a seek in `bodies`, one in the
/// messages' id index and one in their table per match: a common word at
/// 10k, 5,000 matches, spent longer there than in FTS5's ranking.
const MESSAGE_OF_BODY: &str = "m.body_row";

/// The SQL conditions and arguments of `scope` (and of the index's `MATCH`
/// text, which comes first as `?1` when given).
fn filters(scope: &SearchScope, fts: Option<&str>) -> (String, Vec<Sql>) {
    let mut cond = vec!["m.deleted_ms IS NULL".to_owned()];
    let mut args: Vec<Sql> = fts.into_iter().map(|f| Sql::Text(f.to_owned())).collect();
    if let Some(r) = &scope.from_role {
        args.push(Sql::Text(r.clone()));
        cond.push(format!("m.from_role = ?{}", args.len()));
    }
    if let Some(r) = &scope.to_role {
        args.push(Sql::Text(r.clone()));
        cond.push(format!(
            "EXISTS (SELECT 1 FROM deliveries d WHERE d.message_id = m.id AND d.role = ?{})",
            args.len()
        ));
    }
    if let Some(k) = &scope.kind {
        args.push(Sql::Text(k.clone()));
        cond.push(format!("m.kind = ?{}", args.len()));
    }
    if let Some(st) = scope.status {
        cond.push(format!("m.status = '{}'", st.as_str()));
    }
    (cond.join(" AND "), args)
}

/// `rowids` as a JSON array, for `json_each`.
fn json_list(rowids: &[i64]) -> String {
    let items: Vec<String> = rowids.iter().map(i64::to_string).collect();
    format!("[{}]", items.join(","))
}

/// A body row that matched a one-phrase search's `MATCH` text.
#[derive(Clone, Debug)]
pub struct PhraseMatch {
    /// The row (its text: [`Index::each_body_text`]).
    pub body_row: i64,
    /// Its message, when a search in the scope may return the row (a live
    /// message's current body): `None` for a row that only counts.
    pub message: Option<PhraseHit>,
}

/// The message of a [`PhraseMatch`] a search may return.
#[derive(Clone, Debug)]
pub struct PhraseHit {
    /// Its clock time (ms).
    pub ms: i64,
    /// Its clock counter.
    pub c: i64,
    /// Its full id.
    pub id: String,
    /// Its row in the index ([`Index::message_rows_at`]).
    pub row: i64,
}

impl Index {
    /// The full-text table's row count and total token count over all columns,
    /// as FTS5's own bm25 reads them (its "averages" record, id 1 of
    /// `bodies_fts_data`, decoded by [`fts_layout::averages`]). `None` when
    /// the record is missing or not as expected.
    pub fn fts_totals(&self) -> StoreResult<Option<(i64, i64)>> {
        let block: Option<Vec<u8>> =
            self.scalar_opt("SELECT block FROM bodies_fts_data WHERE id = 1", [])?;
        Ok(block.as_deref().and_then(fts_layout::averages))
    }

    /// How many times the trigram `term` occurs in the full-text index, over
    /// all rows and columns (0 when never): FTS5's `fts5vocab` table of kind
    /// `row`, declared in this connection's `temp` schema so the file's schema
    /// is untouched. Reading it costs about what reading the term's positions
    /// costs.
    pub fn term_instances(&self, term: &str) -> StoreResult<i64> {
        self.exec(
            "CREATE VIRTUAL TABLE IF NOT EXISTS temp.bodies_vocab \
             USING fts5vocab(main, bodies_fts, row)",
            [],
        )?;
        let n: Option<i64> =
            self.scalar_opt("SELECT cnt FROM temp.bodies_vocab WHERE term = ?1", [term])?;
        Ok(n.unwrap_or(0))
    }

    /// Live messages in `scope`, newest first, each with the single
    /// recipient's read state, handed to `each` one at a time until it
    /// returns `false`.
    pub fn scan_messages<E: From<StoreError>>(
        &self,
        scope: &SearchScope,
        each: impl FnMut(MessageRow) -> Result<bool, E>,
    ) -> Result<(), E> {
        let (cond, args) = filters(scope, None);
        let sql = format!(
            "SELECT {MESSAGE_COLUMNS}, {JOINED_STATE} FROM messages m {SINGLE_RECIPIENT_JOIN} \
             WHERE {cond} ORDER BY m.ms DESC, m.c DESC, m.id DESC"
        );
        self.each_row(&sql, rusqlite::params_from_iter(args.iter()), each)
    }

    /// The first `limit + 1` live messages in `scope` whose current body row
    /// matches `fts` (FTS5's `MATCH` text), by FTS5's bm25, then newest
    /// first, each with its body row. The snippet is not asked for here:
    /// SQLite would cut one for every match before keeping the best ones.
    /// Letting FTS5 sort instead (`ORDER BY rank` alone, then the tie-breaks
    /// elsewhere) made it sort every match with its position lists,
    /// unbounded; the bounded sort keeps memory to `limit + 1` rows.
    pub fn ranked_matches(
        &self,
        fts: &str,
        scope: &SearchScope,
        limit: usize,
    ) -> StoreResult<Vec<(MessageRow, i64)>> {
        let (cond, mut args) = filters(scope, Some(fts));
        args.push(Sql::Integer(limit as i64 + 1));
        // The sort keeps each match's keys only; the rows kept are read
        // after it. With the whole row in the sort, every match's columns and
        // body were read and copied into the sorter (a common word at 10k:
        // 5,000 of them).
        let sql = format!(
            "SELECT m.rowid, m.id, bodies_fts.rowid FROM bodies_fts \
             JOIN messages m ON {MESSAGE_OF_BODY} = bodies_fts.rowid \
             WHERE bodies_fts MATCH ?1 AND {cond} \
             ORDER BY bm25(bodies_fts), m.ms DESC, m.c DESC, m.id DESC LIMIT ?{}",
            args.len()
        );
        let found: Vec<(i64, String, i64)> =
            self.rows(&sql, rusqlite::params_from_iter(args.iter()))?;
        let at: Vec<(i64, &str)> = found.iter().map(|f| (f.0, f.1.as_str())).collect();
        let rows = self.message_rows_at(&at)?;
        Ok(rows
            .into_iter()
            .zip(&found)
            .filter_map(|(row, f)| Some((row?, f.2)))
            .collect())
    }

    /// How many body rows match `fts` (a `MATCH` text, such as one quoted
    /// trigram), counted up to `cap`: a probe that stops early, so a
    /// common trigram costs `cap` steps, not its whole position list.
    pub fn rows_matching(&self, fts: &str, cap: usize) -> StoreResult<usize> {
        let n: i64 = self.scalar(
            "SELECT count(*) FROM \
             (SELECT 1 FROM bodies_fts WHERE bodies_fts MATCH ?1 LIMIT ?2)",
            rusqlite::params![fts, cap as i64],
        )?;
        Ok(usize::try_from(n).unwrap_or(0))
    }

    /// Every body row matching `fts` (a `MATCH` text of one phrase), in
    /// FTS5's order, without its text; `None` if there are more than `cap`.
    /// The rows are counted before any text is read, so a common word
    /// costs the first `cap` matches' positions, not their texts.
    pub fn phrase_matches(
        &self,
        fts: &str,
        scope: &SearchScope,
        cap: usize,
    ) -> StoreResult<Option<Vec<PhraseMatch>>> {
        let (cond, mut args) = filters(scope, Some(fts));
        args.push(Sql::Integer(i64::try_from(cap).unwrap_or(i64::MAX - 1) + 1));
        let sql = format!(
            "SELECT bodies_fts.rowid, m.ms, m.c, m.id, m.id IS NOT NULL AND {cond}, m.rowid \
             FROM bodies_fts LEFT JOIN messages m ON {MESSAGE_OF_BODY} = bodies_fts.rowid \
             WHERE bodies_fts MATCH ?1 LIMIT ?{}",
            args.len()
        );
        let p = &self.path;
        let mut st = self.conn.prepare_cached(&sql).db(p)?;
        let mut found = st.query(rusqlite::params_from_iter(args.iter())).db(p)?;
        let mut out = Vec::new();
        while let Some(r) = found.next().db(p)? {
            if out.len() == cap {
                return Ok(None);
            }
            let message = if r.get::<_, Option<bool>>(4).db(p)? == Some(true) {
                Some(PhraseHit {
                    ms: r.get(1).db(p)?,
                    c: r.get(2).db(p)?,
                    id: r.get(3).db(p)?,
                    row: r.get(5).db(p)?,
                })
            } else {
                None
            };
            out.push(PhraseMatch {
                body_row: r.get(0).db(p)?,
                message,
            });
        }
        Ok(Some(out))
    }

    /// The topic and body of each of the body rows `rowids`, in no
    /// particular order, handed to `each` with the row until it returns
    /// `false`. Texts are lent, not copied.
    pub fn each_body_text<E: From<StoreError>>(
        &self,
        rowids: &[i64],
        mut each: impl FnMut(i64, &str, &str) -> Result<bool, E>,
    ) -> Result<(), E> {
        if rowids.is_empty() {
            return Ok(());
        }
        let p = &self.path;
        let mut st = self
            .conn
            .prepare_cached(
                "SELECT rowid, topic, body FROM bodies \
                 WHERE rowid IN (SELECT value FROM json_each(?1))",
            )
            .db(p)?;
        let mut rows = st.query([json_list(rowids)]).db(p)?;
        while let Some(r) = rows.next().db(p)? {
            let text = |i| {
                r.get_ref(i)
                    .and_then(|v| Ok(v.as_str_or_null()?.unwrap_or("")))
                    .db(p)
            };
            if !each(r.get(0).db(p)?, text(1)?, text(2)?)? {
                break;
            }
        }
        Ok(())
    }

    /// FTS5's snippets of the body rows `rowids` for the query `fts` (the
    /// `MATCH` text), in one statement. `+rowid` keeps SQLite from looking
    /// each row up through the index, which cost a seek per trigram per row
    /// (about 0.1 ms a row); instead the query is matched once and the listed
    /// rows are cut.
    pub fn fts5_snippets(&self, fts: &str, rowids: &[i64]) -> StoreResult<HashMap<i64, String>> {
        if rowids.is_empty() {
            return Ok(HashMap::new());
        }
        let cut: Vec<(i64, String)> = self.rows(
            "SELECT rowid, snippet(bodies_fts, -1, '[', ']', '…', 12) FROM bodies_fts \
             WHERE bodies_fts MATCH ?1 AND +rowid IN (SELECT value FROM json_each(?2))",
            rusqlite::params![fts, json_list(rowids)],
        )?;
        Ok(cut.into_iter().collect())
    }
}
