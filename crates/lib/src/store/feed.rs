//! Feeds on disk: segment files, tolerant reading, and the durable append.
//!
//! A feed lives in `feeds/<role>/<device>/` as segments named by their first
//! seq (`00000001.jsonl`); the newest one grows. A segment is sealed once a
//! later one exists; a sealed segment is never rewritten, but may be replaced
//! by its gzip form (`00000001.jsonl.gz`, see [`gzip_sealed_segments`]), and
//! readers take both forms alike. This module owns reading lines out of
//! segments (a torn last line waits, it is never consumed) and the writer's
//! append: journal first, then the published feed, each fsynced, under the
//! feed's lock. It does not verify signatures or chains (ingest does).
//!
//! A batch path, [`FeedWriter::append_batch`], writes a run of records with one
//! write and one fsync per file instead of two fsyncs per record. It seeds
//! large channels (benchmarks, imports) and writes the records of one tool
//! call that must land together (a large upload's chunks): it writes exactly
//! the bytes that record-by-record appends would (same journal lines, same
//! segment splits, same `head.json`) but makes none of them durable before
//! the whole run is, so a write through it is acknowledged only once it
//! returns.

use std::fs::{self, File, OpenOptions};
use std::io::{Read as _, Seek as _, SeekFrom, Write as _};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use ed25519_dalek::{SigningKey, VerifyingKey};
use flate2::Compression;
use flate2::read::MultiGzDecoder;
use flate2::write::GzEncoder;

use super::error::{IoContext as _, PathError, StoreError, StoreResult};
use super::folder_file::{self, FileKind, FolderError, Refusal};
use super::lock::FileLock;
use crate::core::ids::FeedId;
use crate::core::record::{self, DecodeError, MAX_LINE, Record};

/// A segment seals (the next record starts a new file) at this many records.
pub const SEGMENT_RECORDS: u64 = 500;
/// A segment seals at this many bytes.
pub const SEGMENT_BYTES: u64 = 256 * 1024;
/// The most a segment may hold, plain or decompressed: what the writer makes
/// stays under [`SEGMENT_BYTES`] plus one line of at most 1 MiB, and a repair
/// may append a few records past that. A larger file is reported and never
/// read (a sparse 8 GiB file or a gzip bomb costs one `stat`).
pub const MAX_SEGMENT_BYTES: u64 = 4 * 1024 * 1024;

/// One segment file of a feed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    /// Its path.
    pub path: PathBuf,
    /// The seq of its first record (from its name).
    pub first_seq: u64,
    /// True for a sealed segment in gzip form (`.jsonl.gz`).
    pub gz: bool,
    /// Its inode number as the folder's listing gave it (no `stat`): a file
    /// replaced under the same name (a rename over it) has another.
    pub ino: u64,
}

/// The name of the segment starting at `seq`.
pub fn segment_name(seq: u64) -> String {
    format!("{seq:08}.jsonl")
}

/// Parses a segment file name, plain (`00000001.jsonl`) or gzip
/// (`00000001.jsonl.gz`). Conflict copies (`*.sync-conflict-*`, "conflicted
/// copy"), partial and temp files (`*.partial`, `*.tmp`, `.~tmp~`) and
/// anything else are not segments: readers ignore them as paths.
pub fn parse_segment_name(name: &str) -> Option<u64> {
    parse_segment_file(name).map(|(seq, _)| seq)
}

/// Like [`parse_segment_name`], also telling whether the file is gzip.
pub fn parse_segment_file(name: &str) -> Option<(u64, bool)> {
    let (stem, gz) = match name.strip_suffix(".jsonl.gz") {
        Some(stem) => (stem, true),
        None => (name.strip_suffix(".jsonl")?, false),
    };
    (stem.len() == 8 && stem.bytes().all(|b| b.is_ascii_digit()))
        .then(|| stem.parse().ok().map(|seq| (seq, gz)))
        .flatten()
}

/// Something under `feeds/` that is not part of a well-formed feed. It is
/// never read, written, moved or deleted: it is reported (by ingest, so by
/// `verify`, `channel_status` and `status`) and left for a person.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stray {
    /// Its path.
    pub path: PathBuf,
    /// What is wrong with it.
    pub what: StrayKind,
}

/// What makes a [`Stray`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StrayKind {
    /// A symlink, FIFO, socket or device, or a directory where a feed file
    /// belongs (or a file where a folder belongs): an alarm.
    WrongType(FileKind),
    /// A regular file or folder with a name no feed uses (a conflict copy
    /// left by a sync tool, a note): reported by `verify`, harmless.
    Unknown,
}

impl Stray {
    fn wrong(path: PathBuf, kind: FileKind) -> Self {
        Self {
            path,
            what: StrayKind::WrongType(kind),
        }
    }

    fn unknown(path: PathBuf) -> Self {
        Self {
            path,
            what: StrayKind::Unknown,
        }
    }

    /// Why it is reported, in words.
    pub fn reason(&self) -> String {
        match self.what {
            StrayKind::WrongType(kind) => format!(
                "{kind} in the feeds folder, where only regular files and folders belong: never \
                 followed or read, left untouched; remove it"
            ),
            StrayKind::Unknown => {
                "not part of any feed (a copy left by a sync tool, or a file put there by hand): \
                 ignored, its content is not read"
                    .to_owned()
            }
        }
    }
}

/// The entries of a folder with their types as `lstat` gives them (no
/// symlink followed) and their inode numbers, both from the listing itself;
/// names that are not UTF-8 kept lossily.
fn entries(dir: &Path) -> Result<Vec<(String, PathBuf, FileKind, u64)>, PathError> {
    use std::os::unix::fs::DirEntryExt as _;
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).at(dir)? {
        let entry = entry.at(dir)?;
        let path = entry.path();
        let kind = match entry.file_type() {
            Ok(t) => FileKind::of(t),
            // Gone between the listing and the look (a checkout, a rename).
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e).at(&path),
        };
        let name = entry.file_name().to_string_lossy().into_owned();
        out.push((name, path, kind, entry.ino()));
    }
    Ok(out)
}

/// A feed and its folder.
pub type FeedFolder = (FeedId, PathBuf);

/// Every feed folder under `feeds/`, sorted by feed id; the owner's feeds first.
pub fn list_feeds(feeds: &Path) -> Result<Vec<FeedFolder>, PathError> {
    survey_feeds(feeds).map(|s| s.feeds)
}

/// What [`survey_feeds`] found under `feeds/`.
#[derive(Clone, Debug, Default)]
pub struct FeedsSurvey {
    /// The feed folders, sorted by feed id, the owner's first.
    pub feeds: Vec<FeedFolder>,
    /// What does not belong at the two levels of folders above the feed files.
    pub strays: Vec<Stray>,
    /// Every role folder listed, with its modification time as it stood
    /// just before the listing (`None` when it could not be read): a device
    /// folder added later changes it, even in a role folder that held none.
    pub roles: Vec<(PathBuf, Option<SystemTime>)>,
}

/// Like [`list_feeds`], also giving what does not belong at the two levels
/// of folders above the feed files: a role or device folder that is a
/// symlink or a file, a folder whose name is no role or device.
pub fn survey_feeds(feeds: &Path) -> Result<FeedsSurvey, PathError> {
    let mut survey = FeedsSurvey::default();
    let FeedsSurvey {
        feeds: out,
        strays,
        roles: role_dirs,
    } = &mut survey;
    // `feeds` itself must be a real folder: a link would make another folder
    // this channel's.
    match FileKind::at(feeds)? {
        Some(FileKind::Directory) | None => {}
        Some(other) => {
            strays.push(Stray::wrong(feeds.to_path_buf(), other));
            return Ok(survey);
        }
    }
    let roles = match entries(feeds) {
        Ok(r) => r,
        Err(e) if e.source.kind() == std::io::ErrorKind::NotFound => return Ok(survey),
        Err(e) => return Err(e),
    };
    for (role_name, role_path, kind, _) in roles {
        match kind {
            FileKind::Directory => {}
            FileKind::Regular => {
                strays.push(Stray::unknown(role_path));
                continue;
            }
            other => {
                strays.push(Stray::wrong(role_path, other));
                continue;
            }
        }
        if FeedId::new(&role_name, "device").is_none() {
            strays.push(Stray::unknown(role_path));
            continue;
        }
        let mtime = fs::metadata(&role_path).and_then(|m| m.modified()).ok();
        let devices = match entries(&role_path) {
            Ok(d) => d,
            Err(e) if e.source.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        role_dirs.push((role_path, mtime));
        for (dev_name, dev_path, kind, _) in devices {
            match (kind, FeedId::new(&role_name, &dev_name)) {
                (FileKind::Directory, Some(feed)) => out.push((feed, dev_path)),
                (FileKind::Directory | FileKind::Regular, _) => {
                    strays.push(Stray::unknown(dev_path));
                }
                (other, _) => strays.push(Stray::wrong(dev_path, other)),
            }
        }
    }
    out.sort_by(|a, b| (!a.0.is_owner(), &a.0).cmp(&(!b.0.is_owner(), &b.0)));
    strays.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(survey)
}

/// The segments of one feed folder as its writer sees them, by first seq.
/// When a segment is present in both forms, only the gzip file is listed: it
/// is written only for a sealed segment and renamed into place once whole,
/// while the plain file beside it may be an older copy that stopped growing
/// before the segment was full (a remote that got the growing segment, then
/// the sealed gzip, keeps both: copies never delete).
///
/// Readers of other feeds use [`survey_segments`], which lists both forms: a
/// gzip file planted beside a plain segment must not hide its records.
pub fn list_segments(dir: &Path) -> Result<Vec<Segment>, PathError> {
    let (mut segments, _) = survey_segments(dir)?;
    segments.dedup_by_key(|s| s.first_seq);
    Ok(segments)
}

/// Every segment file of one feed folder, both forms of a segment when both
/// stand (gzip first), and what does not belong there. Only regular files
/// with a segment's name are segments; anything else with that name (a
/// folder, a symlink, a FIFO) is of the wrong type, and so is a `head.json`
/// that is not a regular file. Temporary files of a write or a copy in
/// flight (`*.tmp`, `*.partial`) are passed over in silence; every other
/// name is reported as unknown. Readers find every record by id, so reading
/// both forms of a segment applies nothing twice.
pub fn survey_segments(dir: &Path) -> Result<(Vec<Segment>, Vec<Stray>), PathError> {
    let mut out = Vec::new();
    let mut strays = Vec::new();
    for (name, path, kind, ino) in entries(dir)? {
        let segment = parse_segment_file(&name);
        let known = segment.is_some()
            || name == HEAD_FILE
            || name == crate::core::api_presence::API_FILE
            || name == crate::core::sealed_key::KEY_FILE;
        match (kind, segment) {
            (FileKind::Regular, Some((first_seq, gz))) => out.push(Segment {
                path,
                first_seq,
                gz,
                ino,
            }),
            (FileKind::Regular, None) if known || is_in_flight(&name) => {}
            (FileKind::Regular, None) => strays.push(Stray::unknown(path)),
            (FileKind::Directory, _) if !known => strays.push(Stray::unknown(path)),
            (other, _) => strays.push(Stray::wrong(path, other)),
        }
    }
    // Gzip before plain for one first seq.
    out.sort_by_key(|s| (s.first_seq, !s.gz));
    strays.sort_by(|a, b| a.path.cmp(&b.path));
    Ok((out, strays))
}

/// The name of a feed's signed head.
pub const HEAD_FILE: &str = "head.json";

/// True for the name of a file being written or copied: a temporary file of
/// this program or of a sync tool.
fn is_in_flight(name: &str) -> bool {
    name.ends_with(".tmp") || name.ends_with(".partial") || name.starts_with(".~tmp~")
}

/// The bytes of a segment as records were written: a gzip segment is
/// decompressed. A gzip file that ends early or is damaged (a copy still in
/// flight) yields what decodes before the damage; its last line is then torn
/// and waits, like a plain file's.
///
/// Bounded: a file, or a gzip file's content, larger than
/// [`MAX_SEGMENT_BYTES`] is refused without reading past the bound, and so
/// is anything but a regular file.
pub fn read_segment(path: &Path) -> Result<Vec<u8>, FolderError> {
    read_segment_from(path, 0)
}

fn read_segment_from(path: &Path, offset: u64) -> Result<Vec<u8>, FolderError> {
    if !is_gz(path) {
        return folder_file::read_from(path, offset, MAX_SEGMENT_BYTES);
    }
    let (f, len) = folder_file::open_read(path)?;
    if len > MAX_SEGMENT_BYTES {
        return Err(FolderError::Refused {
            path: path.to_path_buf(),
            refusal: Refusal::TooLarge {
                len,
                limit: MAX_SEGMENT_BYTES,
            },
        });
    }
    let mut buf = Vec::new();
    // One byte past the bound tells a bomb from a segment that fills it.
    let mut decoder = MultiGzDecoder::new(std::io::BufReader::new(f)).take(MAX_SEGMENT_BYTES + 1);
    match decoder.read_to_end(&mut buf) {
        Ok(_) => {}
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::UnexpectedEof
                    | std::io::ErrorKind::InvalidInput
                    | std::io::ErrorKind::InvalidData
            ) => {}
        Err(e) => return Err(e).at(path)?,
    }
    if buf.len() as u64 > MAX_SEGMENT_BYTES {
        return Err(FolderError::Refused {
            path: path.to_path_buf(),
            refusal: Refusal::Inflates {
                limit: MAX_SEGMENT_BYTES,
            },
        });
    }
    buf.drain(..(offset as usize).min(buf.len()));
    Ok(buf)
}

/// True when `path` names a gzip segment.
pub fn is_gz(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "gz")
}

/// Replaces every sealed plain segment of the feed folder `feed_dir` by its
/// gzip form and returns the files written. A segment is sealed once a later
/// one exists (only the newest grows), so the newest is always left plain.
///
/// Each replacement is atomic for readers: the gzip is written to a
/// temporary file (not a segment name, so ignored), fsynced, renamed into
/// place, and only then is the plain file removed. A reader that sees both
/// reads the gzip one ([`list_segments`]); one that read the plain file before
/// and the gzip file after finds the same records by id and applies nothing
/// twice. Safe to repeat after a crash at any step.
///
/// Compress only this device's own feeds: another writer's files belong to it.
pub fn gzip_sealed_segments(feed_dir: &Path) -> StoreResult<Vec<PathBuf>> {
    let segments = list_segments(feed_dir)?;
    let mut written = Vec::new();
    for seg in segments.iter().take(segments.len().saturating_sub(1)) {
        if seg.gz {
            // A run stopped after the rename: the gzip is whole, the plain
            // file is left over.
            let plain = feed_dir.join(segment_name(seg.first_seq));
            if FileKind::at(&plain)? == Some(FileKind::Regular) {
                fs::remove_file(&plain).at(&plain)?;
                sync_dir(feed_dir)?;
            }
            continue;
        }
        let plain = read_segment(&seg.path)?;
        let gz_path = feed_dir.join(format!("{}.gz", segment_name(seg.first_seq)));
        // A gzip form left by an interrupted run is kept only if it is whole.
        let whole = FileKind::at(&gz_path)? == Some(FileKind::Regular)
            && read_segment(&gz_path).is_ok_and(|b| b == plain);
        if !whole {
            let mut enc = GzEncoder::new(Vec::new(), Compression::default());
            enc.write_all(&plain).at(&gz_path)?;
            let gz = enc.finish().at(&gz_path)?;
            folder_file::replace(&gz_path, &gz, true)?;
            written.push(gz_path);
        }
        fs::remove_file(&seg.path).at(&seg.path)?;
        sync_dir(feed_dir)?;
    }
    Ok(written)
}

/// The most a `head.json` may hold (a signed head is a few hundred bytes).
pub const MAX_HEAD_BYTES: u64 = 64 * 1024;

/// The feed's `head.json` in `feed_dir`, if it is there and verifies with
/// `key` for `feed` (a heartbeat and a hint: never trusted over the records).
pub fn read_head(feed_dir: &Path, feed: &FeedId, key: &VerifyingKey) -> Option<record::HeadClaim> {
    let bytes = folder_file::read(&feed_dir.join(HEAD_FILE), MAX_HEAD_BYTES).ok()?;
    record::decode_head(&bytes, feed, key)
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
///
/// A gzip segment is read decompressed, `offset` counting decompressed bytes.
pub fn read_lines(path: &Path, offset: u64) -> Result<Vec<Line>, FolderError> {
    read_lines_and_rest(path, offset).map(|(lines, _)| lines)
}

/// Like [`read_lines`], also giving the number of bytes after the last
/// complete line (a torn tail; 0 when the file ends with `\n`).
pub fn read_lines_and_rest(path: &Path, offset: u64) -> Result<(Vec<Line>, u64), FolderError> {
    Ok(split_lines(&read_segment_from(path, offset)?, offset))
}

/// The lines of this device's private journal (in the home, not the shared
/// folder: it is as long as the role's history and is read whole).
fn read_journal_lines(path: &Path) -> Result<Vec<Line>, PathError> {
    Ok(split_lines(&fs::read(path).at(path)?, 0).0)
}

/// Cuts `buf` (read from `offset`) into complete lines and the length of
/// the torn rest.
fn split_lines(buf: &[u8], offset: u64) -> (Vec<Line>, u64) {
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
    (out, (buf.len() - start) as u64)
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

/// Reads the tail of `path` (a journal, or a segment of at most `limit`
/// bytes), never more than twice the line limit of it.
fn read_tail(path: &Path, limit: u64) -> Result<Option<Tail>, FolderError> {
    let (mut f, len) = match folder_file::open_read(path) {
        Ok(opened) => opened,
        Err(e) if e.is_not_found() => return Ok(None),
        Err(e) => return Err(e),
    };
    if len > limit {
        return Err(FolderError::Refused {
            path: path.to_path_buf(),
            refusal: Refusal::TooLarge { len, limit },
        });
    }
    let mut window = 4096u64;
    loop {
        let start = len.saturating_sub(window);
        f.seek(SeekFrom::Start(start)).at(path)?;
        let mut buf = Vec::with_capacity((len - start) as usize);
        (&mut f).take(len - start).read_to_end(&mut buf).at(path)?;
        // The complete part ends after the last '\n'.
        let Some(last_nl) = buf.iter().rposition(|&b| b == b'\n') else {
            if start == 0 || window > MAX_LINE as u64 * 2 {
                return Ok(Some(Tail {
                    line: None,
                    complete_len: 0,
                    len,
                }));
            }
            window *= 4;
            continue;
        };
        let complete_len = start + last_nl as u64 + 1;
        match buf[..last_nl].iter().rposition(|&b| b == b'\n') {
            Some(prev_nl) => {
                let line = buf[prev_nl + 1..last_nl].to_vec();
                return Ok(Some(Tail {
                    line: Some(line),
                    complete_len,
                    len,
                }));
            }
            None if start == 0 => {
                let line = buf[..last_nl].to_vec();
                return Ok(Some(Tail {
                    line: Some(line),
                    complete_len,
                    len,
                }));
            }
            None if window > MAX_LINE as u64 * 2 => {
                return Ok(Some(Tail {
                    line: None,
                    complete_len,
                    len,
                }));
            }
            None => window *= 4,
        }
    }
}

/// Cuts a torn last line off (a crash mid-write), so the next append starts
/// on a line of its own.
fn truncate_torn(path: &Path, tail: &Tail) -> Result<(), FolderError> {
    if tail.len > tail.complete_len {
        let f = folder_file::open_write(path)?;
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

/// What an append left on disk, remembered by the process that made it so
/// that its next append can tell in three `stat` calls that nobody else
/// touched the feed since (see [`FeedWriter::reconcile_after`]).
#[derive(Clone, Debug)]
pub struct Tails {
    /// The journal's size and mtime.
    journal: (u64, Option<SystemTime>),
    /// The feed folder's mtime: a segment added, removed or replaced changes it.
    dir: Option<SystemTime>,
    /// The newest segment, its first seq, and its size and mtime.
    segment: PathBuf,
    segment_first: u64,
    segment_stamp: (u64, Option<SystemTime>),
    /// The record written last.
    last: Record,
}

impl Tails {
    /// The record written last.
    pub fn last(&self) -> &Record {
        &self.last
    }

    fn holds(&self, journal: &Path, dir: &Path) -> bool {
        stamp(journal).ok() == Some(self.journal)
            && stamp(dir).ok().map(|s| s.1) == Some(self.dir)
            && stamp(&self.segment).ok() == Some(self.segment_stamp)
    }
}

/// A file's size and mtime.
fn stamp(path: &Path) -> StoreResult<(u64, Option<SystemTime>)> {
    // Of the path itself: a file swapped for a symlink changes its stamp.
    let m = fs::symlink_metadata(path).at(path)?;
    Ok((m.len(), m.modified().ok()))
}

/// A record durable in the journal and written to its feed segment, not yet
/// durably there ([`FeedWriter::begin_append`]).
#[must_use = "the record is not durable in the feed until `finish`"]
pub struct Publishing<'w> {
    writer: &'w FeedWriter,
    rec: &'w Record,
    file: File,
    at: Appended,
    segment_first: u64,
    journal_before: u64,
}

impl Publishing<'_> {
    /// Waits until the line is durable in the feed, then rewrites the head
    /// hint. Returns where the line landed and the tails the append leaves.
    /// Should the sync fail, the journal is cut back as when writing the
    /// line fails: the record the caller is told failed is never published
    /// by a later reconcile.
    pub fn finish(self, key: &SigningKey) -> StoreResult<(Appended, Tails)> {
        let w = self.writer;
        if let Err(e) = w.sync_published(&self.file, &self.at) {
            return Err(w.unjournal(self.journal_before, &[self.rec], e));
        }
        w.write_head(self.rec, key);
        let tails = Tails {
            journal: stamp(&w.journal)?,
            dir: stamp(&w.dir)?.1,
            segment: self.at.path.clone(),
            segment_first: self.segment_first,
            segment_stamp: stamp(&self.at.path)?,
            last: self.rec.clone(),
        };
        Ok((self.at, tails))
    }
}

/// The newest segment of a feed as the writer knows it: its path, first seq
/// and size.
type NewestSegment = (PathBuf, u64, u64);

/// The writer side of this device's feed for one role: the published segments
/// plus the private journal in the state folder.
#[derive(Clone, Debug)]
pub struct FeedWriter {
    feed: FeedId,
    /// The channel folder: the folders from here down to `dir` must be real.
    root: PathBuf,
    dir: PathBuf,
    journal: PathBuf,
    lock: PathBuf,
    /// Keys the feed had before a `replace_key`: its older records are signed by them.
    former_keys: Vec<VerifyingKey>,
}

/// The folder of `feed` in `feeds_dir`: `<role>/<device>`.
pub fn feed_dir(feeds_dir: &Path, feed: &FeedId) -> PathBuf {
    feeds_dir.join(feed.role()).join(feed.device())
}

impl FeedWriter {
    /// The writer of `feed` in `feeds_dir`, with its journal and lock under `state_dir`.
    pub fn new(feeds_dir: &Path, state_dir: &Path, feed: FeedId) -> Self {
        let dir = feed_dir(feeds_dir, &feed);
        let journal = state_dir
            .join("journal")
            .join(format!("{}.jsonl", feed.role()));
        let lock = state_dir.join(format!("feed-{}.lock", feed.role()));
        Self {
            feed,
            root: feeds_dir.parent().unwrap_or(feeds_dir).to_path_buf(),
            dir,
            journal,
            lock,
            former_keys: Vec::new(),
        }
    }

    /// The same writer, also recognizing records signed by `keys` (the keys
    /// the feed had before it replaced its key) as this device's own.
    pub fn with_former_keys(mut self, keys: Vec<VerifyingKey>) -> Self {
        self.former_keys = keys;
        self
    }

    fn signed_by_feed(&self, rec: &Record, key: &VerifyingKey) -> bool {
        rec.verify(key) || self.former_keys.iter().any(|k| rec.verify(k))
    }

    /// The feed id.
    pub fn feed(&self) -> &FeedId {
        &self.feed
    }

    /// Takes the feed's lock: one append at a time per feed on this device.
    pub fn lock(&self) -> StoreResult<FileLock> {
        FileLock::exclusive(&self.lock)
    }

    /// True when the feed folder stands as a real directory; false when it
    /// does not exist yet. A symlink or a file in its place (or above it) is
    /// refused: this device never writes through one.
    fn has_dir(&self) -> StoreResult<bool> {
        let role_dir = self.dir.parent().unwrap_or(&self.dir);
        for dir in [&self.root.join("feeds"), role_dir, &self.dir] {
            if !folder_file::real_dir(dir)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// The lines of each segment of the feed, skipping segments that cannot
    /// be this device's (too large, not a regular file: ingest reports them).
    fn own_segment_lines(&self) -> StoreResult<Vec<Vec<Line>>> {
        if !self.has_dir()? {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        for seg in list_segments(&self.dir)? {
            match read_lines(&seg.path, 0) {
                Ok(lines) => out.push(lines),
                Err(e) if e.refusal().is_some() || e.is_not_found() => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(out)
    }

    /// Brings the published feed in line with the journal and returns the
    /// last record (`None` for a new feed). Call under [`Self::lock`].
    ///
    /// - a torn last line (crash mid-write) is cut off;
    /// - records in the journal missing from the feed (a stale copy came
    ///   back) are published again;
    /// - a feed ahead of the journal was written by someone else: refused.
    pub fn reconcile(&self, key: &VerifyingKey) -> StoreResult<Option<Record>> {
        let journal_tail = read_tail(&self.journal, u64::MAX)?;
        if let Some(t) = &journal_tail {
            truncate_torn(&self.journal, t)?;
        }
        let journal_last = decode_tail(&self.journal, journal_tail.as_ref())?;
        let feed_last = self.published_last(key)?;
        let j = journal_last.as_ref().map_or(0, |r| r.header.seq);
        let f = feed_last.as_ref().map_or(0, |r| r.header.seq);
        if journal_tail.is_none() && f > 0 {
            // No journal at all (a fresh state folder): the published feed is
            // the record of what this device wrote; adopt it.
            self.rebuild_journal()?;
            return Ok(feed_last);
        }
        if f > j
            || (f == j
                && f > 0
                && feed_last.as_ref().map(|r| r.id) != journal_last.as_ref().map(|r| r.id))
        {
            return Err(StoreError::ForeignWriter {
                feed: self.feed.clone(),
                published: f,
                journal: j,
            });
        }
        if j > f {
            // Lines already published somewhere in the feed (an older line
            // put back at the end by hand) are not published twice.
            let published = self.published_ids()?;
            for line in read_journal_lines(&self.journal)? {
                if let Ok(rec) = line.record
                    && rec.header.seq > f
                    && !published.contains(&rec.id)
                {
                    self.publish(&rec, None)?;
                }
            }
        }
        Ok(journal_last)
    }

    /// Publishes again every journal record that the published feed lacks,
    /// wherever its hole is (a line edited or cut out by hand, a middle lost
    /// in a copy), after [`Self::reconcile`]; returns how many. They go at the
    /// end of the newest segment: readers place a record by its chain, not by
    /// where it stands. Reads the whole feed, so it is a repair to run on
    /// demand, not on every write. Call under [`Self::lock`].
    pub fn republish_missing(&self, key: &VerifyingKey) -> StoreResult<usize> {
        self.reconcile(key)?;
        // A journal record is published when a line with its body and its
        // signature stands in the feed (the same bytes, so no key is needed:
        // records signed before a key change count too).
        let published: std::collections::HashSet<_> = self
            .own_segment_lines()?
            .into_iter()
            .flatten()
            .filter_map(|l| l.record.ok())
            .map(|r| (r.id, r.sig.to_bytes()))
            .collect();
        let mut n = 0;
        for line in read_journal_lines(&self.journal)? {
            if let Ok(rec) = line.record
                && !published.contains(&(rec.id, rec.sig.to_bytes()))
            {
                let (file, at) = self.publish(&rec, None)?;
                self.sync_published(&file, &at)?;
                n += 1;
            }
        }
        Ok(n)
    }

    /// The ids of every record line in the published feed (signature unchecked).
    fn published_ids(&self) -> StoreResult<std::collections::HashSet<crate::core::ids::RecordId>> {
        Ok(self
            .own_segment_lines()?
            .into_iter()
            .flatten()
            .filter_map(|l| l.record.ok())
            .map(|r| r.id)
            .collect())
    }

    fn rebuild_journal(&self) -> StoreResult<()> {
        let parent = self.journal.parent().expect("journal has a parent");
        fs::create_dir_all(parent).at(parent)?;
        let mut out = Vec::new();
        for line in self.own_segment_lines()?.into_iter().flatten() {
            if let Ok(rec) = line.record {
                out.extend_from_slice(rec.to_line().as_bytes());
            }
        }
        let tmp = self.journal.with_extension("jsonl.tmp");
        fs::write(&tmp, &out).at(&tmp)?;
        File::open(&tmp).and_then(|f| f.sync_all()).at(&tmp)?;
        fs::rename(&tmp, &self.journal).at(&self.journal)?;
        Ok(())
    }

    /// The last record of the published feed that this feed's key signed (a
    /// torn tail is cut off first). Lines others slipped in — forged or
    /// copied records — are skipped: readers quarantine them, and they must
    /// not stop the owner of the feed from writing. So are segments that
    /// cannot be this device's (of the wrong type or too large).
    fn published_last(&self, key: &VerifyingKey) -> StoreResult<Option<Record>> {
        if !self.has_dir()? {
            return Ok(None);
        }
        let segments = list_segments(&self.dir)?;
        let skip = |e: &FolderError| e.refusal().is_some() || e.is_not_found();
        for seg in segments.iter().rev() {
            if !seg.gz {
                let tail = match read_tail(&seg.path, MAX_SEGMENT_BYTES) {
                    Ok(Some(tail)) => tail,
                    Ok(None) => continue,
                    Err(e) if skip(&e) => continue,
                    Err(e) => return Err(e.into()),
                };
                truncate_torn(&seg.path, &tail)?;
                let last = tail.line.as_deref().map(record::decode);
                if let Some(Ok(rec)) = last
                    && rec.header.feed == self.feed
                    && self.signed_by_feed(&rec, key)
                {
                    return Ok(Some(rec));
                }
            }
            // A sealed gzip segment (never appended to: no torn tail to cut),
            // or the slow path: walk the segment for the last line that is ours.
            let lines = match read_lines(&seg.path, 0) {
                Ok(lines) => lines,
                Err(e) if skip(&e) => continue,
                Err(e) => return Err(e.into()),
            };
            let ours = lines
                .into_iter()
                .rev()
                .filter_map(|l| l.record.ok())
                .find(|r| r.header.feed == self.feed && self.signed_by_feed(r, key));
            if ours.is_some() {
                return Ok(ours);
            }
        }
        Ok(None)
    }

    /// Appends a new record durably: journal, then the feed, each fsynced.
    /// Call under [`Self::lock`] after [`Self::reconcile`].
    pub fn append(&self, rec: &Record, key: &SigningKey) -> StoreResult<Appended> {
        self.append_after(rec, key, None).map(|(at, _)| at)
    }

    /// Like [`Self::append`], with the [`Tails`] the previous append of this
    /// process left, if [`Self::still_holds`] said they hold: the newest
    /// segment is then known without listing the folder. Returns the tails
    /// this append leaves.
    ///
    /// When publishing fails, the journal is cut back to where it was, so
    /// the record that the caller was told failed is never published later
    /// by a reconcile.
    pub fn append_after(
        &self,
        rec: &Record,
        key: &SigningKey,
        tails: Option<&Tails>,
    ) -> StoreResult<(Appended, Tails)> {
        self.begin_append(rec, tails)?.finish(key)
    }

    /// The first half of [`Self::append_after`]: the record is made durable in
    /// the journal and written to the feed, not yet durably. The feed holds
    /// it for readers as soon as this returns, so a caller may read it back
    /// (ingest it) while [`Publishing::finish`] waits for the disk; what it
    /// builds from it must not be kept unless `finish` succeeds.
    pub fn begin_append<'w>(
        &'w self,
        rec: &'w Record,
        tails: Option<&Tails>,
    ) -> StoreResult<Publishing<'w>> {
        let journal_before = self.append_journal(rec.to_line().as_bytes())?;
        let newest = tails.map(|t| (t.segment.clone(), t.segment_first, t.segment_stamp.0));
        let (file, at) = match self.publish(rec, newest) {
            Ok(written) => written,
            Err(e) => return Err(self.unjournal(journal_before, &[rec], e)),
        };
        let segment_first = match tails {
            Some(t) if t.segment == at.path => t.segment_first,
            _ => parse_segment_name(&at.path.file_name().unwrap_or_default().to_string_lossy())
                .unwrap_or(rec.header.seq),
        };
        Ok(Publishing {
            writer: self,
            rec,
            file,
            at,
            segment_first,
            journal_before,
        })
    }

    /// Appends to the journal durably, making its folder on first use only
    /// (not a `mkdir` per append). Returns the journal's length before.
    fn append_journal(&self, bytes: &[u8]) -> StoreResult<u64> {
        if !self.journal.exists() {
            let parent = self.journal.parent().expect("journal has a parent");
            fs::create_dir_all(parent).at(parent)?;
        }
        let mut f = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.journal)
            .at(&self.journal)?;
        let offset = f.seek(SeekFrom::End(0)).at(&self.journal)?;
        f.write_all(bytes).at(&self.journal)?;
        f.sync_data().at(&self.journal)?;
        Ok(offset)
    }

    /// Takes `unpublished` back out of the journal after publishing them
    /// failed with `failed`: the journal is cut to `len`, its length before
    /// they were added. Returns the error to give the caller. Should the cut
    /// fail too, the records stay in the journal and will be published by
    /// the next write: the error says so and names them, so that a caller
    /// does not write them a second time.
    fn unjournal(&self, len: u64, unpublished: &[&Record], failed: StoreError) -> StoreError {
        let cut = OpenOptions::new()
            .write(true)
            .open(&self.journal)
            .and_then(|f| {
                f.set_len(len)?;
                f.sync_all()
            });
        match cut {
            Ok(()) => failed,
            Err(source) => StoreError::Journal {
                path: self.journal.clone(),
                source,
                failed: Box::new(failed),
                records: unpublished.iter().map(|r| r.id.short()).collect(),
            },
        }
    }

    /// True when `tails` (what this process's previous append left) still
    /// describes the files: the journal, the feed folder and its newest
    /// segment are as that append left them, so nobody wrote, cut or
    /// replaced anything since, and [`Tails::last`] stands in for
    /// [`Self::reconcile`]. Three `stat` calls instead of reading and
    /// verifying both tails.
    pub fn still_holds(&self, tails: &Tails) -> bool {
        tails.holds(&self.journal, &self.dir)
    }

    /// Makes sure the feed folder stands as a real directory, creating it on
    /// first use; a symlink or a file in its place or above it is refused.
    fn make_dir(&self) -> StoreResult<()> {
        if folder_file::ensure_real_dirs(&self.root, &self.dir)? {
            sync_dir(self.dir.parent().expect("feed dir has a parent"))?;
        }
        Ok(())
    }

    /// The newest segment of the feed folder, with its first seq and size,
    /// and whether it is sealed in gzip form.
    /// A segment larger than the format allows is passed over: it cannot be
    /// this device's, and is reported by ingest.
    fn newest_segment(&self) -> StoreResult<Option<(NewestSegment, bool)>> {
        for seg in list_segments(&self.dir)?.into_iter().rev() {
            if seg.gz {
                return Ok(Some(((seg.path, seg.first_seq, 0), true)));
            }
            let size = fs::symlink_metadata(&seg.path).at(&seg.path)?.len();
            if size <= MAX_SEGMENT_BYTES {
                return Ok(Some(((seg.path, seg.first_seq, size), false)));
            }
        }
        Ok(None)
    }

    /// Writes `rec` to the newest segment, starting a new one when it is full.
    /// `newest` is the newest segment (path, first seq, size) when the caller
    /// knows it; otherwise the folder is listed.
    fn publish(
        &self,
        rec: &Record,
        newest: Option<NewestSegment>,
    ) -> StoreResult<(File, Appended)> {
        self.make_dir()?;
        let newest = match newest {
            Some(n) => Some((n, false)),
            None => self.newest_segment()?,
        };
        let path = match newest {
            // A gzip segment is sealed: the next record starts a new one.
            Some((_, true)) | None => self.dir.join(segment_name(rec.header.seq)),
            Some(((path, first_seq, size), false)) => {
                let count = rec.header.seq.saturating_sub(first_seq);
                if count >= SEGMENT_RECORDS || size >= SEGMENT_BYTES {
                    self.dir.join(segment_name(rec.header.seq))
                } else {
                    path
                }
            }
        };
        let line = rec.to_line();
        let (file, offset) = append_to(&path, line.as_bytes())?;
        let at = Appended {
            path,
            offset,
            len: line.len() as u64,
        };
        Ok((file, at))
    }

    /// Makes a line [`Self::publish`] wrote durable: the segment, and the
    /// folder when the segment is new.
    fn sync_published(&self, file: &File, at: &Appended) -> StoreResult<()> {
        file.sync_data().at(&at.path)?;
        if starts_file(at.offset) {
            sync_dir(&self.dir)?;
        }
        Ok(())
    }

    /// Rewrites `head.json` for `rec`. The head is a hint rebuilt on every
    /// append, so it is not fsynced, and failing to write it does not fail
    /// the append (the record is durable by then): something in its way is
    /// reported by ingest.
    ///
    /// A head that stands as a plain file is written over in place: replacing
    /// it by a rename cost more than the rest of the write on ext4 (a new
    /// inode, the old one freed, the folder changed), and a reader that meets
    /// a half-written head finds its signature wrong and ignores it, as it
    /// ignores any head that fails. Anything else in its way (nothing there,
    /// a symlink, a file with other names) is replaced by a temporary file
    /// renamed over it, never written through.
    fn write_head(&self, rec: &Record, key: &SigningKey) {
        if let Err(e) = self.put_head(rec, None, key) {
            tracing::warn!("head of feed {} not written: {e}", self.feed);
        }
    }

    /// Rewrites `head.json` for `rec`, the feed's last record, as a
    /// heartbeat said at `as_of` (`store::heartbeat`), the same way as
    /// [`Self::write_head`]. The caller holds the feed's lock, so no record
    /// is appended between reading the last one and naming it here.
    pub fn beat(&self, rec: &Record, as_of: i64, key: &SigningKey) -> StoreResult<()> {
        self.put_head(rec, Some(as_of), key)
    }

    fn put_head(&self, rec: &Record, as_of: Option<i64>, key: &SigningKey) -> StoreResult<()> {
        let (seq, hlc) = (rec.header.seq, rec.header.hlc);
        let text = record::encode_beat(&self.feed, seq, rec.id, hlc, as_of, key);
        let path = self.dir.join(HEAD_FILE);
        folder_file::rewrite(&path, text.as_bytes())
            .or_else(|_| folder_file::replace(&path, text.as_bytes(), false))?;
        Ok(())
    }
}

fn decode_tail(path: &Path, tail: Option<&Tail>) -> StoreResult<Option<Record>> {
    let Some(line) = tail.and_then(|t| t.line.as_ref()) else {
        return Ok(None);
    };
    record::decode(line)
        .map(Some)
        .map_err(|e| StoreError::CorruptFile {
            path: path.to_path_buf(),
            reason: format!(
                "the last line is not a record ({e}); this feed cannot be appended to until it \
                 is repaired"
            ),
        })
}

/// Appends bytes to a segment with one write, not synced; returns the file
/// and the offset they start at. Only a regular file is written, never
/// through a symlink.
fn append_to(path: &Path, bytes: &[u8]) -> StoreResult<(File, u64)> {
    let mut f = folder_file::open_append(path)?;
    let offset = f.seek(SeekFrom::End(0)).at(path)?;
    f.write_all(bytes).at(path)?;
    Ok((f, offset))
}

/// [`append_to`], then fsynced; returns the offset the bytes start at.
fn append_durably(path: &Path, bytes: &[u8]) -> StoreResult<u64> {
    let (f, offset) = append_to(path, bytes)?;
    f.sync_data().at(path)?;
    Ok(offset)
}

/// Whether an append at `offset` created its file, so that the folder must
/// be synced too. A new file starts empty; one that was there has bytes
/// (segments never stand empty for long, and a wrongly empty one only costs
/// a folder sync).
fn starts_file(offset: u64) -> bool {
    offset == 0
}

fn sync_dir(dir: &Path) -> StoreResult<()> {
    File::open(dir).and_then(|f| f.sync_all()).at(dir)?;
    Ok(())
}

// ---------------------------------------------------------------------------
// Batch append: many records, one write and one fsync per file (benchmarks,
// imports, and a tool call that writes several records at once).
// ---------------------------------------------------------------------------

impl FeedWriter {
    /// Appends a run of new records as if [`Self::append`] had been called on
    /// each in turn, but with one write and one fsync per file touched.
    ///
    /// Contract:
    /// - call under [`Self::lock`] after [`Self::reconcile`], like `append`;
    ///   `records[0]` continues the feed that `reconcile` returned and each
    ///   record continues the one before it (consecutive `seq`, `prev` = the
    ///   previous id). The records come from the same chain and signing code
    ///   (`record::encode`); this function only places bytes;
    /// - the bytes on disk are exactly those of record-by-record appends: the
    ///   same lines in the journal, the same segment boundaries (a segment
    ///   seals at [`SEGMENT_RECORDS`] records or [`SEGMENT_BYTES`], measured
    ///   before each record), and `head.json` naming the last record;
    /// - durability comes at the end only: the journal is written and fsynced
    ///   first, then each segment it touched is written and fsynced, then the
    ///   feed folder if a segment was created. Nothing in the run is durable
    ///   before the call returns; a crash part-way leaves a torn or short feed
    ///   that [`Self::reconcile`] repairs from the journal, as after a crash in
    ///   `append`;
    /// - every segment path is checked before anything is written; when a
    ///   segment write fails anyway, the journal is cut back to the records
    ///   already published, so what the caller was told failed is never
    ///   published later;
    /// - readers may see the run arrive in pieces, as with repeated appends;
    ///   nothing is ingested here.
    ///
    /// # Panics
    ///
    /// If the records do not form one consecutive chain.
    pub fn append_batch(&self, records: &[Record], key: &SigningKey) -> StoreResult<()> {
        let Some(last) = records.last() else {
            return Ok(());
        };
        for pair in records.windows(2) {
            assert!(
                pair[1].header.seq == pair[0].header.seq + 1
                    && pair[1].header.prev == Some(pair[0].id),
                "append_batch: record seq {} does not continue seq {}",
                pair[1].header.seq,
                pair[0].header.seq
            );
        }
        let lines: Vec<String> = records.iter().map(Record::to_line).collect();

        // 1. Where each record goes, split exactly where `publish` would
        //    split, with every path checked before anything is written.
        self.make_dir()?;
        let mut current: Option<NewestSegment> = match self.newest_segment()? {
            Some((_, true)) | None => None,
            Some((seg, false)) => Some(seg),
        };
        // Consecutive runs of lines, one per segment file, in order, with
        // how many records each holds.
        let mut runs: Vec<(PathBuf, Vec<u8>, usize)> = Vec::new();
        for (rec, line) in records.iter().zip(&lines) {
            let seq = rec.header.seq;
            let full = current.as_ref().is_none_or(|(_, first, size)| {
                seq.saturating_sub(*first) >= SEGMENT_RECORDS || *size >= SEGMENT_BYTES
            });
            if full {
                let path = self.dir.join(segment_name(seq));
                let size = match fs::symlink_metadata(&path) {
                    Ok(m) if m.is_file() => m.len(),
                    Ok(m) => {
                        return Err(FolderError::Refused {
                            path,
                            refusal: Refusal::WrongType {
                                found: FileKind::of(m.file_type()),
                                expected: FileKind::Regular,
                            },
                        }
                        .into());
                    }
                    Err(_) => 0,
                };
                current = Some((path, seq, size));
            }
            let (path, _, size) = current.as_mut().expect("a segment was chosen");
            match runs.last_mut() {
                Some((p, buf, n)) if p == path => {
                    buf.extend_from_slice(line.as_bytes());
                    *n += 1;
                }
                _ => runs.push((path.clone(), line.as_bytes().to_vec(), 1)),
            }
            *size += line.len() as u64;
        }

        // 2. The journal, whole, fsynced before anything is published.
        let before = self.append_journal(lines.concat().as_bytes())?;

        // 3. The segments.
        let mut created = false;
        let mut published = 0;
        for (path, bytes, n) in &runs {
            match append_durably(path, bytes) {
                Ok(offset) => created |= starts_file(offset),
                Err(e) => {
                    let kept: u64 = lines[..published].iter().map(|l| l.len() as u64).sum();
                    let rest: Vec<&Record> = records[published..].iter().collect();
                    return Err(self.unjournal(before + kept, &rest, e));
                }
            }
            published += n;
        }
        if created {
            sync_dir(&self.dir)?;
        }

        // 4. The head hint, once, for the last record.
        self.write_head(last, key);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_names() {
        assert_eq!(segment_name(501), "00000501.jsonl");
        assert_eq!(parse_segment_name("00000501.jsonl"), Some(501));
        for not in [
            "00000501.jsonl.partial",
            "0000501.jsonl",
            "x.jsonl",
            "00000501 (conflicted copy).jsonl",
            "head.json",
        ] {
            assert_eq!(parse_segment_name(not), None, "{not}");
        }
    }

    #[test]
    fn a_gzip_segment_still_arriving_reads_as_far_as_it_decodes() {
        let dir = tempfile::tempdir().unwrap();
        let text: String = (0..200).map(|i| format!("line {i}\n")).collect();
        let mut enc = GzEncoder::new(Vec::new(), Compression::default());
        enc.write_all(text.as_bytes()).unwrap();
        let gz = enc.finish().unwrap();
        let p = dir.path().join("00000001.jsonl.gz");
        fs::write(&p, &gz).unwrap();
        assert_eq!(read_segment(&p).unwrap(), text.as_bytes());
        assert_eq!(read_lines(&p, 0).unwrap().len(), 200);
        assert_eq!(
            read_lines(&p, 7).unwrap()[0].offset,
            7,
            "offsets count plain bytes"
        );
        for cut in [0, 10, gz.len() / 2, gz.len() - 4] {
            fs::write(&p, &gz[..cut]).unwrap();
            let got = read_segment(&p).unwrap();
            assert!(text.as_bytes().starts_with(&got), "cut at {cut}");
            assert!(read_lines(&p, 0).unwrap().len() <= 200);
        }
        fs::write(&p, b"not gzip at all\n").unwrap();
        assert!(read_lines(&p, 0).unwrap().is_empty());
    }

    #[test]
    fn gzip_names_are_segments_and_gzip_wins_a_tie() {
        assert_eq!(parse_segment_file("00000501.jsonl.gz"), Some((501, true)));
        assert_eq!(parse_segment_file("00000501.jsonl"), Some((501, false)));
        for not in ["00000501.jsonl.gz.tmp", "00000501.gz", "x.jsonl.gz"] {
            assert_eq!(parse_segment_file(not), None, "{not}");
        }
        let dir = tempfile::tempdir().unwrap();
        // A remote that got the growing segment (two lines), then the sealed
        // gzip (four): the gzip is the one read, so nothing goes missing.
        let mut enc = GzEncoder::new(Vec::new(), Compression::default());
        enc.write_all(b"1\n2\n3\n4\n").unwrap();
        fs::write(dir.path().join("00000001.jsonl.gz"), enc.finish().unwrap()).unwrap();
        fs::write(dir.path().join("00000001.jsonl"), b"1\n2\n").unwrap();
        fs::write(dir.path().join("00000501.jsonl"), b"").unwrap();
        fs::create_dir(dir.path().join("00000601.jsonl")).unwrap();
        let segs = list_segments(dir.path()).unwrap();
        assert_eq!(
            segs.iter().map(|s| (s.first_seq, s.gz)).collect::<Vec<_>>(),
            vec![(1, true), (501, false)]
        );
        assert_eq!(read_segment(&segs[0].path).unwrap(), b"1\n2\n3\n4\n");
        // Compressing again removes the plain file a stopped run left over.
        gzip_sealed_segments(dir.path()).unwrap();
        assert!(!dir.path().join("00000001.jsonl").exists());
        assert!(dir.path().join("00000001.jsonl.gz").exists());
    }

    #[test]
    fn torn_last_line_waits() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f.jsonl");
        fs::write(&p, b"garbage\n{\"half").unwrap();
        let lines = read_lines(&p, 0).unwrap();
        assert_eq!(lines.len(), 1);
        assert!(lines[0].record.is_err());
        let tail = read_tail(&p, MAX_SEGMENT_BYTES).unwrap().unwrap();
        assert_eq!(tail.complete_len, 8);
        assert_eq!(tail.line.as_deref(), Some(&b"garbage"[..]));
    }
}

#[cfg(test)]
mod bulk_tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::core::genesis::{FORMAT, Genesis};
    use crate::core::hlc::Hlc;
    use crate::core::ids::{OWNER_FEED_ROLE, Role};
    use crate::core::op::{Admit, FeedInit, Op, Send, Target};
    use crate::core::record::{Header, encode, pubkey_hex};
    use crate::store::channel_dir::ChannelDir;
    use crate::store::index::Index;
    use crate::store::ingest::{Ingest, ScanCache};

    /// Chains `ops` onto a new feed the way `Channel::append` does: seq from
    /// 1, prev = the previous id, a strictly increasing clock.
    fn chain(ch: &str, feed: &FeedId, key: &SigningKey, ops: &[Op]) -> Vec<Record> {
        let mut out: Vec<Record> = Vec::new();
        for (i, op) in ops.iter().enumerate() {
            let last = out.last();
            let header = Header {
                ch: ch.to_owned(),
                feed: feed.clone(),
                seq: i as u64 + 1,
                prev: last.map(|r| r.id),
                hlc: Hlc::next(
                    1_700_000_000_000 + i as i64 / 3,
                    last.map_or(Hlc::default(), |r| r.header.hlc),
                ),
            };
            out.push(encode(&header, op, key));
        }
        out
    }

    /// Every file under `root`, relative path → bytes.
    fn tree(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
        fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
            for e in fs::read_dir(dir).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    walk(root, &p, out);
                } else {
                    out.insert(
                        p.strip_prefix(root).unwrap().to_path_buf(),
                        fs::read(&p).unwrap(),
                    );
                }
            }
        }
        let mut out = BTreeMap::new();
        walk(root, root, &mut out);
        out
    }

    #[test]
    fn a_bulk_written_feed_is_byte_identical_and_ingests_identically() {
        let owner = SigningKey::from_bytes(&[1u8; 32]);
        let alpha_key = SigningKey::from_bytes(&[2u8; 32]);
        let genesis = Genesis {
            format: FORMAT.to_owned(),
            name: "bulk".into(),
            created_at: "2023-11-14T22:13:20Z".into(),
            roles: vec![Role::new("alpha").unwrap(), Role::new("beta").unwrap()],
            owner_pubkey: pubkey_hex(&owner.verifying_key()),
            nonce: "00".repeat(16),
        };
        let tmp = tempfile::tempdir().unwrap();
        let (one, bulk) = (tmp.path().join("one"), tmp.path().join("bulk"));
        let dir_one = ChannelDir::create(&one.join("channel"), &genesis).unwrap();
        let dir_bulk = ChannelDir::create(&bulk.join("channel"), &genesis).unwrap();
        assert_eq!(dir_one.id(), dir_bulk.id());
        let ch = dir_one.id().to_owned();

        let owner_feed = FeedId::new(OWNER_FEED_ROLE, "dev-000001").unwrap();
        let alpha = FeedId::new("alpha", "dev-000001").unwrap();
        let admit = Op::Admit(Admit {
            feed: alpha.clone(),
            pubkey: pubkey_hex(&alpha_key.verifying_key()),
            role: Role::new("alpha").unwrap(),
        });
        let owner_recs = chain(&ch, &owner_feed, &owner, &[admit]);
        let mut ops = vec![Op::FeedInit(FeedInit {
            role: Role::new("alpha").unwrap(),
            pubkey: pubkey_hex(&alpha_key.verifying_key()),
            device_name: "dev".into(),
        })];
        // Small bodies first (a segment seals at 500 records), then large ones
        // (it seals at 256 KiB): both rules must split where `append` splits.
        for i in 0..720 {
            let len = if i < 520 { 40 + i % 60 } else { 1500 + i % 500 };
            ops.push(Op::Send(Send {
                to: vec![Role::new("beta").unwrap()],
                topic: format!("topic {}", i % 17),
                body: format!("message {i} ").repeat(len / 12 + 1),
                decision_requested: true,
                ..Send::default()
            }));
        }
        let first_send = chain(&ch, &alpha, &alpha_key, &ops)[1].id;
        ops.push(Op::Delete(Target { id: first_send }));
        let alpha_recs = chain(&ch, &alpha, &alpha_key, &ops);

        // Record by record, through `append`.
        for (feed, key, recs) in [
            (&owner_feed, &owner, &owner_recs),
            (&alpha, &alpha_key, &alpha_recs),
        ] {
            let w = FeedWriter::new(&dir_one.feeds(), &one.join("state"), feed.clone());
            let _lock = w.lock().unwrap();
            assert!(w.reconcile(&key.verifying_key()).unwrap().is_none());
            for r in recs {
                w.append(r, key).unwrap();
            }
        }
        // In bulk, split into uneven batches so runs start inside segments.
        for (feed, key, recs) in [
            (&owner_feed, &owner, &owner_recs),
            (&alpha, &alpha_key, &alpha_recs),
        ] {
            let w = FeedWriter::new(&dir_bulk.feeds(), &bulk.join("state"), feed.clone());
            let _lock = w.lock().unwrap();
            for part in recs.chunks(333) {
                let last = w.reconcile(&key.verifying_key()).unwrap();
                assert_eq!(
                    last.map(|r| r.header.seq + 1).unwrap_or(1),
                    part[0].header.seq
                );
                w.append_batch(part, key).unwrap();
            }
        }

        let files_one = tree(&one);
        let files_bulk = tree(&bulk);
        assert_eq!(
            files_one.keys().collect::<Vec<_>>(),
            files_bulk.keys().collect::<Vec<_>>()
        );
        for (path, bytes) in &files_one {
            assert!(bytes == &files_bulk[path], "{} differs", path.display());
        }
        let alpha_dir = dir_one.feeds().join("alpha").join("dev-000001");
        let segments = list_segments(&alpha_dir).unwrap();
        assert!(
            segments.len() >= 3,
            "both sealing rules are exercised ({} segments)",
            segments.len()
        );
        assert_eq!(segments[1].first_seq, SEGMENT_RECORDS + 1);

        let ingest = |dir: &ChannelDir| {
            let ix = Index::in_memory(dir.id()).unwrap();
            let report = ix
                .write(|ix| Ingest::run(ix, dir, &mut ScanCache::default()))
                .unwrap();
            (report, ix.digest().unwrap(), ix.problems().unwrap())
        };
        let (report_one, digest_one, problems_one) = ingest(&dir_one);
        let (report_bulk, digest_bulk, problems_bulk) = ingest(&dir_bulk);
        assert_eq!(report_one.accepted, 1 + alpha_recs.len());
        assert!(problems_one.is_empty(), "{problems_one:?}");
        assert_eq!(report_one, report_bulk);
        assert_eq!(digest_one, digest_bulk);
        assert_eq!(problems_one, problems_bulk);
    }
}
