//! A tripwire across the feed folders: an inotify instance of this process
//! on each folder the change check looks at, read without waiting at each
//! call. While nothing tripped it since the check last looked at the
//! folders, the check's `stat` of every folder and unfinished segment (16
//! calls on a channel of five roles, about 30 µs of every read) is skipped.
//!
//! Exact where it is used: the kernel queues an event before the write,
//! rename or unlink that caused it returns, so a change another process
//! made before this one asks is in the queue when it asks. It is used only
//! on file systems whose every change goes through this kernel (a network
//! or FUSE mount, a shared folder of a virtual machine, an overlay can
//! change under it unseen), and only once the same folders are watched:
//! a folder newly watched, a queue that overflowed, a watched folder
//! removed or replaced, or any event at all make the caller run its `stat`
//! check, which stays the rule; the tripwire only says when it may be
//! skipped.
//!
//! Owns the inotify instance and its watches; must not decide what changed
//! (the scan cache does) and never follows a symlink (each watch is added
//! with `IN_DONT_FOLLOW | IN_ONLYDIR`, so a link planted for a folder
//! leaves it unwatched, and the check keeps running).

use std::path::Path;

/// The most folders watched: past it (a folder of endless feed folders) the
/// tripwire stands down and every call runs the `stat` check, as before.
const MAX_WATCHES: usize = 256;

/// The tripwire of one open channel: none by default ([`Self::armed`]
/// makes one). Made at the second check of the channel, not the first.
#[derive(Debug, Default)]
pub struct Tripwire {
    state: State,
    /// True when the caller's last look found its record of the folders
    /// matching them ([`Self::vouch`]): only then does a quiet wire mean
    /// that they still do.
    matched: bool,
}

#[derive(Debug, Default)]
enum State {
    /// None wanted, or none to be had here (not Linux, not a local file
    /// system, no inotify instance left, too many folders): every check
    /// runs.
    #[default]
    Off,
    /// Wanted, not asked yet.
    Unused,
    /// Asked once: made at the next check.
    Asked,
    #[cfg(target_os = "linux")]
    Set(linux::Wire),
}

impl Tripwire {
    /// A tripwire to be set at the second check.
    pub fn armed() -> Self {
        Self {
            state: State::Unused,
            matched: false,
        }
    }

    /// True when nothing changed in `dirs` (the feeds folder first, then
    /// the folders under it the check looks at) since the last call, every
    /// one of them was watched then already, and the caller's record of
    /// them matched them then ([`Self::vouch`]). False whenever that is not
    /// known, including the calls that start watching a folder: the caller
    /// then checks as it would without a tripwire, and says what it found.
    pub fn untouched<'a>(&mut self, dirs: impl IntoIterator<Item = &'a Path>) -> bool {
        let quiet = self.quiet(dirs);
        quiet && self.matched
    }

    /// True while the wire is set (for tests: the checks it answers are
    /// otherwise indistinguishable from the `stat` check's).
    #[cfg(test)]
    pub(crate) fn is_set(&self) -> bool {
        #[cfg(target_os = "linux")]
        return matches!(self.state, State::Set(_));
        #[cfg(not(target_os = "linux"))]
        return false;
    }

    /// Says whether the caller's record of the folders matches them as of
    /// now: after its `stat` check, what that found; after a pass that
    /// brought the record up to date, true. Until the next such word, a
    /// quiet wire vouches for that record.
    pub fn set_matched(&mut self, matched: bool) {
        self.matched = matched;
    }

    /// True when no event was queued since the last call and every folder
    /// of `dirs` was watched then already.
    fn quiet<'a>(&mut self, dirs: impl IntoIterator<Item = &'a Path>) -> bool {
        match &mut self.state {
            State::Unused => {
                self.state = State::Asked;
                false
            }
            State::Off => false,
            #[cfg(target_os = "linux")]
            State::Set(wire) => match wire.untouched(dirs) {
                Some(untouched) => untouched,
                None => {
                    self.state = State::Off;
                    false
                }
            },
            State::Asked => {
                let mut dirs = dirs.into_iter().peekable();
                self.state = State::Off;
                #[cfg(target_os = "linux")]
                if let Some(mut wire) = dirs.peek().and_then(|root| linux::Wire::new(root)) {
                    // Made now, so nothing is known yet: it watches the
                    // folders from here, and the next call uses it.
                    if wire.untouched(dirs).is_some() {
                        self.state = State::Set(wire);
                    }
                }
                false
            }
        }
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use std::collections::HashSet;
    use std::mem::MaybeUninit;
    use std::os::fd::OwnedFd;
    use std::path::{Path, PathBuf};

    use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};
    use rustix::io::Errno;

    use super::MAX_WATCHES;

    /// File systems on which every change is made by this kernel, so queued
    /// as an event: ext2/3/4, XFS, Btrfs, tmpfs, F2FS, ZFS.
    const LOCAL: [u64; 6] = [
        0xEF53,
        0x5846_5342,
        0x9123_683E,
        0x0102_1994,
        0xF2F5_2010,
        0x2FC1_2FC1,
    ];

    /// What a watch reports: every change of a folder's entries or of a
    /// file in it, and the folder itself going away.
    fn events() -> WatchFlags {
        WatchFlags::MODIFY
            | WatchFlags::ATTRIB
            | WatchFlags::CLOSE_WRITE
            | WatchFlags::MOVED_FROM
            | WatchFlags::MOVED_TO
            | WatchFlags::CREATE
            | WatchFlags::DELETE
            | WatchFlags::DELETE_SELF
            | WatchFlags::MOVE_SELF
            | WatchFlags::DONT_FOLLOW
            | WatchFlags::ONLYDIR
    }

    #[derive(Debug)]
    pub(super) struct Wire {
        fd: OwnedFd,
        /// The folders watched, by path.
        watched: HashSet<PathBuf>,
        buf: Vec<MaybeUninit<u8>>,
    }

    impl Wire {
        /// A wire for the feeds folder `root`, or `None` where it would not
        /// be exact (see the module doc) or no instance can be made.
        pub(super) fn new(root: &Path) -> Option<Self> {
            let fs = rustix::fs::statfs(root).ok()?;
            if !LOCAL.contains(&(fs.f_type as u64)) {
                return None;
            }
            let fd = inotify::init(CreateFlags::NONBLOCK | CreateFlags::CLOEXEC).ok()?;
            Some(Self {
                fd,
                watched: HashSet::new(),
                buf: vec![MaybeUninit::uninit(); 4096],
            })
        }

        /// As [`super::Tripwire::untouched`]; `None` when the wire must stand
        /// down for good.
        pub(super) fn untouched<'a>(
            &mut self,
            dirs: impl IntoIterator<Item = &'a Path>,
        ) -> Option<bool> {
            let mut untouched = match self.drain() {
                Drained::Quiet => true,
                Drained::Events => false,
                Drained::Lost => {
                    // A watched folder went away or events were dropped:
                    // start over, every folder watched anew.
                    self.watched.clear();
                    let fd = inotify::init(CreateFlags::NONBLOCK | CreateFlags::CLOEXEC).ok()?;
                    self.fd = fd;
                    false
                }
            };
            for dir in dirs {
                if self.watched.contains(dir) {
                    continue;
                }
                untouched = false;
                if self.watched.len() >= MAX_WATCHES {
                    return None;
                }
                // A folder that cannot be watched (gone, a link, no watch
                // left) stays unwatched: the check runs at every call.
                if inotify::add_watch(&self.fd, dir, events()).is_ok() {
                    self.watched.insert(dir.to_path_buf());
                }
            }
            Some(untouched)
        }

        /// Reads every queued event.
        fn drain(&mut self) -> Drained {
            let mut reader = inotify::Reader::new(&self.fd, &mut self.buf);
            let mut drained = Drained::Quiet;
            loop {
                match reader.next() {
                    Ok(event) => {
                        let lost = ReadFlags::QUEUE_OVERFLOW
                            | ReadFlags::IGNORED
                            | ReadFlags::DELETE_SELF
                            | ReadFlags::MOVE_SELF
                            | ReadFlags::UNMOUNT;
                        if event.events().intersects(lost) {
                            drained = Drained::Lost;
                        } else if matches!(drained, Drained::Quiet) {
                            drained = Drained::Events;
                        }
                    }
                    Err(Errno::WOULDBLOCK) => return drained,
                    Err(Errno::INTR) => {}
                    Err(_) => return Drained::Lost,
                }
            }
        }
    }

    enum Drained {
        Quiet,
        Events,
        Lost,
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use std::fs;
    use std::io::Write as _;

    use super::*;

    /// The folders of a small feeds tree, as the check lists them.
    fn tree(root: &Path) -> Vec<std::path::PathBuf> {
        let feeds = root.join("feeds");
        let role = feeds.join("alpha");
        let feed = role.join("dev-1");
        fs::create_dir_all(&feed).unwrap();
        fs::write(feed.join("00000001.jsonl"), b"{}\n").unwrap();
        vec![feeds, role, feed]
    }

    /// The wire's answer, the caller's record then vouched for (as after a
    /// check that found it matching).
    fn untouched(wire: &mut Tripwire, dirs: &[std::path::PathBuf]) -> bool {
        let untouched = wire.untouched(dirs.iter().map(|d| d.as_path()));
        wire.set_matched(true);
        untouched
    }

    #[test]
    fn trips_on_every_kind_of_change_and_rests_when_nothing_moves() {
        let tmp = tempfile::tempdir().unwrap();
        let dirs = tree(tmp.path());
        let mut wire = Tripwire::armed();
        assert!(!untouched(&mut wire, &dirs), "the first check is not told");
        assert!(!untouched(&mut wire, &dirs), "the second sets the wire");
        assert!(matches!(wire.state, State::Set(_)), "a local file system");
        assert!(untouched(&mut wire, &dirs));
        assert!(untouched(&mut wire, &dirs));

        let segment = dirs[2].join("00000001.jsonl");
        type Change<'a> = (&'a str, Box<dyn Fn() + 'a>);
        let changes: Vec<Change> = vec![
            (
                "a line appended",
                Box::new(|| {
                    let mut f = fs::OpenOptions::new().append(true).open(&segment).unwrap();
                    f.write_all(b"{}\n").unwrap();
                }),
            ),
            (
                "a file cut",
                Box::new(|| {
                    fs::OpenOptions::new()
                        .write(true)
                        .open(&segment)
                        .unwrap()
                        .set_len(1)
                        .unwrap()
                }),
            ),
            (
                "a segment added",
                Box::new(|| fs::write(dirs[2].join("00000002.jsonl"), b"{}\n").unwrap()),
            ),
            (
                "a file renamed over another",
                Box::new(|| {
                    fs::write(dirs[2].join("head.tmp"), b"{}").unwrap();
                    fs::rename(dirs[2].join("head.tmp"), dirs[2].join("head.json")).unwrap();
                }),
            ),
            (
                "a role folder added",
                Box::new(|| fs::create_dir(dirs[0].join("beta")).unwrap()),
            ),
            (
                "a file removed",
                Box::new(|| fs::remove_file(dirs[2].join("00000002.jsonl")).unwrap()),
            ),
        ];
        for (what, change) in changes {
            change();
            assert!(!untouched(&mut wire, &dirs), "{what}");
            assert!(untouched(&mut wire, &dirs), "{what}: quiet again");
        }

        // A folder newly looked at is not vouched for until it is watched.
        let mut more = dirs.clone();
        more.push(dirs[0].join("beta"));
        assert!(!untouched(&mut wire, &more), "a folder watched anew");
        assert!(untouched(&mut wire, &more));

        // A watched folder replaced by another under its name: the new one
        // is watched anew before anything is vouched for again.
        let feed = &dirs[2];
        let moved = tmp.path().join("elsewhere");
        fs::rename(feed, &moved).unwrap();
        fs::create_dir(feed).unwrap();
        assert!(!untouched(&mut wire, &more), "replaced, and watched anew");
        assert!(untouched(&mut wire, &more));
        fs::write(feed.join("00000001.jsonl"), b"{}\n").unwrap();
        assert!(
            !untouched(&mut wire, &more),
            "the new folder is the one watched"
        );
        fs::write(moved.join("00000009.jsonl"), b"{}\n").unwrap();
        assert!(untouched(&mut wire, &more), "the old one is not");
    }

    #[test]
    fn a_quiet_wire_vouches_only_for_a_record_that_matched() {
        let tmp = tempfile::tempdir().unwrap();
        let dirs = tree(tmp.path());
        let mut wire = Tripwire::armed();
        for _ in 0..3 {
            untouched(&mut wire, &dirs);
        }
        assert!(untouched(&mut wire, &dirs));
        // The check found a change (drained by this call) and no pass has
        // caught up with it yet: a quiet wire says nothing.
        fs::write(dirs[2].join("00000002.jsonl"), b"{}\n").unwrap();
        assert!(!wire.untouched(dirs.iter().map(|d| d.as_path())));
        wire.set_matched(false);
        assert!(!wire.untouched(dirs.iter().map(|d| d.as_path())));
        assert!(!wire.untouched(dirs.iter().map(|d| d.as_path())));
        wire.set_matched(true);
        assert!(wire.untouched(dirs.iter().map(|d| d.as_path())));
    }

    #[test]
    fn a_link_in_place_of_a_folder_is_never_vouched_for() {
        let tmp = tempfile::tempdir().unwrap();
        let mut dirs = tree(tmp.path());
        let target = tmp.path().join("target");
        fs::create_dir(&target).unwrap();
        let link = dirs[1].join("dev-2");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        dirs.push(link);
        let mut wire = Tripwire::armed();
        for _ in 0..4 {
            assert!(!untouched(&mut wire, &dirs));
        }
    }
}
