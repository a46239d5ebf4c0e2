//! The thread that makes a journal append durable while its writer goes
//! on: a write hands the journal's file here, folds its record into the
//! index meanwhile, and waits for the answer before it publishes anything
//! (`Channel::append_run`). The disk's wait and the kernel's share of the
//! fsync then run on the other core, beside the fold, instead of before it.
//!
//! Waking a thread that sleeps is slow on a machine whose idle cores halt
//! (a virtual machine's, most of all): the fsync started 0.1 to 0.2 ms after
//! the journal's write, longer than the fold it was meant to run beside. So
//! a write says it is coming ([`expect_write`]) before it reads the index,
//! and the thread wakes then and waits for the file awake, for a bounded
//! time; the writer waits for the answer the same way ([`Syncing::wait`]).
//!
//! Owns that thread, one per process, started by the first write that uses
//! it; must not decide what is synced or when (the feed writer does).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, Sender, SyncSender, TryRecvError, channel, sync_channel};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use crate::store::error::{IoContext as _, StoreResult};

/// What the syncer thread is given.
enum Job {
    /// A file to `fdatasync`, and where to say how it went.
    Sync(Arc<File>, SyncSender<std::io::Result<()>>),
    /// A write is on its way: stay awake for it.
    Expect,
}

/// How long the thread stays awake for a write it was told of, and the
/// writer for the fsync's answer, before either sleeps: a write's checks and
/// signing take about 0.1 ms, an fsync on a fast disk 0.1 to 0.5 ms. Past it
/// (a write refused, a slow disk) they sleep as before, so an awake wait
/// costs at most this much of a core.
const AWAKE: Duration = Duration::from_millis(2);

/// An `fdatasync` under way on the syncer thread.
#[derive(Debug)]
pub(in crate::store) struct Syncing {
    path: PathBuf,
    done: Receiver<std::io::Result<()>>,
}

impl Syncing {
    /// Waits until the file's data is on the disk. An error names the file;
    /// a thread that went away without answering is an error too (the data
    /// may not be durable).
    pub(in crate::store) fn wait(self) -> StoreResult<()> {
        let synced = awake_recv(&self.done).unwrap_or_else(|| {
            Err(std::io::Error::other(
                "the sync thread stopped before answering",
            ))
        });
        Ok(synced.at(&self.path)?)
    }
}

/// Tells the syncer thread that a write is coming, so that it is awake when
/// the write's file arrives ([`sync_data`]). Costs a message on a channel;
/// nothing when no thread can be had.
pub(in crate::store) fn expect_write() {
    if let Some(jobs) = thread() {
        let _ = jobs.send(Job::Expect);
    }
}

/// Starts `fdatasync` of `file` (at `path`) on the syncer thread. Where no
/// thread can be had, it is synced here, before returning.
pub(in crate::store) fn sync_data(file: Arc<File>, path: &Path) -> Syncing {
    let (tell, done) = sync_channel(1);
    let job = Job::Sync(file, tell);
    // Sent back by a thread that went away, or never sent: synced here.
    let unsent = match thread() {
        Some(jobs) => jobs.send(job).err().map(|e| e.0),
        None => Some(job),
    };
    if let Some(Job::Sync(file, tell)) = unsent {
        let _ = tell.send(file.sync_data());
    }
    Syncing {
        path: path.to_path_buf(),
        done,
    }
}

/// The next message of `from`, waited for awake (yielding the core to any
/// other thread that wants it) for [`AWAKE`], then asleep. `None` when the
/// sending side is gone.
fn awake_recv<T>(from: &Receiver<T>) -> Option<T> {
    let until = Instant::now() + AWAKE;
    loop {
        match from.try_recv() {
            Ok(v) => return Some(v),
            Err(TryRecvError::Disconnected) => return None,
            Err(TryRecvError::Empty) if Instant::now() < until => std::thread::yield_now(),
            Err(TryRecvError::Empty) => return from.recv().ok(),
        }
    }
}

/// The syncer thread's queue, the thread started on first use.
fn thread() -> Option<&'static Sender<Job>> {
    static JOBS: OnceLock<Option<Sender<Job>>> = OnceLock::new();
    JOBS.get_or_init(|| {
        let (jobs, queue) = channel::<Job>();
        std::thread::Builder::new()
            .name("journal-sync".into())
            .spawn(move || serve(&queue))
            .ok()
            .map(|_| jobs)
    })
    .as_ref()
}

/// The syncer thread: asleep until told of a write, then awake until its
/// file comes (or [`AWAKE`] passes). Not awake after a sync: waking it costs
/// the next write a `futex` call (10 to 15 µs), but a thread that stayed
/// awake for the next write of a burst made the journal's fsyncs slower
/// (on two cores it spins beside the kernel's work of the disk's answers).
fn serve(queue: &Receiver<Job>) {
    let mut next = queue.recv().ok();
    while let Some(job) = next {
        next = match job {
            Job::Sync(file, tell) => {
                let _ = tell.send(file.sync_data());
                queue.recv().ok()
            }
            Job::Expect => awake_recv(queue),
        };
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;
    use std::time::Duration;

    use super::AWAKE;

    #[test]
    fn a_sync_on_the_thread_answers_and_the_bytes_are_in_the_file() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("journal.jsonl");
        let mut f = std::fs::File::create(&path).unwrap();
        f.write_all(b"one line\n").unwrap();
        super::sync_data(std::sync::Arc::new(f), &path)
            .wait()
            .unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"one line\n");
    }

    #[test]
    fn a_write_told_of_ahead_is_synced_and_answered_whether_it_comes_at_once_or_late() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("journal.jsonl");
        for (i, late) in [Duration::ZERO, AWAKE * 2].into_iter().enumerate() {
            super::expect_write();
            std::thread::sleep(late);
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .unwrap();
            writeln!(f, "line {i}").unwrap();
            super::sync_data(std::sync::Arc::new(f), &path)
                .wait()
                .unwrap();
        }
        assert_eq!(std::fs::read(&path).unwrap(), b"line 0\nline 1\n");
    }

    #[test]
    fn an_awake_wait_takes_what_was_sent_and_ends_when_the_sender_is_gone() {
        let (tx, rx) = std::sync::mpsc::channel();
        tx.send(7).unwrap();
        assert_eq!(super::awake_recv(&rx), Some(7));
        let later = std::thread::spawn(move || {
            std::thread::sleep(AWAKE * 2);
            tx.send(8).unwrap();
        });
        assert_eq!(
            super::awake_recv(&rx),
            Some(8),
            "past the awake time it sleeps, and still wakes"
        );
        later.join().unwrap();
        assert_eq!(super::awake_recv(&rx), None);
    }
}
