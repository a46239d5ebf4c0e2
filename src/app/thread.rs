//! get_thread: the whole reply tree around a message, tombstones included.

use std::collections::BTreeSet;

use super::refusal::AppResult;
use super::rows::{
    FieldsArg, Listing, MESSAGE_COLUMNS, MESSAGE_FIELDS, MESSAGE_HEADERS, MessageRow, MessageView,
    Projected, Projection, project,
};
use super::session::{Session, find};
use crate::store::Index;
use crate::store::error::SqlContext as _;

/// The thread containing `message_id`, oldest first.
pub fn get_thread(
    s: &mut Session,
    message_id: &str,
    fields: Option<&FieldsArg>,
) -> AppResult<Listing<Projected<MessageView>>> {
    let proj = Projection::parse(fields, MESSAGE_FIELDS, MESSAGE_HEADERS)?;
    s.catch_up()?;
    let ix = s.index();
    let start = find(ix, "message_id", message_id)?;
    // Walk up to the root; the seen set guards against a cycle.
    let mut root = start.id.hex();
    let mut seen = BTreeSet::from([root.clone()]);
    while let Some(parent) = parent_of(ix, &root)? {
        if !seen.insert(parent.clone()) {
            break;
        }
        root = parent;
    }
    // Then collect the whole tree below it.
    let mut tree = BTreeSet::from([root.clone()]);
    let mut frontier = vec![root];
    while let Some(id) = frontier.pop() {
        for child in children_of(ix, &id)? {
            if tree.insert(child.clone()) {
                frontier.push(child);
            }
        }
    }
    let single = "(SELECT {c} FROM deliveries t WHERE t.message_id = m.id AND m.multi = 0)";
    let sql = format!(
        "SELECT {MESSAGE_COLUMNS}, {}, {} FROM messages m WHERE m.id = ?1",
        single.replace("{c}", "read_ms"),
        single.replace("{c}", "opened_ms")
    );
    let mut rows = Vec::with_capacity(tree.len());
    let mut st = ix.conn().prepare_cached(&sql).db(ix.path())?;
    for id in &tree {
        rows.push(st.query_row([id], MessageRow::from_sql).db(ix.path())?);
    }
    rows.sort_by(|a, b| (a.ms, a.c, &a.id).cmp(&(b.ms, b.c, &b.id)));
    let out = rows
        .iter()
        .map(|r| project(proj.as_ref(), r.view(None)))
        .collect();
    Ok(Listing::whole(out))
}

fn parent_of(ix: &Index, id: &str) -> AppResult<Option<String>> {
    use rusqlite::OptionalExtension as _;
    Ok(ix
        .conn()
        .prepare_cached("SELECT reply_to FROM messages WHERE id = ?1")
        .and_then(|mut st| {
            st.query_row([id], |r| r.get::<_, Option<String>>(0))
                .optional()
        })
        .db(ix.path())?
        .flatten())
}

fn children_of(ix: &Index, id: &str) -> AppResult<Vec<String>> {
    Ok(ix
        .conn()
        .prepare_cached("SELECT id FROM messages WHERE reply_to = ?1")
        .and_then(|mut st| st.query_map([id], |r| r.get(0))?.collect())
        .db(ix.path())?)
}
