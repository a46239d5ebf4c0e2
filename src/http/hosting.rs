//! Which channels a server hosts, and how a URL's channel name finds its
//! folder.
//!
//! `serve --channel DIR` hosts that one channel; `serve --channels-dir DIR`
//! hosts every channel folder directly under DIR whose folder name is its
//! channel.json `name` (what `create_channel` makes). Names come from URLs
//! and tokens, so only a slug is ever joined to DIR: nothing reaches outside
//! it. Owns that mapping only; it opens no index.

use std::path::{Path, PathBuf};

pub use crate::app::hosting::channel_ref;
use crate::app::hosting::{hosted_dir, hosted_dirs};
use crate::store::ChannelDir;
use crate::store::access::ChannelRef;

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
