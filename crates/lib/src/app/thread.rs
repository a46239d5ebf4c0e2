//! get_thread: the whole reply tree around a message, tombstones included.

use std::collections::BTreeSet;

use super::refusal::AppResult;
use super::rows::{
    FieldsArg, Listing, MESSAGE_FIELDS, MESSAGE_HEADERS, MessageView, Projected, Projection,
    project,
};
use super::session::{Session, find};
use crate::store::Index;

/// What get_thread was asked for: the tool's parameters.
#[derive(Clone, Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct ThreadRequest {
    /// Any message of the thread.
    pub message_id: String,
    /// Field names, or "headers" (all but bodies).
    #[serde(default)]
    pub fields: Option<FieldsArg>,
}

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
    let ids: Vec<&str> = tree.iter().map(String::as_str).collect();
    let mut rows = ix.message_rows(&ids)?;
    rows.sort_by(|a, b| (a.ms, a.c, &a.id).cmp(&(b.ms, b.c, &b.id)));
    let out = rows
        .into_iter()
        .map(|r| project(proj.as_ref(), MessageView::of(r, None)))
        .collect();
    Ok(Listing::whole(out))
}

fn parent_of(ix: &Index, id: &str) -> AppResult<Option<String>> {
    Ok(ix.parent_of(id)?)
}

fn children_of(ix: &Index, id: &str) -> AppResult<Vec<String>> {
    Ok(ix.children_of(id)?)
}
