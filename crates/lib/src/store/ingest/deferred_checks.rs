//! Signature checks a rebuild leaves for later: it applies records as if
//! their signatures held and commits only once every one of them did.
//!
//! A rebuild writes its rows in one transaction that readers do not see
//! until it commits, so nothing it applies is visible before the checks are
//! done. The read-ahead (`super::read_ahead`) decodes each chunk of lines and
//! queues their batch here instead of checking it before the pass may take
//! the file. While files are being read, its workers check queued batches
//! whenever they have no line to decode; once every file is read, a thread
//! of its own checks the rest while the pass folds the messages, where one
//! core used to wait. [`DeferredChecks::finish`] checks what is left on the
//! calling thread too and says whether every batch held; when one did not,
//! the caller rolls the transaction back and rebuilds again checking each
//! file before it applies it, so a folder with a bad signature costs a
//! second pass, never a record applied that should not be.
//!
//! It decides nothing about a record: a batch holds exactly when each of its
//! signatures holds alone (`core::signature`).

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

use crate::core::signature::Batch;

/// The batches queued, and the thread that checks them once the files are read.
pub struct DeferredChecks {
    shared: Arc<Shared>,
}

/// A handle to the same queue, for the read-ahead's threads and the pass.
#[derive(Clone)]
pub struct CheckQueue(Arc<Shared>);

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Default)]
struct State {
    batches: VecDeque<Batch>,
    /// A batch failed: the rest need no check.
    failed: bool,
    /// No batch will come: the thread ends when the queue is empty.
    closed: bool,
    /// The thread checking the queue, once the files are read.
    thread: Option<JoinHandle<()>>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A checker that panicked left the queue as it was; its batch counts
        // as failed (see `check_one`), so nothing is taken on trust.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Checks one queued batch: false when there was none. A batch whose
    /// check panics counts as failed.
    fn check_one(&self) -> bool {
        let mut st = self.lock();
        if st.failed {
            st.batches.clear();
        }
        let Some(batch) = st.batches.pop_front() else {
            return false;
        };
        drop(st);
        let held = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| batch.holds()))
            .unwrap_or(false);
        self.lock().failed |= !held;
        self.changed.notify_all();
        true
    }

    /// Checks batches until the queue is closed and empty.
    fn drain(&self) {
        loop {
            if self.check_one() {
                continue;
            }
            let st = self.lock();
            if st.closed {
                return;
            }
            if st.batches.is_empty() {
                drop(self.changed.wait(st).unwrap_or_else(|e| e.into_inner()));
            }
        }
    }
}

impl DeferredChecks {
    /// An empty queue; nothing checks it until [`CheckQueue::files_read`].
    pub fn start() -> Self {
        Self {
            shared: Arc::new(Shared {
                state: Mutex::new(State::default()),
                changed: Condvar::new(),
            }),
        }
    }

    /// Where the read-ahead's threads queue their batches.
    pub fn queue(&self) -> CheckQueue {
        CheckQueue(Arc::clone(&self.shared))
    }

    /// Checks what is still queued (on this thread as well as the other),
    /// waits for the last batch, and says whether every batch held.
    pub fn finish(self) -> bool {
        let thread = {
            let mut st = self.shared.lock();
            st.closed = true;
            st.thread.take()
        };
        self.shared.changed.notify_all();
        self.shared.drain();
        if let Some(t) = thread {
            // A checker that panicked had its batch counted as failed.
            let _ = t.join();
        }
        let st = self.shared.lock();
        !st.failed && st.batches.is_empty()
    }
}

/// How many batches may wait: about 8 MB of them (a queued signature keeps
/// its key, its signature and its hash, 128 bytes). Past it, the chunk is
/// checked where it is decoded, as outside a rebuild, so the queue of a
/// channel of millions of records stays this size however slow the checks.
const QUEUED_MAX: usize = 1024;

impl CheckQueue {
    /// Queues `batch` to be checked before the rebuild commits; hands it
    /// back, to be checked now, when the queue is full.
    #[must_use]
    pub fn push(&self, batch: Batch) -> Option<Batch> {
        if batch.is_empty() {
            return None;
        }
        let mut st = self.0.lock();
        if st.batches.len() >= QUEUED_MAX {
            return Some(batch);
        }
        st.batches.push_back(batch);
        drop(st);
        self.0.changed.notify_all();
        None
    }

    /// Checks one queued batch, for a thread with nothing else to do:
    /// false when there was none.
    pub fn check_one(&self) -> bool {
        self.0.check_one()
    }

    /// Every file is read: a thread of its own checks the rest while the
    /// pass folds. Without a thread to be had, [`DeferredChecks::finish`]
    /// checks them.
    pub fn files_read(&self) {
        let mut st = self.0.lock();
        if st.thread.is_some() || st.closed {
            return;
        }
        let s = Arc::clone(&self.0);
        st.thread = std::thread::Builder::new()
            .name("ingest-checks".into())
            .spawn(move || s.drain())
            .ok();
    }
}

impl Drop for DeferredChecks {
    /// Dropped unfinished (the pass failed): the thread stops after its batch.
    fn drop(&mut self) {
        let thread = {
            let mut st = self.shared.lock();
            st.batches.clear();
            st.closed = true;
            st.thread.take()
        };
        self.shared.changed.notify_all();
        if let Some(t) = thread {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use ed25519_dalek::{Signature, Signer as _, SigningKey};

    use super::*;

    fn batch(n: u8, spoil: Option<u8>) -> Batch {
        let key = SigningKey::from_bytes(&[n; 32]);
        let mut b = Batch::new();
        for i in 0..8u8 {
            let msg = [n, i];
            let sig = key.sign(&msg);
            let sig = if spoil == Some(i) {
                let mut raw = sig.to_bytes();
                raw[0] ^= 1;
                Signature::from_bytes(&raw)
            } else {
                sig
            };
            b.push(&key.verifying_key(), &msg, &sig);
        }
        b
    }

    #[test]
    fn every_batch_is_checked_before_finish_answers() {
        for files_read in [false, true] {
            let checks = DeferredChecks::start();
            let queue = checks.queue();
            for n in 0..20 {
                assert!(queue.push(batch(n, None)).is_none());
            }
            assert!(queue.check_one(), "one checked by a worker with time");
            if files_read {
                queue.files_read();
            }
            assert!(checks.finish());

            let checks = DeferredChecks::start();
            let queue = checks.queue();
            for n in 0..20 {
                // One bad signature in the last batch queued.
                assert!(queue.push(batch(n, (n == 19).then_some(3))).is_none());
            }
            if files_read {
                queue.files_read();
            }
            assert!(!checks.finish());
        }
    }

    #[test]
    fn a_full_queue_hands_the_batch_back() {
        let checks = DeferredChecks::start();
        let queue = checks.queue();
        for _ in 0..QUEUED_MAX {
            assert!(queue.push(batch(2, None)).is_none());
        }
        let back = queue.push(batch(3, Some(1))).expect("handed back");
        assert_eq!(back.len(), 8);
        assert!(checks.finish(), "the bad batch never entered");
    }

    #[test]
    fn nothing_queued_holds_and_a_dropped_queue_leaves_no_thread() {
        assert!(DeferredChecks::start().finish());
        let checks = DeferredChecks::start();
        let queue = checks.queue();
        queue.files_read();
        assert!(queue.push(batch(1, Some(0))).is_none());
        drop(checks);
        assert!(!queue.check_one(), "the queue was emptied");
    }
}
