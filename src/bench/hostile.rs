//! What a hostile folder costs a call. An 8 GiB sparse
//! file named like a segment is planted in a feed folder nobody admitted; once
//! the first call has found and reported it, every later call must cost about
//! what it costs on the clean channel (the file is remembered by size and
//! time, never read again). Likewise [`JUNK_FOLDERS`] feed folders, each with
//! one segment of garbage, which no key is needed to plant.

use std::fs;
use std::path::Path;
use std::time::Duration;

use anyhow::Context as _;

use super::invocation::Countersign;

/// Timed `countersign status` runs on each side.
const RUNS: usize = 15;
/// The planted file's length: sparse, so it costs no disk.
const PLANTED_BYTES: u64 = 8 << 30;

/// `countersign status` as a process, on the clean channel and then with the
/// planted file, after its first discovery.
pub struct Hostile {
    /// Clean channel.
    pub clean: Vec<Duration>,
    /// The first call after the file was planted (it finds and reports it).
    pub discovery: Duration,
    /// Later calls, the file still there.
    pub after: Vec<Duration>,
}

impl Hostile {
    /// Measures on the channel folder `dir` with the home `home`, as `role`.
    /// The planted file is removed again before returning.
    pub fn measure(exe: &Countersign, dir: &Path, home: &Path, role: &str) -> anyhow::Result<Self> {
        let run = || exe.time(dir, home, role, &["status"], None);
        run()?; // warm: the same page cache for both sides
        let clean = (0..RUNS).map(|_| run()).collect::<anyhow::Result<_>>()?;
        let folder = dir.join("feeds").join(role).join("intruder-000000");
        fs::create_dir_all(&folder).with_context(|| format!("creating {}", folder.display()))?;
        let planted = folder.join("00000001.jsonl");
        fs::File::create(&planted)
            .and_then(|f| f.set_len(PLANTED_BYTES))
            .with_context(|| format!("planting {}", planted.display()))?;
        let measured = (|| {
            let discovery = run()?;
            let after = (0..RUNS).map(|_| run()).collect::<anyhow::Result<_>>()?;
            Ok(Self {
                clean,
                discovery,
                after,
            })
        })();
        fs::remove_dir_all(&folder).with_context(|| format!("removing {}", folder.display()))?;
        measured
    }
}

/// How many junk feed folders [`JunkFeeds`] plants.
pub const JUNK_FOLDERS: usize = 10_000;

/// `countersign status` as a process, on the clean channel and then beside
/// [`JUNK_FOLDERS`] feed folders `feeds/<role>/vm-NNNNNN/`, each holding one
/// segment of garbage, after the first call found them.
pub struct JunkFeeds {
    /// Clean channel.
    pub clean: Vec<Duration>,
    /// The first call after the folders were planted (reads and reports them).
    pub discovery: Duration,
    /// Later calls, the folders still there.
    pub after: Vec<Duration>,
}

impl JunkFeeds {
    /// Measures on the channel folder `dir` with the home `home`, as `role`.
    /// The planted folders are removed again before returning.
    pub fn measure(exe: &Countersign, dir: &Path, home: &Path, role: &str) -> anyhow::Result<Self> {
        let run = || exe.time(dir, home, role, &["status"], None);
        run()?;
        let clean = (0..RUNS).map(|_| run()).collect::<anyhow::Result<_>>()?;
        let role_dir = dir.join("feeds").join(role);
        let folders: Vec<_> = (0..JUNK_FOLDERS)
            .map(|i| role_dir.join(format!("vm-{i:06}")))
            .collect();
        let planted = folders.iter().enumerate().try_for_each(|(i, folder)| {
            fs::create_dir_all(folder)?;
            fs::write(folder.join("00000001.jsonl"), format!("junk {i}\n"))
        });
        let measured = planted
            .with_context(|| format!("planting junk feed folders in {}", role_dir.display()))
            .and_then(|()| {
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
