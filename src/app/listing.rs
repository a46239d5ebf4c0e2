//! list_messages: the unranked, filtered view of the whole history.

use rusqlite::types::Value as Sql;

use super::refusal::{AppError, AppResult, check_length, check_limit};
use super::rows::{
    FieldsArg, Listing, MESSAGE_COLUMNS, MESSAGE_FIELDS, MESSAGE_HEADERS, MessageRow, MessageView,
    Projected, Projection, listing, project,
};
use super::session::Session;
use crate::core::timestamp::parse_since;
use crate::core::vocab::{DebtStatus, Kind, WorkStatus};
use crate::store::error::SqlContext as _;

/// Longest `topic` or `text` filter.
pub const FILTER_MAX: usize = 200;

/// The filters of list_messages.
#[derive(Clone, Debug, Default)]
pub struct ListFilter {
    /// Substring of the topic.
    pub topic: Option<String>,
    /// Author.
    pub from_role: Option<String>,
    /// A recipient (multi-recipient messages included).
    pub to_role: Option<String>,
    /// Unread only (per recipient with `to_role`).
    pub unread_only: bool,
    /// ISO-8601 lower bound on creation time.
    pub since: Option<String>,
    /// Debt status.
    pub status: Option<String>,
    /// Kind.
    pub kind: Option<String>,
    /// Work status.
    pub work_status: Option<String>,
    /// Substring of topic or body.
    pub text: Option<String>,
    /// Proposals structurally linked to a pin key.
    pub pin_key: Option<String>,
}

/// Escapes `%`, `_` and `\` for a LIKE pattern with `ESCAPE '\'`.
pub fn like_pattern(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('%');
    for c in s.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('%');
    out
}

/// Non-deleted messages matching `f`, newest first.
pub fn list_messages(
    s: &mut Session,
    f: &ListFilter,
    limit: i64,
    fields: Option<&FieldsArg>,
) -> AppResult<Listing<Projected<MessageView>>> {
    let limit = check_limit(limit)?;
    let proj = Projection::parse(fields, MESSAGE_FIELDS, MESSAGE_HEADERS)?;
    let mut cond = vec!["m.deleted_ms IS NULL".to_owned()];
    let mut args: Vec<Sql> = Vec::new();
    let arg = |v: Sql, args: &mut Vec<Sql>| {
        args.push(v);
        format!("?{}", args.len())
    };
    if let Some(t) = &f.topic {
        check_length("topic", t, FILTER_MAX)?;
        let a = arg(Sql::Text(like_pattern(t)), &mut args);
        cond.push(format!("m.topic LIKE {a} ESCAPE '\\'"));
    }
    if let Some(t) = &f.text {
        check_length("text", t, FILTER_MAX)?;
        let a = arg(Sql::Text(like_pattern(t)), &mut args);
        cond.push(format!(
            "(m.topic LIKE {a} ESCAPE '\\' OR EXISTS (SELECT 1 FROM bodies b WHERE b.message_id = m.id \
             AND b.body LIKE {a} ESCAPE '\\'))"
        ));
    }
    if let Some(r) = &f.from_role {
        let a = arg(Sql::Text(r.trim().to_owned()), &mut args);
        cond.push(format!("m.from_role = {a}"));
    }
    let read_expr = if let Some(r) = &f.to_role {
        let a = arg(Sql::Text(r.trim().to_owned()), &mut args);
        cond.push(format!(
            "EXISTS (SELECT 1 FROM deliveries t WHERE t.message_id = m.id AND t.role = {a}{})",
            if f.unread_only {
                " AND t.read_ms IS NULL"
            } else {
                ""
            }
        ));
        format!("(SELECT read_ms FROM deliveries t WHERE t.message_id = m.id AND t.role = {a})")
    } else {
        // The row's own read state: the single recipient's; a multi-recipient
        // message has none of its own, so it always looks unread here.
        let single = "(SELECT read_ms FROM deliveries t WHERE t.message_id = m.id AND m.multi = 0)";
        if f.unread_only {
            cond.push(format!("{single} IS NULL"));
        }
        single.to_owned()
    };
    if let Some(since) = &f.since {
        let ms = parse_since(since).map_err(|e| AppError::value(e.to_string()))?;
        let a = arg(Sql::Integer(ms), &mut args);
        cond.push(format!("m.ms >= {a}"));
    }
    if let Some(st) = &f.status {
        let st =
            DebtStatus::parse_field(st, "status").map_err(|e| AppError::value(e.to_string()))?;
        cond.push(format!("m.status = '{}'", st.as_str()));
    }
    if let Some(k) = &f.kind {
        Kind::parse_field(k, "kind").map_err(|e| AppError::value(e.to_string()))?;
        let a = arg(Sql::Text(k.clone()), &mut args);
        cond.push(format!("m.kind = {a}"));
    }
    if let Some(w) = &f.work_status {
        WorkStatus::parse_field(w, "work_status").map_err(|e| AppError::value(e.to_string()))?;
        let a = arg(Sql::Text(w.clone()), &mut args);
        cond.push(format!("m.work_status = {a}"));
    }
    if let Some(k) = &f.pin_key {
        // The structural link only: a mention in the text is not a pin key.
        let a = arg(Sql::Text(k.trim().to_owned()), &mut args);
        cond.push(format!("m.pin_key = {a}"));
    }
    let lim = arg(Sql::Integer(limit as i64 + 1), &mut args);
    let opened_expr = read_expr.replace("read_ms", "opened_ms");
    let sql = format!(
        "SELECT {MESSAGE_COLUMNS}, {read_expr}, {opened_expr} FROM messages m WHERE {} \
         ORDER BY m.ms DESC, m.c DESC, m.id DESC LIMIT {lim}",
        cond.join(" AND ")
    );
    s.catch_up()?;
    let ix = s.index();
    let mut rows: Vec<MessageRow> = ix
        .conn()
        .prepare_cached(&sql)
        .and_then(|mut st| {
            st.query_map(
                rusqlite::params_from_iter(args.iter()),
                MessageRow::from_sql,
            )?
            .collect()
        })
        .db(ix.path())?;
    let overflow = rows.len() > limit;
    rows.truncate(limit);
    let out = rows
        .iter()
        .map(|r| project(proj.as_ref(), r.view(None)))
        .collect();
    Ok(listing(
        out,
        limit,
        overflow,
        "more messages match; narrow the filters (since, from_role, kind…) or raise 'limit' (at most 1000)",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_escapes_wildcards() {
        assert_eq!(like_pattern("50%_a\\b"), "%50\\%\\_a\\\\b%");
    }
}
