//! Feeds on disk: segment files, tolerant reading, and the durable append.
//!
//! A feed lives in `feeds/<role>/<device>/` as segments named by their first
//! seq (`00000001.jsonl`); the newest one grows. This module owns reading lines
//! out of segments (a torn last line waits, it is never consumed) and the
//! writer's append: journal first, then the published feed, each fsynced, under
//! the feed's lock. It does not verify signatures or chains (ingest does).

use std::fs::{self, File, OpenOptions};
use std::io::{Read as _, Seek as _, SeekFrom, Write as _};
use std::path::{Path, PathBuf};

use ed25519_dalek::SigningKey;

use super::error::{IoContext as _, PathError, StoreError, StoreResult};
use crate::core::ids::FeedId;
use crate::core::record::{self, DecodeError, MAX_LINE, Record};

/// A segment seals (the next record starts a new file) at this many records.
pub const SEGMENT_RECORDS: u64 = 500;
/// A segment seals at this many bytes.
pub const SEGMENT_BYTES: u64 = 256 * 1024;

/// One segment file of a feed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    /// Its path.
    pub path: PathBuf,
    /// The seq of its first record (from its name).
    pub first_seq: u64,
}

/// The name of the segment starting at `seq`.
pub fn segment_name(seq: u64) -> String {
    format!("{seq:08}.jsonl")
}

/// Parses a segment file name; conflict copies, partial and temp files and
/// anything else are not segments.
pub fn parse_segment_name(name: &str) -> Option<u64> {
    let stem = name.strip_suffix(".jsonl")?;
    (stem.len() == 8 && stem.bytes().all(|b| b.is_ascii_digit()))
        .then(|| stem.parse().ok())
        .flatten()
}

/// Every feed folder under `feeds/`, sorted by feed id; the owner's feeds first.
pub fn list_feeds(feeds: &Path) -> Result<Vec<(FeedId, PathBuf)>, PathError> {
    let mut out = Vec::new();
    let roles = match fs::read_dir(feeds) {
        Ok(r) => r,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(e).at(feeds),
    };
    for role in roles {
        let role = role.at(feeds)?;
        let Some(role_name) = role.file_name().to_str().map(str::to_owned) else { continue };
        let role_path = role.path();
        if !role_path.is_dir() {
            continue;
        }
        for device in fs::read_dir(&role_path).at(&role_path)? {
            let device = device.at(&role_path)?;
            let Some(dev_name) = device.file_name().to_str().map(str::to_owned) else { continue };
            if let Some(feed) = FeedId::new(&role_name, &dev_name)
                && device.path().is_dir()
            {
                out.push((feed, device.path()));
            }
        }
    }
    out.sort_by(|a, b| (!a.0.is_owner(), &a.0).cmp(&(!b.0.is_owner(), &b.0)));
    Ok(out)
}

/// The segments of one feed folder, by first seq.
pub fn list_segments(dir: &Path) -> Result<Vec<Segment>, PathError> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).at(dir)? {
        let entry = entry.at(dir)?;
        if let Some(first_seq) = entry.file_name().to_str().and_then(parse_segment_name) {
            out.push(Segment { path: entry.path(), first_seq });
        }
    }
    out.sort_by_key(|s| s.first_seq);
    Ok(out)
}

/// One complete line read from a file.
#[derive(Debug)]
pub struct Line {
    /// Byte offset of its first byte.
    pub offset: u64,
    /// Its length including the `\n`.
    pub len: u64,
    /// The decoded record, or why it is not one.
    pub record: Result<Record, DecodeError>,
}

/// Reads the complete lines of `path` from `offset`. A last line without its
/// `\n` is torn (a write in progress, or a crash) and is left for later.
pub fn read_lines(path: &Path, offset: u64) -> Result<Vec<Line>, PathError> {
    let mut f = File::open(path).at(path)?;
    f.seek(SeekFrom::Start(offset)).at(path)?;
    let mut buf = Vec::new();
    f.read_to_end(&mut buf).at(path)?;
    let mut out = Vec::new();
    let mut start = 0usize;
    while let Some(nl) = buf[start..].iter().position(|&b| b == b'\n') {
        let line = &buf[start..start + nl];
        out.push(Line {
            offset: offset + start as u64,
            len: nl as u64 + 1,
            record: record::decode(line),
        });
        start += nl + 1;
    }
    Ok(out)
}

/// The last complete line of a file and where the file's complete part ends.
struct Tail {
    /// The last complete line (without `\n`), if any.
    line: Option<Vec<u8>>,
    /// Length of the file up to and including the last `\n`.
    complete_len: u64,
    /// Actual length (larger when the tail is torn).
    len: u64,
}

fn read_tail(path: &Path) -> Result<Option<Tail>, PathError> {
    let mut f = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).at(path),
    };
    let len = f.metadata().at(path)?.len();
    let mut window = 4096u64;
    loop {
        let start = len.saturating_sub(window);
        f.seek(SeekFrom::Start(start)).at(path)?;
        let mut buf = Vec::with_capacity((len - start) as usize);
        f.read_to_end(&mut buf).at(path)?;
        // The complete part ends after the last '\n'.
        let Some(last_nl) = buf.iter().rposition(|&b| b == b'\n') else {
            if start == 0 || window > MAX_LINE as u64 * 2 {
                return Ok(Some(Tail { line: None, complete_len: 0, len }));
            }
            window *= 4;
            continue;
        };
        let complete_len = start + last_nl as u64 + 1;
        match buf[..last_nl].iter().rposition(|&b| b == b'\n') {
            Some(prev_nl) => {
                let line = buf[prev_nl + 1..last_nl].to_vec();
                return Ok(Some(Tail { line: Some(line), complete_len, len }));
            }
            None if start == 0 => {
                let line = buf[..last_nl].to_vec();
                return Ok(Some(Tail { line: Some(line), complete_len, len }));
            }
            None if window > MAX_LINE as u64 * 2 => {
                return Ok(Some(Tail { line: None, complete_len, len }));
            }
            None => window *= 4,
        }
    }
}

/// Cuts a torn last line off (a crash mid-write), so the next append starts
/// on a line of its own.
fn truncate_torn(path: &Path, tail: &Tail) -> Result<(), PathError> {
    if tail.len > tail.complete_len {
        let f = OpenOptions::new().write(true).open(path).at(path)?;
        f.set_len(tail.complete_len).at(path)?;
        f.sync_all().at(path)?;
    }
    Ok(())
}

/// Where an append landed, so the caller can advance its cursor.
#[derive(Clone, Debug)]
pub struct Appended {
    /// The segment written.
    pub path: PathBuf,
    /// Offset of the new line.
    pub offset: u64,
    /// Length of the new line including `\n`.
    pub len: u64,
}

/// The writer side of this device's feed for one role: the published segments
/// plus the private journal in the state folder.
#[derive(Clone, Debug)]
pub struct FeedWriter {
    feed: FeedId,
    dir: PathBuf,
    journal: PathBuf,
    lock: PathBuf,
}

/// Holds the feed's exclusive lock until dropped.
#[derive(Debug)]
pub struct FeedLock {
    _file: File,
}

impl FeedWriter {
    /// The writer of `feed` in `feeds_dir`, with its journal and lock under `state_dir`.
    pub fn new(feeds_dir: &Path, state_dir: &Path, feed: FeedId) -> Self {
        let dir = feeds_dir.join(feed.role()).join(feed.device());
        let journal = state_dir.join("journal").join(format!("{}.jsonl", feed.role()));
        let lock = state_dir.join(format!("feed-{}.lock", feed.role()));
        Self { feed, dir, journal, lock }
    }

    /// The feed id.
    pub fn feed(&self) -> &FeedId {
        &self.feed
    }

    /// Takes the feed's lock: one append at a time per feed on this device.
    pub fn lock(&self) -> StoreResult<FeedLock> {
        if let Some(parent) = self.lock.parent() {
            fs::create_dir_all(parent).at(parent)?;
        }
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&self.lock)
            .at(&self.lock)?;
        file.lock().at(&self.lock)?;
        Ok(FeedLock { _file: file })
    }

    /// Brings the published feed in line with the journal and returns the
    /// last record (`None` for a new feed). Call under [`Self::lock`].
    ///
    /// - a torn last line (crash mid-write) is cut off;
    /// - records in the journal missing from the feed (a stale copy came
    ///   back) are published again;
    /// - a feed ahead of the journal was written by someone else: refused.
    pub fn reconcile(&self) -> StoreResult<Option<Record>> {
        let journal_tail = read_tail(&self.journal)?;
        if let Some(t) = &journal_tail {
            truncate_torn(&self.journal, t)?;
        }
        let journal_last = decode_tail(&self.journal, journal_tail.as_ref())?;
        let feed_last = self.published_last()?;
        let j = journal_last.as_ref().map_or(0, |r| r.header.seq);
        let f = feed_last.as_ref().map_or(0, |r| r.header.seq);
        if journal_tail.is_none() && f > 0 {
            // No journal at all (a fresh state folder): the published feed is
            // the record of what this device wrote; adopt it.
            self.rebuild_journal()?;
            return Ok(feed_last);
        }
        if f > j || (f == j && f > 0 && feed_last.as_ref().map(|r| r.id) != journal_last.as_ref().map(|r| r.id)) {
            return Err(StoreError::ForeignWriter(format!(
                "feed {} holds records this device did not write (published seq {f}, journal seq {j}): \
                 two copies of one countersign home are writing the same feed. Stop the other copy; \
                 never copy a home to another machine",
                self.feed
            )));
        }
        if j > f {
            for line in read_lines(&self.journal, 0)? {
                if let Ok(rec) = line.record
                    && rec.header.seq > f
                {
                    self.publish(&rec)?;
                }
            }
        }
        Ok(journal_last)
    }

    fn rebuild_journal(&self) -> StoreResult<()> {
        let parent = self.journal.parent().expect("journal has a parent");
        fs::create_dir_all(parent).at(parent)?;
        let mut out = Vec::new();
        for seg in list_segments(&self.dir)? {
            for line in read_lines(&seg.path, 0)? {
                if let Ok(rec) = line.record {
                    out.extend_from_slice(rec.to_line().as_bytes());
                }
            }
        }
        let tmp = self.journal.with_extension("jsonl.tmp");
        fs::write(&tmp, &out).at(&tmp)?;
        File::open(&tmp).and_then(|f| f.sync_all()).at(&tmp)?;
        fs::rename(&tmp, &self.journal).at(&self.journal)?;
        Ok(())
    }

    /// The last complete record of the published feed (torn tail cut off).
    fn published_last(&self) -> StoreResult<Option<Record>> {
        if !self.dir.exists() {
            return Ok(None);
        }
        let segments = list_segments(&self.dir)?;
        for seg in segments.iter().rev() {
            let Some(tail) = read_tail(&seg.path)? else { continue };
            truncate_torn(&seg.path, &tail)?;
            if let Some(rec) = decode_tail(&seg.path, Some(&tail))? {
                return Ok(Some(rec));
            }
        }
        Ok(None)
    }

    /// Appends a new record durably: journal, then the feed, each fsynced.
    /// Call under [`Self::lock`] after [`Self::reconcile`].
    pub fn append(&self, rec: &Record, key: &SigningKey) -> StoreResult<Appended> {
        let parent = self.journal.parent().expect("journal has a parent");
        fs::create_dir_all(parent).at(parent)?;
        append_durably(&self.journal, rec.to_line().as_bytes())?;
        let at = self.publish(rec)?;
        self.write_head(rec, key)?;
        Ok(at)
    }

    /// Writes `rec` to the newest segment, starting a new one when it is full.
    fn publish(&self, rec: &Record) -> StoreResult<Appended> {
        let new_dir = !self.dir.exists();
        if new_dir {
            fs::create_dir_all(&self.dir).at(&self.dir)?;
            sync_dir(self.dir.parent().expect("feed dir has a parent"))?;
        }
        let segments = list_segments(&self.dir)?;
        let path = match segments.last() {
            Some(seg) => {
                let size = fs::metadata(&seg.path).at(&seg.path)?.len();
                let count = rec.header.seq.saturating_sub(seg.first_seq);
                if count >= SEGMENT_RECORDS || size >= SEGMENT_BYTES {
                    self.dir.join(segment_name(rec.header.seq))
                } else {
                    seg.path.clone()
                }
            }
            None => self.dir.join(segment_name(rec.header.seq)),
        };
        let line = rec.to_line();
        let created = !path.exists();
        let offset = append_durably(&path, line.as_bytes())?;
        if created {
            sync_dir(&self.dir)?;
        }
        Ok(Appended { path, offset, len: line.len() as u64 })
    }

    fn write_head(&self, rec: &Record, key: &SigningKey) -> StoreResult<()> {
        let text = record::encode_head(&self.feed, rec.header.seq, rec.id, rec.header.hlc, key);
        let tmp = self.dir.join("head.json.tmp");
        let path = self.dir.join("head.json");
        fs::write(&tmp, text).at(&tmp)?;
        // head.json is a hint rebuilt on every append, so no fsync: the feed is the truth.
        fs::rename(&tmp, &path).at(&path)?;
        Ok(())
    }
}

fn decode_tail(path: &Path, tail: Option<&Tail>) -> StoreResult<Option<Record>> {
    let Some(line) = tail.and_then(|t| t.line.as_ref()) else { return Ok(None) };
    record::decode(line).map(Some).map_err(|e| {
        StoreError::ForeignWriter(format!(
            "the last line of {} is not a record ({e}); this feed cannot be appended to until it is \
             repaired",
            path.display()
        ))
    })
}

/// Appends bytes with one write and fsyncs; returns the offset they start at.
fn append_durably(path: &Path, bytes: &[u8]) -> StoreResult<u64> {
    let mut f = OpenOptions::new().create(true).append(true).open(path).at(path)?;
    let offset = f.seek(SeekFrom::End(0)).at(path)?;
    f.write_all(bytes).at(path)?;
    f.sync_data().at(path)?;
    Ok(offset)
}

fn sync_dir(dir: &Path) -> StoreResult<()> {
    File::open(dir).and_then(|f| f.sync_all()).at(dir)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_names() {
        assert_eq!(segment_name(501), "00000501.jsonl");
        assert_eq!(parse_segment_name("00000501.jsonl"), Some(501));
        for not in ["00000501.jsonl.partial", "0000501.jsonl", "x.jsonl", "00000501 (conflicted copy).jsonl", "head.json"] {
            assert_eq!(parse_segment_name(not), None, "{not}");
        }
    }

    #[test]
    fn torn_last_line_waits() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f.jsonl");
        fs::write(&p, b"garbage\n{\"half").unwrap();
        let lines = read_lines(&p, 0).unwrap();
        assert_eq!(lines.len(), 1);
        assert!(lines[0].record.is_err());
        let tail = read_tail(&p).unwrap().unwrap();
        assert_eq!(tail.complete_len, 8);
        assert_eq!(tail.line.as_deref(), Some(&b"garbage"[..]));
    }
}
