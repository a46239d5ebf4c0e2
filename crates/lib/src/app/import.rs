//! Importing old notes into the memory (`countersign memory import FILE`):
//! every note of the file written in one run of the role's feed, or none.
//!
//! Owns the write: the notes whose event the role's feed holds already (an
//! earlier import of the same entries) are left out, the others go in one
//! append, so a refusal or a crash leaves nothing half imported. It must not
//! read the file nor decide its formats (`core::memory::import` does).

use schemars::JsonSchema;
use serde::Serialize;

use super::refusal::{AppError, AppResult};
use super::session::Session;
use crate::core::op::{MemoryNote, Op};
use crate::store::channel::Step;

/// What an import did.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Imported {
    /// Notes written now.
    pub written: usize,
    /// Notes left out: an earlier import wrote them.
    pub already: usize,
}

/// Writes `notes` as the session's role in one run, leaving out those whose
/// event the role's feed already holds.
pub fn import_notes(s: &mut Session, notes: Vec<MemoryNote>) -> AppResult<Imported> {
    let role = s.role()?;
    let writer = s.announce()?;
    let total = notes.len();
    let (recs, ()) = s.channel_mut().append_run(&writer, |ix| {
        let mut steps: Vec<Step> = Vec::new();
        for n in notes {
            let known = match &n.event {
                Some(e) => ix.note_of_event(role.as_str(), e)?.is_some(),
                None => false,
            };
            if !known {
                steps.push(Box::new(move |_: &[_]| Op::Note(n)));
            }
        }
        Ok::<_, AppError>((steps, ()))
    })?;
    Ok(Imported {
        written: recs.len(),
        already: total - recs.len(),
    })
}
