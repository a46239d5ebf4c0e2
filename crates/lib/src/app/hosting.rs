//! Hosted channels: what the management tools of `countersign serve` do
//! (create, list and delete the channels under `--channels-dir`, add a role,
//! rotate a role's token, issue and revoke board links).
//!
//! The server's home is the owner of every channel it creates here, so it
//! can act as any of their roles; a role token is what lets a caller do so
//! over HTTP. Channel folders are made by the same code as `countersign
//! init` (`app::init`), remotes chosen as `countersign remote set` does
//! (`app::sync`), roles added as `countersign add-role` does
//! (`app::membership`); tokens, view keys and deleted names live in the
//! access store (`store::hosting::access`). Owns the rules of hosting (which names
//! are free, what a deleted channel becomes) and the shape of the answers;
//! knows nothing of HTTP or MCP, and never decides who may call (the
//! transport does).
//!
//! A deleted channel's folder stays on disk, renamed to
//! `.deleted-<name>-<ms>` in the channels folder: a name that is no slug is
//! never served, and the name itself is never given again.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::Serialize;

use super::refusal::{AppError, AppResult};
use crate::core::genesis::{Genesis, GenesisError, MAX_ROLES, MIN_ROLES};
use crate::core::ids::{Role, is_slug, roles_list};
use crate::core::remote_target::{self, RemotePattern};
use crate::core::timestamp::format_rfc3339;
use crate::store::channel::now_ms;
use crate::store::error::IoContext as _;
use crate::store::home::prefs::Remote;
use crate::store::hosting::access::{Access, ChannelRef, NONCE_TTL, ViewKey};
use crate::store::{Channel, ChannelDir, Home, StoreError};

/// The longest `label` of a board link.
pub const MAX_LABEL: usize = 80;

/// The channels folder of a server (`--channels-dir`), the home that owns
/// its channels, and the access store of that home.
#[derive(Debug)]
pub struct Host {
    root: PathBuf,
    home: Home,
    access: Access,
    /// The remotes a caller may choose (`serve --allow-remote`): none unless
    /// the operator named some.
    allowed_remotes: Vec<RemotePattern>,
}

/// A new channel, with one token per role (shown only here).
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct ChannelCreated {
    /// The channel's name (its folder's name under the channels folder).
    pub name: String,
    /// Its roles, by name.
    pub roles: Vec<String>,
    /// When it was made (RFC 3339).
    pub created_at: String,
    /// {role: token}: each acts as its role over HTTP. Shown once.
    pub tokens: BTreeMap<String, String>,
    /// The sync remote set, e.g. `git URL`, or null.
    pub remote: Option<String>,
}

/// A hosted channel.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct HostedChannel {
    /// The channel's name.
    pub name: String,
    /// Its roles now (the founding ones and those added since).
    pub roles: Vec<String>,
    /// When it was made (RFC 3339).
    pub created_at: String,
}

/// A role added to a hosted channel, with its token (shown only here).
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct RoleTokenAdded {
    /// The channel.
    pub channel: String,
    /// The new role.
    pub role: String,
    /// A token acting as the new role. Shown once.
    pub token: String,
    /// The channel's roles now.
    pub roles: Vec<String>,
}

/// A role's new token; its older tokens no longer work.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct TokenRotated {
    /// The channel.
    pub channel: String,
    /// The role.
    pub role: String,
    /// The new token. Shown once.
    pub token: String,
}

/// A link that opens a channel's board once.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct BoardLink {
    /// The channel.
    pub channel: String,
    /// The view key's label.
    pub label: String,
    /// The link's path on this server: `/board/<channel>?n=<nonce>`.
    pub url: String,
    /// Seconds the link may wait to be opened.
    pub expires_in_s: u64,
    /// When the view key behind it ends (RFC 3339).
    pub key_expires_at: String,
    /// How to use it.
    pub note: String,
}

/// A view key ended by `revoke_board_access`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct RevokedKey {
    /// Its label.
    pub label: String,
    /// Who issued it: a role, `admin` or `cli`.
    pub issued_by_role: String,
    /// When it was made (RFC 3339).
    pub created_at: String,
    /// When it would have ended (RFC 3339).
    pub expires_at: String,
    /// When it was revoked (RFC 3339).
    pub revoked_at: String,
}

/// What `revoke_board_access` ended.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct BoardAccessRevoked {
    /// The channel.
    pub channel: String,
    /// How many view keys ended.
    pub revoked: usize,
    /// Those keys.
    pub keys: Vec<RevokedKey>,
}

/// A deleted channel.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct ChannelDeleted {
    /// The channel's name, never given to a channel again.
    pub name: String,
    /// Always true.
    pub deleted: bool,
    /// Where its folder is kept now (no longer served).
    pub path: String,
}

impl Host {
    /// The channels under `root`, owned by `home`.
    pub fn open(root: &Path, home: Home) -> AppResult<Self> {
        let access = Access::open(&home.access_db())?;
        Ok(Self {
            root: root.to_path_buf(),
            home,
            access,
            allowed_remotes: Vec::new(),
        })
    }

    /// Lets callers choose the remotes `allowed` matches (by default none).
    #[must_use]
    pub fn allowing_remotes(mut self, allowed: Vec<RemotePattern>) -> Self {
        self.allowed_remotes = allowed;
        self
    }

    /// The channels folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Creates the channel `name` with `roles` under the channels folder,
    /// optionally syncing through `remote`, and one token per role. All or
    /// nothing: a refused or failed create leaves no folder, key or token.
    pub fn create_channel(
        &self,
        name: &str,
        roles: &[String],
        remote: Option<Remote>,
    ) -> AppResult<ChannelCreated> {
        if !is_slug(name) {
            return Err(AppError::value(format!(
                "'name': {} — choose a lowercase slug such as 'team-a'",
                GenesisError::BadName(name.to_owned())
            )));
        }
        let names: Vec<&str> = roles.iter().map(String::as_str).collect();
        let roster = Genesis::roster(&names).map_err(|e| AppError::value(roster_refusal(&e)))?;
        self.check_free(name)?;
        // The caller is not the server's operator: only the places the
        // operator allowed, and never an option for git or rclone.
        if let Some(r) = &remote
            && let Err(e) =
                remote_target::check_allowed(&self.allowed_remotes, r.kind(), r.target())
        {
            return Err(AppError::value(format!(
                "'remote.target' '{}' is refused: {e}. Choose an allowed target, or leave \
                 'remote' out",
                r.target().escape_debug()
            )));
        }
        // Made aside under a name that is never served, then renamed into
        // place: nobody sees a channel without its remote and tokens.
        let mut rnd = [0u8; 6];
        getrandom::fill(&mut rnd).expect("the OS random source works");
        let staging = self
            .root
            .join(format!(".creating-{name}-{}", hex::encode(rnd)));
        let mut made: Option<String> = None;
        let result = self.build(name, &names, remote.as_ref(), &staging, &mut made);
        match result {
            Ok((dir, note)) => {
                let remote = remote.map(|r| match note {
                    Some(n) => format!("{r} ({n})"),
                    None => r.to_string(),
                });
                let channel = channel_ref(&dir);
                let made_tokens =
                    self.access
                        .create_role_tokens(&channel, &names, "create_channel", now_ms());
                let tokens = match made_tokens {
                    Ok(t) => t,
                    Err(e) => {
                        self.undo(dir.root(), made.as_deref());
                        return Err(e.into());
                    }
                };
                Ok(ChannelCreated {
                    name: name.to_owned(),
                    roles: role_names(&sorted(roster)),
                    created_at: dir.genesis().created_at.clone(),
                    tokens: tokens
                        .into_iter()
                        .map(|(secret, t)| (t.role, secret))
                        .collect(),
                    remote,
                })
            }
            Err(e) => {
                self.undo(&staging, made.as_deref());
                Err(e)
            }
        }
    }

    /// The folder, its remote, and the rename into place; `made` is set to
    /// the channel id once a key exists for it.
    fn build(
        &self,
        name: &str,
        roles: &[&str],
        remote: Option<&Remote>,
        staging: &Path,
        made: &mut Option<String>,
    ) -> AppResult<(ChannelDir, Option<String>)> {
        let dir = super::init::create_channel(staging, roles, name, &self.home)?;
        *made = Some(dir.id().to_owned());
        let note = match remote {
            Some(r) => {
                let channel = Channel::open(dir, self.home.clone())?;
                super::sync::set_remote(&channel, r.clone())?
            }
            None => None,
        };
        let target = self.root.join(name);
        // Checked again just before: another process may have taken it.
        self.check_free(name)?;
        std::fs::rename(staging, &target)
            .at(&target)
            .map_err(StoreError::from)?;
        Ok((ChannelDir::open(&target)?, note))
    }

    /// Takes back what a failed create made: the folder, and the key and
    /// state of channel `id` in the home.
    fn undo(&self, folder: &Path, id: Option<&str>) {
        let _ = std::fs::remove_dir_all(folder);
        if let Some(id) = id {
            let _ = std::fs::remove_dir_all(self.home.keys_dir(id));
            let _ = std::fs::remove_dir_all(self.home.state_dir(id));
        }
    }

    /// Refuses a name that a channel has or had.
    fn check_free(&self, name: &str) -> AppResult<()> {
        if self.access.is_deleted(name)? {
            return Err(AppError::value(format!(
                "channel '{name}' already exists (deleted): a deleted channel's name is never \
                 given again — choose another 'name'"
            )));
        }
        if self.find_dir(name).is_some() {
            return Err(AppError::value(format!(
                "channel '{name}' already exists (active) — choose another 'name'"
            )));
        }
        if std::fs::symlink_metadata(self.root.join(name)).is_ok() {
            return Err(AppError::value(format!(
                "'{name}' is taken in the channels folder {} by something that is not a hosted \
                 channel — choose another 'name', or move that entry away",
                self.root.display()
            )));
        }
        Ok(())
    }

    /// Every hosted channel, sorted by name.
    pub fn list_channels(&self) -> AppResult<Vec<HostedChannel>> {
        let mut out = Vec::new();
        for dir in self.dirs() {
            let channel = self.open_channel(dir)?;
            out.push(HostedChannel {
                name: channel.dir().genesis().name.clone(),
                roles: role_names(&channel.roster()),
                created_at: channel.dir().genesis().created_at.clone(),
            });
        }
        Ok(out)
    }

    /// Adds `role` to the hosted channel `channel` (an owner's `add_role`)
    /// and makes a token for it.
    pub fn add_role(&self, channel: &str, role: &str) -> AppResult<RoleTokenAdded> {
        let mut opened = self.open_channel(self.find(channel)?)?;
        let new = Role::new(role).map_err(|e| AppError::value(format!("'role': {e}")))?;
        let roster = opened.roster();
        if roster.contains(&new) {
            return Err(AppError::value(format!(
                "channel '{channel}' already has role '{role}' — its roles are {}; its token \
                 can be replaced with rotate_token",
                roles_list(&roster)
            )));
        }
        if roster.len() >= MAX_ROLES {
            return Err(AppError::value(format!(
                "channel '{channel}' has {} roles, and a channel has at most {MAX_ROLES} roles (more \
                 participants than that need an event bus, not a mailbox); host the others in a \
                 channel of their own with create_channel",
                roster.len()
            )));
        }
        let added = super::membership::add_role(&mut opened, role)?;
        let (token, _) = self.access.create_role_token(
            &channel_ref(opened.dir()),
            role,
            "add_role",
            now_ms(),
        )?;
        Ok(RoleTokenAdded {
            channel: channel.to_owned(),
            role: role.to_owned(),
            token,
            roles: role_names(&added.roles),
        })
    }

    /// Replaces every token of `role` in `channel` (and ends the view keys
    /// that role issued) with a new one.
    pub fn rotate_token(&self, channel: &str, role: &str) -> AppResult<TokenRotated> {
        let opened = self.open_channel(self.find(channel)?)?;
        let roster = opened.roster();
        if !roster.iter().any(|r| r.as_str() == role) {
            return Err(AppError::value(format!(
                "channel '{channel}' has roles {}, not '{role}' — pass one of them as 'role'",
                roles_list(&roster)
            )));
        }
        let (token, _) = self.access.rotate_role_token(
            &channel_ref(opened.dir()),
            role,
            "rotate_token",
            now_ms(),
        )?;
        Ok(TokenRotated {
            channel: channel.to_owned(),
            role: role.to_owned(),
            token,
        })
    }

    /// A board link for `channel`, issued by the admin.
    pub fn board_link(&self, channel: &str, label: &str) -> AppResult<BoardLink> {
        if channel.is_empty() {
            return Err(AppError::value(
                "'channel' is required when using the admin token — name the channel whose \
                 board to open (list_channels shows them)",
            ));
        }
        let dir = self.find(channel)?;
        issue_link(&self.access, &channel_ref(&dir), label, ("admin", None))
    }

    /// Ends every view key of `channel` (and every board session opened with
    /// one). A channel this server does not host has none: nothing ends.
    pub fn revoke_board_access(&self, channel: &str) -> AppResult<BoardAccessRevoked> {
        let ended: Vec<ViewKey> = match self.find_dir(channel) {
            Some(dir) => self.access.revoke_view_keys(dir.id(), now_ms())?,
            None => Vec::new(),
        };
        Ok(BoardAccessRevoked {
            channel: channel.to_owned(),
            revoked: ended.len(),
            keys: ended
                .into_iter()
                .map(|k| RevokedKey {
                    label: k.label,
                    issued_by_role: k.issued_by,
                    created_at: format_rfc3339(k.created_ms),
                    expires_at: format_rfc3339(k.expires_ms),
                    revoked_at: format_rfc3339(k.revoked_ms.unwrap_or_default()),
                })
                .collect(),
        })
    }

    /// Deletes the hosted channel `name`: every token and view key of it
    /// ends, the name is never given again, and its folder is renamed out of
    /// what is served (kept on disk, with every record).
    pub fn delete_channel(&self, name: &str) -> AppResult<ChannelDeleted> {
        let dir = self.find(name)?;
        let now = now_ms();
        let kept = self.root.join(format!(".deleted-{name}-{now}"));
        // Renamed first: should the access store fail, the channel is still
        // not served and its tokens find no folder; the other way round a
        // failed rename would leave a served channel nobody can reach.
        std::fs::rename(dir.root(), &kept)
            .at(dir.root())
            .map_err(StoreError::from)?;
        if let Err(e) = self.access.delete_channel(&channel_ref(&dir), now) {
            let _ = std::fs::rename(&kept, dir.root());
            return Err(e.into());
        }
        Ok(ChannelDeleted {
            name: name.to_owned(),
            deleted: true,
            path: kept.display().to_string(),
        })
    }

    /// The hosted channel `name`, or the refusal naming it.
    fn find(&self, name: &str) -> AppResult<ChannelDir> {
        self.find_dir(name).ok_or_else(|| {
            AppError::value(format!(
                "channel '{name}' not found — list_channels shows the channels this server hosts"
            ))
        })
    }

    fn find_dir(&self, name: &str) -> Option<ChannelDir> {
        hosted_dir(&self.root, name)
    }

    fn dirs(&self) -> Vec<ChannelDir> {
        hosted_dirs(&self.root)
    }

    /// `dir` opened with the server's home, caught up with its folder.
    fn open_channel(&self, dir: ChannelDir) -> AppResult<Channel> {
        let mut channel = Channel::open(dir, self.home.clone())?;
        super::admission::catch_up(&mut channel)?;
        Ok(channel)
    }
}

/// A sync remote, as `countersign remote set KIND TARGET` takes it.
#[derive(Clone, Debug, serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RemoteRequest {
    /// git (the folder becomes a repository pushing to target) or rclone.
    pub kind: String,
    /// The git URL, or the rclone REMOTE:PATH.
    pub target: String,
}

/// What create_channel was asked to do: the tool's parameters.
#[derive(Clone, Debug, serde::Deserialize, JsonSchema)]
pub struct CreateChannelRequest {
    /// The channel's name: a lowercase slug, never used before on this server.
    pub name: String,
    /// 2 to 12 distinct role names (lowercase slugs).
    pub roles: Vec<String>,
    /// Sync the channel through git or rclone: {kind, target}.
    #[serde(default)]
    pub remote: Option<RemoteRequest>,
}

/// A request naming a hosted channel (revoke_board_access).
#[derive(Clone, Debug, serde::Deserialize, JsonSchema)]
pub struct ChannelRequest {
    /// The channel's name.
    pub channel: String,
}

/// What delete_channel was asked to do: the tool's parameters.
#[derive(Clone, Debug, serde::Deserialize, JsonSchema)]
pub struct DeleteChannelRequest {
    /// The channel's name.
    pub name: String,
}

/// A request naming a role of a hosted channel (add_role, rotate_token).
#[derive(Clone, Debug, serde::Deserialize, JsonSchema)]
pub struct ChannelRoleRequest {
    /// The channel's name.
    pub channel: String,
    /// The role (a lowercase slug).
    pub role: String,
}

/// What board_link was asked for over HTTP (the admin's tool, and a role's
/// for its own channel): the tool's parameters.
#[derive(Clone, Debug, serde::Deserialize, JsonSchema)]
pub struct BoardLinkRequest {
    /// The channel (required with the admin token; a role's own by default).
    #[serde(default)]
    pub channel: String,
    /// A slug telling view keys apart.
    #[serde(default = "board_label")]
    pub label: String,
}

/// The view key's label unless told.
pub fn board_label() -> String {
    "board".into()
}

/// Makes a view key of `channel` issued by `issued_by` (a role or `admin`,
/// through the role token whose public id is `issued_token`, if one asked)
/// and the one-time link that opens its board, as the `board_link` tool
/// answers it.
pub fn issue_link(
    access: &Access,
    channel: &ChannelRef,
    label: &str,
    (issued_by, issued_token): (&str, Option<&str>),
) -> AppResult<BoardLink> {
    if label.chars().count() > MAX_LABEL || !is_slug(label) {
        return Err(AppError::value(format!(
            "'label' must be a lowercase slug of at most {MAX_LABEL} characters (letters, digits, \
             '-' or '_'), e.g. 'board' or 'laptop'"
        )));
    }
    let link = crate::app::board::issue_link_as(
        access,
        channel,
        label,
        (issued_by, issued_token),
        now_ms(),
    )?;
    let expires_in_s = NONCE_TTL.as_secs();
    Ok(BoardLink {
        channel: channel.name.clone(),
        label: label.to_owned(),
        url: link.path,
        expires_in_s,
        key_expires_at: format_rfc3339(link.key_expires_ms),
        note: format!(
            "Open this path on this server within {expires_in_s} s; it works once and leaves a \
             cookie that opens the board of '{}' until the key ends. Give it only to whoever \
             may read the whole channel; revoke_board_access('{}') ends every view key of it.",
            channel.name, channel.name
        ),
    })
}

/// The channel hosted in `root` under `name`: `root/name` when `name` is a
/// slug (so nothing outside `root` is reached), that entry is a real folder
/// (not a symlink) and its channel.json calls it `name`.
pub fn hosted_dir(root: &Path, name: &str) -> Option<ChannelDir> {
    if !is_slug(name) {
        return None;
    }
    let path = root.join(name);
    if !std::fs::symlink_metadata(&path).ok()?.is_dir() {
        return None;
    }
    ChannelDir::open(&path)
        .ok()
        .filter(|d| d.genesis().name == name)
}

/// Every channel hosted in `root`, by name.
pub fn hosted_dirs(root: &Path) -> Vec<ChannelDir> {
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    names.sort();
    names.iter().filter_map(|n| hosted_dir(root, n)).collect()
}

/// How a token or key names the channel in `dir`.
pub fn channel_ref(dir: &ChannelDir) -> ChannelRef {
    ChannelRef {
        id: dir.id().to_owned(),
        name: dir.genesis().name.clone(),
    }
}

/// A roster refusal worded for the `roles` parameter.
fn roster_refusal(e: &GenesisError) -> String {
    match e {
        GenesisError::TooFewRoles(n) => format!(
            "'roles': a channel needs at least two roles (got {n}) — list {MIN_ROLES} to \
             {MAX_ROLES} distinct role names"
        ),
        GenesisError::TooManyRoles(n) => format!(
            "'roles': a channel has at most {MAX_ROLES} roles (got {n}), as more participants \
             than that need an event bus, not a mailbox; list at most {MAX_ROLES} role names"
        ),
        GenesisError::DuplicateRole(r) => format!(
            "'roles': roles must be DIFFERENT: '{r}' appears more than once — list each role once"
        ),
        other => format!("'roles': {other}"),
    }
}

/// The roster in the order `Channel::roster` gives it (by name), so every
/// answer lists roles alike.
fn sorted(mut roles: Vec<Role>) -> Vec<Role> {
    roles.sort();
    roles
}

fn role_names(roles: &[Role]) -> Vec<String> {
    roles.iter().map(|r| r.as_str().to_owned()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host() -> (tempfile::TempDir, Host) {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("channels");
        std::fs::create_dir(&root).unwrap();
        let host = Host::open(&root, Home::at(tmp.path().join("home"))).unwrap();
        (tmp, host)
    }

    fn roles(r: &[&str]) -> Vec<String> {
        r.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn a_refused_create_leaves_nothing_and_a_deleted_name_stays_taken() {
        let (_t, h) = host();
        for (name, rs, needle) in [
            ("Bad", roles(&["a", "b"]), "'name'"),
            ("ok", roles(&["a"]), "at least two roles"),
            ("ok", roles(&["a", "a"]), "DIFFERENT"),
            ("ok", roles(&["a", "B"]), "'roles'"),
        ] {
            let e = h.create_channel(name, &rs, None).unwrap_err().to_string();
            assert!(e.contains(needle), "{e}");
        }
        assert_eq!(std::fs::read_dir(h.root()).unwrap().count(), 0);
        let made = h.create_channel("team", &roles(&["a", "b"]), None).unwrap();
        assert_eq!(made.tokens.len(), 2);
        assert!(made.tokens["a"].starts_with("cst_"));
        let e = h
            .create_channel("team", &roles(&["a", "b"]), None)
            .unwrap_err();
        assert!(e.to_string().contains("already exists (active)"), "{e}");
        let gone = h.delete_channel("team").unwrap();
        assert!(Path::new(&gone.path).join("channel.json").is_file());
        assert!(h.list_channels().unwrap().is_empty());
        let e = h
            .create_channel("team", &roles(&["a", "b"]), None)
            .unwrap_err();
        assert!(e.to_string().contains("already exists (deleted)"), "{e}");
    }
}
