//! The access store of `countersign serve`: who may reach a hosted channel
//! over HTTP, kept in `access.sqlite3` beside this home's keys.
//!
//! Three kinds of secret are handed out, each once, and only their SHA-256 is
//! kept: role tokens (`cst_…`: act as one role of one channel), view keys
//! (`csv_…`: look at one channel's board) and the short-lived steps of a
//! board login (a one-time nonce carried by a link, then the session of a
//! cookie). A view key issued through a role token remembers that token, so
//! revoking the token ends the key and every board session opened with it.
//! It also remembers the names of hosted channels deleted through the admin
//! tools, which are never reused, and keeps the home's server secret (see
//! [`Access::server_secret`]).
//!
//! Owns that database and nothing else: it never decides who may do what
//! (the HTTP layer and `app` do), and it never touches a channel folder.
//! The admin token is not here: it lives in the server's environment.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension as _, params};
use sha2::{Digest as _, Sha256};

use crate::store::error::{IoContext as _, SqlContext as _, StoreResult};

/// The kinds of secret, by the prefix that starts them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SecretKind {
    /// `cst_`: a role token.
    RoleToken,
    /// `csv_`: a view key.
    ViewKey,
    /// `csn_`: the one-time nonce of a board link.
    Nonce,
    /// `csb_`: the session behind a board cookie.
    BoardSession,
}

impl SecretKind {
    /// The prefix of this kind's secrets.
    pub fn prefix(self) -> &'static str {
        match self {
            Self::RoleToken => "cst_",
            Self::ViewKey => "csv_",
            Self::Nonce => "csn_",
            Self::BoardSession => "csb_",
        }
    }

    /// The kind a presented secret claims by its prefix.
    pub fn of(secret: &str) -> Option<Self> {
        [
            Self::RoleToken,
            Self::ViewKey,
            Self::Nonce,
            Self::BoardSession,
        ]
        .into_iter()
        .find(|k| secret.starts_with(k.prefix()))
    }
}

/// A new secret of `kind`: its prefix and 32 random bytes in hex.
pub fn new_secret(kind: SecretKind) -> String {
    let mut rnd = [0u8; 32];
    getrandom::fill(&mut rnd).expect("the OS random source works");
    format!("{}{}", kind.prefix(), hex::encode(rnd))
}

/// The SHA-256 of a secret, in hex: what is stored and looked up.
pub fn digest(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

/// The public id of a secret: the first 12 hex digits of its digest.
pub fn public_id(secret: &str) -> String {
    digest(secret)[..12].to_owned()
}

/// The channel a token or key is for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChannelRef {
    /// channel.id (the digest of channel.json).
    pub id: String,
    /// channel.json `name`: how URLs name it.
    pub name: String,
}

/// A role token, as stored (never the secret).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoleToken {
    /// Public id (see [`public_id`]).
    pub id: String,
    /// The channel it acts in.
    pub channel: ChannelRef,
    /// The role it acts as.
    pub role: String,
    /// A note of the person who made it.
    pub label: String,
    /// When it was made (ms).
    pub created_ms: i64,
    /// When it was revoked (ms), if it was.
    pub revoked_ms: Option<i64>,
}

/// A view key, as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ViewKey {
    /// Public id.
    pub id: String,
    /// The one channel whose board it opens.
    pub channel: ChannelRef,
    /// A note (e.g. `board`).
    pub label: String,
    /// Who issued it: a role, `admin`, or `cli`.
    pub issued_by: String,
    /// The public id of the role token that issued it, if one did: the key
    /// ends when that token is revoked.
    pub issued_token: Option<String>,
    /// When it was made (ms).
    pub created_ms: i64,
    /// When it stops working (ms).
    pub expires_ms: i64,
    /// When it was revoked (ms), if it was.
    pub revoked_ms: Option<i64>,
}

impl ViewKey {
    /// True while it opens its board at `now_ms`.
    pub fn is_live(&self, now_ms: i64) -> bool {
        self.revoked_ms.is_none() && self.expires_ms > now_ms
    }
}

/// How long the nonce of a board link may wait to be exchanged.
pub const NONCE_TTL: Duration = Duration::from_secs(60);

/// How long a board session (its cookie) lasts, at most; never past its key.
pub const BOARD_SESSION_TTL: Duration = Duration::from_secs(7 * 24 * 3600);

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS role_tokens(
    id TEXT PRIMARY KEY,
    digest TEXT NOT NULL UNIQUE,
    channel_id TEXT NOT NULL,
    channel_name TEXT NOT NULL,
    role TEXT NOT NULL,
    label TEXT NOT NULL,
    created_ms INTEGER NOT NULL,
    revoked_ms INTEGER
);
CREATE TABLE IF NOT EXISTS view_keys(
    id TEXT PRIMARY KEY,
    digest TEXT NOT NULL UNIQUE,
    channel_id TEXT NOT NULL,
    channel_name TEXT NOT NULL,
    label TEXT NOT NULL,
    issued_by TEXT NOT NULL,
    created_ms INTEGER NOT NULL,
    expires_ms INTEGER NOT NULL,
    revoked_ms INTEGER
);
CREATE TABLE IF NOT EXISTS board_nonces(
    digest TEXT PRIMARY KEY,
    view_key TEXT NOT NULL,
    expires_ms INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS board_sessions(
    digest TEXT PRIMARY KEY,
    view_key TEXT NOT NULL,
    expires_ms INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS server_secret(
    id INTEGER PRIMARY KEY CHECK (id = 1),
    secret TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS deleted_channels(
    name TEXT PRIMARY KEY,
    channel_id TEXT NOT NULL,
    deleted_ms INTEGER NOT NULL
);
";

/// The access database of one home.
#[derive(Debug)]
pub struct Access {
    conn: Connection,
    path: PathBuf,
    secret: std::cell::OnceCell<[u8; 32]>,
}

const TOKEN_COLUMNS: &str = "id, channel_id, channel_name, role, label, created_ms, revoked_ms";
const KEY_COLUMNS: &str = "id, channel_id, channel_name, label, issued_by, created_ms, \
     expires_ms, revoked_ms, issued_token";

impl Access {
    /// Opens (creating if needed) the access database at `path`; its folder
    /// is created private to this user.
    pub fn open(path: &Path) -> StoreResult<Self> {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).at(parent)?;
        }
        let conn = Connection::open(path).db(path)?;
        restrict(path)?;
        conn.busy_timeout(Duration::from_secs(10)).db(path)?;
        conn.pragma_update(None, "journal_mode", "WAL").db(path)?;
        conn.execute_batch(SCHEMA).db(path)?;
        add_issued_token(&conn).db(path)?;
        Ok(Self {
            conn,
            path: path.to_path_buf(),
            secret: std::cell::OnceCell::new(),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Makes a role token for `role` of `channel`; returns the secret (shown
    /// once) and what is kept of it.
    pub fn create_role_token(
        &self,
        channel: &ChannelRef,
        role: &str,
        label: &str,
        now_ms: i64,
    ) -> StoreResult<(String, RoleToken)> {
        let secret = new_secret(SecretKind::RoleToken);
        let token = RoleToken {
            id: public_id(&secret),
            channel: channel.clone(),
            role: role.to_owned(),
            label: label.to_owned(),
            created_ms: now_ms,
            revoked_ms: None,
        };
        self.conn
            .execute(
                "INSERT INTO role_tokens(id, digest, channel_id, channel_name, role, label, \
                 created_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![
                    token.id,
                    digest(&secret),
                    channel.id,
                    channel.name,
                    role,
                    label,
                    now_ms
                ],
            )
            .db(&self.path)?;
        Ok((secret, token))
    }

    /// The live role token whose secret is `secret`, if any.
    pub fn find_role_token(&self, secret: &str) -> StoreResult<Option<RoleToken>> {
        self.conn
            .query_row(
                &format!(
                    "SELECT {TOKEN_COLUMNS} FROM role_tokens \
                     WHERE digest = ?1 AND revoked_ms IS NULL"
                ),
                [digest(secret)],
                token_row,
            )
            .optional()
            .db(&self.path)
    }

    /// Every role token ever made here, newest first.
    pub fn role_tokens(&self) -> StoreResult<Vec<RoleToken>> {
        let mut st = self
            .conn
            .prepare(&format!(
                "SELECT {TOKEN_COLUMNS} FROM role_tokens ORDER BY created_ms DESC, id"
            ))
            .db(&self.path)?;
        st.query_map([], token_row)
            .and_then(Iterator::collect)
            .db(&self.path)
    }

    /// Revokes the role token with public id `id` (or a unique prefix of it,
    /// at least 6 digits) and, with it, every view key it issued (so every
    /// board session opened with one); returns the token and how many keys
    /// ended, or `None` when no live token matches.
    pub fn revoke_role_token(
        &self,
        id: &str,
        now_ms: i64,
    ) -> StoreResult<Option<(RoleToken, usize)>> {
        let Some(one) = self.live_by_prefix("role_tokens", TOKEN_COLUMNS, id, token_row)? else {
            return Ok(None);
        };
        let tx = self.conn.unchecked_transaction().db(&self.path)?;
        tx.execute(
            "UPDATE role_tokens SET revoked_ms = ?2 WHERE id = ?1",
            params![one.id, now_ms],
        )
        .db(&self.path)?;
        let keys = tx
            .execute(
                "UPDATE view_keys SET revoked_ms = ?2 WHERE issued_token = ?1 \
                 AND revoked_ms IS NULL",
                params![one.id, now_ms],
            )
            .db(&self.path)?;
        tx.commit().db(&self.path)?;
        let token = RoleToken {
            revoked_ms: Some(now_ms),
            ..one
        };
        Ok(Some((token, keys)))
    }

    /// Revokes every live role token of `role` in channel `channel_id`
    /// (every role when `role` is `None`), and the view keys they or the
    /// role issued; returns how many tokens ended.
    pub fn revoke_role_tokens(
        &self,
        channel_id: &str,
        role: Option<&str>,
        now_ms: i64,
    ) -> StoreResult<usize> {
        let tx = self.conn.unchecked_transaction().db(&self.path)?;
        let n = self.end_role_tokens(channel_id, role, now_ms)?;
        tx.commit().db(&self.path)?;
        Ok(n)
    }

    /// [`Self::revoke_role_tokens`]' statements, inside the caller's
    /// transaction.
    fn end_role_tokens(
        &self,
        channel_id: &str,
        role: Option<&str>,
        now_ms: i64,
    ) -> StoreResult<usize> {
        let n = self
            .conn
            .execute(
                "UPDATE role_tokens SET revoked_ms = ?3 WHERE channel_id = ?1 \
                 AND (?2 IS NULL OR role = ?2) AND revoked_ms IS NULL",
                params![channel_id, role, now_ms],
            )
            .db(&self.path)?;
        self.conn
            .execute(
                "UPDATE view_keys SET revoked_ms = ?3 WHERE channel_id = ?1 \
                 AND (?2 IS NULL OR issued_by = ?2) AND revoked_ms IS NULL",
                params![channel_id, role, now_ms],
            )
            .db(&self.path)?;
        Ok(n)
    }

    /// Makes one role token for each of `roles` in `channel`, all or none:
    /// the secrets (shown once) and what is kept of them, in `roles`' order.
    pub fn create_role_tokens(
        &self,
        channel: &ChannelRef,
        roles: &[&str],
        label: &str,
        now_ms: i64,
    ) -> StoreResult<Vec<(String, RoleToken)>> {
        let tx = self.conn.unchecked_transaction().db(&self.path)?;
        let made = roles
            .iter()
            .map(|role| self.create_role_token(channel, role, label, now_ms))
            .collect::<StoreResult<Vec<_>>>()?;
        tx.commit().db(&self.path)?;
        Ok(made)
    }

    /// Replaces the tokens of `role` in `channel` by a new one, in one
    /// transaction: every live token of the role and the view keys it issued
    /// end ([`Self::revoke_role_tokens`]) and the new secret is returned.
    pub fn rotate_role_token(
        &self,
        channel: &ChannelRef,
        role: &str,
        label: &str,
        now_ms: i64,
    ) -> StoreResult<(String, RoleToken)> {
        let tx = self.conn.unchecked_transaction().db(&self.path)?;
        self.end_role_tokens(&channel.id, Some(role), now_ms)?;
        let made = self.create_role_token(channel, role, label, now_ms)?;
        tx.commit().db(&self.path)?;
        Ok(made)
    }

    /// Ends a hosted channel's access, in one transaction: every role token
    /// and view key of it is revoked and its name is remembered as deleted
    /// ([`Self::mark_deleted`]). Returns how many role tokens ended.
    pub fn delete_channel(&self, channel: &ChannelRef, now_ms: i64) -> StoreResult<usize> {
        let tx = self.conn.unchecked_transaction().db(&self.path)?;
        let n = self.end_role_tokens(&channel.id, None, now_ms)?;
        self.mark_deleted(channel, now_ms)?;
        tx.commit().db(&self.path)?;
        Ok(n)
    }

    /// A view key of `channel` and the one-time nonce of a link to its
    /// board, made together or not at all: the key's secret, the key (as
    /// kept) and the nonce's secret. `issued_token` is the public id of the
    /// role token asking, when one does: revoking it ends the key.
    pub fn create_board_link(
        &self,
        channel: &ChannelRef,
        label: &str,
        (issued_by, issued_token): (&str, Option<&str>),
        ttl: Duration,
        now_ms: i64,
    ) -> StoreResult<(String, ViewKey, String)> {
        let tx = self.conn.unchecked_transaction().db(&self.path)?;
        let (secret, key) =
            self.insert_view_key(channel, label, (issued_by, issued_token), ttl, now_ms)?;
        let nonce = self.create_nonce(&key.id, now_ms)?;
        tx.commit().db(&self.path)?;
        Ok((secret, key, nonce))
    }

    /// Makes a view key for `channel`'s board, valid for `ttl`, issued by
    /// no role token.
    pub fn create_view_key(
        &self,
        channel: &ChannelRef,
        label: &str,
        issued_by: &str,
        ttl: Duration,
        now_ms: i64,
    ) -> StoreResult<(String, ViewKey)> {
        self.insert_view_key(channel, label, (issued_by, None), ttl, now_ms)
    }

    fn insert_view_key(
        &self,
        channel: &ChannelRef,
        label: &str,
        (issued_by, issued_token): (&str, Option<&str>),
        ttl: Duration,
        now_ms: i64,
    ) -> StoreResult<(String, ViewKey)> {
        let secret = new_secret(SecretKind::ViewKey);
        let key = ViewKey {
            id: public_id(&secret),
            channel: channel.clone(),
            label: label.to_owned(),
            issued_by: issued_by.to_owned(),
            issued_token: issued_token.map(str::to_owned),
            created_ms: now_ms,
            expires_ms: now_ms.saturating_add(ms(ttl)),
            revoked_ms: None,
        };
        self.conn
            .execute(
                "INSERT INTO view_keys(id, digest, channel_id, channel_name, label, issued_by, \
                 created_ms, expires_ms, issued_token) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                params![
                    key.id,
                    digest(&secret),
                    channel.id,
                    channel.name,
                    label,
                    issued_by,
                    now_ms,
                    key.expires_ms,
                    issued_token
                ],
            )
            .db(&self.path)?;
        Ok((secret, key))
    }

    /// The one live row of `table` whose public id is `id` or starts with it
    /// (at least 6 hex digits); `None` when none or several match.
    fn live_by_prefix<T>(
        &self,
        table: &str,
        columns: &str,
        id: &str,
        row: fn(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
    ) -> StoreResult<Option<T>> {
        if id.len() < 6 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Ok(None);
        }
        let mut found: Vec<T> = {
            let mut st = self
                .conn
                .prepare(&format!(
                    "SELECT {columns} FROM {table} \
                     WHERE substr(id, 1, ?2) = ?1 AND revoked_ms IS NULL"
                ))
                .db(&self.path)?;
            st.query_map(params![id.to_ascii_lowercase(), id.len() as i64], row)
                .and_then(Iterator::collect)
                .db(&self.path)?
        };
        Ok(if found.len() == 1 { found.pop() } else { None })
    }

    /// Revokes the view key with public id `id` (or a unique prefix of it,
    /// at least 6 digits), and so every board session opened with it;
    /// returns it, or `None` when no live key matches.
    pub fn revoke_view_key(&self, id: &str, now_ms: i64) -> StoreResult<Option<ViewKey>> {
        let Some(one) = self.live_by_prefix("view_keys", KEY_COLUMNS, id, key_row)? else {
            return Ok(None);
        };
        self.conn
            .execute(
                "UPDATE view_keys SET revoked_ms = ?2 WHERE id = ?1",
                params![one.id, now_ms],
            )
            .db(&self.path)?;
        Ok(Some(ViewKey {
            revoked_ms: Some(now_ms),
            ..one
        }))
    }

    /// Every view key ever made here, newest first.
    pub fn view_keys(&self) -> StoreResult<Vec<ViewKey>> {
        let mut st = self
            .conn
            .prepare(&format!(
                "SELECT {KEY_COLUMNS} FROM view_keys ORDER BY created_ms DESC, id"
            ))
            .db(&self.path)?;
        st.query_map([], key_row)
            .and_then(Iterator::collect)
            .db(&self.path)
    }

    /// This home's server secret, made on first use: 32 random bytes that
    /// never leave the access database. A server proves with it that it
    /// holds this home, and names its board cookies with it
    /// (`core::proof`). Every process of the home reads the same one.
    pub fn server_secret(&self) -> StoreResult<[u8; 32]> {
        if let Some(kept) = self.secret.get() {
            return Ok(*kept);
        }
        let secret = self.load_server_secret()?;
        Ok(*self.secret.get_or_init(|| secret))
    }

    fn load_server_secret(&self) -> StoreResult<[u8; 32]> {
        let mut fresh = [0u8; 32];
        getrandom::fill(&mut fresh).expect("the OS random source works");
        self.conn
            .execute(
                "INSERT OR IGNORE INTO server_secret(id, secret) VALUES (1, ?1)",
                [hex::encode(fresh)],
            )
            .db(&self.path)?;
        let kept: String = self
            .conn
            .query_row("SELECT secret FROM server_secret WHERE id = 1", [], |r| {
                r.get(0)
            })
            .db(&self.path)?;
        let mut secret = [0u8; 32];
        match hex::decode_to_slice(&kept, &mut secret) {
            Ok(()) => Ok(secret),
            // A damaged secret is replaced: it only names cookies and
            // answers proofs, so a new one costs a sign-in, nothing more.
            Err(_) => {
                self.conn
                    .execute(
                        "UPDATE server_secret SET secret = ?1 WHERE id = 1",
                        [hex::encode(fresh)],
                    )
                    .db(&self.path)?;
                Ok(fresh)
            }
        }
    }

    /// The live view key whose secret is `secret`, if any.
    pub fn find_view_key(&self, secret: &str, now_ms: i64) -> StoreResult<Option<ViewKey>> {
        let key = self
            .conn
            .query_row(
                &format!("SELECT {KEY_COLUMNS} FROM view_keys WHERE digest = ?1"),
                [digest(secret)],
                key_row,
            )
            .optional()
            .db(&self.path)?;
        Ok(key.filter(|k| k.is_live(now_ms)))
    }

    /// The view key with public id `id`, live or not.
    fn view_key_by_id(&self, id: &str) -> StoreResult<Option<ViewKey>> {
        self.conn
            .query_row(
                &format!("SELECT {KEY_COLUMNS} FROM view_keys WHERE id = ?1"),
                [id],
                key_row,
            )
            .optional()
            .db(&self.path)
    }

    /// Ends every view key of channel `channel_id` (and so every board
    /// session opened with one); returns the keys that were live.
    pub fn revoke_view_keys(&self, channel_id: &str, now_ms: i64) -> StoreResult<Vec<ViewKey>> {
        let tx = self.conn.unchecked_transaction().db(&self.path)?;
        let live: Vec<ViewKey> = {
            let mut st = tx
                .prepare(&format!(
                    "SELECT {KEY_COLUMNS} FROM view_keys \
                     WHERE channel_id = ?1 AND revoked_ms IS NULL ORDER BY created_ms, id"
                ))
                .db(&self.path)?;
            st.query_map([channel_id], key_row)
                .and_then(Iterator::collect)
                .db(&self.path)?
        };
        tx.execute(
            "UPDATE view_keys SET revoked_ms = ?2 WHERE channel_id = ?1 AND revoked_ms IS NULL",
            params![channel_id, now_ms],
        )
        .db(&self.path)?;
        tx.commit().db(&self.path)?;
        Ok(live
            .into_iter()
            .map(|k| ViewKey {
                revoked_ms: Some(now_ms),
                ..k
            })
            .collect())
    }

    /// A one-time nonce for a link to the board of view key `key_id`, valid
    /// for [`NONCE_TTL`].
    pub fn create_nonce(&self, key_id: &str, now_ms: i64) -> StoreResult<String> {
        let secret = new_secret(SecretKind::Nonce);
        self.conn
            .execute(
                "INSERT INTO board_nonces(digest, view_key, expires_ms) VALUES (?1, ?2, ?3)",
                params![
                    digest(&secret),
                    key_id,
                    now_ms.saturating_add(ms(NONCE_TTL))
                ],
            )
            .db(&self.path)?;
        Ok(secret)
    }

    /// Burns the nonce `secret` and opens a board session for its key:
    /// returns the session's secret (for the cookie), its expiry and the key,
    /// or `None` when the nonce is unknown, used or expired, or its key is
    /// no longer live. A nonce works once, even under concurrent requests.
    pub fn redeem_nonce(
        &self,
        secret: &str,
        now_ms: i64,
    ) -> StoreResult<Option<(String, i64, ViewKey)>> {
        let tx = self.conn.unchecked_transaction().db(&self.path)?;
        tx.execute("DELETE FROM board_nonces WHERE expires_ms <= ?1", [now_ms])
            .db(&self.path)?;
        let key_id: Option<String> = tx
            .query_row(
                "DELETE FROM board_nonces WHERE digest = ?1 RETURNING view_key",
                [digest(secret)],
                |r| r.get(0),
            )
            .optional()
            .db(&self.path)?;
        tx.commit().db(&self.path)?;
        let Some(key_id) = key_id else {
            return Ok(None);
        };
        let Some(key) = self.view_key_by_id(&key_id)?.filter(|k| k.is_live(now_ms)) else {
            return Ok(None);
        };
        let session = new_secret(SecretKind::BoardSession);
        let expires_ms = now_ms
            .saturating_add(ms(BOARD_SESSION_TTL))
            .min(key.expires_ms);
        self.conn
            .execute(
                "INSERT INTO board_sessions(digest, view_key, expires_ms) VALUES (?1, ?2, ?3)",
                params![digest(&session), key.id, expires_ms],
            )
            .db(&self.path)?;
        Ok(Some((session, expires_ms, key)))
    }

    /// The live view key behind the board session `secret` (a cookie), if
    /// the session and its key are both still live.
    pub fn find_board_session(&self, secret: &str, now_ms: i64) -> StoreResult<Option<ViewKey>> {
        let key_id: Option<String> = self
            .conn
            .query_row(
                "SELECT view_key FROM board_sessions WHERE digest = ?1 AND expires_ms > ?2",
                params![digest(secret), now_ms],
                |r| r.get(0),
            )
            .optional()
            .db(&self.path)?;
        match key_id {
            Some(id) => Ok(self.view_key_by_id(&id)?.filter(|k| k.is_live(now_ms))),
            None => Ok(None),
        }
    }

    /// Remembers that the hosted channel `name` was deleted: the name is
    /// never given to a new channel.
    pub fn mark_deleted(&self, channel: &ChannelRef, now_ms: i64) -> StoreResult<()> {
        self.conn
            .execute(
                "INSERT OR IGNORE INTO deleted_channels(name, channel_id, deleted_ms) \
                 VALUES (?1, ?2, ?3)",
                params![channel.name, channel.id, now_ms],
            )
            .db(&self.path)?;
        Ok(())
    }

    /// True when a hosted channel named `name` was deleted here.
    pub fn is_deleted(&self, name: &str) -> StoreResult<bool> {
        self.conn
            .query_row(
                "SELECT 1 FROM deleted_channels WHERE name = ?1",
                [name],
                |_| Ok(()),
            )
            .optional()
            .map(|o| o.is_some())
            .db(&self.path)
    }
}

fn token_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<RoleToken> {
    Ok(RoleToken {
        id: r.get(0)?,
        channel: ChannelRef {
            id: r.get(1)?,
            name: r.get(2)?,
        },
        role: r.get(3)?,
        label: r.get(4)?,
        created_ms: r.get(5)?,
        revoked_ms: r.get(6)?,
    })
}

fn key_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<ViewKey> {
    Ok(ViewKey {
        id: r.get(0)?,
        channel: ChannelRef {
            id: r.get(1)?,
            name: r.get(2)?,
        },
        label: r.get(3)?,
        issued_by: r.get(4)?,
        created_ms: r.get(5)?,
        expires_ms: r.get(6)?,
        revoked_ms: r.get(7)?,
        issued_token: r.get(8)?,
    })
}

/// Adds `view_keys.issued_token` to a database made before it existed (its
/// keys issued by no known token).
fn add_issued_token(conn: &Connection) -> rusqlite::Result<()> {
    let has: bool = conn
        .prepare("SELECT 1 FROM pragma_table_info('view_keys') WHERE name = 'issued_token'")?
        .exists([])?;
    if !has {
        // Another process of this home may add it at the same moment.
        if let Err(e) = conn.execute_batch("ALTER TABLE view_keys ADD COLUMN issued_token TEXT")
            && !e.to_string().contains("duplicate column")
        {
            return Err(e);
        }
    }
    Ok(())
}

fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// Keeps the database readable by this user only: it maps hashes of
/// secrets to what they open.
fn restrict(path: &Path) -> StoreResult<()> {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).at(path)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn channel(name: &str) -> ChannelRef {
        ChannelRef {
            id: format!("id-{name}"),
            name: name.into(),
        }
    }

    fn open() -> (tempfile::TempDir, Access) {
        let dir = tempfile::tempdir().unwrap();
        let access = Access::open(&dir.path().join("access.sqlite3")).unwrap();
        (dir, access)
    }

    #[test]
    fn a_token_is_found_by_its_secret_only_until_revoked() {
        let (_d, a) = open();
        let (secret, token) = a
            .create_role_token(&channel("c"), "backend", "ci", 5)
            .unwrap();
        assert!(secret.starts_with("cst_"));
        assert_eq!(SecretKind::of(&secret), Some(SecretKind::RoleToken));
        assert_eq!(a.find_role_token(&secret).unwrap(), Some(token.clone()));
        assert_eq!(a.find_role_token(&format!("{secret}x")).unwrap(), None);
        // The secret itself is nowhere in the database.
        let bytes = std::fs::read(a.path()).unwrap();
        assert!(!bytes.windows(secret.len()).any(|w| w == secret.as_bytes()));
        let (revoked, _) = a.revoke_role_token(&token.id[..8], 9).unwrap().unwrap();
        assert_eq!(revoked.revoked_ms, Some(9));
        assert_eq!(a.find_role_token(&secret).unwrap(), None);
        assert_eq!(a.revoke_role_token(&token.id, 10).unwrap(), None);
    }

    #[test]
    fn a_nonce_opens_one_session_once_and_not_after_its_time() {
        let (_d, a) = open();
        let (_k, key) = a
            .create_view_key(&channel("c"), "board", "cli", Duration::from_secs(3600), 0)
            .unwrap();
        let nonce = a.create_nonce(&key.id, 0).unwrap();
        let (session, _, got) = a.redeem_nonce(&nonce, 1000).unwrap().unwrap();
        assert_eq!(got.id, key.id);
        assert_eq!(a.redeem_nonce(&nonce, 1001).unwrap(), None);
        assert_eq!(
            a.find_board_session(&session, 2000).unwrap().unwrap().id,
            key.id
        );
        let late = a.create_nonce(&key.id, 0).unwrap();
        assert_eq!(a.redeem_nonce(&late, ms(NONCE_TTL)).unwrap(), None);
        // Revoking the channel's keys ends the open session too.
        assert_eq!(a.revoke_view_keys("id-c", 3000).unwrap().len(), 1);
        assert_eq!(a.find_board_session(&session, 3001).unwrap(), None);
    }

    #[test]
    fn rotating_replaces_a_roles_tokens_and_deleting_ends_them_all() {
        let (_d, a) = open();
        let c = channel("c");
        let made = a
            .create_role_tokens(&c, &["backend", "frontend"], "create", 0)
            .unwrap();
        assert_eq!(made.len(), 2);
        assert_eq!(made[1].1.role, "frontend");
        let (old, new) = (&made[0].0, made[1].0.clone());
        let (rotated, token) = a.rotate_role_token(&c, "backend", "rotate", 1).unwrap();
        assert_eq!(token.role, "backend");
        assert_eq!(a.find_role_token(old).unwrap(), None);
        assert!(a.find_role_token(&rotated).unwrap().is_some());
        let (_, key, nonce) = a
            .create_board_link(&c, "board", ("frontend", None), Duration::from_secs(60), 1)
            .unwrap();
        assert_eq!(key.issued_by, "frontend");
        assert!(nonce.starts_with("csn_"));
        assert!(!a.is_deleted("c").unwrap());
        assert_eq!(a.delete_channel(&c, 2).unwrap(), 2);
        assert!(a.is_deleted("c").unwrap());
        assert_eq!(a.find_role_token(&rotated).unwrap(), None);
        assert_eq!(a.find_role_token(&new).unwrap(), None);
        assert_eq!(a.redeem_nonce(&nonce, 3).unwrap(), None);
    }

    #[test]
    fn revoking_one_token_ends_the_keys_it_issued_and_no_other() {
        let (_d, a) = open();
        let c = channel("c");
        let (_t1, one) = a.create_role_token(&c, "backend", "", 0).unwrap();
        let (_t2, two) = a.create_role_token(&c, "backend", "", 0).unwrap();
        let hour = Duration::from_secs(3600);
        let (k1, _, n1) = a
            .create_board_link(&c, "b", ("backend", Some(&one.id)), hour, 0)
            .unwrap();
        let (k2, _, _) = a
            .create_board_link(&c, "b", ("backend", Some(&two.id)), hour, 0)
            .unwrap();
        let (session, _, key) = a.redeem_nonce(&n1, 1).unwrap().unwrap();
        assert_eq!(key.issued_token.as_deref(), Some(one.id.as_str()));
        let (_, ended) = a.revoke_role_token(&one.id, 2).unwrap().unwrap();
        assert_eq!(ended, 1);
        assert_eq!(a.find_view_key(&k1, 3).unwrap(), None);
        assert_eq!(a.find_board_session(&session, 3).unwrap(), None);
        assert!(a.find_view_key(&k2, 3).unwrap().is_some());
        assert_eq!(a.view_keys().unwrap().len(), 2);
    }

    #[test]
    fn the_server_secret_is_made_once_and_kept() {
        let (d, a) = open();
        let first = a.server_secret().unwrap();
        assert_eq!(a.server_secret().unwrap(), first);
        let again = Access::open(&d.path().join("access.sqlite3")).unwrap();
        assert_eq!(again.server_secret().unwrap(), first);
    }

    #[test]
    fn an_older_database_gains_the_issuing_token_column() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("access.sqlite3");
        let old = Connection::open(&path).unwrap();
        old.execute_batch(
            "CREATE TABLE view_keys(id TEXT PRIMARY KEY, digest TEXT NOT NULL UNIQUE, \
             channel_id TEXT NOT NULL, channel_name TEXT NOT NULL, label TEXT NOT NULL, \
             issued_by TEXT NOT NULL, created_ms INTEGER NOT NULL, expires_ms INTEGER NOT NULL, \
             revoked_ms INTEGER); \
             INSERT INTO view_keys VALUES ('k', 'd', 'id-c', 'c', 'board', 'cli', 0, 9, NULL);",
        )
        .unwrap();
        drop(old);
        let a = Access::open(&path).unwrap();
        let keys = a.view_keys().unwrap();
        assert_eq!(keys.len(), 1);
        assert_eq!(keys[0].issued_token, None);
    }

    #[test]
    fn revoking_a_role_ends_its_tokens_and_the_keys_it_issued() {
        let (_d, a) = open();
        let (t1, _) = a
            .create_role_token(&channel("c"), "backend", "", 0)
            .unwrap();
        let (t2, _) = a
            .create_role_token(&channel("c"), "frontend", "", 0)
            .unwrap();
        let (k1, _) = a
            .create_view_key(&channel("c"), "b", "backend", Duration::from_secs(60), 0)
            .unwrap();
        assert_eq!(a.revoke_role_tokens("id-c", Some("backend"), 1).unwrap(), 1);
        assert_eq!(a.find_role_token(&t1).unwrap(), None);
        assert!(a.find_role_token(&t2).unwrap().is_some());
        assert_eq!(a.find_view_key(&k1, 2).unwrap(), None);
    }
}
