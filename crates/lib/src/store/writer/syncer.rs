//! The thread that makes a journal append durable while its writer goes
//! on: a write hands the journal's file here, folds its record into the
//! index meanwhile, and waits for the answer before it publishes anything
//! (`Channel::append_run`). The disk's wait and the kernel's share of the
//! fsync then run on the other core, beside the fold, instead of before it.
//!
//! Owns that thread, one per process, started by the first write that uses
//! it; must not decide what is synced or when (the feed writer does).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::mpsc::{Receiver, Sender, SyncSender, channel, sync_channel};

use crate::store::error::{IoContext as _, StoreResult};

/// A file to `fdatasync`, and where to say how it went.
type Job = (File, SyncSender<std::io::Result<()>>);

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
        let synced = self.done.recv().unwrap_or_else(|_| {
            Err(std::io::Error::other(
                "the sync thread stopped before answering",
            ))
        });
        Ok(synced.at(&self.path)?)
    }
}

/// Starts `fdatasync` of `file` (at `path`) on the syncer thread. Where no
/// thread can be had, it is synced here, before returning.
pub(in crate::store) fn sync_data(file: File, path: &Path) -> Syncing {
    let (tell, done) = sync_channel(1);
    let job = match thread() {
        Some(jobs) => jobs.send((file, tell)).map_err(|e| e.0),
        None => Err((file, tell)),
    };
    if let Err((file, tell)) = job {
        let _ = tell.send(file.sync_data());
    }
    Syncing {
        path: path.to_path_buf(),
        done,
    }
}

/// The syncer thread's queue, the thread started on first use.
fn thread() -> Option<&'static Sender<Job>> {
    static JOBS: OnceLock<Option<Sender<Job>>> = OnceLock::new();
    JOBS.get_or_init(|| {
        let (jobs, queue) = channel::<Job>();
        std::thread::Builder::new()
            .name("journal-sync".into())
            .spawn(move || {
                for (file, tell) in queue {
                    let _ = tell.send(file.sync_data());
                }
            })
            .ok()
            .map(|_| jobs)
    })
    .as_ref()
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    #[test]
    fn a_sync_on_the_thread_answers_and_the_bytes_are_in_the_file() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("journal.jsonl");
        let mut f = std::fs::File::create(&path).unwrap();
        f.write_all(b"one line\n").unwrap();
        super::sync_data(f, &path).wait().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"one line\n");
    }
}
