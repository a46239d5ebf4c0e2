//! Reading a feed's segments ahead of the pass that applies them.
//!
//! The pass applies a feed's records one by one on one thread, and each
//! needs its signature checked first. When a pass reads whole files (a
//! rebuild, or the first pass of a process over files it has no cursor
//! for), a reader thread reads the next files and cuts them into lines, and
//! their lines are decoded and checked in chunks by workers on the other
//! cores while the pass applies the current file. Decoding and checks are
//! what take longest, so the pass does not sit idle while it waits for the
//! file it needs: it takes chunks too (of that file first, since chunks are
//! taken in order), and every core stays busy until the last file is done.
//!
//! In a rebuild the checks are not waited for: each chunk's batch goes to
//! the rebuild's [`DeferredChecks`](super::DeferredChecks), its records are
//! taken as holding, and the workers check queued batches when they have no
//! line to decode; the rebuild commits only once every batch held.
//!
//! It decides nothing: the pass takes a file from here only when it would
//! read that file from its start and finds it as the read-ahead did (same
//! size and modification time), and a verdict only while the feed still has
//! the key it was checked with; otherwise it reads and verifies itself, as
//! it would have without it.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::Scope;
use std::time::SystemTime;

use ed25519_dalek::VerifyingKey;

use super::deferred_checks::CheckQueue;
use crate::core::signature::Batch;
use crate::store::folder::segments;
use crate::store::folder::segments::Line;

/// How many files the reader may hold, read but not yet taken by the pass.
const READY: usize = 2;

/// How many lines a worker checks at a time: enough that taking a chunk
/// costs nothing next to checking it (~2 ms), few enough that the last
/// chunks of a file spread over every core.
const CHUNK: usize = 64;

/// A file as the read-ahead found it: its size and modification time, its
/// complete lines from the start with the length of a torn tail, and their
/// signature checks with `key` ([`check_lines`]; empty when there is no key).
pub struct Ahead {
    pub stamp: (u64, SystemTime),
    pub lines: Vec<Line>,
    pub torn: u64,
    pub key: Option<VerifyingKey>,
    pub verified: Vec<Option<bool>>,
}

/// The files of one feed being read ahead, in the order the pass reads them.
pub struct ReadAhead {
    /// The files asked for, in order, and how many of them were passed.
    plan: Vec<PathBuf>,
    next: usize,
    shared: Option<Arc<Shared>>,
}

/// What the reader, the workers and the pass share: one lock, and one
/// condition signalled whenever anything under it changes.
struct Shared {
    state: Mutex<State>,
    changed: Condvar,
    /// In a rebuild: where each chunk's batch goes instead of being checked
    /// before the pass may take its file (`super::deferred_checks`).
    later: Option<CheckQueue>,
}

#[derive(Default)]
struct State {
    /// Chunks waiting for their check, in the order of the plan.
    chunks: VecDeque<Chunk>,
    /// Files read and not yet taken, in the order of the plan.
    files: VecDeque<Reading>,
    /// The reader went through the whole plan.
    read_all: bool,
    /// The pass is done with the read-ahead: everyone stops.
    stopped: bool,
}

/// A run of a file's lines to decode and check.
struct Chunk {
    /// The file's place in the plan, and the chunk's place in the file.
    file: usize,
    part: usize,
    /// The file's bytes, shared by its chunks, and this chunk's lines in
    /// them: each line's offset and length, its newline included.
    bytes: Arc<Vec<u8>>,
    lines: Vec<(u64, u64)>,
    /// No key: the lines are only decoded.
    key: Option<VerifyingKey>,
    /// Lines of records at or below this seq are left to the pass.
    head: u64,
}

/// A chunk's lines and their verdicts, once back from the check.
type Checked = (Vec<Line>, Vec<Option<bool>>);

/// A file read, whose chunks come back from their checks in any order.
struct Reading {
    file: usize,
    stamp: (u64, SystemTime),
    torn: u64,
    key: Option<VerifyingKey>,
    parts: Vec<Option<Checked>>,
    missing: usize,
}

impl Reading {
    /// The file with its lines back in order, once every chunk is checked.
    fn into_ahead(self) -> Ahead {
        let mut lines = Vec::new();
        let mut verified = Vec::new();
        for (l, v) in self.parts.into_iter().flatten() {
            lines.extend(l);
            verified.extend(v);
        }
        Ahead {
            stamp: self.stamp,
            lines,
            torn: self.torn,
            key: self.key,
            verified,
        }
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A thread that panicked holding the lock left nothing half-done
        // that matters here: the pass reads a file itself when in doubt.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn wait<'g>(&self, guard: MutexGuard<'g, State>) -> MutexGuard<'g, State> {
        self.changed.wait(guard).unwrap_or_else(|e| e.into_inner())
    }

    /// Decodes and checks `chunk` (without the lock) and puts its lines and
    /// verdicts back. Should the check panic, the lines come back unchecked,
    /// for the pass to check itself, rather than never.
    fn check(&self, chunk: Chunk) {
        let lines: Vec<Line> = chunk
            .lines
            .iter()
            .map(|&span| segments::decode_line(&chunk.bytes, span, 0))
            .collect();
        let verdicts = match &chunk.key {
            Some(key) => std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let (batch, slots) = queue_lines(&lines, key, chunk.head);
                let Some(later) = &self.later else {
                    return verdicts_of(batch, slots);
                };
                match later.push(batch) {
                    // Taken as holding; the rebuild commits only if they do.
                    None => slots.into_iter().map(|s| s.map(|_| true)).collect(),
                    Some(batch) => verdicts_of(batch, slots),
                }
            }))
            .unwrap_or_else(|_| vec![None; lines.len()]),
            None => Vec::new(),
        };
        let mut st = self.lock();
        // A file the pass passed over is gone from the list: drop the chunk.
        if let Some(r) = st.files.iter_mut().find(|r| r.file == chunk.file) {
            r.parts[chunk.part] = Some((lines, verdicts));
            r.missing -= 1;
        }
        drop(st);
        self.changed.notify_all();
    }
}

impl ReadAhead {
    /// Nothing read ahead: the pass reads every file itself.
    pub fn none() -> Self {
        Self {
            plan: Vec::new(),
            next: 0,
            shared: None,
        }
    }

    /// Starts reading `plan` (whole files, in the order the pass will ask for
    /// them) on threads of `scope`, checking signatures with `key` for
    /// records past seq `head` (the ones at or below it are known, or forks
    /// that the pass checks itself). With `later`, a chunk's checks are
    /// queued there and its verdicts say they hold (a rebuild's way: it
    /// commits only once they do). The threads stop once this is dropped.
    pub fn start<'scope>(
        scope: &'scope Scope<'scope, '_>,
        plan: Vec<PathBuf>,
        key: Option<VerifyingKey>,
        head: u64,
        later: Option<CheckQueue>,
    ) -> Self {
        if plan.is_empty() {
            return Self::none();
        }
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
            later,
        });
        let files = plan.clone();
        let s = Arc::clone(&shared);
        scope.spawn(move || read(&files, key, head, &s));
        // The pass is the last worker: it takes chunks while it waits.
        for _ in 0..cores() - 1 {
            let s = Arc::clone(&shared);
            scope.spawn(move || work(&s));
        }
        Self {
            plan,
            next: 0,
            shared: Some(shared),
        }
    }

    /// The file at `path` as read ahead, if it is one of the plan's not yet
    /// taken. Files of the plan before it were passed over by the pass and
    /// are dropped. While its checks are under way, the caller does some.
    pub fn take(&mut self, path: &Path) -> Option<Ahead> {
        let shared = self.shared.as_ref()?;
        let at = self.next + self.plan[self.next..].iter().position(|p| p == path)?;
        self.next = at + 1;
        let mut st = shared.lock();
        loop {
            if st.files.front().is_some_and(|r| r.file < at) {
                st.files.retain(|r| r.file >= at);
                st.chunks.retain(|c| c.file >= at);
                shared.changed.notify_all();
            }
            match st.files.front() {
                Some(r) if r.file > at => return None,
                Some(r) if r.missing == 0 => {
                    let ready = st.files.pop_front().expect("a file is first");
                    shared.changed.notify_all();
                    return Some(ready.into_ahead());
                }
                // Not read (gone, refused): the pass reads it itself and sees why.
                None if st.read_all => return None,
                _ => {}
            }
            if let Some(chunk) = st.chunks.pop_front() {
                drop(st);
                shared.check(chunk);
                st = shared.lock();
            } else {
                st = shared.wait(st);
            }
        }
    }
}

impl Drop for ReadAhead {
    fn drop(&mut self) {
        if let Some(shared) = &self.shared {
            shared.lock().stopped = true;
            shared.changed.notify_all();
        }
    }
}

/// Reads each file of `plan` in turn, cuts it into lines and queues their
/// chunks for decoding and checking, at most [`READY`] files ahead of the
/// pass. A file that cannot be read (gone, refused) is not queued: the pass
/// reads it itself and sees why. The records of a file that an earlier one
/// of the plan also holds (a segment in both its plain and gzip form) are
/// checked twice; the pass finds them known and uses neither check.
fn read(plan: &[PathBuf], key: Option<VerifyingKey>, head: u64, shared: &Shared) {
    // Set however this ends, a panic included, so that no one waits for a
    // file that will never come.
    struct ReadAll<'a>(&'a Shared);
    impl Drop for ReadAll<'_> {
        fn drop(&mut self) {
            self.0.lock().read_all = true;
            self.0.changed.notify_all();
        }
    }
    let _done = ReadAll(shared);
    for (file, path) in plan.iter().enumerate() {
        let Some(stamp) = std::fs::symlink_metadata(path)
            .ok()
            .filter(|m| m.is_file())
            .and_then(|m| Some((m.len(), m.modified().ok()?)))
        else {
            continue;
        };
        let Ok(bytes) = segments::read_segment_from(path, 0) else {
            continue;
        };
        let (lines, torn) = segments::line_spans(&bytes);
        let (parts, chunks) = chunked(file, Arc::new(bytes), lines, key, head);
        let mut st = shared.lock();
        while st.files.len() >= READY && !st.stopped {
            st = shared.wait(st);
        }
        if st.stopped {
            return;
        }
        st.files.push_back(Reading {
            file,
            stamp,
            torn,
            key,
            missing: chunks.len(),
            parts,
        });
        st.chunks.extend(chunks);
        drop(st);
        shared.changed.notify_all();
    }
}

/// Splits a file's lines into chunks to decode and check, with the empty
/// slots they come back to.
fn chunked(
    file: usize,
    bytes: Arc<Vec<u8>>,
    lines: Vec<(u64, u64)>,
    key: Option<VerifyingKey>,
    head: u64,
) -> (Vec<Option<Checked>>, Vec<Chunk>) {
    let chunks: Vec<Chunk> = lines
        .chunks(CHUNK)
        .enumerate()
        .map(|(part, lines)| Chunk {
            file,
            part,
            bytes: Arc::clone(&bytes),
            lines: lines.to_vec(),
            key,
            head,
        })
        .collect();
    ((0..chunks.len()).map(|_| None).collect(), chunks)
}

/// A worker: checks chunks as they come until the pass stops, or until the
/// reader is done and no chunk is left. In a rebuild, with no chunk to take
/// it checks a batch left for later instead of waiting.
fn work(shared: &Shared) {
    let mut st = shared.lock();
    loop {
        if st.stopped {
            return;
        }
        if let Some(chunk) = st.chunks.pop_front() {
            drop(st);
            shared.check(chunk);
            st = shared.lock();
        } else if st.read_all {
            return;
        } else if let Some(later) = &shared.later {
            drop(st);
            let checked = later.check_one();
            st = shared.lock();
            if !checked && st.chunks.is_empty() && !st.read_all && !st.stopped {
                st = shared.wait(st);
            }
        } else {
            st = shared.wait(st);
        }
    }
}

/// The lines' checks with `key`, one batch for all (the verdicts are those
/// of single checks, see `signature`): for each line `Some(verdict)` for a
/// record past seq `head`, `None` otherwise (not a record, or one the pass
/// finds known without a check).
fn check_lines(lines: &[Line], key: &VerifyingKey, head: u64) -> Vec<Option<bool>> {
    let (batch, slots) = queue_lines(lines, key, head);
    verdicts_of(batch, slots)
}

/// The verdicts of `batch` in the `slots` [`queue_lines`] gave.
fn verdicts_of(batch: Batch, mut slots: Vec<Option<bool>>) -> Vec<Option<bool>> {
    let mut verdicts = batch.verdicts().into_iter();
    for v in slots.iter_mut().flatten() {
        *v = verdicts.next().unwrap_or(false);
    }
    slots
}

/// The lines' checks with `key` queued in one batch, in order, with a slot
/// for each line: `Some(false)` for a record past seq `head` (queued),
/// `None` otherwise.
fn queue_lines(lines: &[Line], key: &VerifyingKey, head: u64) -> (Batch, Vec<Option<bool>>) {
    let mut batch = Batch::new();
    let slots = lines
        .iter()
        .map(|line| {
            let rec = line.record.as_ref().ok().filter(|r| r.header.seq > head)?;
            rec.queue(key, &mut batch);
            Some(false)
        })
        .collect();
    (batch, slots)
}

/// The cores checks may use: all of them, up to 8.
fn cores() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 8)
}

/// Checks the signatures of `lines` with `key` on all cores, in batches of
/// [`CHUNK`]: for each line, as [`check_lines`].
pub fn verify_lines(lines: &[Line], key: &VerifyingKey, head: u64) -> Vec<Option<bool>> {
    let chunk = lines.len().div_ceil(cores()).max(1);
    let mut out = vec![None; lines.len()];
    std::thread::scope(|scope| {
        for (slot, part) in out.chunks_mut(chunk).zip(lines.chunks(chunk)) {
            scope.spawn(move || {
                for (slot, part) in slot.chunks_mut(CHUNK).zip(part.chunks(CHUNK)) {
                    slot.copy_from_slice(&check_lines(part, key, head));
                }
            });
        }
    });
    out
}

#[cfg(test)]
mod tests {
    use std::fs;

    use ed25519_dalek::SigningKey;

    use super::*;
    use crate::core::hlc::Hlc;
    use crate::core::ids::FeedId;
    use crate::core::op::{Ids, Op};
    use crate::core::record::{self, Header};

    /// Writes `files` segments of `per` records each (seq from 1), every
    /// seventh signed by a stranger's key, a line of garbage in the second
    /// file; returns their paths.
    fn segments(dir: &Path, files: usize, per: usize, key: &SigningKey) -> Vec<PathBuf> {
        let stranger = SigningKey::from_bytes(&[9; 32]);
        let feed = FeedId::new("backend", "laptop-3f9a2c").unwrap();
        let mut seq = 0u64;
        (0..files)
            .map(|f| {
                let mut text = String::new();
                for _ in 0..per {
                    seq += 1;
                    let header = Header {
                        ch: "c".repeat(64),
                        feed: feed.clone(),
                        seq,
                        prev: None,
                        hlc: Hlc(1_000 + seq as i64, 0),
                    };
                    let signer = if seq.is_multiple_of(7) {
                        &stranger
                    } else {
                        key
                    };
                    let op = Op::Read(Ids { ids: Vec::new() });
                    text.push_str(&record::encode(&header, &op, signer).to_line());
                }
                if f == 1 {
                    text.push_str("not a record\n");
                }
                let path = dir.join(format!("{:08}.jsonl", f * per + 1));
                fs::write(&path, text).unwrap();
                path
            })
            .collect()
    }

    #[test]
    fn every_file_comes_back_whole_with_the_verdicts_of_a_check_line_by_line() {
        // A line's check alone, as the pass makes it without the read-ahead.
        let check_line = |line: &Line, key: &VerifyingKey, head: u64| {
            line.record
                .as_ref()
                .ok()
                .filter(|r| r.header.seq > head)
                .map(|r| r.verify(key))
        };
        let tmp = tempfile::tempdir().unwrap();
        let key = SigningKey::from_bytes(&[7; 32]);
        // Several chunks a file, and a last chunk that is not full.
        let plan = segments(tmp.path(), 4, CHUNK * 2 + 5, &key);
        let head = 3;
        std::thread::scope(|scope| {
            let mut ahead =
                ReadAhead::start(scope, plan.clone(), Some(key.verifying_key()), head, None);
            for path in &plan {
                let got = ahead.take(path).expect("the file was read ahead");
                let lines = segments::read_lines(path, 0).unwrap();
                let want: Vec<_> = lines
                    .iter()
                    .map(|l| check_line(l, &key.verifying_key(), head))
                    .collect();
                assert_eq!(got.verified, want);
                let offsets =
                    |ls: &[Line]| ls.iter().map(|l| (l.offset, l.len)).collect::<Vec<_>>();
                assert_eq!(offsets(&got.lines), offsets(&lines));
                // Both verdicts occur, and lines at or below `head` are left unchecked.
                assert!(want.contains(&Some(false)) && want.contains(&Some(true)));
            }
        });
    }

    #[test]
    fn checks_left_for_later_hold_exactly_when_every_line_would() {
        let tmp = tempfile::tempdir().unwrap();
        let key = SigningKey::from_bytes(&[7; 32]);
        // Seq 1 to 219, every seventh a stranger's (the last at 217).
        let plan = segments(tmp.path(), 3, CHUNK + 9, &key);
        for (head, holds) in [(0, false), (100, false), (217, true)] {
            let checks = super::super::DeferredChecks::start();
            std::thread::scope(|scope| {
                let mut ahead = ReadAhead::start(
                    scope,
                    plan.clone(),
                    Some(key.verifying_key()),
                    head,
                    Some(checks.queue()),
                );
                for path in &plan {
                    let got = ahead.take(path).expect("the file was read ahead");
                    // Every record past the head is taken as holding.
                    for (line, v) in got.lines.iter().zip(&got.verified) {
                        let past = line.record.as_ref().is_ok_and(|r| r.header.seq > head);
                        assert_eq!(*v, past.then_some(true));
                    }
                }
            });
            assert_eq!(checks.finish(), holds, "head {head}");
        }
    }

    #[test]
    fn a_batch_check_names_exactly_the_lines_a_single_check_refuses() {
        let tmp = tempfile::tempdir().unwrap();
        let key = SigningKey::from_bytes(&[7; 32]);
        let path = &segments(tmp.path(), 1, CHUNK * 3, &key)[0];
        let lines = segments::read_lines(path, 0).unwrap();
        let head = 5;
        let want: Vec<Option<bool>> = lines
            .iter()
            .map(|l| {
                let r = l.record.as_ref().unwrap();
                (r.header.seq > head).then(|| r.verify(&key.verifying_key()))
            })
            .collect();
        assert_eq!(verify_lines(&lines, &key.verifying_key(), head), want);
        // Every seventh is a stranger's: refused, the rest hold.
        assert_eq!(want[13], Some(false));
        assert_eq!(want[14], Some(true));
        // A run with no stranger's line holds as a batch.
        let own: Vec<Line> = lines
            .into_iter()
            .filter(|l| !l.record.as_ref().unwrap().header.seq.is_multiple_of(7))
            .collect();
        let got = verify_lines(&own, &key.verifying_key(), 0);
        assert!(got.iter().all(|v| *v == Some(true)), "{got:?}");
    }

    #[test]
    fn files_passed_over_missing_or_asked_again_are_not_handed_over() {
        let tmp = tempfile::tempdir().unwrap();
        let key = SigningKey::from_bytes(&[7; 32]);
        let mut plan = segments(tmp.path(), 4, 10, &key);
        let gone = tmp.path().join("00000099.jsonl");
        plan.insert(2, gone.clone());
        std::thread::scope(|scope| {
            let mut ahead =
                ReadAhead::start(scope, plan.clone(), Some(key.verifying_key()), 0, None);
            // The first file is passed over; the second is handed over once.
            assert!(ahead.take(&plan[1]).is_some());
            assert!(ahead.take(&plan[1]).is_none());
            assert!(ahead.take(&plan[0]).is_none());
            // A file that could not be read is left to the pass.
            assert!(ahead.take(&gone).is_none());
            assert!(ahead.take(&plan[4]).is_some());
        });
    }

    #[test]
    fn a_pass_that_stops_early_leaves_no_thread_waiting() {
        let tmp = tempfile::tempdir().unwrap();
        let key = SigningKey::from_bytes(&[7; 32]);
        let plan = segments(tmp.path(), 6, 10, &key);
        // The scope returns only once every thread of the read-ahead ended.
        std::thread::scope(|scope| {
            let mut ahead =
                ReadAhead::start(scope, plan.clone(), Some(key.verifying_key()), 0, None);
            assert!(ahead.take(&plan[0]).is_some());
        });
        std::thread::scope(|scope| {
            let _never_asked = ReadAhead::start(scope, plan.clone(), None, 0, None);
        });
    }
}
