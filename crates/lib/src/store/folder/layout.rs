//! The channel folder: finding it, creating it, and reading its genesis.
//!
//! Owns the shared folder's fixed files (`channel.json`, `.gitattributes`,
//! `README.md`, `feeds/`). It never writes records; feeds are `feed`'s job.

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::core::genesis::{Genesis, channel_id};
use crate::core::ids::FeedId;
use crate::store::error::{IoContext as _, Occupant, StoreError, StoreResult};
use crate::store::folder_file;

/// Name of the folder `init` creates when no folder is given, and that
/// discovery looks for while walking up from the working directory.
pub const DEFAULT_DIR: &str = ".countersign";

/// The `.gitattributes` every channel starts with: feeds merge by union (records
/// are immutable and deduplicated, so a pull never stops on a conflict).
pub const GITATTRIBUTES: &str =
    "*.jsonl  -text merge=union\n*.gz     binary\nhead.json -text\n/channel.json -text\n";

/// An opened channel folder.
#[derive(Clone, Debug)]
pub struct ChannelDir {
    root: PathBuf,
    genesis: Genesis,
    id: String,
    /// Where the folder is and how it was chosen, in words.
    chosen: String,
}

/// The most `channel.json` may hold.
const MAX_GENESIS_BYTES: u64 = 64 * 1024;

impl ChannelDir {
    /// Opens the folder holding `channel.json`.
    pub fn open(root: &Path) -> StoreResult<Self> {
        let path = root.join("channel.json");
        // Read like any file of the folder: never through a symlink, and
        // bounded (a genesis is well under a kilobyte).
        let bytes = match folder_file::read(&path, MAX_GENESIS_BYTES) {
            Ok(b) => b,
            Err(e) if e.is_not_found() => {
                return Err(StoreError::NotAChannel {
                    path: root.to_path_buf(),
                });
            }
            Err(e) => return Err(e.into()),
        };
        let genesis = Genesis::from_bytes(&bytes).map_err(|e| StoreError::BadGenesis {
            path: path.clone(),
            reason: e.to_string(),
        })?;
        Ok(Self {
            root: root.to_path_buf(),
            genesis,
            id: channel_id(&bytes),
            chosen: root.display().to_string(),
        })
    }

    /// Finds the channel: `explicit` (from `--channel`), else
    /// `COUNTERSIGN_CHANNEL`, else the channel of the nearest project binding
    /// (`.countersign.local.json`, see [`crate::store::home::binding`]) above the working
    /// directory, else the nearest `.countersign/` with a `channel.json`
    /// above it. Remembers which, for refusals.
    /// `binding` reads the project binding above the working directory (see
    /// [`binding::find`](crate::store::home::binding::find)); it is called only when
    /// neither `explicit` nor the environment names the folder, so a caller
    /// that also takes the role from the binding can read it once for both.
    pub fn discover(
        explicit: Option<&Path>,
        binding: impl FnOnce() -> StoreResult<Option<crate::store::home::binding::Found>>,
    ) -> StoreResult<Self> {
        let chosen = |dir: StoreResult<Self>, how: String| {
            dir.map(|mut d| {
                d.chosen = format!("{} ({how})", d.root.display());
                d
            })
        };
        if let Some(p) = explicit {
            return chosen(Self::open(p), "from --channel".into());
        }
        if let Some(p) = std::env::var_os("COUNTERSIGN_CHANNEL").filter(|v| !v.is_empty()) {
            return chosen(Self::open(Path::new(&p)), "from COUNTERSIGN_CHANNEL".into());
        }
        let cwd = std::env::current_dir().at(".")?;
        if let Some(found) = binding()? {
            return chosen(
                Self::open(&found.binding.channel),
                format!("from the project binding {}", found.path.display()),
            );
        }
        for dir in cwd.ancestors() {
            let candidate = dir.join(DEFAULT_DIR);
            if candidate.join("channel.json").is_file() {
                return chosen(
                    Self::open(&candidate),
                    format!(
                        "found walking up from the working directory {}",
                        cwd.display()
                    ),
                );
            }
        }
        Err(StoreError::NoChannel {
            searched_from: cwd,
            folder: DEFAULT_DIR,
            binding: crate::store::home::binding::FILE,
        })
    }

    /// Where the folder is and how it was chosen, e.g. `/p/.countersign (from
    /// --channel)`.
    pub fn describe(&self) -> &str {
        &self.chosen
    }

    /// Refuses if `root` already holds a channel or anything else.
    pub fn check_free(root: &Path) -> StoreResult<()> {
        if root.join("channel.json").exists() {
            return Err(StoreError::ChannelExists {
                path: root.to_path_buf(),
                holds: Occupant::Channel,
            });
        }
        if let Ok(mut entries) = fs::read_dir(root)
            && entries.next().is_some()
        {
            return Err(StoreError::ChannelExists {
                path: root.to_path_buf(),
                holds: Occupant::Files,
            });
        }
        Ok(())
    }

    /// Writes a new channel folder. Refuses, changing nothing, if `root`
    /// already holds a channel or any other content.
    pub fn create(root: &Path, genesis: &Genesis) -> StoreResult<Self> {
        Self::check_free(root)?;
        fs::create_dir_all(root.join("feeds")).at(root)?;
        write_file(&root.join(".gitattributes"), GITATTRIBUTES.as_bytes())?;
        let readme = format!(
            "This folder is the countersign channel '{}': signed message feeds of its roles.\n\
             Read it with `countersign log`, or `grep -r TEXT feeds/`; never edit the files by hand.\n",
            genesis.name
        );
        write_file(&root.join("README.md"), readme.as_bytes())?;
        // channel.json last: its presence is what marks a complete channel.
        write_file(&root.join("channel.json"), &genesis.to_bytes())?;
        Self::open(root)
    }

    /// The folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The `feeds/` folder.
    pub fn feeds(&self) -> PathBuf {
        self.root.join("feeds")
    }

    /// The folder of one feed: `feeds/<role>/<device>`.
    pub fn feed_dir(&self, feed: &FeedId) -> PathBuf {
        feed_dir(&self.feeds(), feed)
    }

    /// The genesis document.
    pub fn genesis(&self) -> &Genesis {
        &self.genesis
    }

    /// The channel id (hex sha256 of channel.json).
    pub fn id(&self) -> &str {
        &self.id
    }
}

fn write_file(path: &Path, bytes: &[u8]) -> StoreResult<()> {
    let mut f = fs::File::create(path).at(path)?;
    f.write_all(bytes).at(path)?;
    f.sync_all().at(path)?;
    Ok(())
}

/// The folder of `feed` in `feeds_dir`: `<role>/<device>`.
pub fn feed_dir(feeds_dir: &Path, feed: &FeedId) -> PathBuf {
    feeds_dir.join(feed.role()).join(feed.device())
}
