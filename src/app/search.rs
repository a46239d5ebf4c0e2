//! search_messages: ranked full-text search, with a scan for short terms.
//!
//! FTS5's trigram index cannot see a term shorter than 3 characters, so a
//! query holding one is answered by scanning the messages with the same
//! grammar and semantics (`match: "substring"` instead of `"fts"`).

use rusqlite::types::Value as Sql;
use serde_json::{Value, json};

use super::refusal::{AppError, AppResult, check_limit};
use super::rows::{
    AFTER_MESSAGE_COLUMNS, FieldsArg, MESSAGE_COLUMNS, MESSAGE_FIELDS, MESSAGE_HEADERS, MessageRow,
    Projection, listing, project,
};
use super::session::Session;
use crate::core::query::SearchQuery;
use crate::core::vocab::{DebtStatus, Kind};
use crate::store::error::SqlContext as _;

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
        cond.push("bodies_fts MATCH ?1".into());
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
    let mut hits: Vec<(MessageRow, String)> = Vec::new();
    if scan {
        let sql = format!(
            "SELECT {cols} FROM messages m WHERE {} ORDER BY m.ms DESC, m.c DESC, m.id DESC",
            cond.join(" AND ")
        );
        let mut st = ix.conn().prepare_cached(&sql).db(ix.path())?;
        let mut rows = st
            .query(rusqlite::params_from_iter(args.iter()))
            .db(ix.path())?;
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
    } else {
        args.push(Sql::Integer(limit as i64 + 1));
        let sql = format!(
            "SELECT {cols}, snippet(bodies_fts, -1, '[', ']', '…', 12) FROM bodies_fts \
             JOIN bodies b ON b.rowid = bodies_fts.rowid JOIN messages m ON m.id = b.message_id \
             WHERE (m.revised_ms IS NULL OR b.rowid = \
             (SELECT max(x.rowid) FROM bodies x WHERE x.message_id = m.id)) AND {} ORDER BY bm25(bodies_fts), m.ms DESC, m.c DESC, m.id DESC LIMIT ?{}",
            cond.join(" AND "),
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
        for r in rows {
            hits.push(r.db(ix.path())?);
        }
    }
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
