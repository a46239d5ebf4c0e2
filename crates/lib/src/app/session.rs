//! A session: one open channel acting as (at most) one role.
//!
//! Owns the identity a use case acts as and the lookups every tool shares
//! (the caller's role, resolving a message id prefix). Identities in results
//! always come from here or from verified feeds, never from tool arguments.

use std::any::{Any, TypeId};
use std::collections::HashMap;

use super::refusal::{AppError, AppResult};
pub use crate::core::ids::roles_list;
use crate::core::ids::{IdPrefix, RecordId, Role};
use crate::store::home::KeyName;
use crate::store::{Channel, Index, Writer};

/// The most time a search spends bringing the full-text index up to date
/// before it refuses with "index catching up" (one step of
/// [`crate::store::index::SEARCH_BATCH`] bodies, about a second, may overrun
/// it). A search after ordinary writes and syncs never comes near it.
pub const SEARCH_CATCH_UP: std::time::Duration = std::time::Duration::from_millis(1500);

/// Environment variables a role may come from, in order of precedence.
pub const ROLE_VARS: [&str; 2] = ["COUNTERSIGN_ROLE", "AI_AGENT_CHANNEL_ROLE"];

/// An open channel plus the role this session acts as.
pub struct Session {
    channel: Channel,
    role: Option<Role>,
    writer: Option<Writer>,
    /// How long a search may spend on the full-text index's backlog.
    search_catch_up: std::time::Duration,
    /// What use cases keep between calls, one value per type (the memory's
    /// `app::memory::Cache`: what it built on the last call, reused while
    /// nothing changed). Held by type so the session needs no use case.
    kept: HashMap<TypeId, Box<dyn Any + Send + Sync>>,
    /// `Some` for a session that answers one command
    /// ([`Self::for_one_command`]): true once it has caught up.
    one_command: Option<bool>,
}

/// A message found by id.
#[derive(Clone, Debug)]
pub struct Found {
    /// Its full id.
    pub id: RecordId,
    /// True if it is a tombstone.
    pub deleted: bool,
}

impl Session {
    /// A session on `channel` as `role`. The role must be in the roster.
    pub fn new(mut channel: Channel, role: Option<Role>) -> AppResult<Self> {
        if let Some(r) = &role
            && !channel.roster().contains(r)
            // A role the owner added is known once its record is folded in.
            && (super::admission::catch_up(&mut channel).is_err() || !channel.roster().contains(r))
        {
            return Err(AppError::value(format!(
                "role '{r}' is not a role of this channel (its roles are {}; the channel folder \
                 used: {}); pass one of them with --role or COUNTERSIGN_ROLE, or have the owner \
                 add it with `countersign add-role {r}`",
                roles_list(&channel.roster()),
                channel.dir().describe()
            )));
        }
        Ok(Self {
            channel,
            role,
            writer: None,
            search_catch_up: SEARCH_CATCH_UP,
            kept: HashMap::new(),
            one_command: None,
        })
    }

    /// Makes this a session that answers one command (a CLI command, a
    /// hook): it catches up with the folder once, and the later reads of the
    /// same answer see the index as that pass left it, as if the command had
    /// run a moment earlier. Each catch-up looks at every feed folder (a
    /// `stat` of each, and of its newest segment), which thousands of junk
    /// folders make the larger part of a command. Writes are not affected:
    /// an append catches up under the index lock before it validates.
    pub fn for_one_command(mut self) -> Self {
        self.one_command = Some(false);
        self
    }

    /// The role from `--role`, else the environment (`COUNTERSIGN_ROLE`, then
    /// `AI_AGENT_CHANNEL_ROLE`); blank values count as absent.
    pub fn role_from(flag: Option<&str>) -> AppResult<Option<Role>> {
        let raw = flag.map(str::to_owned).or_else(|| {
            ROLE_VARS
                .iter()
                .find_map(|v| std::env::var(v).ok().filter(|s| !s.trim().is_empty()))
        });
        raw.map(|r| Role::new(r.trim()).map_err(|e| AppError::value(e.to_string())))
            .transpose()
    }

    /// The first role of `channel`'s roster this device holds a key of: the
    /// role a process started without one acts as (it writes summaries,
    /// shares the API key).
    pub fn keyed_role(channel: &Channel) -> Option<Role> {
        let id = channel.dir().id().to_owned();
        channel.roster().into_iter().find(|r| {
            channel
                .home()
                .load_key(&id, KeyName::Role(r))
                .ok()
                .flatten()
                .is_some()
        })
    }

    /// The channel.
    pub fn channel(&self) -> &Channel {
        &self.channel
    }

    /// The channel, mutably (writes, catch-up).
    pub fn channel_mut(&mut self) -> &mut Channel {
        &mut self.channel
    }

    /// The index.
    pub fn index(&self) -> &Index {
        self.channel.index()
    }

    /// The role this session may act as, if any.
    pub fn role_opt(&self) -> Option<&Role> {
        self.role.as_ref()
    }

    /// The caller's role, or the refusal naming where a role comes from.
    pub fn role(&self) -> AppResult<Role> {
        self.role.clone().ok_or_else(|| {
            AppError::value(format!(
                "no role: start the server with --role ROLE or set {} (or {})",
                ROLE_VARS[0], ROLE_VARS[1]
            ))
        })
    }

    /// Folds whatever arrived since the last call.
    pub fn catch_up(&mut self) -> AppResult<()> {
        if self.one_command == Some(true) {
            return Ok(());
        }
        super::admission::catch_up(&mut self.channel)?;
        if self.one_command.is_some() {
            self.one_command = Some(true);
        }
        Ok(())
    }

    /// Folds whatever arrived, then brings the full-text index up to date
    /// (ingest leaves new bodies for later, and a rebuild commits its rows
    /// before their full-text index: see `Channel::index_search_tail`),
    /// spending at most [`SEARCH_CATCH_UP`] on it (or what
    /// [`Self::set_search_catch_up`] set). A full-text index still
    /// behind after that is refused with how far it got, rather than
    /// searched: an answer missing rows would read as "no such message".
    pub fn catch_up_for_search(&mut self) -> AppResult<()> {
        self.catch_up()?;
        match self.channel.index_search_within(self.search_catch_up)? {
            None => Ok(()),
            Some(b) => Err(AppError::value(format!(
                "index catching up: the full-text index holds {} of {} message texts (after a \
                 rebuild or a large catch-up it is filled after everything else); every other \
                 tool answers already. Try again in a few seconds",
                b.indexed, b.total
            ))),
        }
    }

    /// Sets how long a search may spend bringing the full-text index up to
    /// date before it refuses ([`SEARCH_CATCH_UP`] unless set): zero makes
    /// every search with a backlog of more than one step refuse, which is
    /// how tests see the refusal without a channel of 16k messages.
    pub fn set_search_catch_up(&mut self, budget: std::time::Duration) {
        self.search_catch_up = budget;
    }

    /// Work that no answer waits for: indexing new bodies for search and
    /// checkpointing the index's log. A server runs it when idle.
    /// A large full-text backlog (after a rebuild) gets one step per idle
    /// moment, not all of it: the session stays locked while it runs.
    pub fn tidy(&mut self) -> AppResult<()> {
        self.channel
            .index_search_within(std::time::Duration::ZERO)?;
        self.channel.tidy_index()?;
        Ok(())
    }

    /// Readies the session for a long life (a server): the index's
    /// checkpoints move off the calls that write.
    pub fn serve_long(&mut self) -> AppResult<()> {
        self.channel.checkpoint_in_background()?;
        Ok(())
    }

    /// What a use case keeps between calls on this session: its value of
    /// type `T`, made by `T::default()` on first use.
    pub(super) fn kept<T: Any + Send + Sync + Default>(&mut self) -> &mut T {
        self.kept
            .entry(TypeId::of::<T>())
            .or_insert_with(|| Box::new(T::default()))
            .downcast_mut()
            .expect("each value is kept under its own type")
    }

    /// Announces the caller's feed before its first record
    /// ([`super::announcement::announce`]: the owner's `admit` and
    /// `feed_init`, each written only if missing) and returns its writer.
    /// Every use case that writes calls it first; it looks at the index once
    /// per session.
    pub fn announce(&mut self) -> AppResult<Writer> {
        let role = self.role()?;
        if let Some(w) = &self.writer {
            return Ok(w.clone());
        }
        let w = super::announcement::announce(&mut self.channel, &role)?;
        self.writer = Some(w.clone());
        Ok(w)
    }

    /// The roster, sorted.
    pub fn roster(&self) -> Vec<Role> {
        self.channel.roster()
    }
}

/// What an id prefix may name: the table it is looked up in and the word
/// refusals use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Named {
    /// A message (the id of its `send` record).
    Message,
    /// An upload (the id of its first chunk record).
    Upload,
}

impl Named {
    fn noun(self) -> &'static str {
        match self {
            Self::Message => "message",
            Self::Upload => "upload",
        }
    }

    fn article(self) -> &'static str {
        match self {
            Self::Message => "a",
            Self::Upload => "an",
        }
    }
}

/// Looks up an id prefix typed by an agent in the parameter `field`: the one
/// lookup behind every parameter that takes a message or upload id, so every
/// one refuses a malformed prefix, and a prefix that matches several, with
/// the same words. `Ok(None)` when nothing matches: callers say "not found"
/// in their own words. Tombstones are found too; callers decide.
pub fn lookup(ix: &Index, named: Named, field: &str, raw: &str) -> AppResult<Option<Found>> {
    let noun = named.noun();
    let Some(prefix) = IdPrefix::parse(raw) else {
        return Err(AppError::value(format!(
            "'{field}' must be {} {noun} id of 6 to 64 hex characters (got '{raw}'); copy the \
             id as a listing shows it",
            named.article()
        )));
    };
    let lo = prefix.as_str().to_owned();
    let hi = format!("{lo}g");
    // Three are enough to tell one from several.
    let rows: Vec<(String, bool)> = match named {
        Named::Message => ix
            .messages_with_prefix(&lo, &hi, 3)?
            .into_iter()
            .map(|m| (m.id, m.deleted))
            .collect(),
        Named::Upload => ix
            .uploads_with_prefix(&lo, &hi, 3)?
            .into_iter()
            .map(|id| (id, false))
            .collect(),
    };
    match rows.as_slice() {
        [] => Ok(None),
        [(id, deleted)] => Ok(RecordId::parse(id).map(|id| Found {
            id,
            deleted: *deleted,
        })),
        many => {
            let ids: Vec<&str> = many.iter().map(|(id, _)| &id[..16.min(id.len())]).collect();
            Err(AppError::value(format!(
                "'{field}': the id prefix '{raw}' matches more than one {noun} ({}) — pass more \
                 characters",
                ids.join(", ")
            )))
        }
    }
}

/// Finds a message by an id prefix typed by an agent. `field` names the
/// parameter in refusals. Tombstones are found too; callers decide.
pub fn find(ix: &Index, field: &str, raw: &str) -> AppResult<Found> {
    lookup(ix, Named::Message, field, raw)?.ok_or_else(|| {
        AppError::value(format!(
            "message {raw} not found; list_messages or \
             search_messages shows the ids this role can see"
        ))
    })
}

/// A live message by an id prefix: `Ok(None)` when none matches or it is a
/// tombstone, a refusal when the prefix is malformed or ambiguous.
pub fn lookup_live(ix: &Index, field: &str, raw: &str) -> AppResult<Option<RecordId>> {
    Ok(lookup(ix, Named::Message, field, raw)?
        .filter(|f| !f.deleted)
        .map(|f| f.id))
}

/// Like [`find`], but a tombstone counts as not found.
pub fn find_live(ix: &Index, field: &str, raw: &str) -> AppResult<RecordId> {
    lookup_live(ix, field, raw)?.ok_or_else(|| {
        AppError::value(format!(
            "message {raw} not found; list_messages or \
             search_messages shows the ids this role can see"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index_with(ids: &[&str]) -> Index {
        let ix = Index::in_memory("c").unwrap();
        for id in ids {
            ix.put_bare_message(id);
        }
        ix
    }

    #[test]
    fn a_prefix_must_name_exactly_one_message() {
        let a = format!("abcdef01{}", "0".repeat(56));
        let b = format!("abcdef02{}", "0".repeat(56));
        let ix = index_with(&[&a, &b]);
        let e = find(&ix, "message_id", "abcdef").unwrap_err().to_string();
        assert!(
            e.starts_with("'message_id': the id prefix 'abcdef' matches more than one message")
                && e.contains("pass more characters"),
            "{e}"
        );
        // Every way of asking gives the same refusal, whatever it says of "not found".
        let e2 = lookup_live(&ix, "message_id", "abcdef")
            .unwrap_err()
            .to_string();
        assert_eq!(e2, e);
        assert!(lookup_live(&ix, "reply_to", "abcdef03").unwrap().is_none());
        assert_eq!(find(&ix, "message_id", "abcdef01").unwrap().id.hex(), a);
        assert_eq!(find(&ix, "message_id", "#ABCDEF02").unwrap().id.hex(), b);
        let e = find(&ix, "message_id", "abcdef03").unwrap_err().to_string();
        assert_eq!(
            e,
            "message abcdef03 not found; list_messages or search_messages shows the ids this \
             role can see"
        );
        let e = find(&ix, "message_id", "abc").unwrap_err().to_string();
        assert!(e.contains("6 to 64 hex characters"), "{e}");
        let e = find(&ix, "reply_to", "not-hex!").unwrap_err().to_string();
        assert!(e.starts_with("'reply_to' must be a message id"), "{e}");
    }

    #[test]
    fn upload_ids_are_looked_up_alike() {
        let ix = index_with(&[]);
        for id in ["abcdef01", "abcdef02"] {
            ix.put_bare_upload(&format!("{id}{}", "0".repeat(56)));
        }
        let e = lookup(&ix, Named::Upload, "body_ref", "abcdef")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("'body_ref': the id prefix 'abcdef' matches more than one upload"),
            "{e}"
        );
        let e = lookup(&ix, Named::Upload, "upload_id", "xyz")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("'upload_id' must be an upload id"), "{e}");
        let one = lookup(&ix, Named::Upload, "upload_id", "abcdef02").unwrap();
        assert!(one.is_some_and(|f| f.id.hex().starts_with("abcdef02")));
        assert!(
            lookup(&ix, Named::Message, "message_id", "abcdef")
                .unwrap()
                .is_none()
        );
    }
}
