//! The channels the board reads: each opened once with the server's home
//! (a session with no role: a person looks, nobody writes). The event
//! streams listen to the server's shared folder watcher (`http::watchers`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use super::{detail, page};
use crate::app::Session;
use crate::app::{board, pin, timeline};
use crate::store::{Channel, ChannelDir, Home};

/// One channel as the board reads it.
pub struct Reader {
    session: Mutex<Session>,
}

impl Reader {
    /// Opens `dir` with `home`.
    pub fn open(dir: ChannelDir, home: Home) -> anyhow::Result<Self> {
        let session = Session::new(Channel::open(dir, home)?, None)?;
        Ok(Self {
            session: Mutex::new(session),
        })
    }

    /// The page as of `now_ms`, after catching up with the folder. Blocks:
    /// call it off the async threads.
    pub fn page(&self, now_ms: i64) -> anyhow::Result<String> {
        let mut s = self.session.lock().unwrap_or_else(PoisonError::into_inner);
        let view = board::board(&mut s, now_ms)?;
        Ok(page::render(&view))
    }

    /// The page of the message `id` names, as of `now_ms`: `Ok(None)` when
    /// no message has that id, a refusal (`AppError`) for a malformed or
    /// ambiguous one. Blocks.
    pub fn message(&self, id: &str, now_ms: i64) -> anyhow::Result<Option<String>> {
        let mut s = self.session.lock().unwrap_or_else(PoisonError::into_inner);
        let detail = timeline::message_detail(&mut s, id)?;
        let channel = s.channel().dir().genesis().name.clone();
        Ok(detail.map(|d| detail::message(&channel, &d, now_ms)))
    }

    /// The page of pin `key`, as of `now_ms`. Blocks.
    pub fn pin(&self, key: &str, now_ms: i64) -> anyhow::Result<String> {
        let mut s = self.session.lock().unwrap_or_else(PoisonError::into_inner);
        let versions = pin::versions(&mut s, key)?;
        let channel = s.channel().dir().genesis().name.clone();
        Ok(detail::pin(&channel, key, &versions, now_ms))
    }

    /// The page of moves before `before`, as of `now_ms`. Blocks.
    pub fn activity(&self, before: Option<&str>, now_ms: i64) -> anyhow::Result<String> {
        let mut s = self.session.lock().unwrap_or_else(PoisonError::into_inner);
        let page = timeline::activity(&mut s, before)?;
        let channel = s.channel().dir().genesis().name.clone();
        Ok(detail::activity(&channel, &page, now_ms))
    }
}

/// The channels opened so far, by channel id.
#[derive(Default)]
pub struct Readers {
    open: Mutex<HashMap<String, Arc<Reader>>>,
}

impl Readers {
    /// The reader of `dir`, opened on first use. Blocks: call it off the
    /// async threads.
    pub fn get(&self, dir: ChannelDir, home: &Home) -> anyhow::Result<Arc<Reader>> {
        let id = dir.id().to_owned();
        if let Some(r) = self.lock().get(&id) {
            return Ok(r.clone());
        }
        let reader = Arc::new(Reader::open(dir, home.clone())?);
        Ok(self.lock().entry(id).or_insert(reader).clone())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Reader>>> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
