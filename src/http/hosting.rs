//! Which channels a server hosts, and how a URL's channel name finds its
//! folder.
//!
//! `serve --channel DIR` hosts that one channel; `serve --channels-dir DIR`
//! hosts every channel folder directly under DIR whose folder name is its
//! channel.json `name` (what `create_channel` makes). Names come from URLs
//! and tokens, so only a slug is ever joined to DIR: nothing reaches outside
//! it. Owns that mapping only; it opens no index.

use std::path::{Path, PathBuf};

use axum::http::StatusCode;
use axum::response::Response;

use super::guard::refuse;
use crate::app::Session;
use crate::app::hosting::{hosted_dir, hosted_dirs};
use crate::core::ids::Role;
use crate::store::access::{ChannelRef, RoleToken};
use crate::store::{Channel, ChannelDir, Home};

/// The channels of a server.
#[derive(Clone, Debug)]
pub enum Hosting {
    /// One channel folder.
    One(ChannelDir),
    /// Every channel folder under this folder.
    Under(PathBuf),
}

impl Hosting {
    /// The hosted channel named `name`, if there is one.
    pub fn find(&self, name: &str) -> Option<ChannelDir> {
        match self {
            Self::One(dir) => (dir.genesis().name == name).then(|| dir.clone()),
            Self::Under(root) => hosted_dir(root, name),
        }
    }

    /// The hosted channel a token or key was made for: the same name and the
    /// same channel (a folder replaced by another channel of that name is
    /// not it).
    pub fn find_ref(&self, channel: &ChannelRef) -> Option<ChannelDir> {
        self.find(&channel.name).filter(|d| d.id() == channel.id)
    }

    /// Every hosted channel, by name.
    pub fn channels(&self) -> Vec<ChannelDir> {
        match self {
            Self::One(dir) => vec![dir.clone()],
            Self::Under(root) => hosted_dirs(root),
        }
    }

    /// The folder new channels are made in (`--channels-dir`), if any.
    pub fn channels_dir(&self) -> Option<&Path> {
        match self {
            Self::One(_) => None,
            Self::Under(root) => Some(root),
        }
    }
}

/// The answer refusing a token whose channel is not hosted here (404): a
/// token outlives a channel deleted or replaced since.
pub fn not_hosted(token: &RoleToken) -> Response {
    refuse(
        StatusCode::NOT_FOUND,
        &format!(
            "channel '{}' is not hosted by this server (any more), and the token was made for \
             it; ask the server's owner for a token of a channel it serves",
            token.channel.name
        ),
    )
}

/// A session acting as `token`'s role in `dir` with `home`, opened on a
/// blocking thread (it may catch up with the folder), or the answer
/// refusing the request when it cannot be opened.
pub async fn role_session(
    home: &Home,
    dir: ChannelDir,
    token: &RoleToken,
) -> Result<Session, Response> {
    let home = home.clone();
    let role = token.role.clone();
    let opened = tokio::task::spawn_blocking(move || -> anyhow::Result<Session> {
        let role = Role::new(&role)?;
        Ok(Session::new(Channel::open(dir, home)?, Some(role))?)
    })
    .await;
    match opened {
        Ok(Ok(s)) => Ok(s),
        Ok(Err(e)) => Err(refuse(
            StatusCode::SERVICE_UNAVAILABLE,
            &format!("cannot open the channel for this token: {e:#}"),
        )),
        Err(e) => Err(refuse(
            StatusCode::INTERNAL_SERVER_ERROR,
            &format!("cannot open the channel: {e}"),
        )),
    }
}
