//! The memory's backlog as a session sees it (`memory_status`): what waits
//! for a summary and what is being written, and from when the memory is
//! still tentative here.
//!
//! Owns gathering those into one answer; must not decide what waits
//! (`compaction`) nor when the memory settles (`memory::horizon`).

use schemars::JsonSchema;
use serde::Serialize;

use super::compaction::{CompactionStatus, compaction_status};
use super::memory::horizon;
use super::refusal::AppResult;
use super::session::Session;
use crate::core::timestamp::format_rfc3339;
use crate::store::channel::now_ms;

/// The backlog of the memory here.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Backlog {
    /// The compaction state: items, waiting lines, ready, leased (being
    /// written) and paused lines.
    #[serde(flatten)]
    pub compaction: CompactionStatus,
    /// Items from this time on are not in the memory yet: another machine
    /// may still send records that sort before them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tentative_since: Option<String>,
    // The state of summarizing in the background (the API mode: whether
    // this device runs it, lines and cost so far, why it is paused) joins
    // here as its own field when that mode exists.
}

/// The backlog for `memory_status`.
pub fn backlog(s: &mut Session) -> AppResult<Backlog> {
    Ok(Backlog {
        compaction: compaction_status(s, now_ms())?,
        tentative_since: horizon(s)?.map(format_rfc3339),
    })
}
