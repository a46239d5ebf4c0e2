//! Delivering recorded events: the spool of this home drained into notes.
//!
//! Each spooled event names its channel and role, so a delivery needs no
//! project binding and can run anywhere (a detached child of the hook, the
//! next hook, `countersign note`). An event is dropped from the spool only
//! once its note is written or found written (`note::write_note` writes one
//! event once), so a crash at any point delivers it again later and adds
//! nothing twice. An event refused for what it holds (its text, its role,
//! this device not admitted) can never be delivered: it goes to `failed/`.
//! A fault (a channel folder out of reach, a busy index) leaves it for the
//! next delivery.
//!
//! Owns the order of delivery and the choice between delivered, failed and
//! left. It must not read a client's hook input (the hook spools it).

use std::collections::HashMap;
use std::path::PathBuf;

use super::note::{NoteRequest, write_note};
use super::refusal::{AppError, AppResult};
use super::session::Session;
use crate::core::ids::Role;
use crate::core::memory::note::NoteKind;
use crate::core::peer_text::one_line;
use crate::store::home::spool::{Spool, SpooledEvent};
use crate::store::{Channel, ChannelDir, Home};

/// What one delivery did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Delivery {
    /// Events written as notes.
    pub delivered: usize,
    /// Events whose note was written already (a second delivery).
    pub duplicates: usize,
    /// Events moved to `failed/`, with why.
    pub failed: Vec<(PathBuf, String)>,
    /// Events left in the spool for the next delivery, with why.
    pub left: Vec<(PathBuf, String)>,
}

/// Drains the spool of `home`. With `wait`, waits for a delivery running
/// elsewhere to finish first; without, returns `None` when one runs (it
/// takes every event spooled before it lists them, and the next run the
/// rest).
pub fn deliver(home: &Home, wait: bool) -> AppResult<Option<Delivery>> {
    let spool = Spool::of(home);
    let _lock = if wait {
        spool.lock()?
    } else {
        match spool.try_lock()? {
            Some(l) => l,
            None => return Ok(None),
        }
    };
    let mut out = Delivery::default();
    let mut sessions: HashMap<(PathBuf, String), Session> = HashMap::new();
    for path in spool.pending()? {
        let event = match spool.read(&path)? {
            Ok(e) => e,
            Err(why) => {
                let to = spool.fail(&path, &why)?;
                out.failed.push((to, why));
                continue;
            }
        };
        match deliver_one(home, &mut sessions, &event) {
            Ok(true) => {
                spool.done(&path)?;
                out.delivered += 1;
            }
            Ok(false) => {
                spool.done(&path)?;
                out.duplicates += 1;
            }
            Err(e @ (AppError::Value(_) | AppError::Permission(_))) => {
                let why = one_line(&e.to_string());
                let to = spool.fail(&path, &why)?;
                out.failed.push((to, why));
            }
            Err(e) => out.left.push((path, one_line(&e.to_string()))),
        }
    }
    Ok(Some(out))
}

/// Writes one event's note; `Ok(false)` when it was written already.
fn deliver_one(
    home: &Home,
    sessions: &mut HashMap<(PathBuf, String), Session>,
    e: &SpooledEvent,
) -> AppResult<bool> {
    let kind = NoteKind::parse(&e.kind).ok_or_else(|| {
        AppError::value(format!(
            "'{}' is no kind of note (prompt, reply, turn or note); check which hook wrote \
                 this event, then delete it from the spool",
            e.kind
        ))
    })?;
    let role = Role::new(&e.role).map_err(|_| {
        AppError::value(format!(
            "'{}' is no role name (a lowercase slug); check which hook wrote this event, \
                 then delete it from the spool",
            e.role
        ))
    })?;
    let key = (e.channel.clone(), e.role.clone());
    if !sessions.contains_key(&key) {
        let dir = ChannelDir::open(&e.channel)?;
        let session = Session::new(Channel::open(dir, home.clone())?, Some(role))?;
        sessions.insert(key.clone(), session);
    }
    let s = sessions.get_mut(&key).expect("inserted above");
    let noted = write_note(
        s,
        NoteRequest {
            kind,
            text: e.text.clone(),
            event: Some(e.event.clone()),
            agent: Some(e.agent.clone()),
            session: e.session.clone(),
            folder: e.folder.clone(),
            folder_hash: e.folder_hash.clone(),
        },
    )?;
    Ok(noted.written)
}
