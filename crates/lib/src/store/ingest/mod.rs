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
//! [`HOLD_AHEAD_MS`](judge::HOLD_AHEAD_MS) past local time is held (not applied, not witnessed,
//! recorded as a `held` problem) and looked at again on every pass; more
//! than [`CLOCK_ALARM_MS`](judge::CLOCK_ALARM_MS) ahead also raises a `clock` alarm for its feed.
//!
//! A fork (two valid records at one seq of a feed) takes back every record of
//! that feed from the forked seq on, whichever branch arrived first, and
//! freezes the feed after the last common record: every machine ends in the
//! same state whatever order the branches arrive in. The lines stay in the
//! files as proof and the `fork` problem names both records.
//!
//! Runs inside the caller's write transaction; it never writes feed files.
//!
//! A pass is scan → judge → apply, one concern per module: [`scan`] finds
//! what to read (the feed folders, their segments, each file from its
//! [`cursor`], what the process remembers in its [`cache`]) and hands each
//! line here; [`judge()`] decides what a record is worth from what the pass
//! knows of its feed ([`feeds`]) without touching a file, the index or the
//! clock; this module acts on the [`Judgment`]: problems ([`problems`]),
//! waits, a fork taken back ([`rollback`]), a record applied ([`apply`]).
//! A record this device is writing is folded before it is published, while
//! its journal syncs ([`own`]). A rebuild checks the signatures of the files
//! it reads ahead beside the pass instead of before it ([`deferred_checks`]).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use ed25519_dalek::VerifyingKey;

use crate::core::ids::{FeedId, RecordId};
use crate::core::invitation::Standing;
use crate::core::record::Record;
use crate::store::clock::now_ms;
use crate::store::error::StoreResult;
use crate::store::fold::invitation;
use crate::store::fold::records::{Acting, Fresh};
use crate::store::folder::layout::ChannelDir;
use crate::store::folder::segments::Line;
use crate::store::index::{IndexTx, ProblemKind};

mod apply;
mod cache;
mod cursor;
mod deferred_checks;
mod feeds;
mod judge;
mod own;
mod problems;
mod read_ahead;
mod rollback;
mod scan;

pub use cache::ScanCache;
use deferred_checks::CheckQueue;
pub use deferred_checks::DeferredChecks;
use feeds::FeedState;

use judge::{Checked, FeedView, Judgment, judge, span};
use problems::FOLDER_SCOPE;

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
    /// Admits written for such claims (by `app::admission::catch_up`, on the owner's machine).
    pub admitted: usize,
    /// Feed folders listed (read as a folder) in this pass: the others were
    /// known unchanged by their times, from this process's earlier passes
    /// or from the listing an earlier process kept ([`crate::store::folder::listing`]).
    pub listed: usize,
    /// Feed folders looked at (their time read, at least) in this pass: a
    /// skipped one ([`ScanCache`]) is not.
    pub looked: usize,
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
    /// Sends accepted in this pass, kept decoded (up to a bound) so
    /// re-folding them needs no second read and parse.
    fresh: Fresh,
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
    /// problems of [`problems::FOLDER_KINDS`] standing, and of which kinds. A first
    /// pass lists every feed folder; a folder with none (most, and every
    /// junk folder a peer planted) then costs no query. `None` when not read:
    /// each listing looks its problems up.
    folder_problems: Option<HashMap<String, Vec<ProblemKind>>>,
    /// Records whose signature needs no check: this process made them a
    /// moment ago (see [`Vouch`]).
    vouched: HashSet<Vouch>,
    /// True once a file of the feed being read ended in a torn line.
    torn: bool,
    /// A rebuild's: where the read-ahead queues its checks, taken as
    /// holding until the rebuild's end ([`deferred_checks`]).
    later: Option<CheckQueue>,
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
        Self::run_full(index, dir, cache, progress, now_ms(), None)
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
        let mut me = Self::for_own_write(index, dir, cache, vouched)?;
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

    /// A pass over what this device writes, trusting the `vouched` records
    /// (see [`Self::run_own`] and `own`), loaded.
    fn for_own_write(
        index: &'a IndexTx<'a>,
        dir: &'a ChannelDir,
        cache: &mut ScanCache,
        vouched: HashSet<Vouch>,
    ) -> StoreResult<Self> {
        let mut me = Self::new(index, dir, None, now_ms(), vouched);
        me.own_write = true;
        me.load(cache)?;
        Ok(me)
    }

    /// A rebuild's pass ([`Self::run_with_progress`] on an index emptied
    /// of what the feeds give): the signatures of the files it reads ahead
    /// are queued in `checks` and taken as holding. The caller commits only
    /// if [`DeferredChecks::finish`] says every one held, and otherwise
    /// rolls back and runs [`Self::run_with_progress`].
    pub fn rebuild(
        index: &'a IndexTx<'a>,
        dir: &'a ChannelDir,
        cache: &mut ScanCache,
        progress: Option<&'p mut dyn FnMut(u64)>,
        checks: &DeferredChecks,
    ) -> StoreResult<IngestReport> {
        Self::run_full(index, dir, cache, progress, now_ms(), Some(checks.queue()))
    }

    /// Like [`Self::run`], as if local time were `now_ms`: records dated
    /// past it are held (see the module docs).
    pub fn run_at(
        index: &'a IndexTx<'a>,
        dir: &'a ChannelDir,
        cache: &mut ScanCache,
        now_ms: i64,
    ) -> StoreResult<IngestReport> {
        Self::run_full(index, dir, cache, None, now_ms, None)
    }

    fn run_full(
        index: &'a IndexTx<'a>,
        dir: &'a ChannelDir,
        cache: &mut ScanCache,
        progress: Option<&'p mut dyn FnMut(u64)>,
        now_ms: i64,
        later: Option<CheckQueue>,
    ) -> StoreResult<IngestReport> {
        let mut me = Self::new(index, dir, progress, now_ms, HashSet::new());
        me.later = later;
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
        if let Some(later) = &me.later {
            later.files_read();
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
            fresh: Fresh::default(),
            acting: Acting::default(),
            pin_keys: BTreeSet::new(),
            report: IngestReport::default(),
            ahead_key: None,
            cursors: None,
            folder_problems: None,
            torn: false,
            later: None,
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

    fn rel(&self, path: &Path) -> String {
        path.strip_prefix(self.dir.root())
            .unwrap_or(path)
            .to_string_lossy()
            .into_owned()
    }

    /// Decides one line and acts on the decision: a line that is no record
    /// is garbage; a record is judged ([`judge()`]) on what the pass knows of
    /// its feed, and the judgment is carried out. `verified` is the
    /// signature check if it was done ahead (see [`Self::verify_ahead`]).
    fn handle(
        &mut self,
        feed: &FeedId,
        rel: &str,
        line: Line,
        verified: Option<bool>,
    ) -> StoreResult<Verdict> {
        let offset = line.offset;
        let rec = match line.record {
            Ok(r) => r,
            Err(e) => {
                self.problem(
                    ProblemKind::Garbage,
                    rel,
                    offset,
                    None,
                    feed,
                    &e.to_string(),
                )?;
                return Ok(Verdict::Consumed);
            }
        };
        let verdict = self.judge_and_act(feed, rel, offset, &rec, verified, |_| true)?;
        Ok(verdict.expect("every judgment is acted on"))
    }

    /// Judges `rec`, found (or to be found) at `offset` of `rel`, and acts
    /// on the judgment if `take` wants it; `None`, with nothing done, when
    /// it does not.
    fn judge_and_act(
        &mut self,
        feed: &FeedId,
        rel: &str,
        offset: u64,
        rec: &Record,
        verified: Option<bool>,
        take: impl FnOnce(&Judgment<'_>) -> bool,
    ) -> StoreResult<Option<Verdict>> {
        let state = self.feed_state(feed).clone();
        let seq = rec.header.seq;
        let known_at = if seq > 0 && seq <= state.head.map_or(0, |h| h.seq) {
            self.id_at(feed, seq)?
        } else {
            None
        };
        let view = FeedView {
            channel: self.dir.id(),
            feed,
            state: &state,
            known_at,
        };
        let checked = Checked {
            ahead: self.ahead_key.zip(verified),
            vouched: &self.vouched,
        };
        let judgment = judge(&view, rec, self.now_ms, &checked);
        if !take(&judgment) {
            return Ok(None);
        }
        self.act(feed, rel, offset, rec, judgment).map(Some)
    }

    /// Carries out the judgment on `rec`, found at `offset` of `rel`.
    fn act(
        &mut self,
        feed: &FeedId,
        rel: &str,
        offset: u64,
        rec: &Record,
        judgment: Judgment<'_>,
    ) -> StoreResult<Verdict> {
        let seq = rec.header.seq;
        match judgment {
            Judgment::Quarantine(why) => {
                self.quarantine(rel, offset, rec, feed, &why.reason(feed, rec))
            }
            Judgment::Unadmitted { claim } => {
                // Noted, so the owner's machine can admit the feed.
                if let Some(claim) = claim {
                    self.claims_changed |= self.index.note_claim(rec, claim, rel, offset)?;
                }
                let reason =
                    format!("feed {feed} is not admitted by the channel owner; its records wait");
                self.problem(ProblemKind::Unadmitted, rel, 0, None, feed, &reason)?;
                Ok(Verdict::Wait("not admitted".into()))
            }
            Judgment::Seen => Ok(Verdict::Consumed),
            Judgment::Frozen(frozen) => Ok(Verdict::Wait(format!("frozen: {frozen}"))),
            Judgment::Gap { expected, found } => {
                self.gap = Some(expected);
                Ok(Verdict::Wait(format!(
                    "seq {expected} is missing (found {found})"
                )))
            }
            Judgment::Fork { existing } => {
                let reason = format!(
                    "fork at seq {seq}: records {} and {} both claim it; the feed is frozen after seq {}",
                    existing.short(),
                    rec.id.short(),
                    seq - 1
                );
                self.problem(ProblemKind::Fork, rel, offset, Some(rec), feed, &reason)?;
                // Neither branch stands: take back what this machine applied
                // from the forked seq on, so every machine ends in the same
                // state whichever branch reached it first.
                let head = self.rollback_from(feed, seq)?;
                let st = self.feed_state(feed);
                st.frozen = Some(reason);
                st.head = head;
                st.dirty = true;
                Ok(Verdict::Consumed)
            }
            Judgment::Hold { ahead_ms, alarm } => {
                let reason = format!(
                    "seq {seq} is dated {} ahead of this machine's clock: held (not applied) until \
                     the clock catches up",
                    span(ahead_ms)
                );
                self.problem(ProblemKind::Held, rel, offset, Some(rec), feed, &reason)?;
                self.held.insert(rec.id.hex());
                if alarm {
                    let reason = format!(
                        "clock of feed {feed} is {} ahead of this machine's (seq {seq}): its \
                         records are held; check that device's clock",
                        span(ahead_ms)
                    );
                    self.problem(ProblemKind::Clock, rel, offset, Some(rec), feed, &reason)?;
                }
                Ok(Verdict::Wait(format!(
                    "held: seq {seq} is dated {} ahead",
                    span(ahead_ms)
                )))
            }
            Judgment::UnknownOp => {
                let reason = format!(
                    "feed {feed} uses op '{}' that this version does not know — upgrade countersign",
                    rec.op_name
                );
                self.problem(
                    ProblemKind::UnknownOp,
                    rel,
                    offset,
                    Some(rec),
                    feed,
                    &reason,
                )?;
                let st = self.feed_state(feed);
                st.frozen = Some(reason.clone());
                st.dirty = true;
                Ok(Verdict::Wait(reason))
            }
            Judgment::Accept { op, new_key } => {
                if let Some(k) = new_key {
                    let st = self.feed_state(feed);
                    st.pubkey = Some(k);
                    st.pending_key = None;
                    st.dirty = true;
                }
                self.accept(feed, rec, op, rel, offset)?;
                Ok(Verdict::Consumed)
            }
        }
    }
}
