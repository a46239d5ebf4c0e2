//! The recording spool: hook events kept on disk in this home until they
//! are delivered as notes.
//!
//! A recording hook writes its event here (a temporary file, fsynced,
//! renamed, the folder fsynced) before anything tries to deliver it, so a
//! crash at any later point leaves the event for the next delivery. An event
//! that can never be delivered (unreadable, refused) is moved to `failed/`
//! with the reason beside it, and stays there for a person to read.
//!
//! Owns the spool's files: their names, their format, bounded reads (no
//! symlink followed) and the lock that lets one delivery run at a time. It
//! must not decide what a note holds (`core::memory::note`) or write one
//! (`app::recording` does).

use std::fs::{self, OpenOptions};
use std::io::{Read as _, Write as _};
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

use std::sync::atomic::{AtomicU32, Ordering};

use serde::{Deserialize, Serialize};

use crate::store::clock::now_ms;
use crate::store::error::{IoContext as _, StoreResult};
use crate::store::home::Home;
use crate::store::home::lock::FileLock;

/// The most bytes of one spooled event (a note's text is at most 64 KiB,
/// escaped in JSON at most six bytes a byte in the worst case).
pub const MAX_EVENT_FILE: u64 = 512 * 1024;
/// The most events one delivery takes from the spool: a spool that grew
/// past it (a channel unreachable for long) is drained over several runs.
pub const MAX_PER_PASS: usize = 500;

/// The order of the events this process spooled.
static PUT_ORDER: AtomicU32 = AtomicU32::new(0);

/// One recorded event, as spooled: everything its delivery needs, so it
/// never depends on the folder the hook ran in.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpooledEvent {
    /// The channel folder (absolute).
    pub channel: PathBuf,
    /// The role whose feed gets the note.
    pub role: String,
    /// The note's kind (`prompt`, `reply`, `turn`, `answer` …).
    pub kind: String,
    /// The note's text.
    pub text: String,
    /// The event id (a second delivery of it adds nothing).
    pub event: String,
    /// The agent (`claude`, `codex`).
    pub agent: String,
    /// The short hash of the agent's session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// The folder the session worked in, relative to the project root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub folder: Option<String>,
    /// The short hash of that folder's absolute path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub folder_hash: Option<String>,
}

/// The spool of one home.
#[derive(Clone, Debug)]
pub struct Spool {
    dir: PathBuf,
}

impl Spool {
    /// The spool of `home`.
    pub fn of(home: &Home) -> Self {
        Self {
            dir: home.spool_dir(),
        }
    }

    /// The spool folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where events that cannot be delivered are kept.
    pub fn failed_dir(&self) -> PathBuf {
        self.dir.join("failed")
    }

    /// The lock one delivery holds while it drains the spool.
    pub fn lock(&self) -> StoreResult<FileLock> {
        FileLock::exclusive(&self.dir.join(".deliver.lock"))
    }

    /// The lock, if no other delivery holds it.
    pub fn try_lock(&self) -> StoreResult<Option<FileLock>> {
        FileLock::try_exclusive(&self.dir.join(".deliver.lock"))
    }

    /// Writes `event` durably; returns its file.
    pub fn put(&self, event: &SpooledEvent) -> StoreResult<PathBuf> {
        let bytes = serde_json::to_vec(event).expect("an event serializes");
        // Names sort by time, then by the order this process spooled them
        // (a reply before its turn record), so a drain delivers in the
        // order recorded.
        let short: String = event.event.chars().take(16).collect();
        let n = PUT_ORDER.fetch_add(1, Ordering::Relaxed);
        let name = format!("{:016}-{n:06}-{short}.json", now_ms());
        write_durably(&self.dir, &name, &bytes)
    }

    /// Keeps a hook input that makes no event in `failed/`, with why.
    pub fn put_failed(&self, input: &[u8], reason: &str) -> StoreResult<PathBuf> {
        let dir = self.failed_dir();
        let name = format!("{:016}-{}.input", now_ms(), random_hex());
        let path = write_durably(&dir, &name, input)?;
        write_durably(&dir, &format!("{name}.reason"), reason.as_bytes())?;
        Ok(path)
    }

    /// The events waiting, oldest first, at most [`MAX_PER_PASS`].
    pub fn pending(&self) -> StoreResult<Vec<PathBuf>> {
        let entries = match fs::read_dir(&self.dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e).at(&self.dir)?,
        };
        let mut out: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        out.sort();
        out.truncate(MAX_PER_PASS);
        Ok(out)
    }

    /// Reads a spooled event: `Ok(Err(why))` when the file is no event
    /// (too large, not a regular file, not the format).
    pub fn read(&self, path: &Path) -> StoreResult<Result<SpooledEvent, String>> {
        let meta = fs::symlink_metadata(path).at(path)?;
        if !meta.is_file() {
            return Ok(Err("not a regular file".into()));
        }
        if meta.len() > MAX_EVENT_FILE {
            return Ok(Err(format!(
                "{} bytes (a spooled event is at most {MAX_EVENT_FILE})",
                meta.len()
            )));
        }
        let mut bytes = Vec::new();
        fs::File::open(path)
            .and_then(|f| f.take(MAX_EVENT_FILE + 1).read_to_end(&mut bytes))
            .at(path)?;
        Ok(serde_json::from_slice(&bytes).map_err(|e| format!("not a spooled event: {e}")))
    }

    /// Drops a delivered event.
    pub fn done(&self, path: &Path) -> StoreResult<()> {
        match fs::remove_file(path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e).at(path)?,
        }
    }

    /// Moves an event that cannot be delivered to `failed/`, with why.
    pub fn fail(&self, path: &Path, reason: &str) -> StoreResult<PathBuf> {
        let dir = self.failed_dir();
        fs::create_dir_all(&dir).at(&dir)?;
        let name = path
            .file_name()
            .map_or_else(|| "event.json".into(), |n| n.to_string_lossy().into_owned());
        let to = dir.join(&name);
        fs::rename(path, &to).at(&to)?;
        write_durably(&dir, &format!("{name}.reason"), reason.as_bytes())?;
        Ok(to)
    }
}

/// Writes `name` in `dir` as a whole: a temporary file (mode 0600: it holds
/// what the user typed), fsynced, renamed, and the folder fsynced.
fn write_durably(dir: &Path, name: &str, bytes: &[u8]) -> StoreResult<PathBuf> {
    fs::create_dir_all(dir).at(dir)?;
    let path = dir.join(name);
    let tmp = dir.join(format!(".{name}.tmp-{}", random_hex()));
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .at(&tmp)?;
    f.write_all(bytes).at(&tmp)?;
    f.sync_all().at(&tmp)?;
    drop(f);
    fs::rename(&tmp, &path).at(&path)?;
    fs::File::open(dir).and_then(|d| d.sync_all()).at(dir)?;
    Ok(path)
}

fn random_hex() -> String {
    let mut rnd = [0u8; 6];
    getrandom::fill(&mut rnd).expect("the OS random source works");
    hex::encode(rnd)
}
