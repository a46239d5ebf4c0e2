//! An open channel on this device: the folder, the home, the index, and the
//! serialized write path.
//!
//! Owns the order of a write: feed lock → index write transaction → catch-up
//! ingest → the caller's validation → seq and clock → sign → journal append
//! with fsync → feed append → ingest → commit (or, for a server that
//! answers first, the commit when [`Channel::settle`] is called). A refusal
//! from the caller's validation rolls back and writes nothing. It does not
//! know what the ops mean, and writes only what its caller hands it: looking
//! a writer up writes nothing (a feed's first records are
//! `app::announcement`'s), a catch-up folds and writes no record (admitting
//! claims is `app::admission`'s), and key rotation and the refusals that
//! name a command are `app`'s too.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use ed25519_dalek::{SigningKey, VerifyingKey};
use rusqlite::OptionalExtension as _;

use crate::core::hlc::Hlc;
use crate::core::ids::{FeedId, OWNER_FEED_ROLE, Role};
use crate::core::op::Op;
use crate::core::record::{self, Header, Record};
/// Where the use cases read the wall clock (the reading is `clock`'s).
pub use crate::store::clock::now_ms;
use crate::store::error::{IoContext as _, SqlContext as _, StoreError, StoreResult};
use crate::store::folder::heads::Heads;
use crate::store::folder::layout::ChannelDir;
use crate::store::folder::listing;
use crate::store::folder::tripwire::Tripwire;
use crate::store::home::lock::FileLock;
use crate::store::home::{Device, Home, KeyName};
use crate::store::index::{Index, IndexTx, SearchBacklog};
use crate::store::ingest::{DeferredChecks, Ingest, IngestReport, ScanCache, vouch};
use crate::store::writer::feed::{FeedWriter, Tails};

mod bulk;
pub mod heartbeat;
pub mod recovery;
pub use bulk::BulkFeed;

/// The file that serializes index writers on this machine.
const INDEX_LOCK: &str = "index.lock";

/// The pause between two steps of filling the full-text index, after the
/// index lock is released: `flock` does not queue its waiters, so without it
/// the filler could take the lock again before a waiting writer wakes.
const STEP_PAUSE: Duration = Duration::from_millis(2);

/// The signing identity of one feed on this device.
#[derive(Clone, Debug)]
pub struct Writer {
    feed: FeedWriter,
    key: SigningKey,
}

impl Writer {
    /// The feed this writer appends to.
    pub fn feed(&self) -> &FeedId {
        self.feed.feed()
    }

    /// The hex public key this writer signs with.
    pub fn pubkey(&self) -> String {
        record::pubkey_hex(&self.key.verifying_key())
    }
}

/// An open channel.
pub struct Channel {
    dir: ChannelDir,
    home: Home,
    device: Device,
    state_dir: PathBuf,
    index: Index,
    cache: ScanCache,
    /// Tells the change check which feed folders may have changed, so it
    /// stats only those ([`Self::folder_unchanged`]); none by default
    /// ([`Self::set_tripwire`]).
    tripwire: Tripwire,
    /// Per own feed, what this process's last append left on disk.
    tails: HashMap<FeedId, Tails>,
    /// The feeds' heads as last verified ([`Self::feed_head`]).
    heads: Heads,
    /// Whether a write leaves its index transaction open for
    /// [`Self::settle`] ([`Self::settle_after_answer`]).
    settle_later: bool,
    /// The run of writes whose index transaction is still open, with the
    /// locks it holds until it commits, so no other writer on this machine
    /// sees the index behind the feed.
    unsettled: std::cell::RefCell<Option<Unsettled>>,
    /// [`RUN_BOUNDS`], but for tests.
    run_bounds: RunBounds,
    /// Set when a commit in [`Self::settle`] failed: `cache` describes
    /// files as read by rows that were rolled back.
    cache_stale: std::cell::Cell<bool>,
}

/// How long a run of writes may share one open index transaction, and how
/// many writes it may take. The next write of a run joins it instead of
/// committing it first: a burst of writes (an agent's sends, one after the
/// other) pays one commit, and the pages they share are written once. The
/// bounds are what another process on this machine may wait for the
/// index lock, and what the run's commit costs the write after it: with
/// 64 writes a run, the bench's resolve p99 was 3–3.5 ms (0.9–1.2 with a
/// commit per write; 1.4–3.9 with 8, 0.84–0.86 with 4 in thin builds), and
/// the open transaction's pages raised the server's peak memory by about
/// 1.4 MB (0.8 with 8).
const RUN_BOUNDS: RunBounds = RunBounds {
    age: Duration::from_millis(10),
    writes: 4,
};

/// How long a run of writes may stay open, and how many writes it may take.
#[derive(Clone, Copy, Debug)]
struct RunBounds {
    age: Duration,
    writes: u32,
}

/// A run of writes not committed yet ([`Channel::settle`]).
struct Unsettled {
    /// The feed's lock and the index lock, in that order.
    locks: [FileLock; 2],
    /// The feed the run appends to: a write to another settles it first.
    feed: FeedId,
    since: Instant,
    writes: u32,
}

impl Unsettled {
    /// True while the run may take one more write of `feed` (any feed's:
    /// `None`) within `bounds`.
    fn joinable(&self, feed: Option<&FeedId>, bounds: RunBounds) -> bool {
        feed.is_none_or(|f| *f == self.feed)
            && self.writes < bounds.writes
            && self.since.elapsed() < bounds.age
    }
}

impl Drop for Channel {
    fn drop(&mut self) {
        if let Err(e) = self.settle() {
            tracing::warn!("committing the last write's index rows: {e}");
        }
    }
}

impl Channel {
    /// Opens `dir` with this device's `home` (creating the index if needed),
    /// first repairing from the journals any own feed a crash of the machine
    /// left short ([`Self::recover_own_feeds`]).
    pub fn open(dir: ChannelDir, home: Home) -> StoreResult<Self> {
        let device = home.device()?;
        let state_dir = home.state_dir(dir.id());
        std::fs::create_dir_all(&state_dir).at(&state_dir)?;
        // Creating a new index switches it to WAL mode, which SQLite does
        // without waiting on its busy handler; concurrent first opens would
        // then fail with "database is locked". The index lock orders them.
        let index = {
            let _lock = FileLock::exclusive(&state_dir.join(INDEX_LOCK))?;
            Index::open(&Index::path_in(&state_dir), dir.id())?
        };
        let channel = Self {
            dir,
            home,
            device,
            state_dir,
            index,
            cache: ScanCache::default(),
            tripwire: Tripwire::default(),
            heads: Heads::default(),
            tails: HashMap::new(),
            settle_later: false,
            unsettled: std::cell::RefCell::new(None),
            run_bounds: RUN_BOUNDS,
            cache_stale: std::cell::Cell::new(false),
        };
        // Before anything reads the feeds. A feed that cannot be repaired
        // (someone else wrote it) is refused at its next write, not here.
        if let Err(e) = channel.recover_own_feeds() {
            tracing::warn!("own feeds not recovered: {e}");
        }
        Ok(channel)
    }

    /// The channel folder.
    pub fn dir(&self) -> &ChannelDir {
        &self.dir
    }

    /// The index, for queries.
    pub fn index(&self) -> &Index {
        &self.index
    }

    /// Lets a write answer before its index rows are committed: the
    /// record is durable once the journal's fsync returns, and the index is
    /// a cache of the feeds. The commit then waits for [`Self::settle`],
    /// which a stdio server calls once the answer is written and the client
    /// sent nothing more. The next write to the
    /// same feed joins the open transaction while the run is young and
    /// short ([`RUN_BOUNDS`]); anything else on this channel
    /// that takes a lock or begins a transaction settles first, so this
    /// process never waits on itself, and so does a catch-up that finds the
    /// folder changed or the run old. Until then this connection reads the
    /// new rows and other processes read the index as it was (and wait for
    /// the index lock to write).
    pub fn settle_after_answer(&mut self) {
        self.settle_later = true;
    }

    /// Lets this channel's change check be answered by a tripwire on the
    /// feed folders ([`Self::folder_unchanged`]): for a process that holds
    /// the channel open for many calls, such as a stdio server. It costs an
    /// inotify instance, of which a user has few (128 by default), so a
    /// process that opens many channels (`serve`) keeps the `stat` check.
    pub fn set_tripwire(&mut self) {
        self.tripwire = Tripwire::armed();
    }

    /// Commits the index rows of a write made under
    /// [`Self::settle_after_answer`] and lets its locks go; nothing to do
    /// otherwise. If the commit fails, the rows are rolled back and the
    /// next catch-up folds the record from the feed again.
    pub fn settle(&self) -> StoreResult<()> {
        let Some(run) = self.unsettled.borrow_mut().take() else {
            return Ok(());
        };
        let settled = self.index.settle();
        drop(run);
        if settled.is_err() {
            self.cache_stale.set(true);
        }
        settled.map(|_| ())
    }

    /// True while a run of writes is open and may take one more of `feed`
    /// (any feed's: `None`).
    fn run_joinable(&self, feed: Option<&FeedId>) -> bool {
        self.unsettled
            .borrow()
            .as_ref()
            .is_some_and(|run| run.joinable(feed, self.run_bounds))
    }

    /// True while writes made under [`Self::settle_after_answer`] wait for
    /// [`Self::settle`].
    pub fn is_unsettled(&self) -> bool {
        self.unsettled.borrow().is_some()
    }

    /// [`Self::settle`], then forgets what the folder's files held if a
    /// commit failed since the last pass: before anything reads `cache`.
    fn settle_for_pass(&mut self) -> StoreResult<()> {
        let settled = self.settle();
        if self.cache_stale.replace(false) {
            self.cache.clear();
        }
        settled
    }

    /// Starts counting the SQLite work of this channel's index connection
    /// ([`Index::count_work`]): what a pass costs, without a clock.
    pub fn count_index_work(&mut self) -> StoreResult<crate::store::index::IndexWork> {
        self.index.count_work()
    }

    /// This device.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// This channel's local state folder (index, journal, locks, prefs).
    pub fn state_dir(&self) -> &std::path::Path {
        &self.state_dir
    }

    /// This device's home.
    pub fn home(&self) -> &Home {
        &self.home
    }

    /// The roles of the channel, sorted: channel.json's roles plus those the
    /// owner added (`add_role` records in the index).
    pub fn roster(&self) -> Vec<Role> {
        let mut r = self.dir.genesis().roles.clone();
        // An unreadable index still leaves the genesis roster.
        r.extend(added_roles(&self.index).unwrap_or_default());
        r.sort();
        r.dedup();
        r
    }

    /// Folds whatever changed in the folder since the last pass into the index.
    /// Cheap when nothing changed: it takes the write lock only if there is
    /// something to write. Writes no record: the claims of invitations it
    /// finds admissible are in the report, for the owner's machine to admit
    /// (`app::admission::catch_up`).
    pub fn catch_up(&mut self) -> StoreResult<IngestReport> {
        self.ingest_now()
    }

    fn ingest_now(&mut self) -> StoreResult<IngestReport> {
        // A run of writes stays open across calls that find the folder as
        // this process left it: there is nothing to fold.
        if self.run_joinable(None) && self.folder_unchanged() {
            return Ok(IngestReport::default());
        }
        self.settle_for_pass()?;
        if self.cache.is_blank()
            && let Some(kept) = listing::load(&self.state_dir, &self.dir.feeds())
        {
            // The first pass of this process: folders unchanged since an
            // earlier process listed them are not listed again.
            self.cache.recall(kept);
        }
        if self.folder_unchanged() {
            return Ok(IngestReport::default());
        }
        let report = self.ingest_changed()?;
        // The pass brought the cache up to the folders as they stood after
        // the tripwire was last read: whatever changed since is queued.
        self.tripwire.set_matched(true);
        // Kept only once the pass is committed: the listing is what the
        // index was brought up to date with.
        if let Some(seen) = self.cache.take_listing(std::time::SystemTime::now()) {
            listing::save(&self.state_dir, &self.dir.feeds(), &seen);
        }
        Ok(report)
    }

    /// [`ScanCache::unchanged`] for this channel's folder, with its tripwire.
    fn folder_unchanged(&mut self) -> bool {
        folder_unchanged(&self.cache, &mut self.tripwire, &self.dir.feeds())
    }

    fn ingest_changed(&mut self) -> StoreResult<IngestReport> {
        // A failed pass rolls the index back, so the cache must forget what
        // that pass saw. It is cleared rather than saved and restored: a copy
        // on every call cost more than the rare pass that looks at every file
        // again after a failure.
        let first = self.pass(false);
        match first {
            Err(StoreError::Sqlite { source, .. }) if is_busy(&source) => {
                // Another process wrote between our read and our write: redo the
                // pass under the write lock from the start.
                self.cache.clear();
                let _lock = self.lock_index()?;
                self.pass(true)
            }
            Err(e) => {
                self.cache.clear();
                Err(e)
            }
            ok => ok,
        }
    }

    fn pass(&mut self, immediate: bool) -> StoreResult<IngestReport> {
        let Self {
            index, dir, cache, ..
        } = self;
        let run = |tx: &IndexTx<'_>| Ingest::run(tx, dir, cache);
        if immediate {
            index.write(run)
        } else {
            index.write_deferred(run)
        }
    }

    /// Brings the full-text index up to date with the bodies already folded.
    /// Ingest leaves new bodies out of it, so that a write does not pay for
    /// FTS5's flush and merges, and a rebuild commits its rows before it:
    /// search calls this (bounded: [`Self::index_search_within`]), and a
    /// long-lived server calls it when idle. Returns true if it indexed
    /// anything; cheap when nothing is pending.
    pub fn index_search_tail(&mut self) -> StoreResult<bool> {
        if self.index.search_backlog()?.is_none() {
            return Ok(false);
        }
        while !self.index_search_step()? {
            // A writer blocked on the index lock gets it before the next step.
            std::thread::sleep(STEP_PAUSE);
        }
        Ok(true)
    }

    /// Like [`Self::index_search_tail`], but stops once `budget` has been
    /// spent: `None` when the full-text index is complete, else how far
    /// behind it still is. A step in progress (its own or another
    /// process's) is finished first, so the budget can be overrun by one
    /// step ([`crate::store::index::SEARCH_BATCH`] bodies).
    pub fn index_search_within(&mut self, budget: Duration) -> StoreResult<Option<SearchBacklog>> {
        let start = Instant::now();
        while self.index.search_backlog()?.is_some() {
            if self.index_search_step()? {
                return Ok(None);
            }
            if start.elapsed() >= budget {
                return self.index.search_backlog();
            }
        }
        Ok(None)
    }

    /// Sets how many body rows one step of a large full-text backlog takes
    /// ([`Index::set_search_batch`]; tests and the bench only).
    pub fn set_search_batch(&mut self, rows: i64) {
        self.index.set_search_batch(rows);
    }

    /// One step of the full-text index ([`IndexTx::index_search_step`]) in its
    /// own transaction, under the index lock, which is released after it so
    /// that other writers get their turn between steps. True when complete.
    fn index_search_step(&mut self) -> StoreResult<bool> {
        let _lock = self.lock_index()?;
        self.index.write(|tx| tx.index_search_step())
    }

    /// Moves what the index's write-ahead log holds into the database file
    /// when the log has grown, without waiting on readers. SQLite would do it
    /// inside whichever write crossed its threshold; a server calls this when
    /// idle instead, so that tool calls rarely pay for it.
    pub fn tidy_index(&mut self) -> StoreResult<()> {
        self.settle()?;
        self.index.checkpoint_if_grown()
    }

    /// Hands the index's checkpoints to a thread of their own, for a process
    /// that keeps the channel open (`store::index::checkpoint`).
    pub fn checkpoint_in_background(&mut self) -> StoreResult<()> {
        self.index.checkpoint_in_background()
    }

    /// Throws the index's derived content away and folds every feed again
    /// ([`Self::reindex_rows`]), then builds the full-text index
    /// ([`Self::complete_search_index`]). `progress` is told the bytes read
    /// after each file.
    pub fn reindex(&mut self, progress: Option<&mut dyn FnMut(u64)>) -> StoreResult<IngestReport> {
        let report = self.reindex_rows(progress)?;
        self.complete_search_index()?;
        Ok(report)
    }

    /// The first phase of a rebuild: throws the index's derived content away
    /// and folds every feed again, in one transaction (readers see the old
    /// state until the new one is whole), leaving the full-text index empty.
    /// Every tool but search answers from the new state once this returns;
    /// search refuses until the full-text index has caught up
    /// ([`Self::complete_search_index`], or any later search or idle server,
    /// which each take a bounded share of it: see
    /// [`IndexTx::index_search_step`]). If the process stops between the two
    /// phases, the index itself records what is missing.
    pub fn reindex_rows(
        &mut self,
        progress: Option<&mut dyn FnMut(u64)>,
    ) -> StoreResult<IngestReport> {
        let _lock = self.lock_index()?;
        self.cache.clear();
        let Self {
            index, dir, cache, ..
        } = self;
        index.set_cache_kib(64 * 1024)?;
        index.set_autocheckpoint(false)?;
        let mut progress = progress;
        let mut tick = |n: u64| {
            if let Some(p) = progress.as_mut() {
                p(n);
            }
        };
        // The signatures are checked beside the rows and before the commit
        // (`DeferredChecks`); should one fail, the rows are rolled back and
        // built again checking each file before it is applied, as every
        // other pass does, so that the record is quarantined there.
        let mut checks = Some(DeferredChecks::start());
        let result = loop {
            match rebuild_rows(index, dir, cache, Some(&mut tick), checks.take()) {
                Ok(report) => break Ok(report),
                Err(RowsPass::Store(e)) => break Err(e),
                // Only a pass with checks beside it ends so; the next has none.
                Err(RowsPass::Unchecked) => cache.clear(),
            }
        };
        index.set_autocheckpoint(true)?;
        index.set_cache_kib(2 * 1024)?;
        if result.is_err() {
            self.cache.clear();
        }
        result
    }

    /// The signed head of `feed`, if its `head.json` is there and verifies
    /// with `key` (a heartbeat and a hint, never trusted over the records);
    /// the signature is checked again only when the file changed.
    pub fn feed_head(
        &self,
        feed: &FeedId,
        key: &ed25519_dalek::VerifyingKey,
    ) -> Option<crate::core::record::HeadClaim> {
        let dir = self.dir.feed_dir(feed);
        self.heads.read(&dir, feed, key)
    }

    /// The second phase of a rebuild: indexes every body row the full-text
    /// index lacks, [`crate::store::index::SEARCH_BATCH`] rows per
    /// transaction, releasing the index lock between them.
    pub fn complete_search_index(&mut self) -> StoreResult<()> {
        self.index.set_cache_kib(64 * 1024)?;
        let done = self.index_search_tail();
        self.index.set_cache_kib(2 * 1024)?;
        done.map(|_| ())
    }

    /// Gzips the sealed segments of this device's own feeds
    /// ([`crate::store::writer::seal::gzip_sealed_segments`]), each under its feed's lock, and
    /// returns the files written. Other writers' feeds are never touched: their
    /// files are theirs. Meant for folders synced by rclone (smaller uploads of
    /// immutable files); under git keep segments plain, git compresses its own
    /// objects and a gzip file defeats its deltas.
    pub fn gzip_own_segments(&self) -> StoreResult<Vec<PathBuf>> {
        let mut written = Vec::new();
        for (feed, dir) in crate::store::folder::survey::list_feeds(&self.dir.feeds())? {
            if feed.device() != self.device.id {
                continue;
            }
            let _lock = self.lock_feed(&self.feed_writer(feed))?;
            written.extend(crate::store::writer::seal::gzip_sealed_segments(&dir)?);
        }
        Ok(written)
    }

    /// Brings every feed this device writes in line with its private
    /// journal, writing nothing new ([`FeedWriter::reconcile`]): a torn tail
    /// is cut, and records that a stale copy of the folder lost (a feed file
    /// replaced by an older one, truncated, or deleted) are published again.
    /// Sync calls it before publishing this device's feeds, so a stale copy
    /// never travels; a write does the same for its own feed. Returns the
    /// feeds looked at. A feed someone else wrote is refused
    /// ([`StoreError::ForeignWriter`]).
    pub fn reconcile_own_feeds(&self) -> StoreResult<usize> {
        let mut n = 0;
        self.each_own_feed(|writer, key| {
            writer.reconcile(&key.verifying_key())?;
            n += 1;
            Ok(())
        })?;
        Ok(n)
    }

    /// Publishes again every record of this device's journals that its
    /// published feeds lack, wherever the hole is
    /// ([`FeedWriter::republish_missing`]); returns how many. Reads every
    /// own feed whole: a repair for `countersign repair`, not for each write.
    pub fn repair_own_feeds(&self) -> StoreResult<usize> {
        let mut n = 0;
        self.each_own_feed(|writer, key| {
            n += writer.republish_missing(&key.verifying_key())?;
            Ok(())
        })?;
        Ok(n)
    }

    /// Runs `f` on the writer of each feed this device has a journal and a
    /// key for, under that feed's lock.
    pub(super) fn each_own_feed(
        &self,
        mut f: impl FnMut(&FeedWriter, &SigningKey) -> StoreResult<()>,
    ) -> StoreResult<()> {
        let journals = self.state_dir.join("journal");
        let entries = match std::fs::read_dir(&journals) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e).at(&journals)?,
        };
        for entry in entries {
            let name = entry.at(&journals)?.file_name();
            let Some(role) = name.to_str().and_then(|n| n.strip_suffix(".jsonl")) else {
                continue;
            };
            let Some(feed) = FeedId::new(role, &self.device.id) else {
                continue;
            };
            let role = Role::new(role).ok();
            let key_name = match &role {
                _ if feed.is_owner() => KeyName::Owner,
                Some(r) => KeyName::Role(r),
                None => continue,
            };
            let Some(key) = self.home.load_key(self.dir.id(), key_name)? else {
                continue;
            };
            // Records written before a key replacement are this device's too.
            let pubkey = record::pubkey_hex(&key.verifying_key());
            let former = former_keys(&self.index, &feed, &pubkey)?;
            let writer = self.feed_writer(feed).with_former_keys(former);
            let _lock = self.lock_feed(&writer)?;
            f(&writer, &key)?;
        }
        Ok(())
    }

    /// This device's writer of `role`'s feed, `None` when this device holds
    /// no key for the role. A plain lookup: it writes nothing and checks no
    /// admission (a feed's first records, `admit` and `feed_init`, are
    /// written by `app::announcement::announce`, an explicit step).
    pub fn writer(&self, role: &Role) -> StoreResult<Option<Writer>> {
        let Some(key) = self.home.load_key(self.dir.id(), KeyName::Role(role))? else {
            return Ok(None);
        };
        self.writer_with(self.own_feed(role), key).map(Some)
    }

    /// The writer of this device's owner feed, `None` on a machine without
    /// the owner key. A plain lookup, like [`Self::writer`].
    pub fn owner_writer(&self) -> StoreResult<Option<Writer>> {
        let Some(key) = self.home.load_key(self.dir.id(), KeyName::Owner)? else {
            return Ok(None);
        };
        let feed = FeedId::new(OWNER_FEED_ROLE, &self.device.id).expect("device is a slug");
        Ok(Some(Writer {
            feed: self.feed_writer(feed),
            key,
        }))
    }

    /// The writer of this device's `feed` signing with `key`, knowing every
    /// key the feed was written with before (its older records are signed by
    /// them).
    fn writer_with(&self, feed: FeedId, key: SigningKey) -> StoreResult<Writer> {
        let pubkey = record::pubkey_hex(&key.verifying_key());
        let former = former_keys(&self.index, &feed, &pubkey)?;
        Ok(Writer {
            feed: self.feed_writer(feed).with_former_keys(former),
            key,
        })
    }

    /// Appends `op` as the first record of `writer`'s feed, unless the feed
    /// already holds one (checked under the write lock, after a catch-up):
    /// how a feed is begun. Returns the record, `None` when nothing was
    /// written.
    pub fn append_first(&mut self, writer: &Writer, op: Op) -> StoreResult<Option<Record>> {
        let feed = writer.feed().clone();
        let (rec, ()) = self.append_if(writer, |ix| {
            Ok::<_, StoreError>(((!has_records(ix, &feed)?).then_some(op), ()))
        })?;
        Ok(rec)
    }

    /// Serializes writers of the index on this machine. SQLite would too, but
    /// its busy handler sleeps in growing steps; a blocking lock wakes the next
    /// writer as soon as the last one commits. Order: feed lock, then this.
    fn lock_index(&self) -> StoreResult<FileLock> {
        self.settle()?;
        FileLock::exclusive(&self.state_dir.join(INDEX_LOCK))
    }

    /// Takes `feed`'s lock (before the index lock, never after), settling
    /// first.
    fn lock_feed(&self, feed: &FeedWriter) -> StoreResult<FileLock> {
        self.settle()?;
        feed.lock()
    }

    fn feed_writer(&self, feed: FeedId) -> FeedWriter {
        FeedWriter::new(&self.dir.feeds(), &self.state_dir, feed)
    }

    fn is_admitted(&self, feed: &FeedId) -> StoreResult<bool> {
        admitted_in(&self.index, feed)
    }

    /// The hex public key `feed` currently writes with, `None` if nobody admitted it.
    pub fn admitted_key(&self, feed: &FeedId) -> StoreResult<Option<String>> {
        let key: Option<Option<String>> = self
            .index
            .conn()
            .prepare_cached("SELECT pubkey FROM feeds WHERE feed = ?1")
            .and_then(|mut s| s.query_row([feed.to_string()], |r| r.get(0)).optional())
            .db(self.index.path())?;
        Ok(key.flatten())
    }

    /// The seq of the last record of `feed` in the index (0 if none).
    pub fn head_seq(&self, feed: &FeedId) -> StoreResult<u64> {
        let seq: Option<i64> = self
            .index
            .conn()
            .prepare_cached("SELECT head_seq FROM feeds WHERE feed = ?1")
            .and_then(|mut s| s.query_row([feed.to_string()], |r| r.get(0)).optional())
            .db(self.index.path())?;
        Ok(seq.unwrap_or(0).max(0) as u64)
    }

    /// The feed of `role` on this device.
    pub fn own_feed(&self, role: &Role) -> FeedId {
        FeedId::new(role.as_str(), &self.device.id).expect("role and device are slugs")
    }

    /// Appends the op that `build` returns, serialized with every other write
    /// on this device. `build` sees the index after a catch-up and validates
    /// against it; an `Err` rolls everything back and nothing is written.
    pub fn append<T, E: From<StoreError>>(
        &mut self,
        writer: &Writer,
        build: impl FnOnce(&Index) -> Result<(Op, T), E>,
    ) -> Result<(Record, T), E> {
        let (rec, out) = self.append_if(writer, |ix| build(ix).map(|(op, t)| (Some(op), t)))?;
        Ok((rec.expect("an op was built"), out))
    }

    /// Like [`Self::append`], but `build` may decide to write nothing.
    pub fn append_if<T, E: From<StoreError>>(
        &mut self,
        writer: &Writer,
        build: impl FnOnce(&Index) -> Result<(Option<Op>, T), E>,
    ) -> Result<(Option<Record>, T), E> {
        let (recs, out) = self.append_run(writer, |ix| {
            let (op, out) = build(ix)?;
            let steps: Vec<Step> = op
                .into_iter()
                .map(|op| Box::new(move |_: &[Record]| op) as Step)
                .collect();
            Ok::<_, E>((steps, out))
        })?;
        Ok((recs.into_iter().next(), out))
    }
}

/// One op of a run written by [`Channel::append_run`], made from the records
/// of the run signed before it (a later chunk of a new upload names the
/// first chunk's id, which exists only once that record is signed).
pub type Step = Box<dyn FnOnce(&[Record]) -> Op + Send>;

impl Channel {
    /// Appends a run of ops as one write: `build` validates against the index
    /// after a catch-up (an `Err` writes nothing) and plans the steps; every
    /// record is chained and signed before any byte is written, then the run
    /// goes to the journal in one write and one fsync, then to the feed. A
    /// reader may see the first records of the run before the last ones, as
    /// with any append; the answer is given once the whole run is durable.
    pub fn append_run<T, E: From<StoreError>>(
        &mut self,
        writer: &Writer,
        build: impl FnOnce(&Index) -> Result<(Vec<Step>, T), E>,
    ) -> Result<(Vec<Record>, T), E> {
        writer.feed.expect_append();
        let joined = if self.run_joinable(Some(writer.feed.feed())) {
            self.unsettled.borrow_mut().take()
        } else {
            None
        };
        let (locks, since, writes) = match joined {
            Some(run) => (run.locks, run.since, run.writes),
            None => {
                self.settle_for_pass()?;
                let feed_lock = self.lock_feed(&writer.feed)?;
                let index_lock = self.lock_index()?;
                ([feed_lock, index_lock], Instant::now(), 0)
            }
        };
        // Taken out, and put back only by an append that succeeds: after a
        // failure nothing is known about the files.
        let tails = self
            .tails
            .remove(writer.feed.feed())
            .filter(|t| writer.feed.still_holds(t));
        let Self {
            index,
            dir,
            cache,
            tripwire,
            settle_later,
            ..
        } = self;
        let write = |ix: &IndexTx<'_>| {
            if !folder_unchanged(cache, tripwire, &dir.feeds()) {
                Ingest::run(ix, dir, cache)?;
                tripwire.set_matched(true);
            }
            let (steps, out) = build(ix)?;
            if steps.is_empty() {
                return Ok((Vec::new(), out, tails));
            }
            let key = writer.key.verifying_key();
            let last = match &tails {
                Some(t) => Some(t.last().clone()),
                None => writer.feed.reconcile(&key)?,
            };
            let seen = max_hlc(ix)?;
            let mut prev = last.map(|r| (r.header.seq, r.id, r.header.hlc));
            let mut recs: Vec<Record> = Vec::with_capacity(steps.len());
            for step in steps {
                let op = step(&recs);
                let prev_hlc = prev.map_or(Hlc::default(), |(_, _, h)| h);
                let header = Header {
                    ch: dir.id().to_owned(),
                    feed: writer.feed.feed().clone(),
                    seq: prev.map_or(1, |(seq, _, _)| seq + 1),
                    prev: prev.map(|(_, id, _)| id),
                    hlc: Hlc::next(now_ms(), seen.max(prev_hlc)),
                };
                let rec = record::encode(&header, &op, &writer.key);
                prev = Some((rec.header.seq, rec.id, rec.header.hlc));
                recs.push(rec);
            }
            let vouched = || recs.iter().map(|r| vouch(r, &key)).collect();
            let feed = writer.feed.feed();
            let left = match recs.as_slice() {
                // The usual write, after one of this process: the record is
                // folded while the journal syncs (`ingest::own`).
                [one]
                    if let Some((segment, offset)) =
                        tails.as_ref().and_then(|t| writer.feed.lands_at(one, t)) =>
                {
                    let appending = writer.feed.begin_append(one, &writer.key, tails.as_ref())?;
                    let ahead = Ingest::fold_own_ahead(
                        ix,
                        dir,
                        cache,
                        feed,
                        one,
                        &segment,
                        offset,
                        vouched(),
                    );
                    let folded = match ahead {
                        Ok(folded) => folded,
                        Err(e) => return Err(writer.feed.abandon_append(one, appending, e).into()),
                    };
                    let left = writer.feed.end_append(one, tails.as_ref(), appending)?;
                    let (published, size, mtime) = left.segment();
                    let passed = folded
                        && published == segment
                        && Ingest::pass_own_line(
                            ix,
                            dir,
                            cache,
                            &segment,
                            offset,
                            one.to_line().as_bytes(),
                            (size, mtime),
                        )?;
                    if !passed {
                        Ingest::run_own(ix, dir, cache, feed, vouched())?;
                    }
                    Some(left)
                }
                [one] => {
                    let left = writer.feed.append(one, &writer.key, tails.as_ref())?;
                    Ingest::run_own(ix, dir, cache, feed, vouched())?;
                    Some(left)
                }
                run => {
                    writer.feed.append_batch(run, &writer.key)?;
                    Ingest::run_own(ix, dir, cache, feed, vouched())?;
                    None
                }
            };
            Ok((recs, out, left))
        };
        let result = if *settle_later {
            index.write_held(write)
        } else {
            index.write(write)
        };
        // Open after a write that succeeded, until it is settled; a failed
        // one rolled back the whole run, and its locks go.
        if self.index.is_held() {
            *self.unsettled.borrow_mut() = Some(Unsettled {
                locks,
                feed: writer.feed.feed().clone(),
                since,
                writes: writes + 1,
            });
        }
        match result {
            Ok((recs, out, left)) => {
                if let Some(t) = left {
                    self.tails.insert(writer.feed.feed().clone(), t);
                }
                Ok((recs, out))
            }
            Err(e) => {
                // The index rolled back, with the run this write joined: the
                // next pass folds the run's records from the feed again.
                self.cache.clear();
                Err(e)
            }
        }
    }
}

/// [`ScanCache::unchanged`], told by `tripwire` which folders it may skip
/// (all of them while nothing tripped it since `cache` last matched the
/// folders); the tripwire is then told the verdict.
fn folder_unchanged(cache: &ScanCache, tripwire: &mut Tripwire, feeds: &Path) -> bool {
    let since = tripwire.since(cache.checked_dirs(feeds));
    let unchanged = cache.unchanged(feeds, &since);
    tripwire.set_matched(unchanged);
    unchanged
}

/// The `add_role` records, looked up in the owner's feeds only (a range of
/// the `(feed, seq)` index: the owner's feeds are small, the others are not).
const OWNER_ADD_ROLES: &str = "SELECT json_extract(body, '$.data.role') FROM records \
     WHERE feed >= '_owner/' AND feed < '_owner0' AND op = 'add_role'";

/// Roles the owner added with `add_role`.
fn added_roles(ix: &Index) -> StoreResult<Vec<Role>> {
    let mut st = ix.conn().prepare_cached(OWNER_ADD_ROLES).db(ix.path())?;
    let rows = st
        .query_map([], |r| r.get::<_, Option<String>>(0))
        .db(ix.path())?;
    let mut out = Vec::new();
    for row in rows {
        if let Some(role) = row.db(ix.path())?.and_then(|r| Role::new(&r).ok()) {
            out.push(role);
        }
    }
    Ok(out)
}

/// Every key `feed` was admitted, announced or replaced with, except `current`:
/// the feed's older records are signed by them.
fn former_keys(ix: &Index, feed: &FeedId, current: &str) -> StoreResult<Vec<VerifyingKey>> {
    let mut st = ix
        .conn()
        .prepare_cached(
            // The ops match the partial index `records_key_ops` word for
            // word, so SQLite uses it; a feed other than the owner's holds no
            // `admit`, and the owner's `feed_init` names no feed.
            "SELECT json_extract(body, '$.data.pubkey') FROM records \
             WHERE feed = ?1 AND (op = 'feed_init' OR op = 'replace_key' OR op = 'admit') \
             UNION SELECT json_extract(body, '$.data.pubkey') FROM records \
             WHERE feed >= '_owner/' AND feed < '_owner0' \
               AND (op = 'feed_init' OR op = 'replace_key' OR op = 'admit') \
               AND json_extract(body, '$.data.feed') = ?1",
        )
        .db(ix.path())?;
    let rows = st
        .query_map([feed.to_string()], |r| r.get::<_, Option<String>>(0))
        .db(ix.path())?;
    let mut out = Vec::new();
    for row in rows {
        if let Some(k) = row.db(ix.path())?.filter(|k| k != current)
            && let Some(key) = record::parse_pubkey(&k)
        {
            out.push(key);
        }
    }
    Ok(out)
}

fn admitted_in(ix: &Index, feed: &FeedId) -> StoreResult<bool> {
    let key: Option<Option<String>> = ix
        .conn()
        .prepare_cached("SELECT pubkey FROM feeds WHERE feed = ?1")
        .and_then(|mut s| s.query_row([feed.to_string()], |r| r.get(0)).optional())
        .db(ix.path())?;
    Ok(matches!(key, Some(Some(_))))
}

fn has_records(ix: &Index, feed: &FeedId) -> StoreResult<bool> {
    Ok(ix
        .conn()
        .prepare_cached("SELECT 1 FROM records WHERE feed = ?1 LIMIT 1")
        .and_then(|mut s| s.query_row([feed.to_string()], |_| Ok(())).optional())
        .db(ix.path())?
        .is_some())
}

fn max_hlc(ix: &Index) -> StoreResult<Hlc> {
    let row: Option<(i64, i64)> = ix
        .conn()
        .prepare_cached("SELECT ms, c FROM records ORDER BY ms DESC, c DESC LIMIT 1")
        .and_then(|mut s| s.query_row([], |r| Ok((r.get(0)?, r.get(1)?))).optional())
        .db(ix.path())?;
    Ok(row.map_or(Hlc::default(), |(ms, c)| Hlc(ms, c as u32)))
}

/// How a rebuild's rows pass failed.
enum RowsPass {
    /// A fault: the transaction was rolled back.
    Store(StoreError),
    /// A signature taken as holding did not: rolled back, to be built again
    /// checking each file first.
    Unchecked,
}

impl From<StoreError> for RowsPass {
    fn from(e: StoreError) -> Self {
        Self::Store(e)
    }
}

/// A rebuild's rows in one transaction: the derived tables emptied, every
/// feed applied, the query indexes made. With `checks`, the signatures of the
/// files read ahead are checked beside the pass, and it commits only if every
/// one held ([`DeferredChecks`]); without, each file's are checked before it
/// is applied, as every other pass does.
fn rebuild_rows(
    index: &Index,
    dir: &ChannelDir,
    cache: &mut ScanCache,
    progress: Option<&mut dyn FnMut(u64)>,
    checks: Option<DeferredChecks>,
) -> Result<IngestReport, RowsPass> {
    index.write(|ix| {
        ix.clear_derived()?;
        ix.drop_query_indexes()?;
        let report = match &checks {
            Some(checks) => Ingest::rebuild(ix, dir, cache, progress, checks)?,
            None => Ingest::run_with_progress(ix, dir, cache, progress)?,
        };
        ix.make_missing_indexes()?;
        match checks.map(DeferredChecks::finish) {
            Some(false) => Err(RowsPass::Unchecked),
            _ => Ok(report),
        }
    })
}

fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy) | Some(rusqlite::ErrorCode::DatabaseLocked)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::genesis::{FORMAT, Genesis, channel_id};
    use crate::core::ids::RecordId;
    use crate::core::op::{Admit, FeedInit, Ids, Note, Send};
    use crate::store::folder::segments::SEGMENT_RECORDS;
    use crate::store::folder::survey;
    use crate::store::home::new_signing_key;

    /// A channel of roles alpha and beta in a fresh temporary folder.
    pub(super) fn fresh(tmp: &tempfile::TempDir) -> Channel {
        let home = Home::at(tmp.path().join("home"));
        let owner = new_signing_key();
        let genesis = Genesis {
            format: FORMAT.to_owned(),
            name: "bulk".into(),
            created_at: "2023-11-14T22:13:20Z".into(),
            roles: vec![Role::new("alpha").unwrap(), Role::new("beta").unwrap()],
            owner_pubkey: record::pubkey_hex(&owner.verifying_key()),
            nonce: "00".repeat(16),
        };
        home.store_key(&channel_id(&genesis.to_bytes()), KeyName::Owner, &owner)
            .unwrap();
        let dir = ChannelDir::create(&tmp.path().join("channel"), &genesis).unwrap();
        Channel::open(dir, home).unwrap()
    }

    /// Begins `role`'s feed of this (the owner's) device as
    /// `app::announcement::announce` does — the role key, the owner's
    /// `admit`, `feed_init` — and returns its writer.
    pub(super) fn announced(ch: &mut Channel, role: &Role) -> Writer {
        ch.home()
            .create_key(ch.dir().id(), KeyName::Role(role))
            .unwrap();
        let writer = ch.writer(role).unwrap().unwrap();
        let owner = ch.owner_writer().unwrap().unwrap();
        let admit = Op::Admit(Admit {
            feed: writer.feed().clone(),
            pubkey: writer.pubkey(),
            role: role.clone(),
        });
        ch.append(&owner, |_| Ok::<_, StoreError>((admit, ())))
            .unwrap();
        let init = Op::FeedInit(FeedInit {
            role: role.clone(),
            pubkey: writer.pubkey(),
            device_name: ch.device().name.clone(),
        });
        ch.append_first(&writer, init).unwrap().unwrap();
        writer
    }

    #[test]
    fn a_writer_lookup_writes_nothing_and_a_feed_is_begun_once() {
        let tmp = tempfile::tempdir().unwrap();
        let mut ch = fresh(&tmp);
        let role = Role::new("alpha").unwrap();
        let feeds = ch.dir().feeds();
        let listing = || -> Vec<PathBuf> {
            let mut out = Vec::new();
            let mut todo = vec![feeds.clone()];
            while let Some(d) = todo.pop() {
                for e in std::fs::read_dir(&d).unwrap() {
                    let p = e.unwrap().path();
                    if p.is_dir() {
                        todo.push(p);
                    } else {
                        out.push(p);
                    }
                }
            }
            out.sort();
            out
        };
        assert!(ch.writer(&role).unwrap().is_none(), "no key, no writer");
        assert!(
            ch.home()
                .load_key(ch.dir().id(), KeyName::Role(&role))
                .unwrap()
                .is_none()
        );
        ch.home()
            .create_key(ch.dir().id(), KeyName::Role(&role))
            .unwrap();
        let before = listing();
        let w = ch.writer(&role).unwrap().expect("the key is there");
        assert_eq!(w.feed(), &ch.own_feed(&role));
        assert!(ch.owner_writer().unwrap().is_some());
        assert_eq!(listing(), before, "a lookup writes no file");
        assert_eq!(ch.admitted_key(w.feed()).unwrap(), None);
        assert_eq!(ch.head_seq(w.feed()).unwrap(), 0);
        // Once admitted, the first record is written once: a second is
        // skipped quietly.
        let owner = ch.owner_writer().unwrap().unwrap();
        let admit = Op::Admit(Admit {
            feed: w.feed().clone(),
            pubkey: w.pubkey(),
            role: role.clone(),
        });
        ch.append(&owner, |_| Ok::<_, StoreError>((admit, ())))
            .unwrap();
        let init = |ch: &Channel| {
            Op::FeedInit(FeedInit {
                role: role.clone(),
                pubkey: w.pubkey(),
                device_name: ch.device().name.clone(),
            })
        };
        let first = ch.append_first(&w, init(&ch)).unwrap().unwrap();
        assert_eq!(first.header.seq, 1);
        assert!(ch.append_first(&w, init(&ch)).unwrap().is_none());
        assert_eq!(ch.head_seq(w.feed()).unwrap(), 1);
    }

    pub(super) fn send(i: usize) -> Op {
        Op::Send(Send {
            to: vec![Role::new("beta").unwrap()],
            topic: format!("t{i}"),
            body: "x".repeat(1 + i % 900),
            decision_requested: true,
            ..Send::default()
        })
    }

    #[test]
    fn two_writers_of_one_feed_take_turns_without_a_gap() {
        // Two processes of one role on one device share the feed and its
        // journal; each remembers what its own last append left, and must
        // notice the other's appends (including a new segment) before its next.
        let tmp = tempfile::tempdir().unwrap();
        let mut one = fresh(&tmp);
        let mut two = Channel::open(one.dir().clone(), one.home().clone()).unwrap();
        let role = Role::new("alpha").unwrap();
        let w1 = announced(&mut one, &role);
        let w2 = two.writer(&role).unwrap().expect("one made the key");
        let mut seqs = Vec::new();
        for i in 0..(SEGMENT_RECORDS as usize + 40) {
            // Runs of three on each side, so each also appends twice in a row.
            let (ch, w) = if (i / 3) % 2 == 0 {
                (&mut one, &w1)
            } else {
                (&mut two, &w2)
            };
            // Short bodies: segments then seal by count, at a known seq.
            let (rec, ()) = ch
                .append(w, |_| Ok::<_, StoreError>((send(900 * i), ())))
                .unwrap();
            seqs.push(rec.header.seq);
        }
        let expected: Vec<u64> = (2..2 + seqs.len() as u64).collect();
        assert_eq!(seqs, expected, "one chain, feed_init first");
        let feed_dir = one.dir().feeds().join("alpha").join(&one.device().id);
        let firsts: Vec<u64> = survey::list_segments(&feed_dir)
            .unwrap()
            .iter()
            .map(|s| s.first_seq)
            .collect();
        assert_eq!(firsts, vec![1, 1 + SEGMENT_RECORDS]);
        let mut reader = fresh_reader(&one, &tmp);
        let report = reader.catch_up().unwrap();
        assert!(report.waiting.is_empty(), "{report:?}");
        assert!(reader.index().problems().unwrap().is_empty());
    }

    #[test]
    fn a_write_settled_after_its_answer_is_read_here_at_once_and_elsewhere_once_committed() {
        let tmp = tempfile::tempdir().unwrap();
        let mut ch = fresh(&tmp);
        let w = announced(&mut ch, &Role::new("alpha").unwrap());
        ch.settle_after_answer();
        // Another connection to the same index file: another process.
        let other = Index::open(&Index::path_in(ch.state_dir()), ch.dir().id()).unwrap();
        let records = |ix: &Index| -> i64 {
            ix.conn()
                .query_row("SELECT COUNT(*) FROM records", [], |r| r.get(0))
                .unwrap()
        };
        let base = records(&other);
        let write = |ch: &mut Channel, i: usize| {
            ch.append(&w, |_| Ok::<_, StoreError>((send(i), ())))
                .unwrap();
        };
        // Bounds no slow test machine reaches, but where a part says.
        let long = RunBounds {
            age: Duration::from_secs(3600),
            writes: 64,
        };
        ch.run_bounds = long;
        // A run of writes to one feed shares one open transaction: read
        // here at once, committed for nobody else yet.
        for i in 0..3 {
            write(&mut ch, i);
            assert_eq!(
                records(ch.index()),
                base + i as i64 + 1,
                "read here at once"
            );
            assert_eq!(records(&other), base, "not committed yet");
        }
        // A catch-up that finds the folder as this process left it keeps
        // the run open; so does a write that joins it.
        assert_eq!(ch.catch_up().unwrap().accepted, 0);
        assert_eq!(records(&other), base);
        // Anything else that takes the feed's or the index's lock settles it.
        ch.reconcile_own_feeds().unwrap();
        assert_eq!(records(&other), base + 3);
        // A run is bounded: by its number of writes…
        ch.run_bounds = RunBounds { writes: 4, ..long };
        for i in 3..7 {
            write(&mut ch, i);
        }
        assert_eq!(records(&other), base + 3, "one full run, not committed");
        write(&mut ch, 99);
        assert_eq!(
            records(&other),
            base + 7,
            "the write past a full run commits the run first"
        );
        // …and by its age, for a write and for a catch-up alike.
        ch.run_bounds = RunBounds {
            age: Duration::from_millis(20),
            writes: 4,
        };
        let total = base + 8;
        std::thread::sleep(ch.run_bounds.age);
        write(&mut ch, 100);
        assert_eq!(records(&other), total);
        std::thread::sleep(ch.run_bounds.age);
        ch.catch_up().unwrap();
        assert_eq!(records(&other), total + 1);
        // A write to another feed settles the run first.
        ch.run_bounds = long;
        write(&mut ch, 101);
        let owner = ch.owner_writer().unwrap().unwrap();
        let beta = Op::Admit(Admit {
            feed: FeedId::new("beta", "elsewhere").unwrap(),
            pubkey: record::pubkey_hex(&new_signing_key().verifying_key()),
            role: Role::new("beta").unwrap(),
        });
        ch.append(&owner, |_| Ok::<_, StoreError>((beta, ())))
            .unwrap();
        assert_eq!(records(&other), total + 2);
        ch.settle().unwrap();
        assert_eq!(records(&other), total + 3);
        // A write that fails inside a run rolls the whole run back and lets
        // its locks go; the next pass folds the run's records from the feed.
        write(&mut ch, 102);
        write(&mut ch, 103);
        let refused = ch.append(&w, |_| {
            Err::<(Op, ()), _>(StoreError::InvalidArgument {
                field: "to",
                reason: "is refused by this test".into(),
            })
        });
        assert!(refused.is_err());
        assert_eq!(records(ch.index()), total + 3, "the run is gone here too");
        assert_eq!(ch.catch_up().unwrap().accepted, 2, "folded again");
        assert_eq!(records(ch.index()), total + 5);
        ch.settle().unwrap();
        assert_eq!(records(&other), total + 5);
        write(&mut ch, 104);
        let folded = ch.index().digest().unwrap();
        drop(ch);
        assert_eq!(records(&other), total + 6, "closing the channel commits");
        // What was committed is what a pass over the folder folds.
        let mut reopened = Channel::open(
            ChannelDir::open(&tmp.path().join("channel")).unwrap(),
            Home::at(tmp.path().join("home")),
        )
        .unwrap();
        assert_eq!(reopened.catch_up().unwrap().accepted, 0);
        assert_eq!(reopened.index().digest().unwrap(), folded);
        reopened.reindex(None).unwrap();
        assert_eq!(reopened.index().digest().unwrap(), folded);
    }

    /// This device's feed folder of `role`, and its newest segment.
    fn newest_segment(ch: &Channel, role: &str) -> (PathBuf, PathBuf) {
        let feed_dir = ch.dir().feeds().join(role).join(&ch.device().id);
        let seg = survey::list_segments(&feed_dir)
            .unwrap()
            .pop()
            .unwrap()
            .path;
        (feed_dir, seg)
    }

    #[test]
    fn writes_folded_while_their_journal_syncs_leave_what_a_pass_over_the_file_would() {
        // After its first append a process knows where the next record
        // lands, folds it before publishing it and moves the segment's
        // cursor without reading the file (`ingest::own`).
        let tmp = tempfile::tempdir().unwrap();
        let mut ch = fresh(&tmp);
        let w = announced(&mut ch, &Role::new("alpha").unwrap());
        for i in 0..6 {
            ch.append(&w, |_| Ok::<_, StoreError>((send(i), ())))
                .unwrap();
        }
        // The newest segment's cursor stands at its end, on its last line.
        let (_, seg) = newest_segment(&ch, "alpha");
        let bytes = std::fs::read(&seg).unwrap();
        let last = last_line(&bytes);
        let rel = seg.strip_prefix(ch.dir().root()).unwrap().to_string_lossy();
        let cursor: (i64, i64, i64, String) = ch
            .index()
            .conn()
            .query_row(
                "SELECT size, offset, tail_len, tail_hash FROM files WHERE path = ?1",
                [rel.as_ref()],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
            .unwrap();
        let len = bytes.len() as i64;
        assert_eq!(
            cursor,
            (
                len,
                len,
                last.len() as i64,
                crate::core::ids::sha256_hex(last)
            )
        );
        // A pass finds nothing new; a rebuild, and another device reading
        // the folder, fold the same state.
        assert_eq!(ch.catch_up().unwrap().accepted, 0);
        let folded = ch.index().digest().unwrap();
        let mut reader = fresh_reader(&ch, &tmp);
        reader.catch_up().unwrap();
        assert_eq!(reader.index().digest().unwrap(), folded);
        ch.reindex(None).unwrap();
        assert_eq!(ch.index().digest().unwrap(), folded);
    }

    #[test]
    fn a_second_name_given_to_the_open_segment_or_head_is_never_written_through() {
        // A process keeps its newest segment and head open between writes
        // (`writer::feed::Tails`). A hard link made to either from outside
        // the feed folder changes neither that folder nor the file's size
        // and mtime, so the tails still hold: the link count must refuse it.
        let tmp = tempfile::tempdir().unwrap();
        let mut ch = fresh(&tmp);
        let w = announced(&mut ch, &Role::new("alpha").unwrap());
        ch.append(&w, |_| Ok::<_, StoreError>((send(0), ())))
            .unwrap();
        let (feed_dir, seg) = newest_segment(&ch, "alpha");
        let outside = tmp.path().join("outside.jsonl");
        std::fs::hard_link(&seg, &outside).unwrap();
        let before = std::fs::read(&outside).unwrap();
        let refused = ch
            .append(&w, |_| Ok::<_, StoreError>((send(1), ())))
            .unwrap_err()
            .to_string();
        assert!(refused.contains("hard links"), "{refused}");
        assert_eq!(std::fs::read(&outside).unwrap(), before, "written through");

        // Its own name again: the next write goes on, and keeps both open.
        std::fs::remove_file(&outside).unwrap();
        ch.append(&w, |_| Ok::<_, StoreError>((send(2), ())))
            .unwrap();
        let head = feed_dir.join(crate::store::folder::segments::HEAD_FILE);
        let outside_head = tmp.path().join("outside-head.json");
        std::fs::hard_link(&head, &outside_head).unwrap();
        let head_before = std::fs::read(&outside_head).unwrap();
        ch.append(&w, |_| Ok::<_, StoreError>((send(3), ())))
            .unwrap();
        assert_eq!(
            std::fs::read(&outside_head).unwrap(),
            head_before,
            "the head was written through its other name"
        );
        let now = std::fs::read_to_string(&head).unwrap();
        assert_ne!(now.as_bytes(), head_before.as_slice(), "the head moved on");
        let lines = |b: &[u8]| b.iter().filter(|c| **c == b'\n').count();
        assert_eq!(
            lines(&std::fs::read(&seg).unwrap()),
            lines(&before) + 2,
            "the refused record was never published, the two after it were"
        );
    }

    /// The last line of `bytes`, which end with a newline.
    fn last_line(bytes: &[u8]) -> &[u8] {
        let start = bytes[..bytes.len() - 1]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        &bytes[start..]
    }

    #[test]
    fn a_journal_replaced_under_its_path_is_never_written_through() {
        // A process keeps its journal open between writes too. A journal
        // put in its place by a rename, with the same bytes and mtime, keeps
        // the size and mtime the tails hold: the inode must tell them apart,
        // or the next record's durable copy would go to a file nobody reads.
        let tmp = tempfile::tempdir().unwrap();
        let mut ch = fresh(&tmp);
        let w = announced(&mut ch, &Role::new("alpha").unwrap());
        for i in 0..2 {
            ch.append(&w, |_| Ok::<_, StoreError>((send(i), ())))
                .unwrap();
        }
        let journal = ch.state_dir().join("journal").join("alpha.jsonl");
        let old = std::fs::File::open(&journal).unwrap();
        let mtime = old.metadata().unwrap().modified().unwrap();
        let copy = journal.with_extension("copy");
        std::fs::copy(&journal, &copy).unwrap();
        let f = std::fs::File::options().write(true).open(&copy).unwrap();
        f.set_modified(mtime).unwrap();
        drop(f);
        std::fs::rename(&copy, &journal).unwrap();
        let replaced = std::fs::read(&journal).unwrap();

        ch.append(&w, |_| Ok::<_, StoreError>((send(2), ())))
            .unwrap();
        let now = std::fs::read(&journal).unwrap();
        assert!(
            now.len() > replaced.len() && now.starts_with(&replaced),
            "the record went to the journal the path names"
        );
        let mut unlinked = Vec::new();
        std::io::Read::read_to_end(&mut &old, &mut unlinked).unwrap();
        assert_eq!(unlinked, replaced, "nothing written to the replaced file");
        let (_, seg) = newest_segment(&ch, "alpha");
        assert!(now.ends_with(last_line(&std::fs::read(&seg).unwrap())));
    }

    #[test]
    fn a_fold_that_fails_while_the_journal_syncs_takes_the_record_back_out() {
        let tmp = tempfile::tempdir().unwrap();
        let mut ch = fresh(&tmp);
        let w = announced(&mut ch, &Role::new("alpha").unwrap());
        let (first, ()) = ch
            .append(&w, |_| Ok::<_, StoreError>((send(1), ())))
            .unwrap();
        let journal = ch.state_dir().join("journal").join("alpha.jsonl");
        let feed_dir = ch.dir().feeds().join("alpha").join(&ch.device().id);
        let files = || {
            let seg = survey::list_segments(&feed_dir).unwrap().pop().unwrap();
            (
                std::fs::read(&journal).unwrap(),
                std::fs::read(seg.path).unwrap(),
            )
        };
        let before = files();
        // The next append folds ahead (the first left its tails); the fold's
        // insert fails on this connection's own trigger.
        ch.index()
            .conn()
            .execute_batch(
                "CREATE TEMP TRIGGER refuse BEFORE INSERT ON main.records \
                 BEGIN SELECT RAISE(ABORT, 'refused by the test'); END;",
            )
            .unwrap();
        let failed = ch.append(&w, |_| Ok::<_, StoreError>((send(2), ())));
        assert!(
            failed
                .as_ref()
                .is_err_and(|e| e.to_string().contains("refused by the test")),
            "{failed:?}"
        );
        assert!(
            files() == before,
            "nothing stays in the journal or the feed"
        );
        ch.index()
            .conn()
            .execute_batch("DROP TRIGGER temp.refuse")
            .unwrap();
        let (next, ()) = ch
            .append(&w, |_| Ok::<_, StoreError>((send(3), ())))
            .unwrap();
        assert_eq!(next.header.seq, first.header.seq + 1, "no gap, no fork");
        assert_eq!(next.header.prev, Some(first.id));
        let mut reader = fresh_reader(&ch, &tmp);
        let report = reader.catch_up().unwrap();
        assert!(report.waiting.is_empty(), "{report:?}");
        assert!(reader.index().problems().unwrap().is_empty());
        assert_eq!(
            reader.index().digest().unwrap(),
            ch.index().digest().unwrap()
        );
    }

    /// Another device's view of `ch`'s folder: a second home.
    fn fresh_reader(ch: &Channel, tmp: &tempfile::TempDir) -> Channel {
        Channel::open(ch.dir().clone(), Home::at(tmp.path().join("reader"))).unwrap()
    }

    #[test]
    fn a_reader_on_its_tripwire_sees_every_write_of_another_process() {
        // The reader's checks after its first two are answered by its
        // tripwire while nothing changes; each write of the other process,
        // a new segment and a new feed folder among them, must still reach
        // its next catch-up.
        let tmp = tempfile::tempdir().unwrap();
        let mut ch = fresh(&tmp);
        ch.set_tripwire();
        let w = announced(&mut ch, &Role::new("alpha").unwrap());
        let mut reader = fresh_reader(&ch, &tmp);
        reader.set_tripwire();
        let messages = |ch: &Channel| -> i64 {
            ch.index()
                .conn()
                .query_row("SELECT COUNT(*) FROM messages", [], |r| r.get(0))
                .unwrap()
        };
        for _ in 0..3 {
            reader.catch_up().unwrap();
        }
        assert!(reader.tripwire.is_set(), "a local file system");
        let mut sent = messages(&reader);
        for i in 0..(SEGMENT_RECORDS as usize + 5) {
            if i == 7 {
                announced(&mut ch, &Role::new("beta").unwrap());
            }
            ch.append(&w, |_| Ok::<_, StoreError>((send(i), ())))
                .unwrap();
            sent += 1;
            // The writer's own check, told by its wire that only its feed
            // folder moved, finds what it wrote folded already.
            assert_eq!(messages(&ch), sent, "write {i}, by the writer");
            reader.catch_up().unwrap();
            assert_eq!(messages(&reader), sent, "write {i}");
            // Quiet again: answered by the tripwire, and still right.
            reader.catch_up().unwrap();
            assert_eq!(messages(&reader), sent, "write {i}, read again");
        }
        assert!(reader.tripwire.is_set() && ch.tripwire.is_set());
    }

    #[test]
    fn new_bodies_reach_search_when_the_tail_is_indexed() {
        let tmp = tempfile::tempdir().unwrap();
        let mut ch = fresh(&tmp);
        let role = Role::new("alpha").unwrap();
        let w = announced(&mut ch, &role);
        let hits = |ch: &Channel| -> i64 {
            ch.index()
                .conn()
                .query_row(
                    "SELECT count(*) FROM bodies_fts WHERE bodies_fts MATCH '\"xxx\"'",
                    [],
                    |r| r.get(0),
                )
                .unwrap()
        };
        assert!(!ch.index().search_tail_pending().unwrap());
        ch.append(&w, |_| Ok::<_, StoreError>((send(5), ())))
            .unwrap();
        assert!(ch.index().search_tail_pending().unwrap());
        assert_eq!(hits(&ch), 0, "a write leaves its body for later");
        assert!(ch.index_search_tail().unwrap());
        assert!(!ch.index().search_tail_pending().unwrap());
        assert_eq!(hits(&ch), 1);
        assert!(!ch.index_search_tail().unwrap(), "nothing left to do");
        // A rebuild indexes everything it folds.
        ch.append(&w, |_| Ok::<_, StoreError>((send(6), ())))
            .unwrap();
        ch.reindex(None).unwrap();
        assert!(!ch.index().search_tail_pending().unwrap());
        assert_eq!(hits(&ch), 2);
        // …in bulk, then gives FTS5 its usual settings back for what follows.
        let setting = |k: &str| -> i64 {
            ch.index()
                .conn()
                .query_row("SELECT v FROM bodies_fts_config WHERE k = ?1", [k], |r| {
                    r.get(0)
                })
                .unwrap()
        };
        assert_eq!(setting("automerge"), 4);
        assert_eq!(setting("hashsize"), 1 << 20);
        ch.append(&w, |_| Ok::<_, StoreError>((send(7), ())))
            .unwrap();
        assert!(ch.index_search_tail().unwrap());
        assert_eq!(hits(&ch), 3);
    }

    /// What a complete full-text index answers, row for row: each body row
    /// matching `xxx` (all bodies but the two shortest hold it) with FTS5's
    /// own rank, after FTS5's own check of the table against every body row.
    fn fts_answers(ch: &Channel) -> Vec<(i64, String)> {
        let c = ch.index().conn();
        c.execute_batch("INSERT INTO bodies_fts(bodies_fts, rank) VALUES ('integrity-check', 1)")
            .unwrap();
        fts_matches(ch)
    }

    /// The body rows matching `xxx` in the full-text index as it is, with
    /// their ranks.
    fn fts_matches(ch: &Channel) -> Vec<(i64, String)> {
        ch.index()
            .conn()
            .prepare(
                "SELECT rowid, printf('%.12g', bm25(bodies_fts)) FROM bodies_fts \
             WHERE bodies_fts MATCH '\"xxx\"' ORDER BY rowid",
            )
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    fn fts_setting(ch: &Channel, k: &str) -> i64 {
        ch.index()
            .conn()
            .query_row("SELECT v FROM bodies_fts_config WHERE k = ?1", [k], |r| {
                r.get(0)
            })
            .unwrap()
    }

    /// Every index of the index file, with its SQL.
    fn indexes(ch: &Channel) -> Vec<(String, String)> {
        ch.index()
            .conn()
            .prepare("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL ORDER BY name")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    #[test]
    fn a_rebuild_past_what_it_keeps_decoded_folds_the_same_state() {
        // Under test a pass keeps 4 KiB of sends and 64 links decoded
        // (`fold::records`): this history is past both, so the rebuild
        // folds most messages from the index's rows, where each write
        // folded its own from what it had just decoded.
        let tmp = tempfile::tempdir().unwrap();
        let mut ch = fresh(&tmp);
        let alpha = announced(&mut ch, &Role::new("alpha").unwrap());
        let beta = announced(&mut ch, &Role::new("beta").unwrap());
        let mut ids = Vec::new();
        for i in 0..30 {
            let debt = Op::Send(Send {
                to: vec![Role::new("beta").unwrap()],
                topic: format!("debt {i}"),
                body: format!("{i} ").repeat(100),
                action_required: i % 3 == 0,
                ..Send::default()
            });
            let (rec, ()) = ch
                .append(&alpha, |_| Ok::<_, StoreError>((debt, ())))
                .unwrap();
            ids.push(rec.id);
        }
        let ids_op = |ids: &[RecordId]| Ids { ids: ids.to_vec() };
        for op in [Op::Opened(ids_op(&ids)), Op::Read(ids_op(&ids))] {
            ch.append(&beta, |_| Ok::<_, StoreError>((op, ()))).unwrap();
        }
        for id in ids.iter().step_by(3) {
            let resolve = Op::Resolve(Note {
                id: *id,
                note: Some("done".into()),
            });
            ch.append(&beta, |_| Ok::<_, StoreError>((resolve, ())))
                .unwrap();
        }
        ch.settle().unwrap();
        let digest = ch.index().digest().unwrap();
        let report = ch.reindex(None).unwrap();
        assert_eq!(report.refolded, 30);
        assert_eq!(ch.index().digest().unwrap(), digest);
    }

    #[test]
    fn a_rebuild_makes_again_the_indexes_it_dropped_and_folds_the_same_state() {
        let tmp = tempfile::tempdir().unwrap();
        let mut ch = fresh(&tmp);
        let role = Role::new("alpha").unwrap();
        let w = announced(&mut ch, &role);
        for i in 0..5 {
            ch.append(&w, |_| Ok::<_, StoreError>((send(i), ())))
                .unwrap();
        }
        let (before, digest) = (indexes(&ch), ch.index().digest().unwrap());
        // One that a rebuild drops and makes again.
        assert!(before.iter().any(|(name, _)| name == "messages_order"));
        ch.reindex(None).unwrap();
        assert_eq!(indexes(&ch), before);
        assert_eq!(ch.index().digest().unwrap(), digest);
    }

    #[test]
    fn a_write_between_a_rebuilds_rows_and_its_search_index_is_indexed_without_stale_entries() {
        let tmp = tempfile::tempdir().unwrap();
        let mut ch = fresh(&tmp);
        let w = announced(&mut ch, &Role::new("alpha").unwrap());
        for i in 0..5 {
            ch.append(&w, |_| Ok::<_, StoreError>((send(i), ())))
                .unwrap();
        }
        ch.reindex(None).unwrap();
        let rows = |ch: &Channel| -> Vec<i64> { fts_answers(ch).iter().map(|m| m.0).collect() };
        // The body rows that hold `xxx`, read from the rows themselves.
        let holding = |ch: &Channel| -> Vec<i64> {
            let c = ch.index().conn();
            let mut st = c
                .prepare("SELECT rowid FROM bodies WHERE instr(body, 'xxx') > 0 ORDER BY rowid")
                .unwrap();
            st.query_map([], |r| r.get(0))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap()
        };
        assert_eq!(rows(&ch), holding(&ch));
        assert_eq!(rows(&ch).len(), 3, "the bodies of sends 2 to 4");
        // The rows again (the body rows anew, numbered from 1), then a write
        // before any step of the full-text index.
        ch.reindex_rows(None).unwrap();
        ch.append(&w, |_| Ok::<_, StoreError>((send(5), ())))
            .unwrap();
        assert!(ch.index().search_backlog().unwrap().is_some());
        assert!(ch.index_search_tail().unwrap());
        assert_eq!(ch.index().search_backlog().unwrap(), None);
        assert_eq!(rows(&ch), holding(&ch), "each body once, none stale");
        assert_eq!(rows(&ch).len(), 4);
    }

    #[test]
    fn a_rebuild_cut_after_its_rows_is_completed_by_the_next_opener() {
        let tmp = tempfile::tempdir().unwrap();
        let mut ch = fresh(&tmp);
        let role = Role::new("alpha").unwrap();
        let w = announced(&mut ch, &role);
        for i in 0..11 {
            ch.append(&w, |_| Ok::<_, StoreError>((send(i), ())))
                .unwrap();
        }
        ch.reindex(None).unwrap();
        let whole = fts_answers(&ch);
        assert_eq!(whole.len(), 9);
        let digest = ch.index().digest().unwrap();
        assert_eq!(ch.index().search_backlog().unwrap(), None);

        // The rows land and the full-text index is left for later, as a
        // rebuild stopped between its phases (a crash) leaves it.
        ch.reindex_rows(None).unwrap();
        assert_eq!(ch.index().digest().unwrap(), digest, "every row is there");
        assert_eq!(
            ch.index().search_backlog().unwrap(),
            Some(SearchBacklog {
                indexed: 0,
                total: 11
            })
        );
        // The full-text index still holds the entries of the rows thrown
        // away: the first step empties it (searches refuse until then).
        assert!(!fts_matches(&ch).is_empty());
        drop(ch);

        // The next process finds the backlog in the index itself and fills
        // it step by step (4 rows a step here), each step committed.
        let mut ch = Channel::open(
            ChannelDir::open(&tmp.path().join("channel")).unwrap(),
            Home::at(tmp.path().join("home")),
        )
        .unwrap();
        ch.set_search_batch(4);
        let left = ch.index_search_within(Duration::ZERO).unwrap();
        assert_eq!(
            left,
            Some(SearchBacklog {
                indexed: 4,
                total: 11
            })
        );
        let rows: Vec<i64> = fts_matches(&ch).iter().map(|m| m.0).collect();
        let first: Vec<i64> = whole.iter().map(|m| m.0).filter(|&r| r <= 4).collect();
        assert!(!first.is_empty());
        assert_eq!(rows, first, "body rows 1 to 4, and none of the stale ones");
        assert_eq!(
            fts_setting(&ch, "automerge"),
            0,
            "merging waits for the end"
        );
        // Cut again mid-fill: the mark in the index carries the fill on.
        drop(ch);
        let mut ch = Channel::open(
            ChannelDir::open(&tmp.path().join("channel")).unwrap(),
            Home::at(tmp.path().join("home")),
        )
        .unwrap();
        ch.set_search_batch(4);
        assert!(ch.index_search_tail().unwrap());
        assert_eq!(ch.index().search_backlog().unwrap(), None);
        assert_eq!(
            fts_answers(&ch),
            whole,
            "exactly what a whole rebuild indexes"
        );
        assert_eq!(fts_setting(&ch, "automerge"), 4);
        assert_eq!(fts_setting(&ch, "hashsize"), 1 << 20);
        assert_eq!(ch.index().digest().unwrap(), digest);
        // Ordinary writes after it are indexed as before.
        ch.append(&w, |_| Ok::<_, StoreError>((send(11), ())))
            .unwrap();
        assert_eq!(ch.index_search_within(Duration::ZERO).unwrap(), None);
        assert_eq!(fts_answers(&ch).len(), 10);
    }
}
