//! A tripwire across the feed folders: an inotify instance of this process
//! on each folder the change check looks at, read without waiting at each
//! call. It names the folders in which something changed since the check
//! last looked, so the check's `stat` of every folder and unfinished segment
//! (16 calls on a channel of five roles, about 30 µs) is spared for the
//! others: all of them on a read with nothing new, all but the server's own
//! feed folder on a write after its own write.
//!
//! Exact where it is used: the kernel queues an event, on the watch of the
//! folder holding the name, before the write, rename or unlink that caused
//! it returns, so a change another process made before this one asks is in
//! the queue when it asks. It is used only on file systems whose every
//! change goes through this kernel (a network or FUSE mount, a shared folder
//! of a virtual machine, an overlay can change under it unseen). A folder
//! newly watched is named as changed; a queue that overflowed or a watched
//! folder removed or replaced makes every folder looked at, and watched
//! anew. The `stat` check stays the rule; the tripwire only says where it
//! may be skipped.
//!
//! Owns the inotify instance and its watches; must not decide what changed
//! (the scan cache does) and never follows a symlink (each watch is added
//! with `IN_DONT_FOLLOW | IN_ONLYDIR`, so a link planted for a folder
//! leaves it unwatched, and so looked at on every check).

use std::path::{Path, PathBuf};

/// The most folders watched: past it (a folder of endless feed folders) the
/// tripwire stands down and every call runs the `stat` check, as before.
const MAX_WATCHES: usize = 256;

/// The tripwire of one open channel: none by default ([`Self::armed`]
/// makes one). Made at the second check of the channel, not the first.
#[derive(Debug, Default)]
pub struct Tripwire {
    state: State,
    /// True when the caller's last look found its record of the folders
    /// matching them ([`Self::set_matched`]): only then does a quiet wire mean
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

    /// What changed in `dirs` (the feeds folder first, then the folders
    /// under it the check looks at) since the last call, when the caller's
    /// record of them matched them then ([`Self::set_matched`]): nothing, or
    /// which of them may have changed (those with an event, and those not
    /// watched since before the last call). [`Since::Unknown`] whenever
    /// that is not known: the caller then checks them all, as it would
    /// without a tripwire, and says what it found.
    pub fn since<'a>(&mut self, dirs: impl IntoIterator<Item = &'a Path>) -> Since {
        let since = self.look(dirs);
        if self.matched { since } else { Since::Unknown }
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

    /// What the wire saw since the last call.
    fn look<'a>(&mut self, dirs: impl IntoIterator<Item = &'a Path>) -> Since {
        match &mut self.state {
            State::Unused => {
                self.state = State::Asked;
                Since::Unknown
            }
            State::Off => Since::Unknown,
            #[cfg(target_os = "linux")]
            State::Set(wire) => wire.look(dirs).unwrap_or_else(|| {
                self.state = State::Off;
                Since::Unknown
            }),
            State::Asked => {
                self.state = State::Off;
                #[cfg(target_os = "linux")]
                {
                    let mut dirs = dirs.into_iter().peekable();
                    if let Some(mut wire) = dirs.peek().and_then(|root| linux::Wire::new(root)) {
                        // Made now, so nothing is known yet: it watches the
                        // folders from here, and the next call uses it.
                        if wire.look(dirs).is_some() {
                            self.state = State::Set(wire);
                        }
                    }
                }
                #[cfg(not(target_os = "linux"))]
                drop(dirs);
                Since::Unknown
            }
        }
    }
}

/// What a [`Tripwire`] says of the folders since the caller last looked.
#[derive(Debug, PartialEq, Eq)]
pub enum Since {
    /// None of them changed.
    Quiet,
    /// Only these may have changed: the others are as they were.
    Touched(Vec<PathBuf>),
    /// Not known: any of them may have changed.
    Unknown,
}

impl Since {
    /// Whether `dir` must be looked at: not when the wire vouches for it.
    pub fn may_have_changed(&self, dir: &Path) -> bool {
        match self {
            Self::Quiet => false,
            // Byte for byte: the caller passes the same paths each time.
            Self::Touched(dirs) => dirs.iter().any(|d| d.as_os_str() == dir.as_os_str()),
            Self::Unknown => true,
        }
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use std::collections::{HashMap, HashSet};
    use std::ffi::OsString;
    use std::mem::MaybeUninit;
    use std::os::fd::OwnedFd;
    use std::path::{Path, PathBuf};

    use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};
    use rustix::io::Errno;

    use super::{MAX_WATCHES, Since};

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
        /// The folders watched, and each watch's paths (two paths of one
        /// folder share a watch).
        watched: HashSet<OsString>,
        paths: HashMap<WatchDescriptor, Vec<PathBuf>>,
        buf: Vec<MaybeUninit<u8>>,
    }

    type WatchDescriptor = i32;

    impl Wire {
        /// A wire for the feeds folder `root`, or `None` where it would not
        /// be exact (see the module doc) or no instance can be made.
        pub(super) fn new(root: &Path) -> Option<Self> {
            let fs = rustix::fs::statfs(root).ok()?;
            if !LOCAL.contains(&(fs.f_type as u64)) {
                return None;
            }
            Some(Self {
                fd: instance()?,
                watched: HashSet::new(),
                paths: HashMap::new(),
                buf: vec![MaybeUninit::uninit(); 4096],
            })
        }

        /// As [`super::Tripwire::since`], whatever the caller's record;
        /// `None` when the wire must stand down for good.
        pub(super) fn look<'a>(
            &mut self,
            dirs: impl IntoIterator<Item = &'a Path>,
        ) -> Option<Since> {
            let Some(mut touched) = self.drain() else {
                // A watched folder went away or events were dropped: start
                // over, every folder watched anew.
                self.watched.clear();
                self.paths.clear();
                self.fd = instance()?;
                return self.look(dirs).map(|_| Since::Unknown);
            };
            for dir in dirs {
                if self.watched.contains(dir.as_os_str()) {
                    continue;
                }
                // Not watched before this call: looked at by the caller.
                touched.push(dir.to_path_buf());
                if self.watched.len() >= MAX_WATCHES {
                    return None;
                }
                // A folder that cannot be watched (gone, a link, no watch
                // left) stays unwatched, so looked at on every call.
                if let Ok(wd) = inotify::add_watch(&self.fd, dir, events()) {
                    self.watched.insert(dir.as_os_str().to_owned());
                    self.paths.entry(wd).or_default().push(dir.to_path_buf());
                }
            }
            Some(if touched.is_empty() {
                Since::Quiet
            } else {
                Since::Touched(touched)
            })
        }

        /// Reads every queued event: the folders they were about, or `None`
        /// when a watch was lost or events were dropped.
        fn drain(&mut self) -> Option<Vec<PathBuf>> {
            let mut reader = inotify::Reader::new(&self.fd, &mut self.buf);
            let mut touched: Vec<PathBuf> = Vec::new();
            let lost = ReadFlags::QUEUE_OVERFLOW
                | ReadFlags::IGNORED
                | ReadFlags::DELETE_SELF
                | ReadFlags::MOVE_SELF
                | ReadFlags::UNMOUNT;
            loop {
                match reader.next() {
                    Ok(event) if event.events().intersects(lost) => return None,
                    Ok(event) => {
                        let paths = self.paths.get(&event.wd())?;
                        for p in paths {
                            if !touched.contains(p) {
                                touched.push(p.clone());
                            }
                        }
                    }
                    Err(Errno::WOULDBLOCK) => return Some(touched),
                    Err(Errno::INTR) => {}
                    Err(_) => return None,
                }
            }
        }
    }

    /// A new inotify instance, read without waiting.
    fn instance() -> Option<OwnedFd> {
        inotify::init(CreateFlags::NONBLOCK | CreateFlags::CLOEXEC).ok()
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use std::fs;
    use std::io::Write as _;

    use super::*;

    /// The folders of a small feeds tree, as the check lists them: the
    /// feeds folder, a role folder, a feed folder.
    fn tree(root: &Path) -> Vec<PathBuf> {
        let feeds = root.join("feeds");
        let role = feeds.join("alpha");
        let feed = role.join("dev-1");
        fs::create_dir_all(&feed).unwrap();
        fs::write(feed.join("00000001.jsonl"), b"{}\n").unwrap();
        vec![feeds, role, feed]
    }

    /// The wire's answer, the caller's record then said to match (as after
    /// a check that found it so).
    fn look(wire: &mut Tripwire, dirs: &[PathBuf]) -> Since {
        let since = wire.since(dirs.iter().map(|d| d.as_path()));
        wire.set_matched(true);
        since
    }

    fn touched(dirs: &[&PathBuf]) -> Since {
        Since::Touched(dirs.iter().map(|d| d.to_path_buf()).collect())
    }

    #[test]
    fn names_the_folder_of_every_kind_of_change_and_rests_when_nothing_moves() {
        let tmp = tempfile::tempdir().unwrap();
        let dirs = tree(tmp.path());
        let mut wire = Tripwire::armed();
        assert_eq!(
            look(&mut wire, &dirs),
            Since::Unknown,
            "the first check is not told"
        );
        assert_eq!(
            look(&mut wire, &dirs),
            Since::Unknown,
            "the second sets the wire"
        );
        assert!(wire.is_set(), "a local file system");
        assert_eq!(look(&mut wire, &dirs), Since::Quiet);
        assert_eq!(look(&mut wire, &dirs), Since::Quiet);

        let (feeds, feed) = (&dirs[0], &dirs[2]);
        let segment = feed.join("00000001.jsonl");
        type Change<'a> = (&'a str, &'a PathBuf, Box<dyn Fn() + 'a>);
        let changes: Vec<Change> = vec![
            (
                "a line appended",
                feed,
                Box::new(|| {
                    let mut f = fs::OpenOptions::new().append(true).open(&segment).unwrap();
                    f.write_all(b"{}\n").unwrap();
                }),
            ),
            (
                "a file cut",
                feed,
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
                feed,
                Box::new(|| fs::write(feed.join("00000002.jsonl"), b"{}\n").unwrap()),
            ),
            (
                "a file renamed over another",
                feed,
                Box::new(|| {
                    fs::write(feed.join("head.tmp"), b"{}").unwrap();
                    fs::rename(feed.join("head.tmp"), feed.join("head.json")).unwrap();
                }),
            ),
            (
                "a role folder added",
                feeds,
                Box::new(|| fs::create_dir(feeds.join("beta")).unwrap()),
            ),
            (
                "a file removed",
                feed,
                Box::new(|| fs::remove_file(feed.join("00000002.jsonl")).unwrap()),
            ),
        ];
        for (what, dir, change) in changes {
            change();
            assert_eq!(look(&mut wire, &dirs), touched(&[dir]), "{what}");
            assert_eq!(look(&mut wire, &dirs), Since::Quiet, "{what}: quiet again");
        }

        // A folder newly looked at is not vouched for until it is watched.
        let mut more = dirs.clone();
        let beta = feeds.join("beta");
        more.push(beta.clone());
        assert_eq!(look(&mut wire, &more), touched(&[&beta]), "watched anew");
        assert_eq!(look(&mut wire, &more), Since::Quiet);

        // A watched folder replaced by another under its name: all are
        // watched anew before anything is vouched for again.
        let moved = tmp.path().join("elsewhere");
        fs::rename(feed, &moved).unwrap();
        fs::create_dir(feed).unwrap();
        assert_eq!(look(&mut wire, &more), Since::Unknown, "replaced");
        assert_eq!(look(&mut wire, &more), Since::Quiet);
        fs::write(feed.join("00000001.jsonl"), b"{}\n").unwrap();
        assert_eq!(
            look(&mut wire, &more),
            touched(&[feed]),
            "the new folder is watched"
        );
        fs::write(moved.join("00000009.jsonl"), b"{}\n").unwrap();
        assert_eq!(look(&mut wire, &more), Since::Quiet, "the old one is not");
    }

    #[test]
    fn a_quiet_wire_vouches_only_for_a_record_that_matched() {
        let tmp = tempfile::tempdir().unwrap();
        let dirs = tree(tmp.path());
        let mut wire = Tripwire::armed();
        for _ in 0..3 {
            look(&mut wire, &dirs);
        }
        let since = |wire: &mut Tripwire| wire.since(dirs.iter().map(|d| d.as_path()));
        assert_eq!(since(&mut wire), Since::Quiet);
        // The check found a change (drained by this call) and no pass has
        // caught up with it yet: a quiet wire says nothing.
        fs::write(dirs[2].join("00000002.jsonl"), b"{}\n").unwrap();
        assert_eq!(since(&mut wire), touched(&[&dirs[2]]));
        wire.set_matched(false);
        assert_eq!(since(&mut wire), Since::Unknown);
        assert_eq!(since(&mut wire), Since::Unknown);
        wire.set_matched(true);
        assert_eq!(since(&mut wire), Since::Quiet);
    }

    #[test]
    fn a_link_in_place_of_a_folder_is_never_vouched_for() {
        let tmp = tempfile::tempdir().unwrap();
        let mut dirs = tree(tmp.path());
        let target = tmp.path().join("target");
        fs::create_dir(&target).unwrap();
        let link = dirs[1].join("dev-2");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        dirs.push(link.clone());
        let mut wire = Tripwire::armed();
        look(&mut wire, &dirs);
        look(&mut wire, &dirs);
        for _ in 0..3 {
            assert_eq!(look(&mut wire, &dirs), touched(&[&link]));
        }
    }
}
