//! The listing of the feed folders as a pass last found them, kept in this
//! device's state folder for the channel (never synced), so that the first
//! pass of the next process (every CLI command, hook and new session) need
//! not list a folder again while its modification time says nothing in it
//! was added, removed or renamed. A feed folder nobody admitted whose first
//! record was judged already (ingest's `ScanCache`) is kept only as a count
//! per role folder: thousands of junk feed folders then cost a later process
//! neither a listing nor a `stat`, and the file stays small.
//!
//! Owns the file and its format; what a listing means for a pass is
//! ingest's (`ScanCache`), which checks every folder's time against a fresh
//! `stat` before it uses the folder's entry. It must never hold a listing
//! that could be wrong with a matching time: a folder is written only when
//! its time lies at least [`SETTLE`] in the past (a file added within the
//! same tick of the file system's clock as the listing would leave the time
//! as it was), and only when its listing found nothing stray (strays are
//! reported by the listing itself). A missing, oversized, damaged or
//! foreign file reads as absent: every folder is then listed, as before.

use std::fmt::Write as _;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::core::ids::FeedId;
use crate::store::folder::segments::{Segment, parse_segment_file};
use crate::store::folder::survey::FeedFolder;

/// The file's name in the state folder.
const FILE: &str = "listing";
/// The first word of its first line, with the format's version.
const MAGIC: &str = "countersign-listing 1";
/// The most bytes the file may take (about 300,000 folders): larger is
/// neither read nor written.
const MAX_BYTES: u64 = 32 << 20;
/// How far in the past a folder's time must lie for its listing to be kept.
pub const SETTLE: Duration = Duration::from_secs(2);

/// The feed folders as listed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Listing {
    /// `feeds/` and every role folder with their times, and the feed
    /// folders they held; `None` when they are not kept (a stray at that
    /// level, or a time too recent).
    pub tree: Option<Tree>,
    /// Feed folders with their times and their segments.
    pub dirs: Vec<(PathBuf, SystemTime, Vec<Segment>)>,
}

/// `feeds/` and its role folders as listed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tree {
    /// The time of `feeds/`.
    pub root: SystemTime,
    /// Each role folder and its time.
    pub roles: Vec<(PathBuf, SystemTime)>,
    /// The feed folders, in the listing's order, without the skipped ones.
    pub feeds: Vec<FeedFolder>,
    /// Per role folder, how many of its feed folders are skipped: not
    /// admitted, their first record judged, not looked at again while the
    /// role folder's time stands. Their names are not kept: they are the
    /// role folder's feed folders that `feeds` does not name.
    pub skipped: Vec<(PathBuf, usize)>,
}

/// True when a folder whose time is `mtime` may be kept as listed at `now`.
pub fn settled(mtime: SystemTime, now: SystemTime) -> bool {
    mtime + SETTLE <= now
}

/// The listing kept in `state_dir` for the channel whose feeds are at
/// `feeds_root`; `None` when there is none or it cannot be used.
pub fn load(state_dir: &Path, feeds_root: &Path) -> Option<Listing> {
    let file = std::fs::File::open(state_dir.join(FILE)).ok()?;
    let mut text = String::new();
    file.take(MAX_BYTES + 1).read_to_string(&mut text).ok()?;
    if text.len() as u64 > MAX_BYTES {
        return None;
    }
    parse(&text, feeds_root)
}

/// Replaces the listing kept in `state_dir` (a temporary file of this
/// process, then a rename: readers see the old file or the new one whole).
/// A failure only costs the next process a listing, so it is not an error.
pub fn save(state_dir: &Path, feeds_root: &Path, listing: &Listing) {
    let Some(text) = render(listing, feeds_root) else {
        return;
    };
    let path = state_dir.join(FILE);
    let tmp = state_dir.join(format!("{FILE}.{}.tmp", std::process::id()));
    if std::fs::write(&tmp, text).is_err() || std::fs::rename(&tmp, &path).is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
}

fn render(l: &Listing, feeds_root: &Path) -> Option<String> {
    let root = feeds_root.to_str().filter(|r| !r.contains('\n'))?;
    let mut out = format!("{MAGIC} {root}\n");
    let mut lines = 0usize;
    if let Some(t) = &l.tree {
        let _ = writeln!(out, "root {}", nanos(t.root)?);
        for (path, mtime) in &t.roles {
            let name = path.strip_prefix(feeds_root).ok()?.to_str()?;
            let _ = writeln!(out, "role {name} {}", nanos(*mtime)?);
            lines += 1;
        }
        for (feed, path) in &t.feeds {
            if *path != feeds_root.join(feed.role()).join(feed.device()) {
                return None;
            }
            let _ = writeln!(out, "feed {} {}", feed.role(), feed.device());
            lines += 1;
        }
        for (path, n) in &t.skipped {
            let name = path.strip_prefix(feeds_root).ok()?.to_str()?;
            let _ = writeln!(out, "skip {name} {n}");
            lines += 1;
        }
    }
    for (dir, mtime, segments) in &l.dirs {
        let rel = dir.strip_prefix(feeds_root).ok()?;
        let mut parts = rel.iter().map(|p| p.to_str());
        let (Some(Some(role)), Some(Some(device)), None) =
            (parts.next(), parts.next(), parts.next())
        else {
            return None;
        };
        let _ = write!(out, "dir {role} {device} {}", nanos(*mtime)?);
        for s in segments {
            let name = s.path.file_name()?.to_str()?;
            let _ = write!(out, " {name}:{}", s.ino);
        }
        out.push('\n');
        lines += 1;
    }
    // The count closes the file: one cut short is not taken for a listing.
    let _ = writeln!(out, "end {lines}");
    (out.len() as u64 <= MAX_BYTES).then_some(out)
}

fn parse(text: &str, feeds_root: &Path) -> Option<Listing> {
    let mut lines = text.lines();
    let header = lines.next()?.strip_prefix(MAGIC)?.strip_prefix(' ')?;
    if Path::new(header) != feeds_root {
        return None;
    }
    let mut root = None;
    let mut roles = Vec::new();
    let mut feeds = Vec::new();
    let mut skipped = Vec::new();
    let mut dirs = Vec::new();
    let mut counted = 0usize;
    let mut ended = false;
    for line in lines {
        if ended {
            return None;
        }
        let mut words = line.split(' ');
        match words.next()? {
            "root" => root = Some(time(words.next()?)?),
            "role" => {
                let name = words.next()?;
                FeedId::new(name, "device")?;
                roles.push((feeds_root.join(name), time(words.next()?)?));
                counted += 1;
            }
            "feed" => {
                let feed = FeedId::new(words.next()?, words.next()?)?;
                let dir = feeds_root.join(feed.role()).join(feed.device());
                feeds.push((feed, dir));
                counted += 1;
            }
            "skip" => {
                let name = words.next()?;
                FeedId::new(name, "device")?;
                let n: usize = words.next()?.parse().ok()?;
                skipped.push((feeds_root.join(name), n));
                counted += 1;
            }
            "dir" => {
                let feed = FeedId::new(words.next()?, words.next()?)?;
                let dir = feeds_root.join(feed.role()).join(feed.device());
                let mtime = time(words.next()?)?;
                let mut segments = Vec::new();
                for w in words.by_ref() {
                    let (name, ino) = w.split_once(':')?;
                    let (first_seq, gz) = parse_segment_file(name)?;
                    segments.push(Segment {
                        path: dir.join(name),
                        first_seq,
                        gz,
                        ino: ino.parse().ok()?,
                    });
                }
                dirs.push((dir, mtime, segments));
                counted += 1;
            }
            "end" => {
                if words.next()?.parse::<usize>().ok()? != counted {
                    return None;
                }
                ended = true;
            }
            _ => return None,
        }
        if words.next().is_some() {
            return None;
        }
    }
    if !ended || (root.is_none() && !(roles.is_empty() && feeds.is_empty() && skipped.is_empty())) {
        return None;
    }
    let tree = root.map(|root| Tree {
        root,
        roles,
        feeds,
        skipped,
    });
    Some(Listing { tree, dirs })
}

fn nanos(t: SystemTime) -> Option<u128> {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .ok()
        .map(|d| d.as_nanos())
}

fn time(word: &str) -> Option<SystemTime> {
    let ns: u128 = word.parse().ok()?;
    let secs = u64::try_from(ns / 1_000_000_000).ok()?;
    let d = Duration::new(secs, (ns % 1_000_000_000) as u32);
    SystemTime::UNIX_EPOCH.checked_add(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(root: &Path) -> Listing {
        let feed = FeedId::new("b", "vm-000001").unwrap();
        let dir = root.join("b").join("vm-000001");
        let t = SystemTime::UNIX_EPOCH + Duration::new(1_700_000_000, 123_456_789);
        Listing {
            tree: Some(Tree {
                root: t,
                roles: vec![(root.join("b"), t)],
                feeds: vec![(feed, dir.clone())],
                skipped: vec![(root.join("b"), 10_000)],
            }),
            dirs: vec![(
                dir.clone(),
                t,
                vec![
                    Segment {
                        path: dir.join("00000001.jsonl.gz"),
                        first_seq: 1,
                        gz: true,
                        ino: 42,
                    },
                    Segment {
                        path: dir.join("00000501.jsonl"),
                        first_seq: 501,
                        gz: false,
                        ino: 43,
                    },
                ],
            )],
        }
    }

    #[test]
    fn a_listing_reads_back_as_written_and_only_whole() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("channel").join("feeds");
        let l = sample(&root);
        save(tmp.path(), &root, &l);
        assert_eq!(load(tmp.path(), &root), Some(l));
        // Another channel folder's listing is not this one's.
        assert_eq!(load(tmp.path(), &tmp.path().join("other")), None);
        // Cut short anywhere, or with a line it does not know: absent.
        let text = std::fs::read_to_string(tmp.path().join(FILE)).unwrap();
        for cut in 1..text.len() - 1 {
            assert_eq!(parse(&text[..cut], &root), None, "cut at {cut}");
        }
        let odd = text.replace("feed b vm-000001", "feed b ../../x");
        assert_eq!(parse(&odd, &root), None);
        let odd = text.replace("00000501.jsonl:43", "notes.txt:43");
        assert_eq!(parse(&odd, &root), None);
        let odd = text.replace("skip b 10000", "skip ../b 10000");
        assert_eq!(parse(&odd, &root), None);
    }

    #[test]
    fn only_a_folder_time_old_enough_is_settled() {
        let now = SystemTime::now();
        assert!(settled(now - SETTLE, now));
        assert!(!settled(now - SETTLE / 2, now));
        assert!(!settled(now + SETTLE, now));
    }
}
