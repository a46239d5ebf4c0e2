//! What sync does to a folder, and what readers make of it: gzip segments,
//! bytes missing mid-file, stale copies, conflict copies, CRLF, segments out of
//! order, records from another channel, clocks ahead, a deleted index, a git
//! checkout under a waiting call, hand edits, forks, trust alarms and presence.
//!
//! Each test uses real files and a real SQLite index; a reader is a separate
//! home on the same folder (another machine that received the files).

use crate::common;
use std::fs::{self, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::copy_dir;
use crate::common::local::{self, Local, send};
use countersign::app::{Session, info, status};
use countersign::core::hlc::Hlc;
use countersign::core::ids::{FeedId, OWNER_FEED_ROLE, Role};
use countersign::core::op::{Admit, FeedInit, Op, Send};
use countersign::core::record::{self, Header, Record, pubkey_hex};
use countersign::store::KeyName;
use countersign::store::gzip_sealed_segments;
use countersign::store::now_ms;
use countersign::store::survey::list_segments;
use countersign::store::{Channel, ChannelDir, Home, Index};
use countersign::store::{Ingest, ScanCache};
use ed25519_dalek::SigningKey;
use serde_json::Value;

/// A connection of the test's own to the index file: the index keeps its
/// connection to `store`, so tests that look at tables open one beside it.
fn db(ix: &Index) -> rusqlite::Connection {
    rusqlite::Connection::open(ix.path()).unwrap()
}

// ---------------------------------------------------------------------------------------
// Helpers

/// Another home on the same folder: a machine that received these files.
fn reader(l: &Local, name: &str) -> Channel {
    local::open(&l.dir, &Home::at(l.tmp.path().join(name)))
}

fn messages(ch: &Channel) -> i64 {
    db(ch.index())
        .query_row("SELECT count(*) FROM messages", [], |r| r.get(0))
        .unwrap()
}

fn problems(ch: &Channel) -> Vec<(String, String)> {
    kinds(ch.index())
}

fn kinds(ix: &Index) -> Vec<(String, String)> {
    ix.problems()
        .unwrap()
        .into_iter()
        .map(|p| (p.kind.to_string(), p.reason))
        .collect()
}

fn digest(ch: &mut Channel) -> String {
    ch.catch_up().unwrap();
    ch.index().digest().unwrap()
}

fn segment(dir: &Path) -> PathBuf {
    list_segments(dir).unwrap().pop().unwrap().path
}

fn append_raw(path: &Path, bytes: &[u8]) {
    OpenOptions::new()
        .append(true)
        .open(path)
        .unwrap()
        .write_all(bytes)
        .unwrap();
}

/// The complete lines of a file, each with its `\n`.
fn lines_of(path: &Path) -> Vec<Vec<u8>> {
    fs::read(path)
        .unwrap()
        .split_inclusive(|&b| b == b'\n')
        .map(<[u8]>::to_vec)
        .collect()
}

fn last_record(path: &Path) -> Record {
    let text = fs::read_to_string(path).unwrap();
    record::decode(text.lines().last().unwrap().as_bytes()).unwrap()
}

fn channel_id(l: &Local) -> String {
    ChannelDir::open(&l.dir).unwrap().id().to_owned()
}

fn role_key(l: &Local, role: &str) -> SigningKey {
    let role = countersign::core::ids::Role::new(role).unwrap();
    l.home
        .load_key(&channel_id(l), KeyName::Role(&role))
        .unwrap()
        .unwrap()
}

fn to_b(topic: &str) -> Op {
    Op::Send(Send {
        to: vec![Role::new("b").unwrap()],
        topic: topic.into(),
        body: format!("body of {topic}"),
        decision_requested: true,
        ..Send::default()
    })
}

/// The record that would come next in the feed whose newest segment is `seg`,
/// stamped `ms` and signed with `key`.
fn next_at(seg: &Path, key: &SigningKey, ms: i64, op: &Op) -> Record {
    let last = last_record(seg);
    let header = Header {
        ch: last.header.ch.clone(),
        feed: last.header.feed.clone(),
        seq: last.header.seq + 1,
        prev: Some(last.id),
        hlc: Hlc(ms.max(last.header.hlc.0 + 1), 0),
    };
    record::encode(&header, op, key)
}

/// Writes `n` small sends from `a` to `b` in bulk (several segments' worth).
fn bulk_sends(l: &Local, n: i64) {
    let mut writer = l.channel();
    let mut run = writer.bulk(&Role::new("a").unwrap(), now_ms()).unwrap();
    let now = now_ms();
    for i in 0..n {
        run.push(&to_b(&format!("bulk {i}")), now + i, Hlc(now, 0));
    }
    run.flush().unwrap();
}

/// Runs the binary with a home and the channel folder.
fn cli(home: &Path, dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(common::bin())
        .env("COUNTERSIGN_HOME", home)
        .env_remove("COUNTERSIGN_ROLE")
        .env_remove("AI_AGENT_CHANNEL_ROLE")
        .env_remove("COUNTERSIGN_CHANNEL")
        .args(args)
        .arg("--channel")
        .arg(dir)
        .output()
        .unwrap()
}

fn session_on(ch: Channel, role: &str) -> Session {
    Session::new(ch, Some(Role::new(role).unwrap())).unwrap()
}

fn alarm_kinds(v: &Value) -> Vec<String> {
    v["alarms"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|x| x["kind"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

// ---------------------------------------------------------------------------------------
// Segments

#[test]
fn sealed_segments_gzip_in_place_and_every_reader_takes_both_forms() {
    let l = Local::new(&["a", "b"]);
    let mut s = l.session("a");
    send(&mut s, "b", "first", "one");
    bulk_sends(&l, 1100);
    let dir = l.feed_dir("a");
    let before = list_segments(&dir).unwrap();
    assert!(before.len() >= 3, "{before:?}");
    let plain_first = fs::read(&before[0].path).unwrap();

    let mut r = reader(&l, "r1");
    let d = digest(&mut r);
    assert_eq!(messages(&r), 1101);

    let written = gzip_sealed_segments(&dir).unwrap();
    assert_eq!(written.len(), before.len() - 1, "every sealed segment");
    let after = list_segments(&dir).unwrap();
    assert_eq!(after.len(), before.len());
    assert!(after[..after.len() - 1].iter().all(|s| s.gz), "{after:?}");
    assert!(!after.last().unwrap().gz, "the newest segment stays plain");
    let names: Vec<String> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        !names.iter().any(|n| n.ends_with(".tmp")),
        "no temp file is left: {names:?}"
    );
    assert!(
        !names.contains(&"00000001.jsonl".to_owned()),
        "the plain form is gone: {names:?}"
    );
    assert!(
        gzip_sealed_segments(&dir).unwrap().is_empty(),
        "compressing again does nothing"
    );

    // A reader that read the plain files finds nothing new in the gzip ones.
    let report = r.catch_up().unwrap();
    assert_eq!(report.accepted, 0, "{report:?}");
    assert!(problems(&r).is_empty(), "{:?}", problems(&r));
    assert_eq!(digest(&mut r), d);
    // A reader that only ever sees the gzip forms folds the same state.
    let mut fresh = reader(&l, "r2");
    let report = fresh.reindex(None).unwrap();
    assert!(report.waiting.is_empty(), "{report:?}");
    assert!(problems(&fresh).is_empty());
    assert_eq!(fresh.index().digest().unwrap(), d);

    // Offline reading: zcat gives back the plain bytes, zgrep finds the text.
    let gz = dir.join("00000001.jsonl.gz");
    let zcat = Command::new("zcat").arg(&gz).output().unwrap();
    assert!(zcat.status.success());
    assert_eq!(zcat.stdout, plain_first);
    let zgrep = Command::new("zgrep")
        .arg("-c")
        .arg("\"topic\":\"bulk 42\"")
        .arg(&gz)
        .output()
        .unwrap();
    assert!(zgrep.status.success(), "{zgrep:?}");
    assert_eq!(String::from_utf8_lossy(&zgrep.stdout).trim(), "1");

    // Both forms at once (a crash between the rename and the removal): the
    // same records, counted once.
    fs::write(dir.join("00000001.jsonl"), &plain_first).unwrap();
    assert_eq!(r.catch_up().unwrap().accepted, 0);
    let mut both = reader(&l, "r3");
    both.reindex(None).unwrap();
    assert_eq!(both.index().digest().unwrap(), d);
    assert!(problems(&both).is_empty());
    assert!(gzip_sealed_segments(&dir).unwrap().is_empty());
    assert!(
        !dir.join("00000001.jsonl").exists(),
        "the rerun finishes it"
    );

    // The writer goes on in the newest segment; readers follow.
    send(&mut s, "b", "after", "compression");
    assert_eq!(r.catch_up().unwrap().accepted, 1);
    assert_eq!(messages(&r), 1102);

    // `countersign log` and `verify` read the gzip segments too.
    let home = l.tmp.path().join("cli-home");
    let log = cli(&home, &l.dir, &["log"]);
    assert!(log.status.success(), "{log:?}");
    let text = String::from_utf8_lossy(&log.stdout);
    assert!(text.contains("\"bulk 42\""), "a record of a gzip segment");
    assert!(text.contains("\"after\""));
    let verify = cli(&home, &l.dir, &["verify"]);
    assert!(
        verify.status.success(),
        "{}",
        String::from_utf8_lossy(&verify.stdout)
    );
}

#[test]
fn the_compress_command_gzips_only_this_devices_sealed_segments() {
    let l = Local::new(&["a", "b"]);
    bulk_sends(&l, 1100);
    let mine = l.feed_dir("a");
    // Another writer's folder, as sync brought it: not ours to rewrite.
    let theirs = l.dir.join("feeds").join("a").join("else-000001");
    copy_dir(&mine, &theirs);
    let out = cli(&l.home_root(), &l.dir, &["compress"]);
    assert!(out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("2 sealed segment(s) compressed"),
        "{out:?}"
    );
    let gz =
        |dir: &Path| -> Vec<bool> { list_segments(dir).unwrap().iter().map(|s| s.gz).collect() };
    assert_eq!(gz(&mine), vec![true, true, false]);
    assert_eq!(gz(&theirs), vec![false, false, false]);
}

#[test]
fn a_lost_newest_segment_after_gzip_is_republished_into_a_new_plain_one() {
    let l = Local::new(&["a", "b"]);
    let mut s = l.session("a");
    send(&mut s, "b", "first", "one");
    bulk_sends(&l, 1100);
    let dir = l.feed_dir("a");
    gzip_sealed_segments(&dir).unwrap();
    let newest = list_segments(&dir).unwrap().pop().unwrap();
    // A stale copy of the folder came back without the newest segment.
    fs::remove_file(&newest.path).unwrap();
    send(&mut s, "b", "next", "after the loss");
    let segs = list_segments(&dir).unwrap();
    assert_eq!(
        segs.last().unwrap().path,
        newest.path,
        "the records go back under their own name"
    );
    assert!(!segs.last().unwrap().gz);
    let mut fresh = reader(&l, "r");
    let report = fresh.reindex(None).unwrap();
    assert!(report.waiting.is_empty(), "{report:?}");
    assert!(problems(&fresh).is_empty(), "{:?}", problems(&fresh));
    assert_eq!(messages(&fresh), 1102);
}

// ---------------------------------------------------------------------------------------
// What sync does to files

#[test]
fn bytes_missing_mid_file_wait_for_the_missing_records() {
    let l = Local::new(&["a", "b"]);
    let mut s = l.session("a");
    for i in 0..5 {
        send(&mut s, "b", &format!("m{i}"), "x");
    }
    let seg = segment(&l.feed_dir("a"));
    let whole = fs::read(&seg).unwrap();
    let lines = lines_of(&seg);
    // feed_init, then m0..m4: cut m2 out of the middle.
    let cut: Vec<u8> = lines
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != 3)
        .flat_map(|(_, l)| l.clone())
        .collect();
    fs::write(&seg, &cut).unwrap();
    let mut r = reader(&l, "r");
    let report = r.reindex(None).unwrap();
    assert_eq!(messages(&r), 2, "m0 and m1; m3 and m4 wait");
    assert!(
        report
            .waiting
            .iter()
            .any(|w| w.contains("seq 4 is missing")),
        "{report:?}"
    );
    assert!(problems(&r).is_empty(), "a gap is no problem");
    // The bytes come back.
    fs::write(&seg, &whole).unwrap();
    let report = r.catch_up().unwrap();
    assert!(report.waiting.is_empty(), "{report:?}");
    assert_eq!(messages(&r), 5);
    assert!(problems(&r).is_empty());
    let mut w = l.channel();
    assert_eq!(digest(&mut r), digest(&mut w));
}

#[test]
fn an_older_segment_completed_in_place_is_read_to_its_end() {
    // `cp` onto an existing file, or a copy in flight, writes in place: the
    // folder does not change, and the segment is not the newest.
    let l = Local::new(&["a", "b"]);
    bulk_sends(&l, 700);
    let mut w = l.channel();
    let d = digest(&mut w);
    let segs = list_segments(&l.feed_dir("a")).unwrap();
    let first = fs::read(&segs[0].path).unwrap();
    let half = first.len() / 2;
    let at_line_end = half + first[half..].iter().position(|&b| b == b'\n').unwrap() + 1;
    // Cut inside a line (torn), and cut between lines (looks complete).
    for cut in [half, at_line_end] {
        fs::write(&segs[0].path, &first[..cut]).unwrap();
        let mut r = reader(&l, &format!("r{cut}"));
        r.catch_up().unwrap();
        r.catch_up().unwrap();
        assert!(messages(&r) < 700);
        fs::write(&segs[0].path, &first).unwrap();
        let report = r.catch_up().unwrap();
        assert!(report.waiting.is_empty(), "{report:?}");
        assert_eq!(messages(&r), 700);
        assert_eq!(digest(&mut r), d);
    }
}

#[test]
fn a_writer_killed_mid_write_restarts_cleanly() {
    let l = Local::new(&["a", "b"]);
    let mut s = l.session("a");
    send(&mut s, "b", "m0", "x");
    send(&mut s, "b", "m1", "x");
    drop(s);
    let seg = segment(&l.feed_dir("a"));
    let journal = l.channel().state_dir().join("journal").join("a.jsonl");
    // Killed after the journal was written, half-way through the feed line.
    let mut lines = lines_of(&seg);
    let last = lines.pop().unwrap();
    let mut torn: Vec<u8> = lines.concat();
    torn.extend_from_slice(&last[..last.len() / 2]);
    fs::write(&seg, &torn).unwrap();
    // And killed again during the next journal write.
    append_raw(&journal, &last[..last.len() / 3]);
    let mut s = l.session("a");
    send(&mut s, "b", "m2", "x");
    let mut r = reader(&l, "r");
    let report = r.catch_up().unwrap();
    assert!(report.waiting.is_empty(), "{report:?}");
    assert_eq!(messages(&r), 3);
    assert!(problems(&r).is_empty(), "{:?}", problems(&r));
    let seqs = |p: &Path| -> Vec<u64> {
        lines_of(p)
            .iter()
            .map(|l| record::decode(&l[..l.len() - 1]).unwrap().header.seq)
            .collect()
    };
    assert_eq!(
        seqs(&seg),
        vec![1, 2, 3, 4],
        "the feed is whole and in order"
    );
    assert_eq!(seqs(&journal), vec![1, 2, 3, 4], "so is the journal");
}

#[test]
fn records_lost_mid_file_for_good_are_published_again_by_repair() {
    let l = Local::new(&["a", "b"]);
    let mut s = l.session("a");
    for i in 0..5 {
        send(&mut s, "b", &format!("m{i}"), "x");
    }
    drop(s);
    let seg = segment(&l.feed_dir("a"));
    let lines = lines_of(&seg);
    // m1 and m2 are cut out and never come back.
    let cut: Vec<u8> = [&lines[..2], &lines[4..]].concat().concat();
    fs::write(&seg, &cut).unwrap();
    let mut r = reader(&l, "r");
    r.catch_up().unwrap();
    assert_eq!(messages(&r), 1, "the rest waits for seq 3");
    let out = cli(&l.home_root(), &l.dir, &["repair"]);
    assert!(out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("2 record(s) published again"),
        "{out:?}"
    );
    let report = r.catch_up().unwrap();
    assert!(report.waiting.is_empty(), "{report:?}");
    assert_eq!(messages(&r), 5);
    assert!(problems(&r).is_empty(), "{:?}", problems(&r));
    let mut w = l.channel();
    assert_eq!(digest(&mut r), digest(&mut w));
    // A line whose signature alone was damaged is published again too.
    let lines = lines_of(&seg);
    let text = String::from_utf8(lines[2].clone()).unwrap();
    let sig_at = text.find("\"sig\":\"").unwrap() + 7;
    let flipped = if &text[sig_at..sig_at + 1] == "A" {
        "B"
    } else {
        "A"
    };
    let damaged = format!("{}{flipped}{}", &text[..sig_at], &text[sig_at + 1..]);
    let mut bytes = lines.concat();
    let at = lines[..2].iter().map(Vec::len).sum::<usize>();
    bytes.splice(at..at + lines[2].len(), damaged.into_bytes());
    fs::write(&seg, &bytes).unwrap();
    let out = cli(&l.home_root(), &l.dir, &["repair"]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("1 record(s) published again"),
        "{out:?}"
    );
    let mut fresh = reader(&l, "fresh");
    let report = fresh.reindex(None).unwrap();
    assert!(report.waiting.is_empty(), "{report:?}");
    assert_eq!(fresh.index().digest().unwrap(), digest(&mut r));
    // Nothing is missing any more: a second repair publishes nothing.
    let out = cli(&l.home_root(), &l.dir, &["repair"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("0 record(s)"));
    // And the writer goes on after the repaired records.
    send(&mut l.session("a"), "b", "m5", "x");
    assert_eq!(r.catch_up().unwrap().accepted, 1);
}

#[test]
fn a_feed_replaced_by_an_older_copy_keeps_its_records_and_the_owner_republishes() {
    let l = Local::new(&["a", "b"]);
    let mut s = l.session("a");
    for i in 0..3 {
        send(&mut s, "b", &format!("m{i}"), "x");
    }
    let dir = l.feed_dir("a");
    let old = l.tmp.path().join("old-copy");
    copy_dir(&dir, &old);
    send(&mut s, "b", "m3", "x");
    send(&mut s, "b", "m4", "x");
    let mut r = reader(&l, "r");
    r.catch_up().unwrap();
    assert_eq!(messages(&r), 5);
    // Sync brings back the older copy (segment and head).
    fs::remove_dir_all(&dir).unwrap();
    copy_dir(&old, &dir);
    r.catch_up().unwrap();
    assert_eq!(messages(&r), 5, "records already ingested are kept");
    assert!(problems(&r).is_empty(), "{:?}", problems(&r));
    let mut late = reader(&l, "late");
    late.reindex(None).unwrap();
    assert_eq!(messages(&late), 3, "a newcomer sees only the old copy");
    // The owner's next write republishes what the copy lost, from its journal.
    send(&mut s, "b", "m5", "x");
    assert_eq!(lines_of(&segment(&dir)).len(), 7, "feed_init and six sends");
    for ch in [&mut r, &mut late] {
        let report = ch.catch_up().unwrap();
        assert!(report.waiting.is_empty(), "{report:?}");
        assert_eq!(messages(ch), 6);
        assert!(problems(ch).is_empty());
    }
    assert_eq!(digest(&mut r), digest(&mut late));
}

#[test]
fn a_stale_copy_is_repaired_from_the_journal_before_it_travels() {
    let l = Local::new(&["a", "b"]);
    let mut s = l.session("a");
    send(&mut s, "b", "m0", "x");
    let dir = l.feed_dir("a");
    let old = l.tmp.path().join("old-copy");
    copy_dir(&dir, &old);
    send(&mut s, "b", "m1", "x");
    let whole = fs::read(segment(&dir)).unwrap();
    drop(s);
    // An older copy, and a feed folder lost altogether.
    fs::remove_dir_all(&dir).unwrap();
    copy_dir(&old, &dir);
    let owner_dir = l.dir.join("feeds").join(OWNER_FEED_ROLE);
    let owner_before = fs::read(segment(
        &fs::read_dir(&owner_dir)
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path(),
    ))
    .unwrap();
    fs::remove_dir_all(&owner_dir).unwrap();
    // What sync runs before it publishes: nothing new is written, what was
    // lost is back, byte for byte.
    assert_eq!(
        l.channel().reconcile_own_feeds().unwrap(),
        2,
        "a and the owner"
    );
    assert_eq!(fs::read(segment(&dir)).unwrap(), whole);
    let owner_seg = segment(
        &fs::read_dir(&owner_dir)
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path(),
    );
    assert_eq!(fs::read(owner_seg).unwrap(), owner_before);
    let mut fresh = reader(&l, "fresh");
    fresh.reindex(None).unwrap();
    assert_eq!(messages(&fresh), 2);
    assert!(problems(&fresh).is_empty());
}

#[test]
fn partial_temp_and_conflict_copies_are_ignored_as_paths() {
    let l = Local::new(&["a", "b"]);
    let mut s = l.session("a");
    send(&mut s, "b", "one", "x");
    send(&mut s, "b", "two", "x");
    let dir = l.feed_dir("a");
    let seg = segment(&dir);
    let mut r = reader(&l, "r");
    let d = digest(&mut r);
    // Copies a sync tool leaves behind: the whole segment, a garbage line and
    // a record that is valid but was never published by its writer.
    let extra = next_at(&seg, &role_key(&l, "a"), now_ms(), &to_b("stray"));
    let mut copy = fs::read(&seg).unwrap();
    copy.extend_from_slice(b"not a record\n");
    copy.extend_from_slice(extra.to_line().as_bytes());
    for name in [
        "00000001.sync-conflict-20261130-101010-ABCDEFG.jsonl",
        "00000001.jsonl.partial",
        "00000001.jsonl.tmp",
        "00000001 (conflicted copy 2026-11-30).jsonl",
        "00000001 (laptop's conflicted copy).jsonl",
        ".~tmp~00000001.jsonl",
        "00000001.jsonl.gz.tmp",
        ".00000001.jsonl.XyZ123",
    ] {
        fs::write(dir.join(name), &copy).unwrap();
    }
    let report = r.catch_up().unwrap();
    assert_eq!(report.accepted, 0, "{report:?}");
    // Copies left for good are named as strays (for `verify`); files still
    // in flight are passed over in silence. None is read.
    let strays = |ch: &countersign::store::Channel| -> Vec<String> {
        let ps = ch.index().problems().unwrap();
        assert!(ps.iter().all(|p| p.kind == "stray"), "{ps:?}");
        let mut paths: Vec<String> = ps
            .iter()
            .map(|p| p.path.rsplit('/').next().unwrap().to_owned())
            .collect();
        paths.sort();
        paths
    };
    let expected = vec![
        ".00000001.jsonl.XyZ123".to_owned(),
        "00000001 (conflicted copy 2026-11-30).jsonl".to_owned(),
        "00000001 (laptop's conflicted copy).jsonl".to_owned(),
        "00000001.sync-conflict-20261130-101010-ABCDEFG.jsonl".to_owned(),
    ];
    assert_eq!(strays(&r), expected);
    assert_eq!(digest(&mut r), d);
    let mut fresh = reader(&l, "fresh");
    fresh.reindex(None).unwrap();
    assert_eq!(messages(&fresh), 2);
    assert_eq!(strays(&fresh), expected);
    assert_eq!(fresh.index().digest().unwrap(), d);
    // The writer is not confused by them either.
    send(&mut s, "b", "three", "x");
    assert_eq!(r.catch_up().unwrap().accepted, 1);
}

#[test]
fn a_segment_converted_to_crlf_still_verifies() {
    let l = Local::new(&["a", "b"]);
    let mut s = l.session("a");
    for i in 0..3 {
        send(&mut s, "b", &format!("m{i}"), "line one\nline two");
    }
    let seg = segment(&l.feed_dir("a"));
    let mut r = reader(&l, "r");
    let d = digest(&mut r);
    let crlf = String::from_utf8(fs::read(&seg).unwrap())
        .unwrap()
        .replace('\n', "\r\n");
    fs::write(&seg, crlf).unwrap();
    assert_eq!(r.catch_up().unwrap().accepted, 0);
    assert!(problems(&r).is_empty(), "{:?}", problems(&r));
    assert_eq!(digest(&mut r), d);
    let mut fresh = reader(&l, "fresh");
    fresh.reindex(None).unwrap();
    assert!(problems(&fresh).is_empty(), "{:?}", problems(&fresh));
    assert_eq!(fresh.index().digest().unwrap(), d);
    // The writer appends after the converted lines; everyone reads on.
    send(&mut s, "b", "m3", "x");
    for ch in [&mut r, &mut fresh] {
        assert_eq!(ch.catch_up().unwrap().accepted, 1);
        assert_eq!(messages(ch), 4);
    }
}

#[test]
fn a_later_segment_arriving_first_waits_for_the_earlier_one() {
    let l = Local::new(&["a", "b"]);
    bulk_sends(&l, 700);
    let mut w = l.channel();
    let d = digest(&mut w);
    let segs = list_segments(&l.feed_dir("a")).unwrap();
    assert_eq!(segs.len(), 2);
    // Another machine's copy received the later segment first.
    let copy = l.tmp.path().join("copy");
    copy_dir(&l.dir, &copy);
    let rel = segs[0].path.strip_prefix(&l.dir).unwrap();
    fs::remove_file(copy.join(rel)).unwrap();
    let mut r = local::open(&copy, &Home::at(l.tmp.path().join("r")));
    let report = r.catch_up().unwrap();
    assert!(
        report
            .waiting
            .iter()
            .any(|w| w.contains("seq 1 is missing")),
        "{report:?}"
    );
    assert_eq!(messages(&r), 0);
    assert!(problems(&r).is_empty());
    fs::copy(&segs[0].path, copy.join(rel)).unwrap();
    let report = r.catch_up().unwrap();
    assert!(report.waiting.is_empty(), "{report:?}");
    assert_eq!(messages(&r), 700);
    assert_eq!(digest(&mut r), d);
}

#[test]
fn a_valid_record_replayed_from_another_channel_is_quarantined() {
    let x = Local::new(&["a", "b"]);
    let y = Local::new(&["a", "b"]);
    send(&mut x.session("a"), "b", "in x", "x");
    send(&mut y.session("a"), "b", "in y", "y");
    let line = lines_of(&segment(&x.feed_dir("a"))).pop().unwrap();
    append_raw(&segment(&y.feed_dir("a")), &line);
    let mut r = reader(&y, "r");
    r.catch_up().unwrap();
    assert_eq!(messages(&r), 1);
    let p = problems(&r);
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!(p[0].0, "quarantine");
    assert!(p[0].1.contains("record of another channel"), "{p:?}");
}

// ---------------------------------------------------------------------------------------
// Clocks

#[test]
fn records_dated_ahead_are_held_and_two_days_ahead_raise_a_clock_alarm() {
    let l = Local::new(&["a", "b", "c"]);
    let mut sa = l.session("a");
    let mut sb = l.session("b");
    send(&mut sa, "b", "now", "x");
    send(&mut sb, "a", "now", "x");
    let now = now_ms();
    let hour = 3_600_000;
    let ahead = next_at(
        &segment(&l.feed_dir("a")),
        &role_key(&l, "a"),
        now + hour,
        &to_b("an hour ahead"),
    );
    append_raw(&segment(&l.feed_dir("a")), ahead.to_line().as_bytes());
    let far = next_at(
        &segment(&l.feed_dir("b")),
        &role_key(&l, "b"),
        now + 48 * hour,
        &Op::Send(Send {
            to: vec![Role::new("a").unwrap()],
            topic: "two days ahead".into(),
            decision_requested: true,
            ..Send::default()
        }),
    );
    append_raw(&segment(&l.feed_dir("b")), far.to_line().as_bytes());

    let mut r = reader(&l, "r");
    let report = r.catch_up().unwrap();
    assert_eq!(messages(&r), 2, "neither is applied");
    assert_eq!(
        report.waiting.iter().filter(|w| w.contains("held")).count(),
        2,
        "{report:?}"
    );
    let p = problems(&r);
    let count = |k: &str| p.iter().filter(|(kind, _)| kind == k).count();
    assert_eq!((count("held"), count("clock")), (2, 1), "{p:?}");
    assert!(
        p.iter().any(|(k, why)| k == "clock"
            && why.contains("clock of feed b/")
            && why.contains("2 d")),
        "{p:?}"
    );
    // Re-checked on every pass, reported once.
    assert_eq!(r.catch_up().unwrap().new_problems, 0);
    assert_eq!(messages(&r), 2);

    // The status surfaces: `held` and the alarms.
    let mut s = session_on(reader(&l, "r"), "c");
    let (_, view) = status::status_view(&mut s).unwrap();
    let view = serde_json::to_value(view).unwrap();
    assert_eq!(view["held"], 2, "{view}");
    let alarms = alarm_kinds(&view);
    assert!(alarms.contains(&"held".to_owned()) && alarms.contains(&"clock".to_owned()));

    // Not witnessed: a write here does not jump to the future stamps.
    let mut sc = l.session("c");
    send(&mut sc, "a", "after", "x");
    let mine = last_record(&segment(&l.feed_dir("c")));
    assert!(
        mine.header.hlc.0 < now + hour,
        "{:?} follows a held record",
        mine.header.hlc
    );

    // When local time reaches them they apply, and the alarms go.
    let dir = ChannelDir::open(&l.dir).unwrap();
    let state = tempfile::tempdir().unwrap();
    let ix = Index::open(&Index::path_in(state.path()), dir.id()).unwrap();
    let mut cache = ScanCache::default();
    ix.write(|ix| Ingest::run_at(ix, &dir, &mut cache, now + 2 * hour))
        .unwrap();
    let count_in = |ix: &Index, k: &str| kinds(ix).iter().filter(|(kind, _)| kind == k).count();
    assert_eq!(count_in(&ix, "held"), 1, "b's record is still ahead");
    let report = ix
        .write(|ix| Ingest::run_at(ix, &dir, &mut cache, now + 49 * hour))
        .unwrap();
    assert!(report.waiting.is_empty(), "{report:?}");
    assert!(kinds(&ix).is_empty(), "{:?}", kinds(&ix));
    let n: i64 = db(&ix)
        .query_row("SELECT count(*) FROM messages", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 5);
}

// ---------------------------------------------------------------------------------------
// The index

#[test]
fn a_deleted_index_rebuilds_to_the_same_digest() {
    let l = Local::new(&["a", "b"]);
    let mut sa = l.session("a");
    let mut sb = l.session("b");
    let id = send(&mut sa, "b", "one", "x");
    send(&mut sb, "a", "two", "y");
    countersign::app::delete::delete_message(&mut sa, &id).unwrap();
    drop((sa, sb));
    let mut ch = l.channel();
    let d = digest(&mut ch);
    let state = ch.state_dir().to_path_buf();
    drop(ch);
    let mut removed = 0;
    for e in fs::read_dir(&state).unwrap().flatten() {
        if e.file_name().to_string_lossy().starts_with("index.v") {
            fs::remove_file(e.path()).unwrap();
            removed += 1;
        }
    }
    assert!(removed >= 1);
    let out = cli(&l.home_root(), &l.dir, &["status", "--digest"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), d);
}

// ---------------------------------------------------------------------------------------
// Hand edits

#[test]
fn a_feed_file_truncated_to_zero_loses_nothing() {
    let l = Local::new(&["a", "b"]);
    let mut s = l.session("a");
    for i in 0..3 {
        send(&mut s, "b", &format!("m{i}"), "x");
    }
    let mut r = reader(&l, "r");
    r.catch_up().unwrap();
    let seg = segment(&l.feed_dir("a"));
    fs::write(&seg, b"").unwrap();
    r.catch_up().unwrap();
    assert_eq!(messages(&r), 3, "kept");
    assert!(problems(&r).is_empty());
    send(&mut s, "b", "m3", "x");
    assert_eq!(lines_of(&seg).len(), 5, "republished from the journal");
    let mut fresh = reader(&l, "fresh");
    fresh.reindex(None).unwrap();
    assert_eq!(messages(&fresh), 4);
    assert_eq!(digest(&mut r), digest(&mut fresh));
}

#[test]
fn a_record_edited_by_hand_is_quarantined_and_the_original_stands() {
    let l = Local::new(&["a", "b"]);
    let mut s = l.session("a");
    send(&mut s, "b", "terms", "pay 10");
    send(&mut s, "b", "later", "x");
    let mut r = reader(&l, "r");
    let d = digest(&mut r);
    let seg = segment(&l.feed_dir("a"));
    let text = fs::read_to_string(&seg).unwrap();
    fs::write(&seg, text.replace("pay 10", "pay 99")).unwrap();
    // A reader that holds the original keeps it.
    r.catch_up().unwrap();
    assert_eq!(digest(&mut r), d, "the original stands");
    let bodies = |ch: &Channel| -> Vec<String> {
        db(ch.index())
            .prepare("SELECT body FROM bodies")
            .unwrap()
            .query_map([], |x| x.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    assert!(bodies(&r).contains(&"pay 10".to_owned()));
    // A newcomer quarantines the edited line and never applies it.
    let mut fresh = reader(&l, "fresh");
    fresh.reindex(None).unwrap();
    assert_eq!(
        problems(&fresh),
        vec![("quarantine".to_owned(), "bad signature".to_owned())]
    );
    assert!(!bodies(&fresh).iter().any(|b| b.contains("99")));
    // A newcomer never applies the edit; what follows it waits, and verify says so.
    let out = cli(&l.tmp.path().join("v"), &l.dir, &["verify"]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("bad signature"), "{text}");
    assert!(text.contains("seq 2 is missing"), "{text}");
    // The repair: the original line, from the writer's journal, appended to
    // the feed. Its place does not matter, only its chain and signature.
    let journal = l.channel().state_dir().join("journal").join("a.jsonl");
    let original = lines_of(&journal)
        .into_iter()
        .find(|line| String::from_utf8_lossy(line).contains("pay 10"))
        .unwrap();
    append_raw(&seg, &original);
    let report = fresh.catch_up().unwrap();
    assert!(report.waiting.is_empty(), "{report:?}");
    assert_eq!(digest(&mut fresh), d);
    // The writer goes on without publishing anything twice.
    send(&mut s, "b", "after the repair", "x");
    let seqs: Vec<u64> = lines_of(&seg)
        .iter()
        .filter_map(|l| record::decode(&l[..l.len() - 1]).ok())
        .map(|r| r.header.seq)
        .collect();
    assert_eq!(seqs, vec![1, 2, 3, 2, 4]);
    assert_eq!(fresh.catch_up().unwrap().accepted, 1);
    let out = cli(&l.tmp.path().join("v2"), &l.dir, &["verify"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("0 feed(s) waiting"), "{text}");
}

#[test]
fn a_head_that_lies_about_its_seq_changes_nothing() {
    let l = Local::new(&["a", "b"]);
    let mut s = l.session("a");
    send(&mut s, "b", "one", "x");
    let dir = l.feed_dir("a");
    let mut r = reader(&l, "r");
    let d = digest(&mut r);
    let head = fs::read_to_string(dir.join("head.json")).unwrap();
    // A hand edit: the signature no longer matches, so it is ignored.
    fs::write(
        dir.join("head.json"),
        head.replace("\"seq\":2", "\"seq\":999"),
    )
    .unwrap();
    assert_eq!(digest(&mut r), d);
    assert!(problems(&r).is_empty());
    let mut sr = session_on(reader(&l, "r"), "b");
    let roles = serde_json::to_value(info::list_roles(&mut sr).unwrap()).unwrap();
    let dev = &roles["devices"]["a"][0];
    assert_eq!(dev["records"], 2, "{roles}");
    assert!(dev.get("missing").is_none(), "{roles}");
    // A head signed by the feed's key that runs ahead of the records here
    // announces records in flight; it applies nothing.
    let last = last_record(&segment(&dir));
    let signed = record::encode_head(
        &last.header.feed,
        5,
        last.id,
        Hlc(last.header.hlc.0 + 10, 0),
        &role_key(&l, "a"),
    );
    fs::write(dir.join("head.json"), signed).unwrap();
    let roles = serde_json::to_value(info::list_roles(&mut sr).unwrap()).unwrap();
    let dev = &roles["devices"]["a"][0];
    assert_eq!(dev["missing"], 3, "{roles}");
    assert_eq!(dev["records"], 2);
    assert_eq!(digest(&mut r), d);
    // The writer trusts its journal, not the head.
    send(&mut s, "b", "two", "x");
    assert_eq!(last_record(&segment(&dir)).header.seq, 3);
}

// ---------------------------------------------------------------------------------------
// Forks and trust

/// Lines of a file, each with its `\n`.
type Lines = Vec<Vec<u8>>;

/// A home copied to a second machine: both write feed `a` from seq 3 on.
/// Returns the lines of the two branches after the common prefix.
fn forked(l: &Local) -> (Lines, Lines, Lines) {
    let mut s = l.session("a");
    send(&mut s, "b", "common", "x");
    drop(s);
    let home2 = l.tmp.path().join("home-copy");
    copy_dir(&l.home_root(), &home2);
    let dir2 = l.tmp.path().join("channel-copy");
    copy_dir(&l.dir, &dir2);
    let mut s1 = l.session("a");
    send(&mut s1, "b", "branch one", "x");
    send(&mut s1, "b", "branch one again", "x");
    let mut s2 = session_on(local::open(&dir2, &Home::at(home2)), "a");
    send(&mut s2, "b", "branch two", "x");
    let seg1 = segment(&l.feed_dir("a"));
    let rel = seg1.strip_prefix(&l.dir).unwrap();
    let one = lines_of(&seg1);
    let two = lines_of(&dir2.join(rel));
    (one[..2].to_vec(), one[2..].to_vec(), two[2..].to_vec())
}

#[test]
fn a_fork_is_kept_as_proof_frozen_after_the_last_common_record_and_reported() {
    let l = Local::new(&["a", "b"]);
    let (common, one, two) = forked(&l);
    let seg = segment(&l.feed_dir("a"));
    // A reader that already applied branch one before the other arrived.
    let mut early = reader(&l, "early");
    early.catch_up().unwrap();
    assert_eq!(messages(&early), 3);
    // git's union merge puts both branches in the file, in either order.
    let merged = |first: &[Vec<u8>], second: &[Vec<u8>]| -> Vec<u8> {
        common
            .iter()
            .chain(first)
            .chain(second)
            .flatten()
            .copied()
            .collect()
    };
    fs::write(&seg, merged(&one, &two)).unwrap();
    let mut a = reader(&l, "ra");
    a.catch_up().unwrap();
    let copy = l.tmp.path().join("other-order");
    copy_dir(&l.dir, &copy);
    fs::write(
        copy.join(seg.strip_prefix(&l.dir).unwrap()),
        merged(&two, &one),
    )
    .unwrap();
    let mut b = local::open(&copy, &Home::at(l.tmp.path().join("rb")));
    b.catch_up().unwrap();
    early.catch_up().unwrap();
    // Neither branch stands, on every machine, whatever reached it first.
    for ch in [&mut a, &mut b, &mut early] {
        assert_eq!(messages(ch), 1, "only the common message");
        let p = problems(ch);
        assert_eq!(p.len(), 1, "{p:?}");
        assert_eq!(p[0].0, "fork");
        assert!(p[0].1.contains("frozen after seq 2"), "{p:?}");
        let frozen: Option<String> = db(ch.index())
            .query_row("SELECT frozen FROM feeds WHERE feed LIKE 'a/%'", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert!(frozen.is_some());
    }
    let d = digest(&mut a);
    assert_eq!(digest(&mut b), d);
    assert_eq!(digest(&mut early), d);
    let mut rebuilt = reader(&l, "ra");
    rebuilt.reindex(None).unwrap();
    assert_eq!(rebuilt.index().digest().unwrap(), d);
    // Search forgets the taken-back messages too.
    let hits: i64 = db(early.index())
        .query_row(
            "SELECT count(*) FROM bodies_fts WHERE bodies_fts MATCH '\"branch\"'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(hits, 0);
    // Proof: both records stay in the file.
    assert_eq!(lines_of(&seg).len(), 5);
    // Reported by verify, channel_status and the status command.
    let out = cli(&l.tmp.path().join("v"), &l.dir, &["verify"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("fork at seq 3"));
    let v = status::channel_status(&mut session_on(reader(&l, "ra"), "b")).unwrap();
    let v = serde_json::to_value(v).unwrap();
    assert_eq!(alarm_kinds(&v), vec!["fork"], "{v}");
    let out = cli(
        &l.tmp.path().join("ra"),
        &l.dir,
        &["status", "--role", "b", "--text"],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("alarms:") && text.contains("fork"), "{text}");
}

/// Notes are records like messages: a fork takes a note back, from the
/// memory's items and from the notes' full-text table, on every machine.
#[test]
fn a_fork_takes_its_notes_back_everywhere() {
    use countersign::app::note::{NoteRequest, write_note};
    use countersign::core::memory::note::NoteKind;
    let note = |s: &mut Session, text: &str| {
        write_note(
            s,
            NoteRequest {
                kind: NoteKind::Note,
                text: text.into(),
                event: None,
                agent: None,
                session: None,
                folder: None,
                folder_hash: None,
            },
        )
        .unwrap();
    };
    let l = Local::new(&["a", "b"]);
    let mut s = l.session("a");
    send(&mut s, "b", "common", "x");
    drop(s);
    let home2 = l.tmp.path().join("home-copy");
    copy_dir(&l.home_root(), &home2);
    let dir2 = l.tmp.path().join("channel-copy");
    copy_dir(&l.dir, &dir2);
    let mut s1 = l.session("a");
    note(&mut s1, "branch one noted");
    let mut s2 = session_on(local::open(&dir2, &Home::at(home2)), "a");
    note(&mut s2, "branch two noted");
    let seg = segment(&l.feed_dir("a"));
    let rel = seg.strip_prefix(&l.dir).unwrap().to_path_buf();
    // A reader that took in branch one before the other arrived.
    let mut early = reader(&l, "early");
    early.catch_up().unwrap();
    assert_eq!(early.index().notes().unwrap().len(), 1);
    let one = lines_of(&seg);
    let two = lines_of(&dir2.join(&rel));
    let merged: Vec<u8> = one.iter().chain(&two[2..]).flatten().copied().collect();
    fs::write(&seg, merged).unwrap();
    let mut fresh = reader(&l, "fresh");
    for ch in [&mut early, &mut fresh] {
        ch.catch_up().unwrap();
        assert!(ch.index().notes().unwrap().is_empty(), "no branch stands");
        assert!(ch.index().search_notes("\"noted\"", 10).unwrap().is_empty());
        let items = ch.index().memory_items().unwrap();
        assert_eq!(items.len(), 1, "only the common message: {items:?}");
    }
    assert_eq!(digest(&mut early), digest(&mut fresh));
}

#[test]
fn a_fork_between_two_votes_takes_both_back_and_folds_consent_alike_everywhere() {
    use countersign::core::op::Ack;
    use countersign::core::vocab::{Decision, Kind};
    let l = Local::new(&["a", "b"]);
    send(&mut l.session("a"), "b", "hello", "x");
    send(&mut l.session("b"), "a", "hello", "x");
    let pseg = segment(&l.feed_dir("b"));
    let proposal = next_at(
        &pseg,
        &role_key(&l, "b"),
        now_ms(),
        &Op::Send(Send {
            to: vec![Role::new("a").unwrap()],
            topic: "adopt the plan".into(),
            body: "the plan".into(),
            kind: Some(Kind::Proc),
            decision_requested: true,
            ..Send::default()
        }),
    );
    append_raw(&pseg, proposal.to_line().as_bytes());
    let aseg = segment(&l.feed_dir("a"));
    let vote = |decision| {
        next_at(
            &aseg,
            &role_key(&l, "a"),
            now_ms() + 1,
            &Op::Ack(Ack {
                id: proposal.id,
                decision,
                note: None,
                body_sha256: countersign::core::ids::sha256_hex(b"the plan"),
                pin_head: None,
            }),
        )
    };
    let (agree, reject) = (vote(Decision::Agree), vote(Decision::Reject));
    let votes = |ch: &Channel| -> i64 {
        db(ch.index())
            .query_row("SELECT count(*) FROM votes", [], |r| r.get(0))
            .unwrap()
    };
    let before = fs::read(&aseg).unwrap();
    append_raw(&aseg, agree.to_line().as_bytes());
    let mut early = reader(&l, "early");
    early.catch_up().unwrap();
    assert_eq!(votes(&early), 1, "the agree counted until the fork showed");
    append_raw(&aseg, reject.to_line().as_bytes());
    early.catch_up().unwrap();
    assert_eq!(votes(&early), 0, "neither vote stands");
    assert_eq!(problems(&early)[0].0, "fork");
    let d = digest(&mut early);
    let mut fresh = reader(&l, "fresh");
    fresh.reindex(None).unwrap();
    assert_eq!(fresh.index().digest().unwrap(), d);
    // The other order of the two lines.
    let copy = l.tmp.path().join("other-order");
    copy_dir(&l.dir, &copy);
    let mut swapped = before;
    swapped.extend_from_slice(reject.to_line().as_bytes());
    swapped.extend_from_slice(agree.to_line().as_bytes());
    fs::write(copy.join(aseg.strip_prefix(&l.dir).unwrap()), swapped).unwrap();
    let mut other = local::open(&copy, &Home::at(l.tmp.path().join("other")));
    assert_eq!(digest(&mut other), d);
    assert_eq!(votes(&other), 0);
}

#[test]
fn a_fork_between_a_seal_and_another_chunk_takes_both_back() {
    use countersign::core::op::{Seal, UploadChunk};
    let l = Local::new(&["a", "b"]);
    send(&mut l.session("a"), "b", "hello", "x");
    let seg = segment(&l.feed_dir("a"));
    let key = role_key(&l, "a");
    let start = next_at(
        &seg,
        &key,
        now_ms(),
        &Op::UploadChunk(UploadChunk {
            upload: None,
            text: "hello ".into(),
            label: Some("doc".into()),
        }),
    );
    append_raw(&seg, start.to_line().as_bytes());
    let before = fs::read(&seg).unwrap();
    let seal = next_at(
        &seg,
        &key,
        now_ms() + 1,
        &Op::Seal(Seal {
            upload: start.id,
            sha256: countersign::core::ids::sha256_hex(b"hello "),
            length_bytes: 6,
            length_chars: 6,
            chunks: 1,
        }),
    );
    let more = next_at(
        &seg,
        &key,
        now_ms() + 1,
        &Op::UploadChunk(UploadChunk {
            upload: Some(start.id),
            text: "world".into(),
            label: None,
        }),
    );
    let upload = |ch: &Channel| -> (i64, Option<i64>) {
        db(ch.index())
            .query_row("SELECT chunks, sealed_ms FROM uploads", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .unwrap()
    };
    append_raw(&seg, seal.to_line().as_bytes());
    let mut early = reader(&l, "early");
    early.catch_up().unwrap();
    assert!(upload(&early).1.is_some(), "sealed until the fork showed");
    append_raw(&seg, more.to_line().as_bytes());
    early.catch_up().unwrap();
    assert_eq!(
        upload(&early),
        (1, None),
        "neither the seal nor the chunk stands"
    );
    assert_eq!(problems(&early)[0].0, "fork");
    let d = digest(&mut early);
    let mut fresh = reader(&l, "fresh");
    fresh.reindex(None).unwrap();
    assert_eq!(fresh.index().digest().unwrap(), d);
    let copy = l.tmp.path().join("other-order");
    copy_dir(&l.dir, &copy);
    let mut swapped = before;
    swapped.extend_from_slice(more.to_line().as_bytes());
    swapped.extend_from_slice(seal.to_line().as_bytes());
    fs::write(copy.join(seg.strip_prefix(&l.dir).unwrap()), swapped).unwrap();
    let mut other = local::open(&copy, &Home::at(l.tmp.path().join("other")));
    assert_eq!(digest(&mut other), d);
    assert_eq!(upload(&other), (1, None));
}

#[test]
fn trust_alarms_second_claim_unadmitted_key_and_record_for_another_feed() {
    let l = Local::new(&["a", "b"]);
    let mut sa = l.session("a");
    let mut sb = l.session("b");
    send(&mut sa, "b", "one", "x");
    send(&mut sb, "a", "two", "x");
    let ch = channel_id(&l);
    let device = l.home.device().unwrap().id;
    let a_feed = FeedId::new("a", &device).unwrap();
    // 1. A second admit of feed a, naming another key.
    let owner = l.home.load_key(&ch, KeyName::Owner).unwrap().unwrap();
    let owner_dir = l.dir.join("feeds").join(OWNER_FEED_ROLE).join(&device);
    let intruder = SigningKey::from_bytes(&[42u8; 32]);
    let claim = next_at(
        &segment(&owner_dir),
        &owner,
        now_ms(),
        &Op::Admit(Admit {
            feed: a_feed,
            pubkey: pubkey_hex(&intruder.verifying_key()),
            role: Role::new("a").unwrap(),
        }),
    );
    append_raw(&segment(&owner_dir), claim.to_line().as_bytes());
    // 2. A feed nobody admitted.
    let rogue_dir = l.dir.join("feeds").join("a").join("rogue-000001");
    fs::create_dir_all(&rogue_dir).unwrap();
    let rogue = FeedId::new("a", "rogue-000001").unwrap();
    let init = record::encode(
        &Header {
            ch,
            feed: rogue,
            seq: 1,
            prev: None,
            hlc: Hlc(now_ms(), 0),
        },
        &Op::FeedInit(FeedInit {
            role: Role::new("a").unwrap(),
            pubkey: pubkey_hex(&intruder.verifying_key()),
            device_name: "rogue".into(),
        }),
        &intruder,
    );
    fs::write(rogue_dir.join("00000001.jsonl"), init.to_line()).unwrap();
    // 3. A record of feed a found in feed b.
    let replay = next_at(
        &segment(&l.feed_dir("a")),
        &role_key(&l, "a"),
        now_ms(),
        &to_b("replayed"),
    );
    append_raw(&segment(&l.feed_dir("b")), replay.to_line().as_bytes());

    let mut r = reader(&l, "r");
    r.catch_up().unwrap();
    assert_eq!(messages(&r), 2, "none of it applied");
    // a's own key still stands: its owner keeps writing.
    send(&mut sa, "b", "three", "x");
    r.catch_up().unwrap();
    assert_eq!(messages(&r), 3);
    let want = ["second_claim", "unadmitted", "quarantine"];
    let v = status::channel_status(&mut session_on(reader(&l, "r"), "a")).unwrap();
    let v = serde_json::to_value(v).unwrap();
    let alarms = alarm_kinds(&v);
    for k in want {
        assert!(alarms.contains(&k.to_owned()), "{k} in {v}");
    }
    let out = cli(&l.tmp.path().join("r"), &l.dir, &["status", "--role", "a"]);
    let view: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(alarm_kinds(&view).len(), 3, "{view}");
    let out = cli(&l.tmp.path().join("v"), &l.dir, &["verify"]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    for k in want {
        assert!(text.contains(&format!("{k}:")), "{k} in {text}");
    }
    assert!(text.contains("second claim of feed a/"), "{text}");
    assert!(text.contains("signed for feed a/"), "{text}");
}

// ---------------------------------------------------------------------------------------
// Presence

#[test]
fn list_roles_shows_devices_and_channel_status_marks_what_is_tentative() {
    let l = Local::new(&["a", "b"]);
    let ch = channel_id(&l);
    // A second device: its home briefly holds the owner key to admit its feed.
    let home2 = Home::at(l.tmp.path().join("device2"));
    home2
        .store_key(
            &ch,
            KeyName::Owner,
            &l.home.load_key(&ch, KeyName::Owner).unwrap().unwrap(),
        )
        .unwrap();
    let mut sa = l.session("a");
    let mut sb = session_on(local::open(&l.dir, &home2), "b");
    send(&mut sa, "b", "one", "x");
    send(&mut sb, "a", "two", "x");
    let roles = serde_json::to_value(info::list_roles(&mut sa).unwrap()).unwrap();
    assert_eq!(roles["roles"], serde_json::json!(["a", "b"]));
    assert_eq!(roles["source"], "channel-registry");
    let a = roles["devices"]["a"].as_array().unwrap();
    let b = roles["devices"]["b"].as_array().unwrap();
    assert_eq!((a.len(), b.len()), (1, 1), "{roles}");
    assert_eq!(a[0]["this_device"], true);
    assert_eq!(b[0]["this_device"], false);
    assert_eq!(b[0]["device"], home2.device().unwrap().id);
    assert_eq!(a[0]["records"], 2);
    assert!(common::is_rfc3339_ms(
        b[0]["last_heard_at"].as_str().unwrap()
    ));
    // b has been heard from since everything here: nothing is tentative.
    let v = serde_json::to_value(status::channel_status(&mut sa).unwrap()).unwrap();
    assert!(v.get("tentative_since").is_none(), "{v}");
    // a writes again: b could still have written something that sorts before it.
    send(&mut sa, "b", "three", "x");
    let v = serde_json::to_value(status::channel_status(&mut sa).unwrap()).unwrap();
    assert_eq!(v["tentative_since"], b[0]["last_heard_at"], "{v}");
    // Once b is heard from again, it is settled.
    send(&mut sb, "a", "four", "x");
    let v = serde_json::to_value(status::channel_status(&mut sa).unwrap()).unwrap();
    assert!(v.get("tentative_since").is_none(), "{v}");
    // b's heartbeat announces two records that have not arrived: what
    // follows its last record here is tentative again, whatever the head says.
    let b_dir = l
        .dir
        .join("feeds")
        .join("b")
        .join(home2.device().unwrap().id);
    let last = last_record(&segment(&b_dir));
    let head = record::encode_head(
        &last.header.feed,
        last.header.seq + 2,
        last.id,
        Hlc(now_ms() + 1000, 0),
        &home2
            .load_key(
                &ch,
                KeyName::Role(&countersign::core::ids::Role::new("b").unwrap()),
            )
            .unwrap()
            .unwrap(),
    );
    fs::write(b_dir.join("head.json"), head).unwrap();
    send(&mut sa, "b", "five", "x");
    let roles = serde_json::to_value(info::list_roles(&mut sa).unwrap()).unwrap();
    assert_eq!(roles["devices"]["b"][0]["missing"], 2, "{roles}");
    let v = serde_json::to_value(status::channel_status(&mut sa).unwrap()).unwrap();
    assert_eq!(
        v["tentative_since"],
        countersign::core::timestamp::format_rfc3339(last.header.hlc.0),
        "{v}"
    );
}

// ---------------------------------------------------------------------------------------
// A git checkout under a waiting call

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(dir)
        .args([
            "-c",
            "user.name=test",
            "-c",
            "user.email=test@example.invalid",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

#[tokio::test]
async fn a_git_checkout_rewriting_many_files_wakes_a_wait_once_with_the_right_result() {
    let l = Local::new(&["a", "b", "c"]);
    git(&l.dir, &["init", "-q"]);
    {
        let (mut sb, mut sc) = (l.session("b"), l.session("c"));
        send(&mut sb, "a", "old from b", "x");
        send(&mut sc, "a", "old from c", "x");
        send(&mut l.session("a"), "b", "old from a", "x");
    }
    git(&l.dir, &["add", "-A"]);
    git(&l.dir, &["commit", "-q", "-m", "before"]);
    // The other side of the pull: news for a, and enough else that the
    // checkout rewrites and creates many files at once.
    {
        let (mut sb, mut sc) = (l.session("b"), l.session("c"));
        send(&mut sb, "a", "new from b", "x");
        send(&mut sc, "a", "new from c", "x");
    }
    bulk_sends(&l, 600);
    git(&l.dir, &["add", "-A"]);
    git(&l.dir, &["commit", "-q", "-m", "after"]);
    let after = git(&l.dir, &["rev-parse", "HEAD"]);
    let mut writer = l.channel();
    let want = digest(&mut writer);
    git(&l.dir, &["checkout", "-q", "HEAD~1"]);

    // Another machine, waiting for a's mail with the older files in place.
    let home = l.tmp.path().join("reader");
    let client = common::Client::spawn(&home, &l.dir, "a").await;
    let v = client
        .call("channel_status", serde_json::json!({}))
        .await
        .ok();
    assert_eq!(v["unread"], 2, "{v}");
    let waiting = tokio::spawn(async move {
        let v = client
            .call(
                "wait_for_mail",
                serde_json::json!({"timeout_s": 40, "poll_interval_s": 30}),
            )
            .await
            .ok();
        (v, client)
    });
    tokio::time::sleep(std::time::Duration::from_millis(400)).await;
    assert!(!waiting.is_finished(), "nothing new yet");
    git(&l.dir, &["checkout", "-q", &after]);
    let (v, client) = tokio::time::timeout(std::time::Duration::from_secs(30), waiting)
        .await
        .expect("woken by the checkout")
        .unwrap();
    assert_eq!(v["timed_out"], false, "{v}");
    assert_eq!(v["pending"]["unread"], 4, "{v}");
    assert_eq!(v["pending_at_entry"]["unread"], 2, "{v}");
    // The rest of the burst is not news: the next wait finds nothing new.
    let v = client
        .call(
            "wait_for_mail",
            serde_json::json!({"timeout_s": 1, "poll_interval_s": 0.2}),
        )
        .await
        .ok();
    assert_eq!(v["timed_out"], true, "{v}");
    client.close().await;
    // Nothing applied twice: the reader's index is the writer's state, record
    // for record.
    let mut r = local::open(&l.dir, &Home::at(home));
    assert_eq!(digest(&mut r), want);
    assert_eq!(messages(&r), 605);
    assert!(problems(&r).is_empty(), "{:?}", problems(&r));
    let count = |ch: &Channel| -> i64 {
        db(ch.index())
            .query_row("SELECT count(*) FROM records", [], |x| x.get(0))
            .unwrap()
    };
    assert_eq!(count(&r), count(&writer));
}

// ---------------------------------------------------------------------------------------
// Sync carries this device's feeds as its journal has them

#[test]
fn a_stale_own_feed_is_put_right_before_sync_carries_it() {
    let w = common::machines::World::git(2, &["frontend", "backend"]);
    let (a, b) = (&w.machines[0], &w.machines[1]);
    a.send("frontend", "backend", "one");
    a.send("frontend", "backend", "two");
    // A backup of the folder from before "two" was written comes back.
    let dir = a.dir.join("feeds").join("frontend").join(a.device());
    let seg = segment(&dir);
    let mut lines = lines_of(&seg);
    lines.pop();
    fs::write(&seg, lines.concat()).unwrap();
    a.sync();
    b.sync();
    let topics = b.inbox_topics("backend");
    assert!(topics.contains(&"two".to_owned()), "{topics:?}");
    // Reading the inbox wrote a delivery record: one more round carries it.
    w.settle();
}

// ---------------------------------------------------------------------------------------
// A damaged journal is a fault, never a refusal

/// A journal whose last line is not a record cannot be appended to: the
/// caller gets a fault naming the journal (an internal error over MCP), not
/// a `ValueError` it would try to fix by changing its arguments.
#[test]
fn a_journal_ending_in_a_non_record_is_a_fault_naming_it() {
    let l = Local::new(&["a", "b"]);
    let mut s = l.session("a");
    send(&mut s, "b", "m0", "x");
    drop(s);
    let journal = l.channel().state_dir().join("journal").join("a.jsonl");
    append_raw(&journal, b"not a record\n");
    let mut s = l.session("a");
    let e = countersign::app::send::send_message(
        &mut s,
        countersign::app::send::SendRequest::new("b", "m1", "x"),
    )
    .unwrap_err();
    assert_eq!(e.kind(), None, "a fault, not a refusal: {e}");
    let msg = e.to_string();
    assert!(
        msg.contains(&journal.display().to_string()) && msg.contains("is not a record"),
        "{msg}"
    );
}

// ---------------------------------------------------------------------------------------
// A crash of the machine before the page cache reached the disk

/// The feed's segments (name → bytes) and the journal of role `a`.
fn feed_and_journal(l: &Local) -> (Vec<(String, Vec<u8>)>, Vec<u8>) {
    let segs = list_segments(&l.feed_dir("a"))
        .unwrap()
        .into_iter()
        .map(|s| {
            let name = s.path.file_name().unwrap().to_string_lossy().into_owned();
            (name, fs::read(&s.path).unwrap())
        })
        .collect();
    (segs, fs::read(journal_of(l)).unwrap())
}

fn journal_of(l: &Local) -> PathBuf {
    let id = channel_id(l);
    l.home.state_dir(&id).join("journal").join("a.jsonl")
}

/// Puts the feed's segments and the journal back as `clean` had them.
fn put_back(l: &Local, clean: &(Vec<(String, Vec<u8>)>, Vec<u8>)) {
    let dir = l.feed_dir("a");
    for s in list_segments(&dir).unwrap() {
        fs::remove_file(s.path).unwrap();
    }
    for (name, bytes) in &clean.0 {
        fs::write(dir.join(name), bytes).unwrap();
    }
    fs::write(journal_of(l), &clean.1).unwrap();
}

/// Zeroes `len` bytes of `path` from `at` (the file's length kept), as a
/// page that never reached the disk reads after the crash.
fn zero(path: &Path, at: usize, len: usize) {
    let mut bytes = fs::read(path).unwrap();
    bytes[at..at + len].fill(0);
    fs::write(path, bytes).unwrap();
}

/// What a restart of the machine leaves for the next open to see: its boot
/// id is not the one the feeds were last found whole in.
fn restart_machine(l: &Local) {
    let state = l.home.state_dir(&channel_id(l));
    let _ = fs::remove_file(state.join(countersign::store::RECOVERED_BOOT));
}

/// Each record id of the feed exactly once, and as many as the journal holds.
fn each_record_once(l: &Local) {
    let (segs, journal) = feed_and_journal(l);
    let mut ids = std::collections::HashSet::new();
    for (name, bytes) in &segs {
        for line in bytes.split_inclusive(|&b| b == b'\n') {
            let rec =
                record::decode(&line[..line.len() - 1]).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(ids.insert(rec.id), "{} published twice", rec.id.short());
        }
    }
    assert_eq!(ids.len(), journal.split_inclusive(|&b| b == b'\n').count());
}

/// A crash's effect on the files, by name.
type Damage<'a> = (&'static str, Box<dyn Fn() + 'a>);

#[test]
fn a_feed_a_crash_left_short_or_zero_filled_is_repaired_byte_for_byte_on_open() {
    let l = Local::new(&["a", "b"]);
    let mut s = l.session("a");
    send(&mut s, "b", "first", "one");
    bulk_sends(&l, 520);
    for i in 0..4 {
        send(&mut s, "b", &format!("last {i}"), &"x".repeat(300));
    }
    drop(s);
    let clean = feed_and_journal(&l);
    assert_eq!(clean.0.len(), 2, "a sealed segment and the newest");
    let (sealed, newest) = (
        l.feed_dir("a").join(&clean.0[0].0),
        l.feed_dir("a").join(&clean.0[1].0),
    );
    let newest_len = clean.0[1].1.len();
    let sealed_len = clean.0[0].1.len();
    let line = clean.0[1]
        .1
        .split_inclusive(|&b| b == b'\n')
        .next_back()
        .unwrap()
        .len();
    let cases: Vec<Damage<'_>> = vec![
        (
            "the tail truncated mid-line",
            Box::new(|| {
                let f = OpenOptions::new().write(true).open(&newest).unwrap();
                f.set_len((newest_len - line - line / 2) as u64).unwrap();
            }),
        ),
        (
            "the last lines zero-filled, the length kept",
            Box::new(|| zero(&newest, newest_len - 2 * line - 10, 2 * line + 10)),
        ),
        (
            "a page lost between two that reached the disk",
            Box::new(|| zero(&newest, newest_len - 3 * line, line + line / 2)),
        ),
        (
            "the newest segment empty",
            Box::new(|| fs::write(&newest, b"").unwrap()),
        ),
        (
            "a new segment missing, the sealed one's end zero-filled",
            Box::new(|| {
                fs::remove_file(&newest).unwrap();
                zero(&sealed, sealed_len - 500, 500);
            }),
        ),
        (
            "the sealed segment's end zero-filled, the newest whole",
            Box::new(|| zero(&sealed, sealed_len - 700, 600)),
        ),
        (
            "a journal write that never became durable",
            Box::new(|| {
                let mut j = clean.1.clone();
                j.extend_from_slice(&clean.1[clean.1.len() - line..clean.1.len() - 40]);
                j.extend_from_slice(&[0; 40]);
                j.extend_from_slice(b"\n");
                fs::write(journal_of(&l), j).unwrap();
            }),
        ),
    ];
    for (what, damage) in cases {
        put_back(&l, &clean);
        damage();
        restart_machine(&l);
        assert_ne!(feed_and_journal(&l), clean, "{what}: damaged");
        // The next process to open the channel, whatever it does next.
        drop(l.channel());
        assert!(
            feed_and_journal(&l) == clean,
            "{what}: not repaired byte for byte"
        );
        each_record_once(&l);
    }
    // A separate process repairs the same way before it reads.
    put_back(&l, &clean);
    zero(&newest, newest_len - 2 * line, 2 * line);
    restart_machine(&l);
    let out = cli(&l.home_root(), &l.dir, &["status", "--role", "b"]);
    assert!(out.stdout.starts_with(b"{"), "{out:?}");
    assert!(feed_and_journal(&l) == clean, "repaired by the CLI");
    // And another machine reads the whole feed, with nothing to report.
    let mut r = reader(&l, "r");
    let report = r.catch_up().unwrap();
    assert!(report.waiting.is_empty(), "{report:?}");
    assert_eq!(messages(&r), 525);
    assert!(problems(&r).is_empty(), "{:?}", problems(&r));
}

#[test]
fn a_peer_that_copied_a_zero_filled_feed_waits_then_takes_the_repair() {
    let l = Local::new(&["a", "b"]);
    let mut s = l.session("a");
    for i in 0..6 {
        send(&mut s, "b", &format!("m{i}"), &"y".repeat(200));
    }
    drop(s);
    let clean = feed_and_journal(&l);
    let seg = segment(&l.feed_dir("a"));
    let lines = lines_of(&seg);
    let len = fs::read(&seg).unwrap().len();
    // A page lost in the middle of m3 and m4, m5 intact after it, and a
    // folder sync that carried the file before the owner's machine came back.
    let at = lines[..4].iter().map(Vec::len).sum::<usize>() + 20;
    zero(&seg, at, lines[4].len());
    let peer = l.tmp.path().join("peer");
    copy_dir(&l.dir, &peer);
    let mut r = local::open(&peer, &Home::at(l.tmp.path().join("r")));
    let report = r.catch_up().unwrap();
    assert_eq!(messages(&r), 3, "m0..m2; m5 waits for the lost seqs");
    assert!(!report.waiting.is_empty(), "{report:?}");
    assert!(local::quarantined(&r).is_empty(), "nothing is quarantined");
    // The line that holds the NUL bytes is garbage, reported once.
    let before = problems(&r);
    assert_eq!(before.len(), 1, "{before:?}");
    assert_eq!(before[0].0, "garbage");
    // The owner's next open repairs the feed; the sync carries it.
    restart_machine(&l);
    drop(l.channel());
    assert!(feed_and_journal(&l) == clean);
    fs::copy(&seg, peer.join(seg.strip_prefix(&l.dir).unwrap())).unwrap();
    assert!(len == fs::read(&seg).unwrap().len());
    let report = r.catch_up().unwrap();
    assert!(report.waiting.is_empty(), "{report:?}");
    assert_eq!(messages(&r), 6);
    assert!(local::quarantined(&r).is_empty());
    assert!(
        problems(&r).is_empty(),
        "the garbage the crash left went with the repair: {:?}",
        problems(&r)
    );
    let mut w = l.channel();
    assert_eq!(digest(&mut r), digest(&mut w));
}
