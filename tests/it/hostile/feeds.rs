//! Feed folders and segments a peer plants: thousands of junk feed folders
//! cost later calls work in proportion to their number, never its square,
//! and stay reported; a segment with a second name is never written through.

use std::fs;
use std::io::Write as _;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, SystemTime};

use countersign::app::Session;
use countersign::app::send::{SendRequest, send_message};
use countersign::store::feed::list_segments;
use countersign::store::index::ProblemKind;

use crate::common::bin;
use crate::common::local::{Local, send};

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
    let clean = later_pass_work(&l);
    plant(&l.dir, 0..2_500);
    let half = later_pass_work(&l) - clean;
    plant(&l.dir, 2_500..5_000);
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
    let out = Command::new(bin())
        .env("COUNTERSIGN_HOME", l.home_root())
        .args(["--channel", l.dir.to_str().unwrap(), "verify"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    let garbage = text
        .lines()
        .filter(|l| l.starts_with("garbage: feeds/b/vm-"))
        .count();
    assert_eq!(garbage, 5_000, "{}", &text[..text.len().min(2_000)]);
}

/// Sets the time of every folder under `feeds/` an hour back, as folders
/// look once they have settled: a listing of them may then be kept.
fn settle(dir: &Path) {
    let then = SystemTime::now() - Duration::from_secs(3600);
    let mut folders = vec![dir.join("feeds")];
    while let Some(folder) = folders.pop() {
        for entry in fs::read_dir(&folder).unwrap() {
            let entry = entry.unwrap();
            if entry.file_type().unwrap().is_dir() {
                folders.push(entry.path());
            }
        }
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

#[test]
fn a_later_command_lists_no_settled_junk_folder_and_still_sees_each_change() {
    // Every command, hook and new session is a new process, whose first
    // pass listed every feed folder again: thousands of junk folders cost
    // each an open, two reads of the folder and a close, besides the `stat`
    // of the folder and of its segment that tell a change.
    let l = Local::new(&["a", "b"]);
    send(&mut l.session("a"), "b", "first", "a real message");
    plant(&l.dir, 0..200);
    assert!(l.channel().catch_up().unwrap().listed >= 200);
    // Their listing is kept once their times lie in the past: a file added
    // in the same tick of the file system's clock would not move them.
    settle(&l.dir);
    assert!(l.channel().catch_up().unwrap().listed >= 200);
    let later = l.channel().catch_up().unwrap();
    assert_eq!(later.listed, 0, "{later:?}");

    // A segment added to one junk folder: that folder alone is listed, and
    // the segment read.
    let added = "feeds/b/vm-000007/00000002.jsonl";
    fs::write(l.dir.join(added), "more junk\n").unwrap();
    let seen = l.channel().catch_up().unwrap();
    assert_eq!(seen.listed, 1, "{seen:?}");
    assert_eq!(garbage_at(&l, added), vec![0]);

    // A junk segment that grows in place leaves its folder's time as it was:
    // its own `stat` tells.
    let grown = "feeds/b/vm-000003/00000001.jsonl";
    let before = fs::metadata(l.dir.join(grown)).unwrap().len();
    let mut f = fs::OpenOptions::new()
        .append(true)
        .open(l.dir.join(grown))
        .unwrap();
    f.write_all(b"grown junk\n").unwrap();
    drop(f);
    l.channel().catch_up().unwrap();
    assert_eq!(garbage_at(&l, grown), vec![0, before]);

    // A stray in a junk folder, and a new junk folder, are reported.
    fs::write(l.dir.join("feeds/b/vm-000011/notes.txt"), "x").unwrap();
    plant(&l.dir, 500..501);
    let seen = l.channel().catch_up().unwrap();
    assert!(seen.new_problems >= 2, "{seen:?}");
    let problems = l.channel().index().problems().unwrap();
    assert!(
        problems
            .iter()
            .any(|p| p.kind == ProblemKind::Stray && p.path == "feeds/b/vm-000011/notes.txt"),
        "{problems:?}"
    );
    assert_eq!(garbage_at(&l, "feeds/b/vm-000500/00000001.jsonl"), vec![0]);

    // Settled again: only the folder holding a stray is listed (a listing
    // is kept only when it found nothing stray), and status still answers.
    settle(&l.dir);
    l.channel().catch_up().unwrap();
    assert_eq!(l.channel().catch_up().unwrap().listed, 1);
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
