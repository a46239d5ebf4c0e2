//! delete_message: the soft delete (a tombstone that keeps threads whole).

use schemars::JsonSchema;
use serde::Serialize;

use super::lifecycle::live_message;
use super::refusal::{AppError, AppResult};
use super::retirement::retired_by;
use super::session::Session;
use crate::core::op::{Op, Target};
use crate::core::rules;

/// What delete_message was asked to do: the tool's parameters.
#[derive(Clone, Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct DeleteRequest {
    /// The message to delete.
    pub message_id: String,
}

/// Tombstones a message the caller wrote or received. Refused for someone
/// else's proposal, an open debt and a resolution not yet confirmed.
pub fn delete_message(s: &mut Session, message_id: &str) -> AppResult<Deletion> {
    let me = s.role()?;
    let writer = s.announce()?;
    let roster = s.roster();
    let (rec, id) = s.channel_mut().append(&writer, |ix| {
        let m = live_message(ix, &roster, message_id)?;
        let op = Op::Delete(Target { id: m.id });
        rules::check(&m, &me, &op)?;
        Ok::<_, AppError>((op, m.id))
    })?;
    let superseded = retired_by(s.index(), &rec.id)?;
    Ok(Deletion {
        id: id.short(),
        deleted: true,
        superseded,
    })
}

/// What delete_message answers.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Deletion {
    /// Short id.
    pub id: String,
    /// Always true.
    pub deleted: bool,
    /// Short ids of the messages the deletion retired.
    pub superseded: Vec<String>,
}
