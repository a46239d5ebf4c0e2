//! Writing a note of the memory: a `note` record in the session role's feed.
//!
//! Owns the checks before a note is written and the rule that one recorded
//! event is written once: a note naming an event the role's feed already
//! holds writes nothing and answers the note that stands. The check and the
//! write happen under the feed's lock, after a catch-up, so two deliveries
//! of one event racing on this device still write one note. It must not
//! read a client's hook input (the hook does) nor the spool (`recording`).

use schemars::JsonSchema;
use serde::Serialize;

use super::refusal::{AppError, AppResult};
use super::session::Session;
use crate::core::memory::note::{self, NoteKind};
use crate::core::op::{MemoryNote, Op};
use crate::core::timestamp::format_rfc3339;

/// A note to write: its kind and text, and for a recorded one the event,
/// agent and session hash.
#[derive(Clone, Debug)]
pub struct NoteRequest {
    /// What it records.
    pub kind: NoteKind,
    /// The text, word for word.
    pub text: String,
    /// The recorded event (its id), so a second delivery adds nothing.
    pub event: Option<String>,
    /// The agent that recorded it.
    pub agent: Option<String>,
    /// The short hash of the agent's session.
    pub session: Option<String>,
    /// The folder the session worked in, relative to the project root.
    pub folder: Option<String>,
    /// The short hash of that folder's absolute path.
    pub folder_hash: Option<String>,
}

/// What writing a note answers.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Noted {
    /// The note's record id.
    pub id: String,
    /// When it was written (the record's clock).
    pub created_at: String,
    /// False when its event was recorded already: nothing was written and
    /// `id` is the note that stands.
    pub written: bool,
}

/// Writes a note as the session's role; a note whose event the role's feed
/// holds already writes nothing.
pub fn write_note(s: &mut Session, req: NoteRequest) -> AppResult<Noted> {
    let op = MemoryNote {
        kind: req.kind,
        text: req.text,
        event: req.event,
        agent: req.agent,
        session: req.session,
        folder: req.folder,
        folder_hash: req.folder_hash,
    };
    note::check(&op).map_err(|e| AppError::value(format!("{e}. Nothing was written")))?;
    let role = s.role()?;
    let writer = s.announce()?;
    let event = op.event.clone();
    let (rec, standing) = s.channel_mut().append_if(&writer, |ix| {
        if let Some(e) = &event
            && let Some(id) = ix.note_of_event(role.as_str(), e)?
        {
            return Ok::<_, AppError>((None, Some(id)));
        }
        Ok((Some(Op::Note(op)), None))
    })?;
    match (rec, standing) {
        (Some(rec), _) => Ok(Noted {
            id: rec.id.hex(),
            created_at: format_rfc3339(rec.header.hlc.ms()),
            written: true,
        }),
        (None, Some((id, ms))) => Ok(Noted {
            id: id.hex(),
            created_at: format_rfc3339(ms),
            written: false,
        }),
        (None, None) => Err(AppError::value(
            "nothing to write: the note was neither written nor found recorded; write it again",
        )),
    }
}
