//! The feed writer: this device's append to its own feed of one role,
//! journal first (fsynced: the one durability point of a write), then the
//! published segment (not fsynced), under the feed's lock, and the repair
//! of the feed from the journal after a crash.
//!
//! Reading segments is `folder::segments`; the journal's own writes are
//! `writer::journal`; it does not verify other devices' records (ingest does).

use std::fs::{self, File};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use ed25519_dalek::{SigningKey, VerifyingKey};

use crate::core::ids::FeedId;
use crate::core::record::{self, Record};
use crate::store::error::{IoContext as _, StoreError, StoreResult};
use crate::store::folder::layout::feed_dir;
use crate::store::folder::segments::{
    HEAD_FILE, Line, MAX_SEGMENT_BYTES, SEGMENT_BYTES, SEGMENT_RECORDS, parse_segment_name,
    read_lines, segment_name,
};
use crate::store::folder::survey::list_segments;
use crate::store::folder_file::{self, FolderError};
use crate::store::home::lock::FileLock;
use crate::store::writer::journal;
use crate::store::writer::syncer::{self, Syncing};
use crate::store::writer::tail::{TAIL_WINDOW, decode_tail, read_tail, truncate_torn};

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
    /// The newest segment and the head, as the append left them open: while
    /// the tails hold, the next append writes through them (each checked to
    /// have one name still) instead of opening both by path again, which
    /// walks the path and checks every folder on it.
    segment_file: Arc<File>,
    head_file: Option<Arc<File>>,
    /// The journal, as an append through [`FeedWriter::begin_append`] left
    /// it open: the next one writes through it.
    journal_file: Option<KeptJournal>,
}

/// The journal open in append mode, and its inode: the file is written
/// through only while the journal's path still names that inode (a journal
/// replaced under the path would otherwise take writes that no reader of
/// the path sees).
#[derive(Clone, Debug)]
struct KeptJournal {
    file: Arc<File>,
    ino: u64,
}

impl Tails {
    /// The record written last.
    pub fn last(&self) -> &Record {
        &self.last
    }

    /// The newest segment as the next append starts from it.
    fn newest(&self) -> NewestSegment {
        (
            self.segment.clone(),
            self.segment_first,
            self.segment_stamp.0,
        )
    }

    /// The newest segment, with its size and mtime after the append.
    pub fn segment(&self) -> (&Path, u64, Option<SystemTime>) {
        (&self.segment, self.segment_stamp.0, self.segment_stamp.1)
    }

    fn holds(&self, journal: &Path, dir: &Path) -> bool {
        use std::os::unix::fs::MetadataExt as _;
        let journal_holds = fs::symlink_metadata(journal).is_ok_and(|m| {
            stamp_of(&m) == self.journal
                && self.journal_file.as_ref().is_none_or(|j| m.ino() == j.ino)
        });
        journal_holds
            && stamp(dir).ok().map(|s| s.1) == Some(self.dir)
            && stamp(&self.segment).ok() == Some(self.segment_stamp)
    }
}

/// An append begun by [`FeedWriter::begin_append`]: the journal's length
/// before it, its fsync under way, and the head to publish after it.
#[derive(Debug)]
pub struct Appending {
    journal_before: u64,
    syncing: Syncing,
    /// The record's `head.json`, signed while the journal syncs.
    head: String,
    /// The journal's stamp and the feed folder's mtime, taken while the
    /// journal syncs (`None` if a `stat` failed: taken after, as by
    /// [`FeedWriter::append`]).
    stamps: Option<Stamps>,
    /// The journal, open for the next append (`None` if its inode could
    /// not be read).
    journal_file: Option<KeptJournal>,
}

/// The journal's stamp after a write, and the feed folder's mtime before
/// its publication: what [`Tails`] keeps of them.
#[derive(Debug)]
struct Stamps {
    journal: (u64, Option<SystemTime>),
    dir: Option<SystemTime>,
}

impl Stamps {
    fn take(journal: &Path, dir: &Path) -> StoreResult<Self> {
        Ok(Self {
            journal: stamp(journal)?,
            dir: stamp(dir)?.1,
        })
    }
}

/// A file's size and mtime.
pub(super) fn stamp(path: &Path) -> StoreResult<(u64, Option<SystemTime>)> {
    // Of the path itself: a file swapped for a symlink changes its stamp.
    Ok(stamp_of(&fs::symlink_metadata(path).at(path)?))
}

/// The size and mtime of `m`: a file's stamp.
fn stamp_of(m: &fs::Metadata) -> (u64, Option<SystemTime>) {
    (m.len(), m.modified().ok())
}

/// The newest segment of a feed as the writer knows it: its path, first seq
/// and size.
pub(super) type NewestSegment = (PathBuf, u64, u64);

/// The writer side of this device's feed for one role: the published segments
/// plus the private journal in the state folder.
#[derive(Clone, Debug)]
pub struct FeedWriter {
    pub(super) feed: FeedId,
    /// The channel folder: the folders from here down to `dir` must be real.
    pub(super) root: PathBuf,
    pub(super) dir: PathBuf,
    pub(super) journal: PathBuf,
    pub(super) lock: PathBuf,
    /// Keys the feed had before a `replace_key`: its older records are signed by them.
    pub(super) former_keys: Vec<VerifyingKey>,
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
    pub(super) fn has_dir(&self) -> StoreResult<bool> {
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
    pub(super) fn own_segment_lines(&self) -> StoreResult<Vec<Vec<Line>>> {
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
    /// - what a crash left (a journal write that never became durable,
    ///   segments short, zero-filled or missing) is cut back to what the
    ///   journal holds ([`Self::cut_crash_damage`]), unless the newest
    ///   segment ends with the journal's last bytes, the common case, told by
    ///   reading the two ends ([`Self::matches_journal`] with
    ///   [`TAIL_WINDOW`]: what a process that died mid-write can leave; after
    ///   a crash of the machine, [`Self::recover`] compares more);
    /// - a torn last line (crash mid-write) is cut off;
    /// - records in the journal missing from the feed (lost in a crash, or
    ///   a stale copy came back) are published again, where a clean run
    ///   would have written them;
    /// - a feed ahead of the journal was written by someone else: refused.
    pub fn reconcile(&self, key: &VerifyingKey) -> StoreResult<Option<Record>> {
        let whole = self.matches_journal(TAIL_WINDOW)?;
        self.reconcile_cut(key, !whole)
    }

    /// [`Self::reconcile`] for a feed found amiss after the machine stopped
    /// without writing its page cache back
    /// ([`Self::recent_segments_match`]): every segment is compared with the
    /// journal, so a page lost before a later one that reached the disk, or
    /// in a segment sealed since, is found too. Call under [`Self::lock`].
    pub fn recover(&self, key: &VerifyingKey) -> StoreResult<Option<Record>> {
        self.reconcile_cut(key, true)
    }

    fn reconcile_cut(&self, key: &VerifyingKey, cut: bool) -> StoreResult<Option<Record>> {
        if cut {
            self.cut_crash_damage()?;
        }
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
            let lines = self.own_segment_lines()?;
            let records: Vec<Record> = lines
                .into_iter()
                .flatten()
                .filter_map(|line| line.record.ok())
                .collect();
            journal::rebuild(&self.journal, &records)?;
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
            for line in journal::read_lines(&self.journal)? {
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
        for line in journal::read_lines(&self.journal)? {
            if let Ok(rec) = line.record
                && !published.contains(&(rec.id, rec.sig.to_bytes()))
            {
                self.publish(&rec, None)?;
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

    /// Appends a new record: it is made durable in the journal (fsynced),
    /// then written to the feed and the head hint rewritten, neither
    /// fsynced: whatever a crash of the machine takes from the feed is
    /// written back from the journal by the next process that opens the
    /// channel ([`Self::reconcile`]). Call under [`Self::lock`] after
    /// [`Self::reconcile`]. With the [`Tails`] the previous append of this
    /// process left, if [`Self::still_holds`] said they hold, the newest
    /// segment is known without listing the folder; returns the tails this
    /// append leaves. When publishing fails, the journal is cut back to where
    /// it was, so the record that the caller was told failed is never
    /// published later by a reconcile.
    pub fn append(
        &self,
        rec: &Record,
        key: &SigningKey,
        tails: Option<&Tails>,
    ) -> StoreResult<Tails> {
        let journal_before = journal::append(&self.journal, rec.to_line().as_bytes())?;
        let head = self.head_text(rec, None, key);
        self.publish_durable(rec, head, tails, journal_before, None, None)
    }

    /// Says that an append is coming, before the caller reads the index
    /// for it: the journal's fsync then starts as soon as the record is
    /// written (see `syncer`).
    pub fn expect_append(&self) {
        syncer::expect_write();
    }

    /// The first half of [`Self::append`] for a caller with work to do
    /// while the journal syncs: `rec` is written to the journal and its
    /// fsync started on another thread; its head is signed meanwhile, and
    /// the journal and the feed folder stamped for the [`Tails`] (neither
    /// changes until the publication, and the folder not by it when `rec`
    /// lands in the newest segment). Nothing is published until
    /// [`Self::end_append`]; [`Self::abandon_append`] takes it back. With
    /// `tails` that [`Self::still_holds`] said hold, the journal is written
    /// through the file their append left open.
    pub fn begin_append(
        &self,
        rec: &Record,
        key: &SigningKey,
        tails: Option<&Tails>,
    ) -> StoreResult<Appending> {
        use std::os::unix::fs::MetadataExt as _;
        let line = rec.to_line();
        let kept = tails.and_then(|t| Some((t.journal.0, t.journal_file.as_ref()?)));
        let (journal_before, syncing, journal_file) = match kept {
            Some((before, j)) => {
                let syncing =
                    journal::append_in_background_through(&j.file, &self.journal, line.as_bytes())?;
                (before, syncing, Some(j.clone()))
            }
            None => {
                let (before, syncing, file) =
                    journal::append_in_background(&self.journal, line.as_bytes())?;
                let ino = file.metadata().ok().map(|m| m.ino());
                (before, syncing, ino.map(|ino| KeptJournal { file, ino }))
            }
        };
        Ok(Appending {
            journal_before,
            syncing,
            head: self.head_text(rec, None, key),
            stamps: Stamps::take(&self.journal, &self.dir).ok(),
            journal_file,
        })
    }

    /// The second half: waits until the journal is durable, then publishes
    /// as [`Self::append`] does. Should the fsync fail, the journal is cut
    /// back, as when publishing fails.
    pub fn end_append(
        &self,
        rec: &Record,
        tails: Option<&Tails>,
        appending: Appending,
    ) -> StoreResult<Tails> {
        let Appending {
            journal_before,
            syncing,
            head,
            stamps,
            journal_file,
        } = appending;
        if let Err(e) = syncing.wait() {
            return Err(journal::cut_back(&self.journal, journal_before, &[rec], e));
        }
        self.publish_durable(rec, head, tails, journal_before, stamps, journal_file)
    }

    /// Gives up an append begun with [`Self::begin_append`] because of
    /// `failed`: once the journal's sync is done, the journal is cut back
    /// and nothing is published. Returns the error to give the caller.
    pub fn abandon_append(
        &self,
        rec: &Record,
        appending: Appending,
        failed: StoreError,
    ) -> StoreError {
        let _ = appending.syncing.wait();
        journal::cut_back(&self.journal, appending.journal_before, &[rec], failed)
    }

    /// Where `rec` will be published if appended next after `tails`: the
    /// newest segment and the offset it ends at, or `None` when `rec`
    /// starts a new segment.
    pub fn lands_at(&self, rec: &Record, tails: &Tails) -> Option<(PathBuf, u64)> {
        let path = self.segment_for(rec, Some((tails.newest(), false)));
        (path == tails.segment).then_some((path, tails.segment_stamp.0))
    }

    /// Publishes `rec`, durable in the journal since it was `journal_before`
    /// bytes long: its segment, then `head` (its signed head). `stamps`,
    /// taken before the publication, stand for the ones it would take after
    /// where the publication left the folder's entries alone; the tails keep
    /// `journal_file` open.
    fn publish_durable(
        &self,
        rec: &Record,
        head: String,
        tails: Option<&Tails>,
        journal_before: u64,
        stamps: Option<Stamps>,
        journal_file: Option<KeptJournal>,
    ) -> StoreResult<Tails> {
        // The segment the last append left open, when `rec` goes there too.
        let kept = tails.filter(|t| self.lands_at(rec, t).is_some());
        let published = match kept {
            Some(t) => append_through(&t.segment_file, &t.segment, rec.to_line().as_bytes())
                .map(|()| (t.segment.clone(), Arc::clone(&t.segment_file))),
            None => self
                .publish(rec, tails.map(Tails::newest))
                .map(|(path, file)| (path, Arc::new(file))),
        };
        let (segment, segment_file) = match published {
            Ok(written) => written,
            Err(e) => return Err(journal::cut_back(&self.journal, journal_before, &[rec], e)),
        };
        let segment_first = match tails {
            Some(t) if t.segment == segment => t.segment_first,
            _ => parse_segment_name(&segment.file_name().unwrap_or_default().to_string_lossy())
                .unwrap_or(rec.header.seq),
        };
        let head_file = self.write_head_through(&head, kept.and_then(|t| t.head_file.clone()));
        // The folder's entries are as they were unless a segment was begun
        // or the head replaced by a rename (written in place, it is kept open).
        let stamps = match stamps {
            Some(s) if kept.is_some() && head_file.is_some() => s,
            _ => Stamps::take(&self.journal, &self.dir)?,
        };
        Ok(Tails {
            journal: stamps.journal,
            dir: stamps.dir,
            segment_stamp: file_stamp(&segment_file, &segment)?,
            segment,
            segment_first,
            last: rec.clone(),
            segment_file,
            head_file,
            journal_file,
        })
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
    /// Not fsynced, like the segments: a folder a crash lost is made again
    /// by the repair that publishes its records again.
    pub(super) fn make_dir(&self) -> StoreResult<()> {
        folder_file::ensure_real_dirs(&self.root, &self.dir)?;
        Ok(())
    }

    /// The newest segment of the feed folder, with its first seq and size,
    /// and whether it is sealed in gzip form.
    /// A segment larger than the format allows is passed over: it cannot be
    /// this device's, and is reported by ingest.
    pub(super) fn newest_segment(&self) -> StoreResult<Option<(NewestSegment, bool)>> {
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

    /// Writes `rec` to the newest segment, starting a new one when it is full,
    /// without fsync (the journal holds it durably).
    /// `newest` is the newest segment (path, first seq, size) when the caller
    /// knows it; otherwise the folder is listed. Returns the segment written.
    pub(super) fn publish(
        &self,
        rec: &Record,
        newest: Option<NewestSegment>,
    ) -> StoreResult<(PathBuf, File)> {
        self.make_dir()?;
        let newest = match newest {
            Some(n) => Some((n, false)),
            None => self.newest_segment()?,
        };
        let path = self.segment_for(rec, newest);
        let line = rec.to_line();
        let file = append_to(&path, line.as_bytes())?;
        Ok((path, file))
    }

    /// The segment `rec` goes to after `newest` (and whether that one is
    /// sealed): the newest one, or a new one when it is full or sealed.
    fn segment_for(&self, rec: &Record, newest: Option<(NewestSegment, bool)>) -> PathBuf {
        match newest {
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
        }
    }

    /// Rewrites `head.json` for `rec`. The head is a hint rebuilt on every
    /// append, so it is not fsynced, and failing to write it does not fail
    /// the append (the record is durable in the journal by then): something
    /// in its way is reported by ingest.
    ///
    /// A head that stands as a plain file is written over in place: replacing
    /// it by a rename cost more than the rest of the write on ext4 (a new
    /// inode, the old one freed, the folder changed), and a reader that meets
    /// a half-written head finds its signature wrong and ignores it, as it
    /// ignores any head that fails. Anything else in its way (nothing there,
    /// a symlink, a file with other names) is replaced by a temporary file
    /// renamed over it, never written through.
    pub(super) fn write_head(&self, head: &str) {
        self.write_head_through(head, None);
    }

    /// [`Self::write_head`] through `kept`, the head the last append left
    /// open, while it still has one name; returns the head left open, if
    /// any (none after a replace).
    fn write_head_through(&self, head: &str, kept: Option<Arc<File>>) -> Option<Arc<File>> {
        let path = self.dir.join(HEAD_FILE);
        if let Some(f) = kept
            && folder_file::overwrite(&f, &path, head.as_bytes()).is_ok()
        {
            return Some(f);
        }
        match self.put_head(head) {
            Ok(opened) => opened,
            Err(e) => {
                tracing::warn!("head of feed {} not written: {e}", self.feed);
                None
            }
        }
    }

    /// Rewrites `head.json` for `rec`, the feed's last record, as a
    /// heartbeat said at `as_of` (`store::channel::heartbeat`), the same way as
    /// [`Self::write_head`]. The caller holds the feed's lock, so no record
    /// is appended between reading the last one and naming it here.
    pub fn beat(&self, rec: &Record, as_of: i64, key: &SigningKey) -> StoreResult<()> {
        self.put_head(&self.head_text(rec, Some(as_of), key))
            .map(|_| ())
    }

    /// The signed `head.json` naming `rec` (said at `as_of` for a heartbeat).
    pub(super) fn head_text(&self, rec: &Record, as_of: Option<i64>, key: &SigningKey) -> String {
        let (seq, hlc) = (rec.header.seq, rec.header.hlc);
        record::encode_beat(&self.feed, seq, rec.id, hlc, as_of, key)
    }

    /// Writes the head by path; returns it open when it was written in place.
    fn put_head(&self, text: &str) -> StoreResult<Option<Arc<File>>> {
        let path = self.dir.join(HEAD_FILE);
        match folder_file::rewrite(&path, text.as_bytes()) {
            Ok(file) => Ok(Some(Arc::new(file))),
            Err(_) => {
                folder_file::replace(&path, text.as_bytes(), false)?;
                Ok(None)
            }
        }
    }
}

/// Appends bytes to a segment with one write, not synced; returns the
/// segment, open for the next append. Only a regular file is written, never
/// through a symlink.
pub(super) fn append_to(path: &Path, bytes: &[u8]) -> StoreResult<File> {
    let mut f = folder_file::open_append(path)?;
    f.write_all(bytes).at(path)?;
    Ok(f)
}

/// Appends bytes to `file`, the segment at `path` kept open by the last
/// append (opened for appending by [`append_to`]), once it is checked to
/// have no other name; as [`append_to`] otherwise.
fn append_through(file: &File, path: &Path, bytes: &[u8]) -> StoreResult<()> {
    folder_file::only_name(file, path)?;
    (&*file).write_all(bytes).at(path)?;
    Ok(())
}

/// The size and mtime of `file`, open at `path`: [`stamp`] without looking
/// the path up again.
fn file_stamp(file: &File, path: &Path) -> StoreResult<(u64, Option<SystemTime>)> {
    Ok(stamp_of(&file.metadata().at(path)?))
}

/// Syncs a folder's entries (a sealed segment's gzip form replacing it).
pub(super) fn sync_dir(dir: &Path) -> StoreResult<()> {
    std::fs::File::open(dir)
        .and_then(|f| f.sync_all())
        .at(dir)?;
    Ok(())
}
