//! Reading a feed's segments ahead of the pass that applies them.
//!
//! The pass applies a feed's records one by one on one thread, and each
//! needs its signature checked first. When a pass reads whole files (a
//! rebuild, or the first pass of a process over files it has no cursor
//! for), another thread reads, decodes and verifies the next files while the
//! pass applies the current one, on every core, so that no core waits for
//! the other. It decides nothing: the pass takes a file from here only when
//! it would read that file from its start and finds it as the read-ahead
//! did (same size and modification time), and a verdict only while the feed
//! still has the key it was checked with; otherwise it reads and verifies
//! itself, as it would have without it.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::Scope;
use std::time::SystemTime;

use ed25519_dalek::VerifyingKey;

use crate::store::feed::{self, Line};

/// How many files the read-ahead may hold ready before the pass takes them.
const READY: usize = 2;

/// A file as the read-ahead found it: its size and modification time, its
/// complete lines from the start with the length of a torn tail, and their
/// signature checks ([`verify_lines`]) with `key`.
pub struct Ahead {
    pub path: PathBuf,
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
    ready: Option<Receiver<Ahead>>,
}

impl ReadAhead {
    /// Nothing read ahead: the pass reads every file itself.
    pub fn none() -> Self {
        Self {
            plan: Vec::new(),
            next: 0,
            ready: None,
        }
    }

    /// Starts reading `plan` (whole files, in the order the pass will ask for
    /// them) on a thread of `scope`, checking signatures with `key` for
    /// records past seq `head` (the ones at or below it are known, or forks
    /// that the pass checks itself). The thread stops once this is dropped.
    pub fn start<'scope>(
        scope: &'scope Scope<'scope, '_>,
        plan: Vec<PathBuf>,
        key: Option<VerifyingKey>,
        head: u64,
    ) -> Self {
        if plan.is_empty() {
            return Self::none();
        }
        let (tx, rx) = sync_channel(READY);
        let files = plan.clone();
        scope.spawn(move || read(&files, key, head, &tx));
        Self {
            plan,
            next: 0,
            ready: Some(rx),
        }
    }

    /// The file at `path` as read ahead, if it is one of the plan's not yet
    /// taken. Files of the plan before it were passed over by the pass and
    /// are dropped.
    pub fn take(&mut self, path: &Path) -> Option<Ahead> {
        let rx = self.ready.as_ref()?;
        let at = self.next + self.plan[self.next..].iter().position(|p| p == path)?;
        while self.next <= at {
            let Ok(ahead) = rx.recv() else {
                // The thread stopped (it cannot read ahead, or panicked):
                // the pass reads the rest itself.
                self.ready = None;
                return None;
            };
            self.next += 1;
            if ahead.path == path {
                return Some(ahead);
            }
        }
        None
    }
}

/// Reads, decodes and verifies each file of `plan` in turn and hands it
/// over, until the pass stops taking them. A file that cannot be read (gone,
/// refused) is not handed over: the pass reads it itself and sees why.
fn read(plan: &[PathBuf], key: Option<VerifyingKey>, head: u64, tx: &SyncSender<Ahead>) {
    // Duplicates (a segment in both its plain and gzip form) were checked
    // once already: the pass finds them known and never asks.
    let mut checked = head;
    for path in plan {
        let Some(stamp) = std::fs::symlink_metadata(path)
            .ok()
            .filter(|m| m.is_file())
            .and_then(|m| Some((m.len(), m.modified().ok()?)))
        else {
            continue;
        };
        let Ok((lines, torn)) = feed::read_lines_and_rest(path, 0) else {
            continue;
        };
        let verified = key.map_or_else(Vec::new, |k| verify_lines(&lines, &k, checked));
        checked = checked.max(
            lines
                .iter()
                .zip(&verified)
                .filter(|(_, v)| **v == Some(true))
                .filter_map(|(l, _)| l.record.as_ref().ok().map(|r| r.header.seq))
                .max()
                .unwrap_or(0),
        );
        let ahead = Ahead {
            path: path.clone(),
            stamp,
            lines,
            torn,
            key,
            verified,
        };
        if tx.send(ahead).is_err() {
            return;
        }
    }
}

/// Checks the signatures of `lines` with `key` on all cores: for each line,
/// `Some(verdict)` for a record past seq `head`, `None` otherwise (not a
/// record, or one the pass finds known without a check).
pub fn verify_lines(lines: &[Line], key: &VerifyingKey, head: u64) -> Vec<Option<bool>> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 8);
    let chunk = lines.len().div_ceil(threads).max(1);
    let mut out = vec![None; lines.len()];
    std::thread::scope(|scope| {
        for (slot, part) in out.chunks_mut(chunk).zip(lines.chunks(chunk)) {
            scope.spawn(move || {
                for (v, line) in slot.iter_mut().zip(part) {
                    *v = line
                        .record
                        .as_ref()
                        .ok()
                        .filter(|r| r.header.seq > head)
                        .map(|r| r.verify(key));
                }
            });
        }
    });
    out
}
