//! Ingest: reading every feed file into the index, incrementally.
//!
//! Per file a cursor (offset plus a hash of the line ending there) lets a pass
//! continue where the last one stopped, whatever the inode (git rewrites files
//! on pull); when the cursor line no longer matches, the file is rescanned and
//! records already known are skipped by id. Each new record is checked (channel,
//! feed, key, signature, chain) and then either accepted, quarantined, or left
//! waiting (a gap, a feed not admitted yet). Accepted records re-fold the
//! messages they touch. Reading is tolerant: nothing here panics or stops on a
//! bad line, and every skip is recorded in `problems`.
//!
//! Time only holds, never rejects: a record dated more than
//! [`HOLD_AHEAD_MS`] past local time is held (not applied, not witnessed,
//! recorded as a `held` problem) and looked at again on every pass; more
//! than [`CLOCK_ALARM_MS`] ahead also raises a `clock` alarm for its feed.
//!
//! A fork (two valid records at one seq of a feed) takes back every record of
//! that feed from the forked seq on, whichever branch arrived first, and
//! freezes the feed after the last common record: every machine ends in the
//! same state whatever order the branches arrive in. The lines stay in the
//! files as proof and the `fork` problem names both records.
//!
//! Runs inside the caller's write transaction; it never writes feed files.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fs;
use std::io::{Read as _, Seek as _, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use ed25519_dalek::VerifyingKey;
use rusqlite::{OptionalExtension as _, params};

use crate::core::chain::{self, Fit, Head};
use crate::core::hlc::Hlc;
use crate::core::ids::{FeedId, RecordId, Role, sha256_hex};
use crate::core::invitation::Standing;
use crate::core::memory;
use crate::core::op::{Backfill, Op, OpKind, UndoBackfill};
use crate::core::peer_text::{describe, first_hazard};
use crate::core::record::{self, MAX_LINE, Record, parse_pubkey};
use crate::core::signature;
use crate::store::clock::now_ms;
use crate::store::error::{IoContext as _, SqlContext as _, StoreResult};
use crate::store::fold::consent;
use crate::store::fold::invitation;
use crate::store::fold::message::refold_with;
use crate::store::fold::records::{Acting, SendRow};
use crate::store::fold::upload;
use crate::store::folder::layout::ChannelDir;
use crate::store::folder::listing::{self, Listing, Tree};
use crate::store::folder::segments;
use crate::store::folder::segments::{Line, Segment};
use crate::store::folder::survey;
use crate::store::folder_file::{FolderError, Refusal};
use crate::store::index::{FeedRow, IndexTx, ProblemKind};

mod read_ahead;
use read_ahead::{ReadAhead, verify_lines};

/// The `feed` column of problems about the role and device folders
/// themselves (files of one feed folder carry that feed's id).
const FOLDER_SCOPE: &str = "feeds";

/// The kinds of problem a listing of the folders finds or clears (see
/// [`Ingest::may_stand`]).
const FOLDER_KINDS: [ProblemKind; 4] = [
    ProblemKind::WrongType,
    ProblemKind::Stray,
    ProblemKind::Oversize,
    ProblemKind::Cut,
];

/// At most this many missing records of one feed are looked for further on
/// in the feed in one pass (the rest wait for the next).
const MAX_GAP_FILLS: usize = 64;

/// A record dated more than this far past local time is held.
pub const HOLD_AHEAD_MS: i64 = 5 * 60 * 1000;
/// A record dated more than this far past local time also raises a clock alarm.
pub const CLOCK_ALARM_MS: i64 = 24 * 60 * 60 * 1000;

/// What one ingest pass did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IngestReport {
    /// Records accepted into the index.
    pub accepted: usize,
    /// Problems recorded for the first time (garbage, quarantine, forks…).
    pub new_problems: usize,
    /// Feeds whose reading is paused, with the reason (gap, not admitted, frozen).
    pub waiting: Vec<String>,
    /// Messages re-folded.
    pub refolded: usize,
    /// Claims of invitations that the owner's machine should admit now
    /// (`store::fold::invitation`): filled only by a pass that reviewed claims.
    pub admissible: Vec<crate::store::fold::invitation::Reviewed>,
    /// Admits written for such claims (by `Channel::catch_up`, on the owner's machine).
    pub admitted: usize,
    /// Feed folders listed (read as a folder) in this pass: the others were
    /// known unchanged by their times, from this process's earlier passes
    /// or from the listing an earlier process kept ([`crate::store::folder::listing`]).
    pub listed: usize,
    /// Feed folders looked at (their time read, at least) in this pass: a
    /// skipped one ([`ScanCache`]) is not.
    pub looked: usize,
}

/// A file's cursor row: size and mtime when last read, the offset read to,
/// and the length and hash of the line ending there.
type Cursor = (i64, i64, i64, i64, String);

fn cursor_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Cursor> {
    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
}

/// A file as last seen: path, size and mtime.
type FileStamp = (PathBuf, u64, Option<SystemTime>);

/// The most public keys [`ScanCache`] keeps parsed.
const KEYS_KEPT: usize = 4096;

/// What this process remembers between passes so that a pass over an
/// unchanged folder costs a few `stat` calls.
#[derive(Clone, Debug, Default)]
pub struct ScanCache {
    feeds_mtime: Option<SystemTime>,
    role_mtimes: HashMap<PathBuf, SystemTime>,
    feeds: Arc<[(FeedId, PathBuf)]>,
    dirs: HashMap<PathBuf, DirScan>,
    files: HashMap<PathBuf, (u64, SystemTime)>,
    /// Per feed, the last fruitless search for a missing record: its seq and
    /// the files searched (path, size, mtime). Searched again on a change.
    gap_searches: HashMap<FeedId, (u64, Vec<FileStamp>)>,
    /// True when the last full pass left nothing waiting or held.
    settled: bool,
    /// Public keys as parsed before (hex → key), so that a pass does not
    /// decompress every feed's key again: a point decompression each, about
    /// 3 µs, on every write.
    keys: HashMap<String, Option<VerifyingKey>>,
    /// True when the listing of `feeds/` and its role folders found nothing
    /// stray (it may then be kept, see [`crate::store::folder::listing`]).
    tree_clean: bool,
    /// True when something was listed since the listing was last handed out
    /// ([`Self::take_listing`]).
    listing_dirty: bool,
    /// Per role folder, how many of its feed folders are skipped: feeds
    /// nobody admitted whose first record was judged already (noted as a
    /// claim, or found not to be one), left out of `feeds` and so never
    /// looked at, not even by a `stat`, while the role folder keeps the time
    /// it had when they were judged (see [`Self::unskipped`]) and no feed
    /// of the role is admitted ([`Ingest::admitted_skipped`]).
    skipped: HashMap<PathBuf, usize>,
    /// True once a skipped feed waited (its records wait for an admission):
    /// passes keep running as while it was read, so that the claims are
    /// reviewed as time goes by.
    skipped_waits: bool,
}

impl ScanCache {
    /// Forgets everything (the next pass looks at every file).
    pub fn clear(&mut self) {
        *self = Self::default();
    }

    /// The public key written as `hex`, parsed once per process. The memo
    /// holds the keys of the feeds table; one past [`KEYS_KEPT`] entries
    /// starts it afresh, so a folder of endless feeds cannot grow it.
    fn key(&mut self, hex: &str) -> Option<VerifyingKey> {
        if let Some(k) = self.keys.get(hex) {
            return *k;
        }
        if self.keys.len() >= KEYS_KEPT {
            self.keys.clear();
        }
        let k = parse_pubkey(hex);
        self.keys.insert(hex.to_owned(), k);
        k
    }

    /// True when a pass would find nothing to do: the last full pass left
    /// nothing waiting or held, and the feed folders and the segments it had
    /// not finished with are as it left them. The same `stat` calls as a
    /// pass over an unchanged folder, without its transaction and queries.
    /// True before the first pass with this cache (and after [`Self::clear`]).
    pub fn is_blank(&self) -> bool {
        self.feeds_mtime.is_none() && self.dirs.is_empty() && self.files.is_empty()
    }

    /// Takes `listing` (kept by an earlier process) as what the folders
    /// held: each entry is used only while its folder's time still matches.
    /// Its folders are treated as listed anew by the next pass, except that
    /// it does not list them (see [`DirScan::recalled`]).
    pub fn recall(&mut self, listing: Listing) {
        if let Some(tree) = listing.tree {
            self.feeds_mtime = Some(tree.root);
            self.role_mtimes = tree.roles.into_iter().collect();
            self.feeds = tree.feeds.into();
            self.skipped = tree.skipped.into_iter().filter(|(_, n)| *n > 0).collect();
            self.tree_clean = true;
        }
        for (dir, mtime, segments) in listing.dirs {
            self.dirs.insert(
                dir,
                DirScan {
                    mtime,
                    segments: segments.into(),
                    checked: 0,
                    checked_head: 0,
                    clean: true,
                    recalled: true,
                },
            );
        }
        self.listing_dirty = false;
    }

    /// The listing to keep for the next process, when something was listed
    /// since the last one was handed out: the folders whose listings found
    /// nothing stray and whose times lie [`listing::SETTLE`] before `now`.
    /// While some are left out for being too recent, the next call hands one
    /// out again.
    pub fn take_listing(&mut self, now: SystemTime) -> Option<Listing> {
        if !self.listing_dirty {
            return None;
        }
        let mut whole = true;
        let mut settled = |m: SystemTime| {
            let ok = listing::settled(m, now);
            whole &= ok;
            ok
        };
        let tree = match self.feeds_mtime {
            Some(root)
                if self.tree_clean
                    && settled(root)
                    && self.role_mtimes.values().all(|m| settled(*m)) =>
            {
                Some(Tree {
                    root,
                    roles: self
                        .role_mtimes
                        .iter()
                        .map(|(p, m)| (p.clone(), *m))
                        .collect(),
                    feeds: self.feeds.to_vec(),
                    skipped: self.skipped.iter().map(|(p, n)| (p.clone(), *n)).collect(),
                })
            }
            _ => None,
        };
        let dirs = self
            .feeds
            .iter()
            .filter_map(|(_, dir)| self.dirs.get(dir).map(|d| (dir, d)))
            .filter(|(_, d)| d.clean && settled(d.mtime))
            .map(|(dir, d)| (dir.clone(), d.mtime, d.segments.to_vec()))
            .collect();
        self.listing_dirty = !whole;
        Some(Listing { tree, dirs })
    }

    /// The feed folders of a new listing, `feeds`, less the ones still
    /// skipped. A role folder's skipped folders stay skipped while its time
    /// is the one they were judged under (`before`, as `role_mtimes` held
    /// it): no folder was added or removed there, so they are exactly its
    /// folders that the last listing kept. Otherwise (its time moved, it
    /// could not be read, or the count does not match) every one of them is
    /// looked at again.
    fn unskipped(
        &mut self,
        before: &HashMap<PathBuf, SystemTime>,
        roles: &[(PathBuf, Option<SystemTime>)],
        feeds: Vec<survey::FeedFolder>,
    ) -> Vec<survey::FeedFolder> {
        if self.skipped.is_empty() {
            return feeds;
        }
        let listed: HashSet<&Path> = self.feeds.iter().map(|(_, d)| d.as_path()).collect();
        let mut unlisted: HashMap<&Path, usize> = HashMap::new();
        for (_, dir) in &feeds {
            if !listed.contains(dir.as_path())
                && let Some(role) = dir.parent()
            {
                *unlisted.entry(role).or_default() += 1;
            }
        }
        let standing: HashMap<PathBuf, usize> = roles
            .iter()
            .filter_map(|(role, mtime)| {
                let n = *self.skipped.get(role)?;
                let same = mtime.is_some() && before.get(role) == mtime.as_ref();
                (same && unlisted.get(role.as_path()) == Some(&n)).then(|| (role.clone(), n))
            })
            .collect();
        let kept = feeds
            .into_iter()
            .filter(|(_, dir)| {
                listed.contains(dir.as_path())
                    || !dir.parent().is_some_and(|r| standing.contains_key(r))
            })
            .collect();
        self.skipped = standing;
        kept
    }

    /// Stops looking at the feed folders `judged` (see [`Self::skipped`]).
    fn skip(&mut self, judged: &HashSet<PathBuf>) {
        let mut kept = Vec::with_capacity(self.feeds.len());
        for (feed, dir) in self.feeds.iter() {
            let role = dir.parent().filter(|r| self.role_mtimes.contains_key(*r));
            match role {
                Some(role) if judged.contains(dir) => {
                    *self.skipped.entry(role.to_path_buf()).or_default() += 1;
                    if let Some(d) = self.dirs.remove(dir) {
                        for s in d.segments.iter() {
                            self.files.remove(&s.path);
                        }
                    }
                }
                _ => kept.push((feed.clone(), dir.clone())),
            }
        }
        if kept.len() != self.feeds.len() {
            self.feeds = kept.into();
            self.listing_dirty = true;
        }
    }

    /// Looks at the skipped feed folders of `roles` again, on the next
    /// listing (which the next pass makes).
    fn reexamine(&mut self, roles: &[PathBuf]) {
        for r in roles {
            self.skipped.remove(r);
        }
        self.feeds_mtime = None;
        self.settled = false;
    }

    pub fn unchanged(&self, feeds_root: &Path) -> bool {
        self.settled
            && self.feeds_mtime.is_some()
            && mtime_of(feeds_root) == self.feeds_mtime
            && self
                .role_mtimes
                .iter()
                .all(|(p, m)| mtime_of(p).as_ref() == Some(m))
            && self.feeds.iter().all(|(_, dir)| {
                self.dirs.get(dir).is_some_and(|d| {
                    mtime_of(dir) == Some(d.mtime)
                        && d.segments[d.checked..].iter().all(|s| {
                            let now = fs::metadata(&s.path)
                                .ok()
                                .and_then(|m| Some((m.len(), m.modified().ok()?)));
                            now.is_some() && now.as_ref() == self.files.get(&s.path)
                        })
                })
            })
    }
}

/// A feed folder as last listed.
#[derive(Clone, Debug)]
struct DirScan {
    mtime: SystemTime,
    segments: Arc<[Segment]>,
    /// How many leading segments the last pass found complete and fully read
    /// (in `files`), and the feed's head seq then. While the listing stands
    /// and the head has not gone back (a fork taken back), the next pass
    /// starts after them instead of looking each one up again: a feed of
    /// hundreds of segments then costs a pass two `stat` calls, not hundreds
    /// of lookups. A folder listed again (its head replaced, a segment
    /// added) keeps as many of them as it still lists as the same files
    /// (name and inode, from the listing alone). As for an unchanged folder,
    /// a complete segment rewritten in place under the same inode is not
    /// read again until the process starts anew.
    checked: usize,
    checked_head: u64,
    /// True when its listing found nothing stray.
    clean: bool,
    /// True while it comes from a listing an earlier process kept and no
    /// pass of this one has looked at the feed: the next pass treats the
    /// folder as listed anew (the feed's head checked for a cut), without
    /// listing it.
    recalled: bool,
}

#[derive(Clone, Debug)]
struct FeedState {
    role: String,
    pubkey: Option<VerifyingKey>,
    /// An owner-signed key replacement that starts at a seq not reached yet.
    pending_key: Option<(u64, VerifyingKey)>,
    head: Option<Head>,
    frozen: Option<String>,
    dirty: bool,
}

impl FeedState {
    /// True when the state says nothing a new [`Ingest::feed_state`] would
    /// not: no key (not admitted), no record applied, not frozen.
    fn is_blank(&self) -> bool {
        self.pubkey.is_none()
            && self.pending_key.is_none()
            && self.head.is_none()
            && self.frozen.is_none()
    }
}

enum Verdict {
    Consumed,
    Wait(String),
}

/// One ingest pass over the channel folder.
pub struct Ingest<'a, 'p> {
    index: &'a IndexTx<'a>,
    dir: &'a ChannelDir,
    owner_key: Option<VerifyingKey>,
    feeds: HashMap<FeedId, FeedState>,
    touched: BTreeSet<RecordId>,
    /// Uploads that gained a chunk or a seal in this pass.
    uploads: BTreeSet<RecordId>,
    /// Sends accepted in this pass, kept decoded so re-folding them needs no
    /// second read and parse.
    fresh: HashMap<RecordId, SendRow>,
    /// The records acting on messages accepted in this pass, kept decoded
    /// likewise (used when the pass began with none in the index).
    acting: Acting,
    /// The keys of the pin writes this pass accepted.
    pin_keys: BTreeSet<String>,
    report: IngestReport,
    progress: Option<&'p mut dyn FnMut(u64)>,
    /// The key the last [`Self::verify_ahead`] checked with: its verdicts
    /// hold only while the feed still has that key.
    ahead_key: Option<VerifyingKey>,
    /// Local wall-clock time of this pass (ms), for holding future records.
    now_ms: i64,
    /// Records held on an earlier pass (their `held` problems go once applied).
    held: HashSet<String>,
    /// The seq the last waiting line was missing, when it waited on a gap.
    gap: Option<u64>,
    /// True once a fork took records back: consent is folded again whole.
    refold_all: bool,
    /// Every file cursor's size and mtime, read in one query when this
    /// process has not seen the folder yet (its first pass looks at every
    /// segment, most of them unchanged); `None` once it has. A file changed
    /// has its whole cursor looked up alone.
    cursors: Option<HashMap<String, (i64, i64)>>,
    /// Read with the cursors: the feeds (and listing scopes) that have
    /// problems of [`FOLDER_KINDS`] standing, and of which kinds. A first
    /// pass lists every feed folder; a folder with none (most, and every
    /// junk folder a peer planted) then costs no query. `None` when not read:
    /// each listing looks its problems up.
    folder_problems: Option<HashMap<String, Vec<ProblemKind>>>,
    /// Records whose signature needs no check: this process made them a
    /// moment ago (see [`Vouch`]).
    vouched: HashSet<Vouch>,
    /// True once a file of the feed being read ended in a torn line.
    torn: bool,
    /// True once this pass noted a claim or accepted an invite or an admit:
    /// the claims are reviewed again at its end.
    claims_changed: bool,
    /// A pass over the feed this device just appended to ([`Self::run_own`]).
    own_write: bool,
    /// Set by [`Self::ingest_file`]: the file's time when its first record
    /// is judged (read, or known read, from its start, no torn tail).
    judged: Option<SystemTime>,
    /// The feed folders this pass judged, to be skipped from now on (see
    /// [`ScanCache::skipped`]), each with whether its records wait.
    to_skip: HashMap<PathBuf, (FeedId, bool)>,
}

/// A record known to be signed by a key without checking: its id (the hash
/// of its body), its signature and the key's bytes. The same id and
/// signature under the same key are the same signed bytes, so a line that
/// matches needs no second verification.
pub type Vouch = (RecordId, [u8; 64], [u8; 32]);

/// The vouch for `rec`, signed with `key` by this process.
pub fn vouch(rec: &Record, key: &VerifyingKey) -> Vouch {
    (rec.id, rec.sig.to_bytes(), key.to_bytes())
}

impl<'a, 'p> Ingest<'a, 'p> {
    /// Runs one pass inside the write transaction `index` ([`super::Index::write`]).
    pub fn run(
        index: &'a IndexTx<'a>,
        dir: &'a ChannelDir,
        cache: &mut ScanCache,
    ) -> StoreResult<IngestReport> {
        Self::run_with_progress(index, dir, cache, None)
    }

    /// Like [`Self::run`], reporting the bytes read after each file.
    pub fn run_with_progress(
        index: &'a IndexTx<'a>,
        dir: &'a ChannelDir,
        cache: &mut ScanCache,
        progress: Option<&'p mut dyn FnMut(u64)>,
    ) -> StoreResult<IngestReport> {
        Self::run_full(index, dir, cache, progress, now_ms())
    }

    /// Ingests what a writer just appended to its own `feed`, trusting the
    /// signatures of the `vouched` records (its own, just signed: checking
    /// them again only costs time). Other feeds are left to the next pass:
    /// arrival order does not change the state.
    pub fn run_own(
        index: &'a IndexTx<'a>,
        dir: &'a ChannelDir,
        cache: &mut ScanCache,
        feed: &FeedId,
        vouched: HashSet<Vouch>,
    ) -> StoreResult<IngestReport> {
        let mut me = Self::new(index, dir, None, now_ms(), vouched);
        me.own_write = true;
        me.load(cache)?;
        let path = dir.feed_dir(feed);
        me.ingest_feed(feed, &path, cache)?;
        // An admit written here: the admitted feed's folder, if skipped, is
        // looked at by the next pass.
        let again = me.admitted_skipped(cache);
        if !again.is_empty() {
            cache.reexamine(&again);
        }
        cache.settled &= me.quiet();
        me.finish()
    }

    /// Like [`Self::run`], as if local time were `now_ms`: records dated
    /// past it are held (see the module docs).
    pub fn run_at(
        index: &'a IndexTx<'a>,
        dir: &'a ChannelDir,
        cache: &mut ScanCache,
        now_ms: i64,
    ) -> StoreResult<IngestReport> {
        Self::run_full(index, dir, cache, None, now_ms)
    }

    fn run_full(
        index: &'a IndexTx<'a>,
        dir: &'a ChannelDir,
        cache: &mut ScanCache,
        progress: Option<&'p mut dyn FnMut(u64)>,
        now_ms: i64,
    ) -> StoreResult<IngestReport> {
        let mut me = Self::new(index, dir, progress, now_ms, HashSet::new());
        me.load(cache)?;
        if cache.files.is_empty() {
            me.load_cursors()?;
            me.load_folder_problems()?;
        }
        cache.settled = false;
        // A feed admitted since its folder was skipped (by an earlier
        // process whose listing was kept): its role's folders are listed
        // and looked at again.
        let again = me.admitted_skipped(cache);
        if !again.is_empty() {
            cache.reexamine(&again);
        }
        for (feed, path) in me.feed_dirs(cache)?.iter() {
            me.ingest_feed(feed, path, cache)?;
        }
        // Admitted in this pass: its folder is read in this pass too.
        let again = me.admitted_skipped(cache);
        if !again.is_empty() {
            cache.reexamine(&again);
            for (feed, path) in me.feed_dirs(cache)?.iter() {
                if path.parent().is_some_and(|r| again.iter().any(|a| a == r)) {
                    me.ingest_feed(feed, path, cache)?;
                }
            }
        }
        me.skip_judged(cache);
        cache.settled = me.quiet() && !cache.skipped_waits;
        me.finish()
    }

    fn new(
        index: &'a IndexTx<'a>,
        dir: &'a ChannelDir,
        progress: Option<&'p mut dyn FnMut(u64)>,
        now_ms: i64,
        vouched: HashSet<Vouch>,
    ) -> Self {
        Self {
            now_ms,
            vouched,
            held: HashSet::new(),
            gap: None,
            refold_all: false,
            progress,
            index,
            dir,
            owner_key: None,
            feeds: HashMap::new(),
            touched: BTreeSet::new(),
            uploads: BTreeSet::new(),
            fresh: HashMap::new(),
            acting: Acting::default(),
            pin_keys: BTreeSet::new(),
            report: IngestReport::default(),
            ahead_key: None,
            cursors: None,
            folder_problems: None,
            torn: false,
            claims_changed: false,
            own_write: false,
            judged: None,
            to_skip: HashMap::new(),
        }
    }

    /// The role folders with skipped feed folders of which one may be a
    /// feed with a key now (admitted): a feed of the role with a key whose
    /// folder is there but not listed, so one of the skipped.
    fn admitted_skipped(&self, cache: &ScanCache) -> Vec<PathBuf> {
        if cache.skipped.is_empty() {
            return Vec::new();
        }
        let root = self.dir.feeds();
        let listed: HashSet<&Path> = cache.feeds.iter().map(|(_, d)| d.as_path()).collect();
        let mut out: Vec<PathBuf> = Vec::new();
        for (feed, st) in &self.feeds {
            if st.is_blank() || feed.is_owner() {
                continue;
            }
            let role = root.join(feed.role());
            if out.contains(&role) || !cache.skipped.contains_key(&role) {
                continue;
            }
            let dir = role.join(feed.device());
            let there = fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir());
            if there && !listed.contains(dir.as_path()) {
                out.push(role);
            }
        }
        out
    }

    /// Skips from now on the feed folders this pass judged (see
    /// [`ScanCache::skipped`]) that still have no key.
    fn skip_judged(&mut self, cache: &mut ScanCache) {
        let judged = std::mem::take(&mut self.to_skip);
        let mut dirs = HashSet::new();
        for (dir, (feed, waits)) in judged {
            if self.feeds.get(&feed).is_none_or(FeedState::is_blank) {
                cache.skipped_waits |= waits;
                dirs.insert(dir);
            }
        }
        if !dirs.is_empty() {
            cache.skip(&dirs);
        }
    }

    /// True when nothing waits or is held: the next pass over an unchanged
    /// folder would have nothing to do.
    fn quiet(&self) -> bool {
        self.report.waiting.is_empty() && self.held.is_empty()
    }

    /// Loads what a pass needs to know from the index.
    fn load(&mut self, cache: &mut ScanCache) -> StoreResult<()> {
        self.acting = Acting::begin(self.index)?;
        self.owner_key = cache.key(&self.dir.genesis().owner_pubkey);
        self.load_feeds(cache)?;
        self.load_pending_keys()?;
        self.load_held()
    }

    /// Saves the feeds' heads and folds what the pass touched.
    fn finish(mut self) -> StoreResult<IngestReport> {
        self.save_feeds()?;
        self.refold_touched()?;
        self.review_claims()?;
        Ok(self.report)
    }

    /// Reviews the invitations' claims when this pass may have changed
    /// what they are worth (or one waits, and time may have): keeps their
    /// alarms and reports the ones to admit.
    fn review_claims(&mut self) -> StoreResult<()> {
        if !self.claims_changed && !invitation::any_open(self.index)? {
            return Ok(());
        }
        let reviewed = invitation::review(self.index, self.dir.id(), self.now_ms)?;
        self.report.new_problems += invitation::settle_alarms(self.index, &reviewed)?;
        self.report.admissible = reviewed
            .into_iter()
            .filter(|r| r.standing == Standing::Admissible)
            .collect();
        Ok(())
    }

    fn feed_dirs(&mut self, cache: &mut ScanCache) -> StoreResult<Arc<[(FeedId, PathBuf)]>> {
        let root = self.dir.feeds();
        let root_mtime = mtime_of(&root);
        let unchanged = root_mtime.is_some()
            && cache.feeds_mtime == root_mtime
            && cache
                .role_mtimes
                .iter()
                .all(|(p, m)| mtime_of(p).as_ref() == Some(m));
        if !unchanged {
            let survey = survey::survey_feeds(&root)?;
            self.report_strays(FOLDER_SCOPE, &survey.strays)?;
            let before = std::mem::take(&mut cache.role_mtimes);
            cache.feeds = cache.unskipped(&before, &survey.roles, survey.feeds).into();
            // A role folder whose time could not be read cannot vouch for
            // its listing: the next pass lists everything again.
            let timed = survey.roles.iter().all(|(_, m)| m.is_some());
            cache.feeds_mtime = root_mtime.filter(|_| timed);
            cache.role_mtimes = survey
                .roles
                .into_iter()
                .filter_map(|(p, m)| Some((p, m?)))
                .collect();
            cache.tree_clean = survey.strays.is_empty();
            cache.listing_dirty = true;
        }
        Ok(Arc::clone(&cache.feeds))
    }

    fn load_feeds(&mut self, cache: &mut ScanCache) -> StoreResult<()> {
        let p = self.index.path();
        let mut st = self
            .index
            .conn()
            .prepare_cached(
                "SELECT feed, role, pubkey, head_seq, head_id, head_ms, head_c, frozen FROM feeds",
            )
            .db(p)?;
        let rows = st
            .query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, Option<String>>(2)?,
                    r.get::<_, i64>(3)?,
                    r.get::<_, Option<String>>(4)?,
                    r.get::<_, Option<i64>>(5)?,
                    r.get::<_, Option<i64>>(6)?,
                    r.get::<_, Option<String>>(7)?,
                ))
            })
            .db(p)?;
        for row in rows {
            let (feed, role, pubkey, seq, id, ms, c, frozen) = row.db(p)?;
            let Ok(feed) = FeedId::try_from(feed) else {
                continue;
            };
            let head = match (id.as_deref().and_then(RecordId::parse), ms, c) {
                (Some(id), Some(ms), Some(c)) if seq > 0 => Some(Head {
                    seq: seq as u64,
                    id,
                    hlc: Hlc(ms, c as u32),
                }),
                _ => None,
            };
            let pubkey = pubkey.as_deref().and_then(|k| cache.key(k));
            self.feeds.insert(
                feed,
                FeedState {
                    role,
                    pubkey,
                    pending_key: None,
                    head,
                    frozen,
                    dirty: false,
                },
            );
        }
        Ok(())
    }

    fn load_cursors(&mut self) -> StoreResult<()> {
        let p = self.index.path();
        let mut st = self
            .index
            .conn()
            .prepare_cached("SELECT path, size, mtime_ns FROM files")
            .db(p)?;
        let all = st
            .query_map([], |r| Ok((r.get::<_, String>(0)?, (r.get(1)?, r.get(2)?))))
            .and_then(|rows| rows.collect::<Result<HashMap<_, _>, _>>())
            .db(p)?;
        self.cursors = Some(all);
        Ok(())
    }

    fn load_folder_problems(&mut self) -> StoreResult<()> {
        let mut all: HashMap<String, Vec<ProblemKind>> = HashMap::new();
        for (scope, kind) in self.index.feeds_with_problems(&FOLDER_KINDS)? {
            all.entry(scope).or_default().push(kind);
        }
        self.folder_problems = Some(all);
        Ok(())
    }

    /// False when no problem of `kinds` can stand for `scope`, as read at
    /// the start of this pass and noted since ([`Self::note_standing`]):
    /// the listing then has nothing to clear and needs no query.
    fn may_stand(&self, kinds: &[ProblemKind], scope: &str) -> bool {
        self.folder_problems.as_ref().is_none_or(|all| {
            all.get(scope)
                .is_some_and(|ks| ks.iter().any(|k| kinds.contains(k)))
        })
    }

    /// Notes that a problem of `kind` may now stand for `scope`.
    fn note_standing(&mut self, kind: ProblemKind, scope: &str) {
        if let Some(all) = self.folder_problems.as_mut()
            && FOLDER_KINDS.contains(&kind)
        {
            all.entry(scope.to_owned()).or_default().push(kind);
        }
    }

    fn load_held(&mut self) -> StoreResult<()> {
        self.held
            .extend(self.index.problem_records(ProblemKind::Held)?);
        Ok(())
    }

    /// Owner key replacements whose first seq the feed has not reached yet.
    fn load_pending_keys(&mut self) -> StoreResult<()> {
        let p = self.index.path();
        let mut st = self
            .index
            .conn()
            .prepare_cached("SELECT feed, from_seq, pubkey FROM key_changes ORDER BY from_seq")
            .db(p)?;
        let rows = st
            .query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, String>(2)?,
                ))
            })
            .db(p)?;
        for row in rows {
            let (feed, from, key) = row.db(p)?;
            let (Ok(feed), Some(key)) = (FeedId::try_from(feed), parse_pubkey(&key)) else {
                continue;
            };
            if let Some(st) = self.feeds.get_mut(&feed)
                && st.head.map_or(0, |h| h.seq) < from as u64
                && st.pending_key.is_none()
            {
                st.pending_key = Some((from as u64, key));
            }
        }
        Ok(())
    }

    fn save_feeds(&mut self) -> StoreResult<()> {
        for (_, s) in self
            .feeds
            .iter_mut()
            .filter(|(_, s)| s.dirty && s.is_blank())
        {
            // Nothing to keep: no key, no record, not frozen (a folder
            // nobody admitted, junk included). Every later pass would load
            // the row for nothing; a feed without one starts blank anyway.
            s.dirty = false;
        }
        for (feed, s) in self.feeds.iter_mut().filter(|(_, s)| s.dirty) {
            self.index.save_feed(&FeedRow {
                feed: feed.to_string(),
                role: &s.role,
                pubkey: s.pubkey.as_ref().map(record::pubkey_hex),
                head_seq: s.head.map_or(0, |h| h.seq as i64),
                head_id: s.head.map(|h| h.id.hex()),
                head_ms: s.head.map(|h| h.hlc.0),
                head_c: s.head.map(|h| h.hlc.1),
                frozen: s.frozen.as_deref(),
            })?;
            s.dirty = false;
        }
        Ok(())
    }

    fn feed_state(&mut self, feed: &FeedId) -> &mut FeedState {
        // Looked up before any copy of the id is made: a pass asks several
        // times per feed, for thousands of feeds when junk folders abound.
        if !self.feeds.contains_key(feed) {
            let state = FeedState {
                role: feed.role().to_owned(),
                pubkey: if feed.is_owner() {
                    self.owner_key
                } else {
                    None
                },
                pending_key: None,
                head: None,
                frozen: None,
                dirty: true,
            };
            self.feeds.insert(feed.clone(), state);
        }
        self.feeds
            .get_mut(feed)
            .expect("the feed's state was inserted above")
    }

    fn ingest_feed(&mut self, feed: &FeedId, dir: &Path, cache: &mut ScanCache) -> StoreResult<()> {
        let dir_mtime = mtime_of(dir);
        self.report.looked += 1;
        let head = self.feed_state(feed).head.map_or(0, |h| h.seq);
        let mut recalled = false;
        let (segments, listed_again, skip) = match (dir_mtime, cache.dirs.get_mut(dir)) {
            (Some(m), Some(d)) if d.mtime == m => {
                let skip = if head >= d.checked_head { d.checked } else { 0 };
                recalled = std::mem::take(&mut d.recalled);
                (Arc::clone(&d.segments), false, skip)
            }
            _ => {
                let before = cache.dirs.get(dir).cloned();
                let (segs, strays) = match survey::survey_segments(dir) {
                    Ok(survey) => survey,
                    // Gone since the feeds were listed (a checkout): nothing to read.
                    Err(e) if e.source.kind() == std::io::ErrorKind::NotFound => {
                        (Vec::new(), Vec::new())
                    }
                    Err(e) => return Err(e.into()),
                };
                self.report_strays(&feed.to_string(), &strays)?;
                self.forget_oversize(feed, &segs)?;
                let segs: Arc<[Segment]> = segs.into();
                // The leading segments listed as before, each the same file
                // (name and inode), that the last pass found complete and
                // read: the folder changed elsewhere (its head replaced, a
                // segment added), so they are not looked at again.
                let skip = before.map_or(0, |d| {
                    let same = segs
                        .iter()
                        .zip(d.segments.iter())
                        .take_while(|(now, then)| now.path == then.path && now.ino == then.ino)
                        .count();
                    if head >= d.checked_head {
                        d.checked.min(same)
                    } else {
                        0
                    }
                });
                cache.listing_dirty = true;
                self.report.listed += 1;
                match dir_mtime {
                    Some(m) => {
                        cache.dirs.insert(
                            dir.to_path_buf(),
                            DirScan {
                                mtime: m,
                                segments: Arc::clone(&segs),
                                checked: 0,
                                checked_head: 0,
                                clean: strays.is_empty(),
                                recalled: false,
                            },
                        );
                    }
                    None => {
                        cache.dirs.remove(dir);
                    }
                }
                (segs, true, skip)
            }
        };
        // While the folder is unchanged only the newest segment can grow. Once
        // it changed (a new segment, a replaced file), every segment past the
        // ones still known complete is looked at: the previous newest may have
        // grown before the next one started.
        // An older segment whose records are not all in yet is looked at too:
        // its rest may be written in place (a copy in flight, `cp`), which
        // leaves the folder unchanged.
        let last = segments.len().saturating_sub(1);
        let done = |i: usize, head: u64, cache: &ScanCache| {
            let complete = segments
                .get(i + 1)
                .is_some_and(|next| head + 1 >= next.first_seq);
            i < last && complete && cache.files.contains_key(&segments[i].path)
        };
        // The files this pass reads whole (none has a cursor yet: a rebuild,
        // or files new to this process's first pass) are read ahead.
        let plan: Vec<PathBuf> = match &self.cursors {
            Some(all) => segments[skip..]
                .iter()
                .filter(|s| !all.contains_key(&self.rel(&s.path)))
                .map(|s| s.path.clone())
                .collect(),
            None => Vec::new(),
        };
        let (key, head_seq) = {
            let st = self.feed_state(feed);
            (st.pubkey, st.head.map_or(0, |h| h.seq))
        };
        let mut waits = false;
        self.torn = false;
        let mut first_judged = None;
        std::thread::scope(|scope| -> StoreResult<()> {
            let mut ahead = ReadAhead::start(scope, plan, key, head_seq);
            let mut filled = 0;
            let mut i = skip;
            while let Some(seg) = segments.get(i) {
                if !listed_again && done(i, head, cache) {
                    i += 1;
                    continue;
                }
                self.gap = None;
                let waited = self.ingest_file(feed, &seg.path, cache, &mut ahead)?;
                if i == 0 {
                    first_judged = self.judged;
                }
                if let Some(reason) = waited {
                    // A record missing here may stand further on in the feed (put
                    // back by hand at the end, say): apply it, then read on.
                    if let Some(expected) = self.gap.take()
                        && filled < MAX_GAP_FILLS
                        && self.fill_gap(feed, &segments[i..], expected, cache)?
                    {
                        filled += 1;
                        continue;
                    }
                    self.report.waiting.push(format!("{feed}: {reason}"));
                    waits = true;
                    break;
                }
                i += 1;
            }
            Ok(())
        })?;
        // Remember how far the segments are complete and read, for the next pass.
        let before = head;
        let head = self.feed_state(feed).head.map_or(0, |h| h.seq);
        if listed_again || recalled || head != before {
            // A torn tail is a record on its way: not a cut.
            let waits = waits || self.torn;
            self.check_cut(feed, dir, waits)?;
        }
        let mut checked = if head >= before { skip } else { 0 };
        while checked < segments.len() && done(checked, head, cache) {
            checked += 1;
        }
        if let Some(d) = cache.dirs.get_mut(dir) {
            d.checked = checked;
            d.checked_head = head;
        }
        // A folder nobody admitted whose first record is judged (a claim
        // noted, or found not to be one) is not looked at again until its
        // role folder changes or a feed of the role is admitted. Not while
        // its folder or first segment may still be written (a time too
        // recent), nor with a torn first segment (a device mid-sync): see
        // [`ScanCache::skipped`].
        let now = SystemTime::now();
        if let (Some(seg_mtime), Some(dir_mtime)) = (first_judged, dir_mtime)
            && !self.own_write
            && !feed.is_owner()
            && self.feed_state(feed).is_blank()
            && listing::settled(seg_mtime, now)
            && listing::settled(dir_mtime, now)
        {
            self.to_skip
                .insert(dir.to_path_buf(), (feed.clone(), waits));
        }
        Ok(())
    }

    /// Looks for the record at `expected` (the seq a line waits for) further
    /// on in `segments`, and applies it if one fits. Its place in the files
    /// does not matter, only its chain and signature. A search that found
    /// nothing is not repeated until one of the files changes, unless it met
    /// the record held for being dated ahead (held records are looked at on
    /// every pass).
    fn fill_gap(
        &mut self,
        feed: &FeedId,
        segments: &[Segment],
        expected: u64,
        cache: &mut ScanCache,
    ) -> StoreResult<bool> {
        let files: Vec<FileStamp> = segments
            .iter()
            .map(|s| {
                let meta = fs::metadata(&s.path).ok();
                (
                    s.path.clone(),
                    meta.as_ref().map_or(0, |m| m.len()),
                    meta.and_then(|m| m.modified().ok()),
                )
            })
            .collect();
        let searched = (expected, files);
        if cache.gap_searches.get(feed) == Some(&searched) {
            return Ok(false);
        }
        let mut again = false;
        for seg in segments {
            let lines = match segments::read_lines(&seg.path, 0) {
                Ok(lines) => lines,
                Err(e) if e.is_not_found() || e.refusal().is_some() => continue,
                Err(e) => return Err(e.into()),
            };
            let rel = self.rel(&seg.path);
            for line in lines {
                let fits = line
                    .record
                    .as_ref()
                    .is_ok_and(|r| r.header.seq == expected && &r.header.feed == feed);
                if !fits {
                    continue;
                }
                if let Verdict::Wait(_) = self.handle(feed, &rel, line, None)? {
                    // Held (dated ahead): looked at again on the next pass.
                    again = true;
                }
                if self.feed_state(feed).head.map_or(0, |h| h.seq) >= expected {
                    cache.gap_searches.remove(feed);
                    return Ok(true);
                }
            }
        }
        if !again {
            cache.gap_searches.insert(feed.clone(), searched);
        }
        Ok(false)
    }

    /// Reads one segment from its cursor. `Some(reason)` when reading stopped
    /// at a record that has to wait.
    fn ingest_file(
        &mut self,
        feed: &FeedId,
        path: &Path,
        cache: &mut ScanCache,
        ahead: &mut ReadAhead,
    ) -> StoreResult<Option<String>> {
        self.judged = None;
        let meta = match fs::symlink_metadata(path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e).at(path)?,
        };
        if !meta.is_file() {
            // Swapped for something else since the listing: the folder
            // changed, so the next pass lists it again and reports it.
            return Ok(None);
        }
        let len = meta.len();
        let mtime = meta.modified().at(path)?;
        // Known read to its end with nothing torn or waiting: judged.
        let whole = (len > 0).then_some(mtime);
        if cache.files.get(path) == Some(&(len, mtime)) {
            self.judged = whole;
            return Ok(None);
        }
        let rel = self.rel(path);
        let p = self.index.path();
        let mtime_ns = nanos(mtime);
        let known = self.cursors.as_ref().map(|all| all.get(&rel));
        let cursor = match known {
            Some(None) => None,
            Some(Some(&(size, m))) if size == len as i64 && m == mtime_ns => {
                cache.files.insert(path.to_path_buf(), (len, mtime));
                self.judged = whole;
                return Ok(None);
            }
            _ => self
                .index
                .conn()
                .prepare_cached(
                    "SELECT size, mtime_ns, offset, tail_len, tail_hash FROM files WHERE path = ?1",
                )
                .and_then(|mut s| s.query_row([&rel], cursor_row).optional())
                .db(p)?,
        };
        if let Some((size, m, ..)) = &cursor
            && *size == len as i64
            && *m == mtime_ns
        {
            cache.files.insert(path.to_path_buf(), (len, mtime));
            self.judged = whole;
            return Ok(None);
        }
        // A gzip segment is sealed: once read it never grows, so a change
        // means a rewrite and it is read again from the start (its records
        // are known by id and cost a lookup each).
        let gz = segments::is_gz(path);
        let start = match &cursor {
            Some((_, _, offset, tail_len, tail_hash))
                if !gz
                    && len >= *offset as u64
                    && tail_matches(path, *offset as u64, *tail_len as u64, tail_hash) =>
            {
                *offset as u64
            }
            _ => 0,
        };
        // Read ahead as this pass would read it, or read now.
        let ahead = (start == 0)
            .then(|| ahead.take(path))
            .flatten()
            .filter(|a| a.stamp == (len, mtime));
        let (read, checked) = match ahead {
            Some(a) => (Ok((a.lines, a.torn)), Some((a.key, a.verified))),
            None => (segments::read_lines_and_rest(path, start), None),
        };
        let (lines, torn) = match read {
            Ok(read) => read,
            // Gone between the listing and the read (a segment replaced by
            // its gzip form, a checkout): the folder changed, so the next
            // pass lists it again.
            Err(e) if e.is_not_found() => return Ok(None),
            // Too large for a segment, or swapped for something that is not
            // a file: reported once and remembered by size and time, so no
            // later pass reads it again until it changes.
            Err(FolderError::Refused { refusal, .. }) => {
                if matches!(refusal, Refusal::WrongType { .. }) {
                    return Ok(None);
                }
                self.problem(
                    ProblemKind::Oversize,
                    &rel,
                    0,
                    None,
                    feed,
                    &refusal.to_string(),
                )?;
                self.save_cursor(&rel, len as i64, mtime_ns, 0, 0, String::new())?;
                cache.files.insert(path.to_path_buf(), (len, mtime));
                // Too large to be a claim, or any record.
                self.judged = Some(mtime);
                return Ok(None);
            }
            Err(e) => return Err(e.into()),
        };
        if torn > MAX_LINE as u64 {
            // A line with no newline past the line limit can never become a
            // record: reported once at its offset. The file is then taken
            // as read up to its current size, so it is not read again until
            // it changes.
            let at = lines.last().map_or(start, |l| l.offset + l.len);
            let reason = format!(
                "{torn} bytes with no newline, more than the {MAX_LINE} a record's line may hold: \
                 not a record, not read again until the file changes"
            );
            self.problem(ProblemKind::Garbage, &rel, at, None, feed, &reason)?;
        }
        let long_tail = torn > MAX_LINE as u64;
        if let Some(p) = self.progress.as_mut() {
            p(len.saturating_sub(start));
        }
        let verified = match checked {
            // Checked with the key the feed has now.
            Some((key, verified)) if key.is_some() && key == self.feed_state(feed).pubkey => {
                self.ahead_key = key;
                verified
            }
            _ => self.verify_ahead(feed, &lines),
        };
        let mut consumed = start;
        let mut last_len = 0u64;
        let mut waited = None;
        // Its first line was decided, in this pass or (read past) an earlier one.
        let first_decided = start > 0 || !lines.is_empty();
        for (i, line) in lines.into_iter().enumerate() {
            let (offset, line_len) = (line.offset, line.len);
            match self.handle(feed, &rel, line, verified.get(i).copied().flatten())? {
                Verdict::Consumed => {
                    consumed = offset + line_len;
                    last_len = line_len;
                }
                Verdict::Wait(reason) => {
                    waited = Some(reason);
                    break;
                }
            }
        }
        let (tail_len, tail_hash) = if gz {
            (0, String::new())
        } else if consumed == start {
            match &cursor {
                Some((_, _, _, tl, th)) if start > 0 => (*tl as u64, th.clone()),
                _ => (0, String::new()),
            }
        } else {
            (last_len, hash_range(path, consumed - last_len, last_len)?)
        };
        // A file that had to wait, or that ends in a torn line, is looked at
        // again on the next pass.
        let torn = if long_tail { 0 } else { torn };
        self.torn |= torn > 0;
        if first_decided && torn == 0 {
            self.judged = Some(mtime);
        }
        let size = if waited.is_some() || torn > 0 {
            -1
        } else {
            len as i64
        };
        self.save_cursor(&rel, size, mtime_ns, consumed, tail_len, tail_hash)?;
        // A file left with a torn tail, like one that waits, is looked at on
        // every pass: the rest may be written in place (a copy in flight, a
        // plain `cp`), which changes neither the folder nor, for an older
        // segment, what the pass otherwise looks at.
        if waited.is_none() && torn == 0 {
            cache.files.insert(path.to_path_buf(), (len, mtime));
        } else {
            cache.files.remove(path);
        }
        Ok(waited)
    }

    /// Records how far a file was read (see [`Cursor`]); `size` -1 makes the
    /// next pass look at it again whatever its stamp.
    fn save_cursor(
        &mut self,
        rel: &str,
        size: i64,
        mtime_ns: i64,
        offset: u64,
        tail_len: u64,
        tail_hash: String,
    ) -> StoreResult<()> {
        self.index
            .save_cursor(rel, size, mtime_ns, offset, tail_len, &tail_hash)?;
        if let Some(all) = self.cursors.as_mut() {
            all.insert(rel.to_owned(), (size, mtime_ns));
        }
        Ok(())
    }

    /// Makes the `wrong_type` and `stray` problems of one listing (`scope`:
    /// [`FOLDER_SCOPE`] for the role and device folders, a feed id for the
    /// files of one feed folder) what it found now: new ones are added, the
    /// ones no longer there (removed by a person) go.
    fn report_strays(&mut self, scope: &str, strays: &[survey::Stray]) -> StoreResult<()> {
        let found: Vec<(ProblemKind, String, String)> = strays
            .iter()
            .map(|s| {
                let kind = match s.what {
                    survey::StrayKind::WrongType(_) => ProblemKind::WrongType,
                    survey::StrayKind::Unknown => ProblemKind::Stray,
                };
                (kind, self.rel(&s.path), s.reason())
            })
            .collect();
        let kinds = [ProblemKind::WrongType, ProblemKind::Stray];
        if found.is_empty() && !self.may_stand(&kinds, scope) {
            return Ok(());
        }
        let standing = self.index.problems_of_feed(&kinds, scope)?;
        for (kind, path) in standing {
            if !found.iter().any(|(k, fp, _)| *k == kind && *fp == path) {
                self.index.clear_problems_at(kind, &path)?;
            }
        }
        for (kind, path, reason) in found {
            self.note_standing(kind, scope);
            let n = self
                .index
                .record_problem(kind, &path, 0, None, scope, &reason)?;
            self.report.new_problems += n;
        }
        Ok(())
    }

    /// Drops the `oversize` problems of `feed` whose file is no longer one
    /// of its segments (removed, or renamed away).
    fn forget_oversize(&mut self, feed: &FeedId, segments: &[Segment]) -> StoreResult<()> {
        let scope = feed.to_string();
        if !self.may_stand(&[ProblemKind::Oversize], &scope) {
            return Ok(());
        }
        let standing = self
            .index
            .problems_of_feed(&[ProblemKind::Oversize], &scope)?;
        for (kind, path) in standing {
            if !segments.iter().any(|s| self.rel(&s.path) == path) {
                self.index.clear_problems_at(kind, &path)?;
            }
        }
        Ok(())
    }

    /// Compares the records applied of `feed` with its signed `head.json`: a
    /// head that verifies and names a later seq than the feed's files hold,
    /// once the feed was read to its end with nothing waiting, means records
    /// were cut off the end or the feed was rolled back to an older copy (a
    /// `cut` problem, which goes once the records are back). A feed that
    /// waits is reported as waiting already.
    fn check_cut(&mut self, feed: &FeedId, dir: &Path, waits: bool) -> StoreResult<()> {
        let state = self.feed_state(feed);
        let (applied, frozen, pubkey) = (
            state.head.map_or(0, |h| h.seq),
            state.frozen.is_some(),
            state.pubkey,
        );
        let claim = match (waits, frozen, pubkey) {
            // Right after this device's own append, the head is the one it
            // just signed for the record it just applied: reading the file
            // back and checking its signature would only cost time.
            (false, false, Some(_)) if self.own_write => None,
            (false, false, Some(key)) => segments::read_head(dir, feed, &key),
            _ => None,
        };
        // The problem stands for the feed as it is now: cleared, then
        // written again while the head still names a later seq.
        let scope = feed.to_string();
        if self.may_stand(&[ProblemKind::Cut], &scope) {
            self.index
                .clear_problems_of_feed(ProblemKind::Cut, &scope)?;
        }
        if let Some(head) = claim.filter(|h| h.seq > applied) {
            let rel = self.rel(&dir.join(segments::HEAD_FILE));
            let reason = format!(
                "feed {feed} ends at seq {applied} but its signed head names seq {}: its last \
                 records were cut off, or the folder holds an older copy of the feed. The \
                 writing device republishes them on its next write (or `countersign repair` \
                 there)",
                head.seq
            );
            self.problem(ProblemKind::Cut, &rel, 0, None, feed, &reason)?;
        }
        Ok(())
    }

    fn rel(&self, path: &Path) -> String {
        path.strip_prefix(self.dir.root())
            .unwrap_or(path)
            .to_string_lossy()
            .into_owned()
    }

    /// Records `rec` as quarantined (never applied) and consumes its line.
    fn quarantine(
        &mut self,
        rel: &str,
        offset: u64,
        rec: &Record,
        feed: &FeedId,
        reason: &str,
    ) -> StoreResult<Verdict> {
        self.problem(
            ProblemKind::Quarantine,
            rel,
            offset,
            Some(rec),
            feed,
            reason,
        )?;
        Ok(Verdict::Consumed)
    }

    fn problem(
        &mut self,
        kind: ProblemKind,
        path: &str,
        offset: u64,
        rec: Option<&Record>,
        feed: &FeedId,
        reason: &str,
    ) -> StoreResult<()> {
        let scope = feed.to_string();
        self.note_standing(kind, &scope);
        let n = self.index.record_problem(
            kind,
            path,
            offset,
            rec.map(|r| r.id.hex()).as_deref(),
            &scope,
            reason,
        )?;
        self.report.new_problems += n;
        Ok(())
    }

    /// Checks the signatures of a run of lines on all cores before the
    /// sequential pass, which then only reads the verdicts. Small runs (the
    /// usual incremental pass) are left to the sequential pass.
    fn verify_ahead(&mut self, feed: &FeedId, lines: &[Line]) -> Vec<Option<bool>> {
        const PARALLEL_FROM: usize = 64;
        let state = self.feed_state(feed);
        let (key, head_seq) = (state.pubkey, state.head.map_or(0, |h| h.seq));
        let Some(key) = key.filter(|_| lines.len() >= PARALLEL_FROM) else {
            return Vec::new();
        };
        self.ahead_key = Some(key);
        // Records at or below the head are known: the chain check skips them.
        verify_lines(lines, &key, head_seq)
    }

    /// Decides one line. `verified` is the signature check if it was done
    /// ahead (see [`Self::verify_ahead`]).
    fn handle(
        &mut self,
        feed: &FeedId,
        rel: &str,
        line: Line,
        verified: Option<bool>,
    ) -> StoreResult<Verdict> {
        let rec = match line.record {
            Ok(r) => r,
            Err(e) => {
                self.problem(
                    ProblemKind::Garbage,
                    rel,
                    line.offset,
                    None,
                    feed,
                    &e.to_string(),
                )?;
                return Ok(Verdict::Consumed);
            }
        };
        let offset = line.offset;
        if rec.header.ch != self.dir.id() {
            let reason = format!(
                "record of another channel ({}…)",
                rec.header.ch.get(..12).unwrap_or(&rec.header.ch)
            );
            return self.quarantine(rel, offset, &rec, feed, &reason);
        }
        if &rec.header.feed != feed {
            let reason = format!(
                "record signed for feed {} found in feed {feed}",
                rec.header.feed
            );
            return self.quarantine(rel, offset, &rec, feed, &reason);
        }
        let state = self.feed_state(feed).clone();
        let Some(key) = state.pubkey else {
            // A feed joining by invitation starts with its claim, signed by
            // the key it names: noted, so the owner's machine can admit it.
            if let Some(claim) = invitation::self_signed_claim(&rec, rec.op.as_ref()) {
                self.claims_changed |= self.index.note_claim(&rec, claim, rel, offset)?;
            }
            let reason =
                format!("feed {feed} is not admitted by the channel owner; its records wait");
            self.problem(ProblemKind::Unadmitted, rel, 0, None, feed, &reason)?;
            return Ok(Verdict::Wait("not admitted".into()));
        };
        // The chain is checked before the signature: a record already known
        // (a rescan, a duplicated line) costs one lookup, not a verification.
        let fit = chain::fit(state.head, &rec.header, rec.id, |seq| self.id_at(feed, seq))?;
        if fit == Fit::Known {
            return Ok(Verdict::Consumed);
        }
        if let Some(frozen) = state.frozen {
            return Ok(Verdict::Wait(format!("frozen: {frozen}")));
        }
        if let Fit::Gap { expected } = fit {
            self.gap = Some(expected);
            return Ok(Verdict::Wait(format!(
                "seq {expected} is missing (found {})",
                rec.header.seq
            )));
        }
        // From an owner's key replacement on, the feed's records carry the new key.
        let switch = state
            .pending_key
            .filter(|(from, _)| rec.header.seq >= *from)
            .map(|(_, k)| k);
        let key = switch.unwrap_or(key);
        // A check made ahead holds only if it used the key that applies now
        // (a key replacement earlier in the run changes it).
        let verified = verified
            .filter(|_| self.ahead_key.as_ref() == Some(&key))
            .or_else(|| self.vouched.contains(&vouch(&rec, &key)).then_some(true));
        if !verified.unwrap_or_else(|| rec.verify(&key)) {
            return self.quarantine(rel, offset, &rec, feed, "bad signature");
        }
        match fit {
            Fit::Next | Fit::Known | Fit::Gap { .. } => {}
            Fit::Broken(why) => {
                return self.quarantine(rel, offset, &rec, feed, &format!("broken chain: {why}"));
            }
            Fit::Fork { existing } => {
                let reason = format!(
                    "fork at seq {}: records {} and {} both claim it; the feed is frozen after seq {}",
                    rec.header.seq,
                    existing.short(),
                    rec.id.short(),
                    rec.header.seq - 1
                );
                self.problem(ProblemKind::Fork, rel, offset, Some(&rec), feed, &reason)?;
                // Neither branch stands: take back what this machine applied
                // from the forked seq on, so every machine ends in the same
                // state whichever branch reached it first.
                let head = self.rollback_from(feed, rec.header.seq)?;
                let st = self.feed_state(feed);
                st.frozen = Some(reason);
                st.head = head;
                st.dirty = true;
                return Ok(Verdict::Consumed);
            }
        }
        let ahead = rec.header.hlc.ms().saturating_sub(self.now_ms);
        if ahead > HOLD_AHEAD_MS {
            let reason = format!(
                "seq {} is dated {} ahead of this machine's clock: held (not applied) until the \
                 clock catches up",
                rec.header.seq,
                span(ahead)
            );
            self.problem(ProblemKind::Held, rel, offset, Some(&rec), feed, &reason)?;
            self.held.insert(rec.id.hex());
            if ahead > CLOCK_ALARM_MS {
                let reason = format!(
                    "clock of feed {feed} is {} ahead of this machine's (seq {}): its records are \
                     held; check that device's clock",
                    span(ahead),
                    rec.header.seq
                );
                self.problem(ProblemKind::Clock, rel, offset, Some(&rec), feed, &reason)?;
            }
            return Ok(Verdict::Wait(format!(
                "held: seq {} is dated {} ahead",
                rec.header.seq,
                span(ahead)
            )));
        }
        let Some(op) = rec.op.clone() else {
            let reason = format!(
                "feed {feed} uses op '{}' that this version does not know — upgrade countersign",
                rec.op_name
            );
            self.problem(
                ProblemKind::UnknownOp,
                rel,
                offset,
                Some(&rec),
                feed,
                &reason,
            )?;
            let st = self.feed_state(feed);
            st.frozen = Some(reason.clone());
            st.dirty = true;
            return Ok(Verdict::Wait(reason));
        };
        if let Some(why) = misplaced(feed, &rec, &op, &key).or_else(|| unprintable(&op)) {
            return self.quarantine(rel, offset, &rec, feed, &why);
        }
        if let Some(k) = switch {
            let st = self.feed_state(feed);
            st.pubkey = Some(k);
            st.pending_key = None;
            st.dirty = true;
        }
        self.accept(feed, &rec, &op, rel, offset)?;
        Ok(Verdict::Consumed)
    }

    fn id_at(&self, feed: &FeedId, seq: u64) -> StoreResult<Option<RecordId>> {
        let id: Option<String> = self
            .index
            .conn()
            .prepare_cached("SELECT id FROM records WHERE feed = ?1 AND seq = ?2")
            .and_then(|mut s| {
                s.query_row(params![feed.to_string(), seq as i64], |r| r.get(0))
                    .optional()
            })
            .db(self.index.path())?;
        Ok(id.as_deref().and_then(RecordId::parse))
    }

    /// Takes back every accepted record of `feed` from `seq` on (a fork):
    /// their rows go, the messages they touched are folded again, and
    /// messages they created vanish. Returns the feed's new head.
    fn rollback_from(&mut self, feed: &FeedId, seq: u64) -> StoreResult<Option<Head>> {
        let p = self.index.path();
        let conn = self.index.conn();
        let gone: Vec<(i64, String, String)> = conn
            .prepare_cached("SELECT n, id, op FROM records WHERE feed = ?1 AND seq >= ?2")
            .and_then(|mut s| {
                s.query_map(params![feed.to_string(), seq as i64], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                })?
                .collect::<Result<_, _>>()
            })
            .db(p)?;
        for (n, id, op) in &gone {
            let targets: Vec<String> = conn
                .prepare_cached("SELECT target FROM targets WHERE n = ?1")
                .and_then(|mut s| s.query_map([n], |r| r.get(0))?.collect::<Result<_, _>>())
                .db(p)?;
            self.index.forget_record(*n)?;
            self.acting.forget(*n);
            let kind = OpKind::parse(op);
            if kind == Some(OpKind::Summary) {
                self.index.forget_summary(*n)?;
            }
            if kind == Some(OpKind::Note) {
                self.index.forget_note(*n)?;
            }
            self.touched
                .extend(targets.iter().filter_map(|t| RecordId::parse(t)));
            if kind == Some(OpKind::Send)
                && let Some(rid) = RecordId::parse(id)
            {
                self.touched.remove(&rid);
                self.fresh.remove(&rid);
                self.index.remove_message(&rid)?;
            }
            // An upload's chunk or seal: the upload is folded again (and goes
            // if its first chunk went), and so are the messages showing it.
            let table = match kind {
                Some(OpKind::UploadChunk) => "upload_chunks",
                Some(OpKind::Seal) => "upload_seals",
                _ => continue,
            };
            let upload: Option<String> = conn
                .prepare_cached(&format!("SELECT upload FROM {table} WHERE n = ?1"))
                .and_then(|mut s| s.query_row([n], |r| r.get(0)).optional())
                .db(p)?;
            self.index.forget_upload_record(table, *n)?;
            if let Some(u) = upload.as_deref().and_then(RecordId::parse) {
                self.index.forget_upload(&u)?;
                self.touched
                    .extend(upload::waiting_messages(self.index, &u)?);
                self.uploads.insert(u);
            }
        }
        // A taken-back record may have been a pin write, a vote or a
        // proposal: consent, which crosses messages, is folded again whole.
        self.refold_all |= !gone.is_empty();
        let head: Option<(i64, String, i64, i64)> = conn
            .prepare_cached(
                "SELECT seq, id, ms, c FROM records WHERE feed = ?1 ORDER BY seq DESC LIMIT 1",
            )
            .and_then(|mut s| {
                s.query_row([feed.to_string()], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
                })
                .optional()
            })
            .db(p)?;
        Ok(head.and_then(|(seq, id, ms, c)| {
            Some(Head {
                seq: seq as u64,
                id: RecordId::parse(&id)?,
                hlc: Hlc(ms, c as u32),
            })
        }))
    }

    fn accept(
        &mut self,
        feed: &FeedId,
        rec: &Record,
        op: &Op,
        rel: &str,
        offset: u64,
    ) -> StoreResult<()> {
        if !self.held.is_empty() && self.held.remove(&rec.id.hex()) {
            // Held on an earlier pass; the clock has caught up.
            self.index.clear_problems_of_record(
                &[ProblemKind::Held, ProblemKind::Clock],
                &rec.id.hex(),
            )?;
        }
        let role = self.feed_state(feed).role.clone();
        let n = self
            .index
            .insert_record(feed, rec, &role, &base64_sig(rec))?;
        self.report.accepted += 1;
        let st = self.feed_state(feed);
        st.head = Some(Head {
            seq: rec.header.seq,
            id: rec.id,
            hlc: rec.header.hlc,
        });
        st.dirty = true;
        match op {
            Op::Admit(a) => {
                self.claims_changed = true;
                let key = parse_pubkey(&a.pubkey);
                let target = self.feed_state(&a.feed);
                if let Some(first) = target.pubkey
                    && key != Some(first)
                {
                    // A feed has one key; the first admit in the owner's feed
                    // stands and a second claim is an alarm, never applied.
                    let reason = format!(
                        "second claim of feed {}: admitted with key {}…, a later admit names key \
                         {}…; the first key stands",
                        a.feed,
                        &record::pubkey_hex(&first)[..12],
                        a.pubkey.get(..12).unwrap_or(&a.pubkey)
                    );
                    let claimed = a.feed.clone();
                    self.problem(
                        ProblemKind::SecondClaim,
                        rel,
                        offset,
                        Some(rec),
                        &claimed,
                        &reason,
                    )?;
                } else if target.pubkey.is_none() {
                    target.pubkey = key;
                    target.role = a.role.to_string();
                    target.dirty = true;
                    self.index
                        .clear_problems_of_feed(ProblemKind::Unadmitted, &a.feed.to_string())?;
                }
            }
            Op::Send(send) => {
                self.touched.insert(rec.id);
                let Ok(from) = Role::new(&role) else {
                    return Ok(());
                };
                self.fresh.insert(
                    rec.id,
                    SendRow {
                        n,
                        from,
                        key: rec.order_key(),
                        send: send.clone(),
                    },
                );
            }
            Op::Read(_)
            | Op::Opened(_)
            | Op::Delete(_)
            | Op::Resolve(_)
            | Op::Confirm(_)
            | Op::Reopen(_)
            | Op::WorkStatus(_)
            | Op::Revise(_)
            | Op::Ack(_) => {
                for t in op.targets() {
                    self.index.add_target(t, n)?;
                    self.touched.insert(*t);
                }
                self.acting.add(n, rec.order_key(), &role, op);
            }
            Op::ReplaceKey(r) => {
                // `misplaced` made sure the record may change the key.
                let Some(key) = parse_pubkey(&r.pubkey) else {
                    return Ok(());
                };
                let target = self.feed_state(&r.feed);
                let next = target.head.map_or(1, |h| h.seq + 1);
                match r.from_seq.filter(|_| feed.is_owner()) {
                    // The owner's: from its seq on, wherever the reader is.
                    Some(from) => {
                        if from <= next {
                            target.pubkey = Some(key);
                            target.pending_key = None;
                        } else {
                            target.pending_key = Some((from, key));
                        }
                        target.dirty = true;
                        self.index.change_key(&r.feed, from, &r.pubkey)?;
                    }
                    // The feed's own, signed by the old key: from the next record on.
                    None => {
                        target.pubkey = Some(key);
                        target.dirty = true;
                    }
                }
            }
            Op::UploadChunk(c) => {
                let upload = self.index.record_chunk(n, rec.order_key(), &role, c)?;
                self.uploads.insert(upload);
            }
            Op::Seal(s) => {
                self.index.record_seal(n, rec.order_key(), &role, s)?;
                self.uploads.insert(s.upload);
            }
            Op::PinSet(ps) => {
                self.pin_keys.insert(ps.key.clone());
            }
            // A cleanup pass acts on the messages it lists (and their nudges).
            Op::Backfill(Backfill { ids, .. }) | Op::UndoBackfill(UndoBackfill { ids, .. }) => {
                self.touched.extend(ids.iter().copied());
            }
            Op::Claim(c) => {
                self.index.note_claim(rec, c, rel, offset)?;
                self.claims_changed = true;
            }
            Op::Invite(_) => self.claims_changed = true,
            Op::Summary(sm) => {
                // `misplaced` refused a summary that fails its checks.
                if let Some(line) = memory::summary::line_of(sm) {
                    self.index.record_summary(n, rec.order_key(), &line, sm)?;
                }
            }
            // `misplaced` refused a note that fails its checks.
            Op::Note(note) => {
                self.index
                    .record_note(n, rec.order_key(), role.as_str(), note)?;
            }
            Op::FeedInit(_) | Op::AddRole(_) => {}
        }
        Ok(())
    }

    fn refold_touched(&mut self) -> StoreResult<()> {
        let mut touched = std::mem::take(&mut self.touched);
        let pin_keys = std::mem::take(&mut self.pin_keys);
        // Uploads first: a seal ingested here completes the bodies of the
        // messages that were waiting for it.
        let mut pins_wait = false;
        for id in std::mem::take(&mut self.uploads) {
            if let Some(u) = upload::refold_upload(self.index, &id)?
                && u.sealed.is_some()
            {
                touched.extend(upload::waiting_messages(self.index, &id)?);
                // Pin versions are rewritten by the consent fold.
                pins_wait |= upload::named_by_pins(self.index, &id)?;
            }
        }
        if touched.is_empty() && pin_keys.is_empty() && !pins_wait && !self.refold_all {
            // Nothing new: a read tool's catch-up stops here.
            return Ok(());
        }
        let fresh = std::mem::take(&mut self.fresh);
        for id in &touched {
            if refold_with(self.index, id, fresh.get(id), Some(&self.acting))? {
                self.report.refolded += 1;
            }
        }
        // Consent crosses messages: the scope of whatever took part runs
        // again (after the rows above exist). A very large pass (a rebuild)
        // re-folds everything at once rather than walking scope by scope.
        // So does a seal that pin versions were waiting for (their keys are
        // not known here), and a fork that took records back.
        let keys =
            (!pins_wait && !self.refold_all && touched.len() <= WALK_LIMIT).then_some(pin_keys);
        // New bodies reach the full-text index later, in one batch (see
        // `Channel::index_search_tail`): flushing FTS5 on every pass was a
        // large part of each write.
        consent::refold(self.index, &self.dir.genesis().roles, &touched, keys)
    }
}

/// Past this many touched messages, a pass re-folds all of consent instead of
/// walking the scope of each.
const WALK_LIMIT: usize = 2000;

/// Ops that do not belong where they were found: only the owner admits, only
/// role feeds carry messages, and a feed_init must match the admitted key.
fn misplaced(feed: &FeedId, rec: &Record, op: &Op, key: &VerifyingKey) -> Option<String> {
    match op {
        Op::Admit(_) if !feed.is_owner() => {
            Some("only the channel owner's feed may admit feeds".into())
        }
        Op::Admit(a) if a.feed.role() != a.role.as_str() => {
            Some(format!("admit of {} names role '{}'", a.feed, a.role))
        }
        Op::Admit(a) if a.role.is_reserved() => Some(format!(
            "admit of {} names the reserved role '{}'",
            a.feed, a.role
        )),
        Op::Admit(a) => unusable_key(&a.pubkey)
            .map(|why| format!("admit of {} carries no usable public key: {why}", a.feed)),
        Op::AddRole(_) if !feed.is_owner() => {
            Some("only the channel owner's feed may add roles".into())
        }
        Op::AddRole(a) if a.role.is_reserved() => {
            Some(format!("add_role names the reserved role '{}'", a.role))
        }
        Op::AddRole(_) => None,
        Op::ReplaceKey(r) if r.feed.is_owner() => {
            Some("the owner's key is fixed by channel.json and cannot be replaced".into())
        }
        Op::ReplaceKey(r) if !feed.is_owner() && &r.feed != feed => Some(format!(
            "replace_key for feed {} found in feed {feed}",
            r.feed
        )),
        Op::ReplaceKey(r) if feed.is_owner() && r.from_seq.is_none_or(|s| s == 0) => Some(format!(
            "the owner's replace_key for {} names no from_seq",
            r.feed
        )),
        Op::ReplaceKey(r) if !feed.is_owner() && r.from_seq.is_some() => {
            Some("a feed's own replace_key takes effect at its next record: no from_seq".into())
        }
        Op::ReplaceKey(r) => unusable_key(&r.pubkey)
            .map(|why| format!("replace_key carries no usable public key: {why}")),
        Op::Invite(_) if !feed.is_owner() => {
            Some("only the channel owner's feed may invite".into())
        }
        Op::Invite(i) if i.role.is_reserved() => {
            Some(format!("invite names the reserved role '{}'", i.role))
        }
        Op::Invite(i) => unusable_key(&i.key)
            .map(|why| format!("invite carries no usable invitation key: {why}")),
        Op::Summary(sm) if !feed.is_owner() => memory::summary::check(sm)
            .err()
            .map(|e| format!("summary refused: {e}")),
        Op::Note(note) if !feed.is_owner() => memory::note::check(note)
            .err()
            .map(|e| format!("note refused: {e}")),
        _ if feed.is_owner() => Some(format!(
            "op '{}' does not belong in the owner's feed",
            rec.op_name
        )),
        Op::FeedInit(_) if rec.header.seq != 1 => {
            Some(format!("feed_init at seq {} (must be 1)", rec.header.seq))
        }
        Op::FeedInit(fi) if fi.role.as_str() != feed.role() => {
            Some(format!("feed_init names role '{}' in feed {feed}", fi.role))
        }
        Op::FeedInit(fi) if parse_pubkey(&fi.pubkey).as_ref() != Some(key) => {
            Some(unusable_key(&fi.pubkey).map_or_else(
                || "feed_init carries a key other than the admitted one".into(),
                |why| format!("feed_init carries no usable public key: {why}"),
            ))
        }
        Op::FeedInit(_) => None,
        // A claim takes feed_init's place, under the same rules.
        Op::Claim(_) if rec.header.seq != 1 => {
            Some(format!("claim at seq {} (must be 1)", rec.header.seq))
        }
        Op::Claim(c) if c.role.as_str() != feed.role() => {
            Some(format!("claim names role '{}' in feed {feed}", c.role))
        }
        Op::Claim(c) if parse_pubkey(&c.pubkey).as_ref() != Some(key) => {
            Some(unusable_key(&c.pubkey).map_or_else(
                || "claim carries a key other than the admitted one".into(),
                |why| format!("claim carries no usable public key: {why}"),
            ))
        }
        Op::Claim(_) => None,
        _ if rec.header.seq == 1 => {
            Some("a role feed must start with feed_init (or a claim)".into())
        }
        _ => None,
    }
}

/// Why a key a record carries cannot be used (not hex, not a point, not
/// canonical, of small order), if it cannot: where a key enters the channel
/// it must be one that signatures can be trusted under (`signature`).
fn unusable_key(hex: &str) -> Option<String> {
    signature::parse_key(hex).err().map(|e| e.to_string())
}

/// A one-line field that holds what no tool writes there (a line break, a
/// control, bidirectional or invisible character): such a field could pass
/// for two lines, or read otherwise than it is stored, wherever it is shown.
fn unprintable(op: &Op) -> Option<String> {
    op.one_line_fields().into_iter().find_map(|(field, value)| {
        let (at, c) = first_hazard(value)?;
        Some(format!(
            "'{field}' holds {} (U+{:04X}) at character {at}: a one-line field is plain text",
            describe(c),
            c as u32
        ))
    })
}

/// A duration in words for alarms: "2 d 0 h", "1 h 0 min", "7 min".
fn span(ms: i64) -> String {
    let min = (ms + 30_000) / 60_000;
    match min {
        m if m >= 24 * 60 => format!("{} d {} h", m / (24 * 60), m % (24 * 60) / 60),
        m if m >= 60 => format!("{} h {} min", m / 60, m % 60),
        m => format!("{m} min"),
    }
}

fn base64_sig(rec: &Record) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(rec.sig.to_bytes())
}

fn mtime_of(p: &Path) -> Option<SystemTime> {
    fs::metadata(p).and_then(|m| m.modified()).ok()
}

fn nanos(t: SystemTime) -> i64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

fn hash_range(path: &Path, start: u64, len: u64) -> StoreResult<String> {
    let (mut f, _) = crate::store::folder_file::open_read(path)?;
    f.seek(SeekFrom::Start(start)).at(path)?;
    let mut buf = vec![0u8; len as usize];
    f.read_exact(&mut buf).at(path)?;
    Ok(sha256_hex(&buf))
}

fn tail_matches(path: &Path, offset: u64, tail_len: u64, tail_hash: &str) -> bool {
    if offset == 0 {
        return true;
    }
    if tail_len == 0 || tail_len > offset {
        return false;
    }
    hash_range(path, offset - tail_len, tail_len).is_ok_and(|h| h == tail_hash)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::record::pubkey_hex;

    #[test]
    fn a_key_is_parsed_once_and_the_memo_stays_bounded() {
        let mut cache = ScanCache::default();
        let key = ed25519_dalek::SigningKey::from_bytes(&[7; 32]).verifying_key();
        let hex = pubkey_hex(&key);
        assert_eq!(cache.key(&hex), Some(key));
        assert_eq!(cache.keys.len(), 1);
        assert_eq!(cache.key(&hex), Some(key));
        assert_eq!(cache.keys.len(), 1);
        // Not a key: remembered as none, like any other answer.
        assert_eq!(cache.key("not hex"), None);
        assert_eq!(cache.keys.len(), 2);
        // A folder of endless feeds: the memo starts afresh at the bound.
        for i in 0..KEYS_KEPT {
            cache.key(&format!("{i:064x}"));
        }
        assert!(cache.keys.len() <= KEYS_KEPT);
        assert_eq!(cache.key(&hex), Some(key));
    }
}
