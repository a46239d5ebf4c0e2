//! Feed folders and segments a peer plants: thousands of junk feed folders
//! cost later calls work in proportion to their number, never its square,
//! and once judged no work at all until their role folder changes or a feed
//! of the role is admitted; they stay reported; a segment with a second name
//! is never written through.

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

use countersign::app::Session;
use countersign::app::send::{SendRequest, send_message};
use countersign::core::ids::{FeedId, OWNER_FEED_ROLE, Role};
use countersign::store::ProblemKind;
use countersign::store::survey::list_segments;
use countersign::store::{ChannelDir, Home, listing};

use crate::common::local::{self, Local, send};
use crate::common::{bin, copy_dir};

/// Plants junk feed folders `feeds/b/vm-NNNNNN/` numbered `range`, each with
/// one segment of garbage: no key is needed to make them.
fn plant(dir: &Path, range: std::ops::Range<usize>) {
    for i in range {
        let folder = dir.join("feeds/b").join(format!("vm-{i:06}"));
        fs::create_dir_all(&folder).unwrap();
        fs::write(folder.join("00000001.jsonl"), format!("junk {i}\n")).unwrap();
    }
}

/// The SQLite work (instructions) of the first pass of a freshly opened
/// channel, as every CLI command, hook and new session makes it; the folder
/// is already known to the index (an earlier call found every junk file).
fn later_pass_work(l: &Local) -> u64 {
    l.channel().catch_up().unwrap();
    let mut ch = l.channel();
    let work = ch.count_index_work().unwrap();
    ch.catch_up().unwrap();
    work.instructions()
}

#[test]
fn junk_feed_folders_cost_later_calls_in_proportion_and_stay_reported() {
    // A pass looked up each feed's folder problems with a query that
    // scanned the whole problems table, which holds a row per junk segment:
    // 5,000 folders cost 5,000 scans of 5,000 rows on every call (seconds).
    // Counted work, not time: doubling the folders doubled their share of
    // the work plus another doubling from the scans (4×), which the bound
    // of 3× below refuses; and the old code spent over a thousand times the
    // per-folder bound at 5,000 folders.
    let l = Local::new(&["a", "b"]);
    send(&mut l.session("a"), "b", "first", "a real message");
    // The folders' times are set ahead, so that none is judged and skipped
    // (see the next test): every folder takes the path measured here in
    // the seconds after it appears.
    let ahead = SystemTime::now() + Duration::from_secs(3600);
    let clean = later_pass_work(&l);
    plant(&l.dir, 0..2_500);
    set_times(&l.dir, ahead);
    let half = later_pass_work(&l) - clean;
    plant(&l.dir, 2_500..5_000);
    set_times(&l.dir, ahead);
    let full = later_pass_work(&l) - clean;
    eprintln!(
        "SQLite instructions of a later pass: clean {clean}, +2,500 junk {half}, +5,000 {full}"
    );
    assert!(
        full <= 3 * half.max(1_000),
        "5,000 junk folders cost {full} instructions, 2,500 cost {half}: more than linear"
    );
    assert!(
        full <= 5_000 * 400,
        "5,000 junk folders cost {full} SQLite instructions on a later pass"
    );

    // Still reported, each one: `verify` reads the folder afresh.
    let (garbage, text) = verify_garbage(&l);
    assert_eq!(garbage, 5_000, "{}", &text[..text.len().min(2_000)]);
}

/// `verify` run as a person would: it must fail, and how many junk folders
/// of role `b` it names as garbage, with its output.
fn verify_garbage(l: &Local) -> (usize, String) {
    let out = Command::new(bin())
        .env("COUNTERSIGN_HOME", l.home_root())
        .args(["--channel", l.dir.to_str().unwrap(), "verify"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(1), "{text}");
    let garbage = text
        .lines()
        .filter(|l| l.starts_with("garbage: feeds/b/vm-"))
        .count();
    (garbage, text)
}

/// Sets the time of every folder and file under `feeds/` an hour back, as
/// they look once they have settled: a listing of the folders may then be
/// kept, and a junk folder judged.
fn settle(dir: &Path) {
    set_times(dir, SystemTime::now() - Duration::from_secs(3600));
}

/// Sets the time of every folder and file under `feeds/` to `then`, folders
/// last (setting a file's time leaves its folder's as it was).
fn set_times(dir: &Path, then: SystemTime) {
    let mut folders = vec![dir.join("feeds")];
    let mut all = Vec::new();
    while let Some(folder) = folders.pop() {
        for entry in fs::read_dir(&folder).unwrap() {
            let entry = entry.unwrap();
            if entry.file_type().unwrap().is_dir() {
                folders.push(entry.path());
            } else {
                fs::File::options()
                    .append(true)
                    .open(entry.path())
                    .unwrap()
                    .set_modified(then)
                    .unwrap();
            }
        }
        all.push(folder);
    }
    for folder in all {
        fs::File::open(&folder).unwrap().set_modified(then).unwrap();
    }
}

/// The garbage problems recorded for `path` (relative to the channel
/// folder), by offset.
fn garbage_at(l: &Local, path: &str) -> Vec<u64> {
    l.channel()
        .index()
        .problems()
        .unwrap()
        .into_iter()
        .filter(|p| p.kind == ProblemKind::Garbage && p.path == path)
        .map(|p| p.offset)
        .collect()
}

/// The kept listing: its feed folders and folder entries, and the skipped
/// count per role folder (as `feeds/<role>`).
fn kept(l: &Local) -> (usize, Vec<(String, usize)>) {
    let ch = l.channel();
    let feeds = ch.dir().feeds();
    let kept = listing::load(ch.state_dir(), &feeds).expect("a listing is kept");
    let tree = kept.tree.expect("the folder tree is kept");
    let skipped = tree
        .skipped
        .iter()
        .map(|(p, n)| (p.strip_prefix(&feeds).unwrap().display().to_string(), *n))
        .collect();
    (tree.feeds.len() + kept.dirs.len(), skipped)
}

#[test]
fn judged_junk_folders_cost_a_later_command_no_look_and_no_listing_entry() {
    // Every later command looked at each junk folder (a `stat` of it and
    // of its segment) and loaded its entries from the kept listing: 10,000
    // folders cost a `status` ten times a clean one. A folder nobody
    // admitted whose first record was judged is now a count per role.
    let l = Local::new(&["a", "b"]);
    send(&mut l.session("a"), "b", "first", "a real message");
    plant(&l.dir, 0..1_000);
    let first = l.channel().catch_up().unwrap();
    assert!(first.looked >= 1_000, "{first:?}");
    // Judged once their times lie in the past (nothing is being written).
    settle(&l.dir);
    let judged = l.channel().catch_up().unwrap();
    assert!(judged.looked >= 1_000, "{judged:?}");
    let later = l.channel().catch_up().unwrap();
    assert_eq!(later.listed, 0, "{later:?}");
    // The channel's own feeds: the owner's and a's.
    assert!(later.looked <= 2, "{later:?}");
    let (entries, skipped) = kept(&l);
    assert!(entries <= 4, "{entries} listing entries for 2 feeds");
    assert_eq!(skipped, vec![("b".to_owned(), 1_000)]);
    // Still reported: the problems stand, and verify walks the folder.
    let garbage = l
        .channel()
        .index()
        .problems()
        .unwrap()
        .into_iter()
        .filter(|p| p.kind == ProblemKind::Garbage && p.path.starts_with("feeds/b/vm-"))
        .count();
    assert_eq!(garbage, 1_000);
    let (reported, text) = verify_garbage(&l);
    assert_eq!(reported, 1_000, "{}", &text[..text.len().min(2_000)]);
    // Verify's walk leaves the next command's skip as it was.
    assert!(l.channel().catch_up().unwrap().looked <= 2);
}

#[test]
fn a_skipped_junk_folder_is_looked_at_again_when_its_role_folder_changes() {
    let l = Local::new(&["a", "b"]);
    send(&mut l.session("a"), "b", "first", "a real message");
    plant(&l.dir, 0..200);
    l.channel().catch_up().unwrap();
    settle(&l.dir);
    l.channel().catch_up().unwrap();
    assert_eq!(kept(&l).1, vec![("b".to_owned(), 200)]);

    // Changes inside skipped folders (a segment added, one grown in place,
    // a stray) leave `feeds/b/` as it was: not seen yet, by choice.
    let added = "feeds/b/vm-000007/00000002.jsonl";
    fs::write(l.dir.join(added), "more junk\n").unwrap();
    let grown = "feeds/b/vm-000003/00000001.jsonl";
    let before = fs::metadata(l.dir.join(grown)).unwrap().len();
    let mut f = fs::OpenOptions::new()
        .append(true)
        .open(l.dir.join(grown))
        .unwrap();
    f.write_all(b"grown junk\n").unwrap();
    drop(f);
    fs::write(l.dir.join("feeds/b/vm-000011/notes.txt"), "x").unwrap();
    let unseen = l.channel().catch_up().unwrap();
    assert_eq!(unseen.looked, 2, "{unseen:?}");
    assert!(garbage_at(&l, added).is_empty());
    assert_eq!(garbage_at(&l, grown), vec![0]);

    // A folder added to `feeds/b/`: every folder of the role is looked at
    // again, and each change is seen.
    plant(&l.dir, 500..501);
    let seen = l.channel().catch_up().unwrap();
    assert!(seen.looked >= 201, "{seen:?}");
    assert_eq!(garbage_at(&l, added), vec![0]);
    assert_eq!(garbage_at(&l, grown), vec![0, before]);
    assert_eq!(garbage_at(&l, "feeds/b/vm-000500/00000001.jsonl"), vec![0]);
    let problems = l.channel().index().problems().unwrap();
    assert!(
        problems
            .iter()
            .any(|p| p.kind == ProblemKind::Stray && p.path == "feeds/b/vm-000011/notes.txt"),
        "{problems:?}"
    );

    // Settled again: skipped again, and status still answers.
    settle(&l.dir);
    l.channel().catch_up().unwrap();
    assert_eq!(kept(&l).1, vec![("b".to_owned(), 201)]);
    assert!(l.channel().catch_up().unwrap().looked <= 2);
    let out = Command::new(bin())
        .env("COUNTERSIGN_HOME", l.home_root())
        .args([
            "--channel",
            l.dir.to_str().unwrap(),
            "status",
            "--role",
            "b",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
}

/// A device of role b that this folder has not seen admitted: what it wrote
/// elsewhere (its feed folder), and the owner's feed folder holding its
/// admit, ready to be copied in as a sync would.
struct Joiner {
    device: String,
    feed: PathBuf,
    admit: PathBuf,
}

impl Joiner {
    fn new(l: &Local) -> Self {
        let elsewhere = l.tmp.path().join("elsewhere");
        copy_dir(&l.dir, &elsewhere);
        let ch = ChannelDir::open(&l.dir).unwrap().id().to_owned();
        // The owner key on that device for a moment: it admits the feed.
        let home = Home::at(l.tmp.path().join("home-joiner"));
        fs::create_dir_all(home.keys_dir(&ch)).unwrap();
        fs::copy(
            l.home.keys_dir(&ch).join("owner.key"),
            home.keys_dir(&ch).join("owner.key"),
        )
        .unwrap();
        let mut s = Session::new(
            local::open(&elsewhere, &home),
            Some(Role::new("b").unwrap()),
        )
        .unwrap();
        send(&mut s, "a", "from the joiner", "hello");
        let device = home.device().unwrap().id;
        let feeds = elsewhere.join("feeds");
        let joiner = Self {
            feed: feeds.join("b").join(&device),
            admit: feeds.join(OWNER_FEED_ROLE).join(&device),
            device,
        };
        assert!(joiner.feed.is_dir() && joiner.admit.is_dir());
        joiner
    }

    fn feed_id(&self) -> FeedId {
        FeedId::new("b", &self.device).unwrap()
    }

    /// Its feed folder in `l`'s folder.
    fn here(&self, l: &Local) -> PathBuf {
        l.dir.join("feeds/b").join(&self.device)
    }

    /// The owner's admit arrives: a folder added to `feeds/_owner/`, none
    /// to `feeds/b/`.
    fn admitted(&self, l: &Local) {
        copy_dir(
            &self.admit,
            &l.dir.join("feeds").join(OWNER_FEED_ROLE).join(&self.device),
        );
    }
}

#[test]
fn a_skipped_feed_folder_is_read_once_its_feed_is_admitted() {
    let l = Local::new(&["a", "b"]);
    send(&mut l.session("a"), "b", "first", "a real message");
    let j = Joiner::new(&l);
    plant(&l.dir, 0..50);
    copy_dir(&j.feed, &j.here(&l));
    settle(&l.dir);
    l.channel().catch_up().unwrap();
    let waiting = l.channel().index().problems().unwrap();
    assert!(
        waiting.iter().any(|p| p.kind == ProblemKind::Unadmitted
            && p.feed.as_deref() == Some(&j.feed_id().to_string())),
        "{waiting:?}"
    );
    assert_eq!(kept(&l).1, vec![("b".to_owned(), 51)], "judged: skipped");
    assert!(l.channel().catch_up().unwrap().looked <= 2);

    j.admitted(&l);
    let mut ch = l.channel();
    ch.catch_up().unwrap();
    assert!(ch.admitted_key(&j.feed_id()).unwrap().is_some());
    assert_eq!(
        ch.head_seq(&j.feed_id()).unwrap(),
        2,
        "its records are read"
    );
    // Looked at, and skipped no more; the junk is skipped again.
    settle(&l.dir);
    l.channel().catch_up().unwrap();
    assert_eq!(kept(&l).1, vec![("b".to_owned(), 50)]);
}

#[test]
fn a_torn_first_segment_is_not_skipped_and_is_read_once_complete() {
    // A device mid-sync: its first segment is there, cut inside its first
    // line. Not judged, so not skipped: its completion in place (which
    // leaves every folder's time as it was) is seen.
    let l = Local::new(&["a", "b"]);
    send(&mut l.session("a"), "b", "first", "a real message");
    let j = Joiner::new(&l);
    plant(&l.dir, 0..20);
    let seg = list_segments(&j.feed).unwrap().remove(0).path;
    let whole = fs::read(&seg).unwrap();
    let first_line = whole.iter().position(|b| *b == b'\n').unwrap();
    let here = j.here(&l).join(seg.file_name().unwrap());
    fs::create_dir_all(j.here(&l)).unwrap();
    fs::write(&here, &whole[..first_line / 2]).unwrap();
    settle(&l.dir);
    l.channel().catch_up().unwrap();
    let later = l.channel().catch_up().unwrap();
    assert_eq!(later.looked, 3, "{later:?}");
    assert_eq!(kept(&l).1, vec![("b".to_owned(), 20)]);

    // The rest of the file arrives in place, its time set back as well.
    fs::OpenOptions::new()
        .append(true)
        .open(&here)
        .unwrap()
        .write_all(&whole[first_line / 2..])
        .unwrap();
    settle(&l.dir);
    l.channel().catch_up().unwrap();
    let problems = l.channel().index().problems().unwrap();
    assert!(
        problems.iter().any(|p| p.kind == ProblemKind::Unadmitted
            && p.feed.as_deref() == Some(&j.feed_id().to_string())),
        "{problems:?}"
    );
    assert_eq!(kept(&l).1, vec![("b".to_owned(), 21)]);
    j.admitted(&l);
    let mut ch = l.channel();
    ch.catch_up().unwrap();
    assert_eq!(
        ch.head_seq(&j.feed_id()).unwrap(),
        2,
        "its records are read"
    );
}

#[test]
fn a_command_catches_up_once() {
    // A command's later reads see the index as its one catch-up left it;
    // a long-lived session (the MCP server) catches up on every call.
    let l = Local::new(&["a", "b"]);
    send(&mut l.session("a"), "b", "first", "a real message");
    let mut once = l.session("b").for_one_command();
    let mut every = l.session("b");
    once.catch_up().unwrap();
    every.catch_up().unwrap();
    plant(&l.dir, 0..1);
    let path = "feeds/b/vm-000000/00000001.jsonl";
    let seen = |s: &Session| s.index().problems().unwrap().iter().any(|p| p.path == path);
    once.catch_up().unwrap();
    assert!(!seen(&once), "the command's second catch-up looked again");
    every.catch_up().unwrap();
    assert!(seen(&every));
}

#[test]
fn a_hard_linked_segment_is_never_written_through() {
    // A second name planted at a segment's name: appending would write the
    // record into whatever file that name shares, outside the folder too.
    let l = Local::new(&["a", "b"]);
    send(&mut l.session("a"), "b", "first", "a real message");
    let seg = list_segments(&l.feed_dir("a")).unwrap().pop().unwrap().path;
    let victim = l.tmp.path().join("victim.jsonl");
    fs::copy(&seg, &victim).unwrap();
    fs::remove_file(&seg).unwrap();
    fs::hard_link(&victim, &seg).unwrap();
    let before = fs::read(&victim).unwrap();

    let refused = send_message(
        &mut l.session("a"),
        SendRequest::new("b", "refused-topic", "body"),
    )
    .unwrap_err()
    .to_string();
    assert!(
        refused.contains("hard links") && refused.contains("nothing was written"),
        "{refused}"
    );
    assert_eq!(
        fs::read(&victim).unwrap(),
        before,
        "the other name was written"
    );

    // The way out the refusal names: a copy of its own, moved over it.
    let own = l.tmp.path().join("own.jsonl");
    fs::copy(&seg, &own).unwrap();
    fs::rename(&own, &seg).unwrap();
    send(&mut l.session("a"), "b", "after", "body");
    assert_eq!(fs::read(&victim).unwrap(), before);
    let feed = fs::read_to_string(&seg).unwrap();
    assert!(feed.contains("after"), "{feed}");
    assert!(
        !feed.contains("refused-topic"),
        "the refused send was published: {feed}"
    );
}
