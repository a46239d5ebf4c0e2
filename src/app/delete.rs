//! delete_message: the soft delete (a tombstone that keeps threads whole).

use serde_json::{Value, json};

use super::refusal::{AppError, AppResult};
use super::session::{Session, find_live};
use crate::core::op::{Op, Target};
use crate::store::error::SqlContext as _;

/// Tombstones a message the caller wrote or received.
pub fn delete_message(s: &mut Session, message_id: &str) -> AppResult<Value> {
    let me = s.role()?;
    let writer = s.writer()?;
    let (rec, ()) = s.channel_mut().append(&writer, |ix| {
        let id = find_live(ix, "message_id", message_id)?;
        let (from, to, kind, debt): (String, String, Option<String>, bool) = ix
            .conn()
            .prepare_cached("SELECT from_role, to_json, kind, action_required FROM messages WHERE id = ?1")
            .and_then(|mut st| st.query_row([id.hex()], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))))
            .db(ix.path())?;
        let to: Vec<String> = serde_json::from_str(&to).unwrap_or_default();
        let author = from == me.as_str();
        if !author && !to.iter().any(|r| r == me.as_str()) {
            return Err(AppError::permission(format!(
                "message {message_id} is between '{from}' and {to:?}; '{me}' is not a party to it and cannot delete it"
            )));
        }
        if kind.as_deref() == Some("proc") && !author {
            return Err(AppError::permission(format!(
                "message {message_id} is a proposal (kind='proc'); only its author '{from}' can delete it. \
                 Vote on it instead (acknowledge with 'reject', or 'void' to declare the round dead)"
            )));
        }
        if debt {
            return Err(AppError::value(format!(
                "message {message_id} is an open obligation (action_required) — resolve_message it first; \
                 deleting must not silently close a debt"
            )));
        }
        Ok((Op::Delete(Target { id }), ()))
    })?;
    let Op::Delete(t) = rec.op.as_ref().expect("written records carry their op") else {
        unreachable!("delete_message writes a delete")
    };
    Ok(json!({ "id": t.id.short(), "deleted": true, "superseded": [] }))
}
