//! What a hostile folder costs a call. An 8 GiB sparse
//! file named like a segment is planted in a feed folder nobody admitted; once
//! the first call has found and reported it, every later call must cost about
//! what it costs on the clean channel (the file is remembered by size and
//! time, never read again). Likewise [`JUNK_FOLDERS`] feed folders, each with
//! one segment of garbage, which no key is needed to plant: once judged (not
//! admitted, their first record read), a later call does not look at them
//! at all until their role folder changes.
//!
//! What was planted is measured once its times lie [`SETTLE`] in the past:
//! until then a folder may still be being written, and every call looks at
//! it (the first seconds after a planting, as before).

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use countersign::store::listing::SETTLE;

use super::invocation::Countersign;

/// Timed `countersign status` runs on each side.
const RUNS: usize = 15;
/// The planted file's length: sparse, so it costs no disk.
const PLANTED_BYTES: u64 = 8 << 30;

/// How many junk feed folders [`Planted::junk_folders`] plants.
pub const JUNK_FOLDERS: usize = 10_000;

/// `countersign status` as a process, on the clean channel and then beside
/// what was planted in it, after the first call found it.
pub struct Planted {
    /// Clean channel.
    pub clean: Vec<Duration>,
    /// The first call after planting (it finds and reports what was planted).
    pub discovery: Duration,
    /// Later calls, the planted files still there.
    pub after: Vec<Duration>,
}

impl Planted {
    /// An 8 GiB sparse file named like a segment in a feed folder nobody
    /// admitted, in the channel folder `dir` with the home `home`, as `role`.
    pub fn big_file(
        exe: &Countersign,
        dir: &Path,
        home: &Path,
        role: &str,
    ) -> anyhow::Result<Self> {
        let folder = dir.join("feeds").join(role).join("intruder-000000");
        Self::measure(exe, dir, home, role, vec![folder], |folder| {
            fs::create_dir_all(folder)?;
            fs::File::create(folder.join("00000001.jsonl"))?.set_len(PLANTED_BYTES)
        })
    }

    /// [`JUNK_FOLDERS`] feed folders `feeds/<role>/vm-NNNNNN/`, each holding
    /// one segment of garbage.
    pub fn junk_folders(
        exe: &Countersign,
        dir: &Path,
        home: &Path,
        role: &str,
    ) -> anyhow::Result<Self> {
        let role_dir = dir.join("feeds").join(role);
        let folders = (0..JUNK_FOLDERS)
            .map(|i| role_dir.join(format!("vm-{i:06}")))
            .collect();
        Self::measure(exe, dir, home, role, folders, |folder| {
            fs::create_dir_all(folder)?;
            fs::write(
                folder.join("00000001.jsonl"),
                format!("junk {}\n", folder.display()),
            )
        })
    }

    /// Times `status` clean, plants each of `folders` with `plant`, times it
    /// again, and removes the folders whatever happened.
    fn measure(
        exe: &Countersign,
        dir: &Path,
        home: &Path,
        role: &str,
        folders: Vec<PathBuf>,
        plant: impl Fn(&Path) -> std::io::Result<()>,
    ) -> anyhow::Result<Self> {
        let run = || exe.time(dir, home, role, &["status"], None);
        run()?; // warm: the same page cache for both sides
        let clean = (0..RUNS).map(|_| run()).collect::<anyhow::Result<_>>()?;
        let measured = folders
            .iter()
            .try_for_each(|f| plant(f).with_context(|| format!("planting {}", f.display())))
            .and_then(|()| {
                // Settled, as a folder synced in a while ago is: judged by
                // the first call, skipped by the later ones.
                std::thread::sleep(SETTLE + Duration::from_millis(100));
                let discovery = run()?;
                let after = (0..RUNS).map(|_| run()).collect::<anyhow::Result<_>>()?;
                Ok(Self {
                    clean,
                    discovery,
                    after,
                })
            });
        for folder in folders.iter().filter(|f| f.exists()) {
            fs::remove_dir_all(folder).with_context(|| format!("removing {}", folder.display()))?;
        }
        measured
    }
}
