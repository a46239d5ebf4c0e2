//! Which channels a server hosts, and how a URL's channel name finds its
//! folder.
//!
//! `serve --channel DIR` hosts that one channel; `serve --channels-dir DIR`
//! hosts every channel folder directly under DIR whose folder name is its
//! channel.json `name` (what `create_channel` makes). Names come from URLs
//! and tokens, so only a slug is ever joined to DIR: nothing reaches outside
//! it. Owns that mapping only; it opens no index.

use std::path::{Path, PathBuf};

use crate::core::ids::is_slug;
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
            Self::Under(root) => open_under(root, name),
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
            Self::Under(root) => {
                let Ok(entries) = std::fs::read_dir(root) else {
                    return Vec::new();
                };
                let mut names: Vec<String> = entries
                    .filter_map(Result::ok)
                    .filter_map(|e| e.file_name().into_string().ok())
                    .collect();
                names.sort();
                names.iter().filter_map(|n| open_under(root, n)).collect()
            }
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

/// How a token or key names `dir`.
pub fn channel_ref(dir: &ChannelDir) -> ChannelRef {
    ChannelRef {
        id: dir.id().to_owned(),
        name: dir.genesis().name.clone(),
    }
}

/// `root/name` when `name` is a slug, that entry is a real folder (not a
/// symlink) and its channel.json calls it `name`.
fn open_under(root: &Path, name: &str) -> Option<ChannelDir> {
    if !is_slug(name) {
        return None;
    }
    let path = root.join(name);
    let meta = std::fs::symlink_metadata(&path).ok()?;
    if !meta.is_dir() {
        return None;
    }
    ChannelDir::open(&path)
        .ok()
        .filter(|d| d.genesis().name == name)
}
