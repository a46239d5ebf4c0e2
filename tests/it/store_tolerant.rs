//! Tolerant reading: whatever is in a feed file, ingest neither panics nor
//! stops; bad lines are skipped or quarantined and reported, never applied.

use std::fs::{self, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::common::local::{self, Local, send};
use countersign::core::hlc::Hlc;
use countersign::core::ids::{FeedId, RecordId};
use countersign::core::op::{Ids, Op};
use countersign::core::record::{self, Header, Record};
use countersign::store::survey::list_segments;
use countersign::store::{Channel, Home, Index, KeyName};
use ed25519_dalek::SigningKey;

/// A connection of the test's own to the index file: the index keeps its
/// connection to `store`, so tests that look at tables open one beside it.
fn db(ix: &Index) -> rusqlite::Connection {
    rusqlite::Connection::open(ix.path()).unwrap()
}

fn messages(ch: &Channel) -> i64 {
    db(ch.index())
        .query_row("SELECT count(*) FROM messages", [], |r| r.get(0))
        .unwrap()
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

fn last_record(path: &Path) -> Record {
    let text = fs::read_to_string(path).unwrap();
    record::decode(text.lines().last().unwrap().as_bytes()).unwrap()
}

/// A record that would come next in `role`'s feed, signed with `key`.
fn next_record(
    l: &Local,
    role: &str,
    key: &SigningKey,
    ch: Option<&str>,
    feed: Option<FeedId>,
) -> Record {
    let seg = segment(&l.feed_dir(role));
    let last = last_record(&seg);
    let header = Header {
        ch: ch.map_or(last.header.ch.clone(), str::to_owned),
        feed: feed.unwrap_or(last.header.feed.clone()),
        seq: last.header.seq + 1,
        prev: Some(last.id),
        hlc: Hlc(last.header.hlc.0 + 1, 0),
    };
    record::encode(&header, &Op::Read(Ids { ids: vec![] }), key)
}

fn role_key(l: &Local, role: &str) -> SigningKey {
    let ch = countersign::store::ChannelDir::open(&l.dir).unwrap();
    let role = countersign::core::ids::Role::new(role).unwrap();
    l.home
        .load_key(ch.id(), KeyName::Role(&role))
        .unwrap()
        .unwrap()
}

fn problems(ch: &Channel) -> Vec<(String, String)> {
    ch.index()
        .problems()
        .unwrap()
        .into_iter()
        .map(|p| (p.kind.to_string(), p.reason))
        .collect()
}

#[test]
fn a_torn_last_line_waits_until_it_is_complete() {
    let l = Local::new(&["a", "b"]);
    let mut s = l.session("a");
    send(&mut s, "b", "one", "first");
    let seg = segment(&l.feed_dir("a"));
    // Another process is half-way through writing the next line.
    let whole = fs::read(&seg).unwrap();
    let last_line_start = whole[..whole.len() - 1]
        .iter()
        .rposition(|&b| b == b'\n')
        .unwrap()
        + 1;
    let line = whole[last_line_start..].to_vec();
    let fresh = l.tmp.path().join("copy");
    fs::create_dir_all(&fresh).unwrap();
    fs::write(&seg, &whole[..last_line_start]).unwrap();
    append_raw(&seg, &line[..line.len() / 2]);
    // Read on another machine: the writer's own home would repair the line
    // from its journal on open.
    let mut reader = local::open(&l.dir, &Home::at(l.tmp.path().join("reader")));
    reader.reindex(None).unwrap();
    assert_eq!(messages(&reader), 0, "a torn line must not be applied");
    assert!(
        problems(&reader).is_empty(),
        "a torn line is not a problem: {:?}",
        problems(&reader)
    );
    append_raw(&seg, &line[line.len() / 2..]);
    reader.catch_up().unwrap();
    assert_eq!(messages(&reader), 1);
    assert!(problems(&reader).is_empty());
}

#[test]
fn garbage_non_utf8_and_oversized_lines_are_skipped_and_reported() {
    let l = Local::new(&["a", "b"]);
    let mut s = l.session("a");
    send(&mut s, "b", "one", "first");
    let seg = segment(&l.feed_dir("a"));
    append_raw(&seg, b"this is not json\n");
    append_raw(&seg, b"{\"body\":\xff\xfe}\n");
    let mut big = vec![b'x'; 1024 * 1024 + 10];
    big.push(b'\n');
    append_raw(&seg, &big);
    // The writer goes on writing after the junk; readers skip it.
    send(&mut s, "b", "two", "second");
    let mut reader = l.channel();
    reader.catch_up().unwrap();
    assert_eq!(messages(&reader), 2);
    let p = problems(&reader);
    assert_eq!(p.len(), 3, "{p:?}");
    assert!(p.iter().all(|(k, _)| k == "garbage"), "{p:?}");
    assert!(p.iter().any(|(_, r)| r.contains("UTF-8")), "{p:?}");
    assert!(p.iter().any(|(_, r)| r.contains("1 MiB")), "{p:?}");
    // Reported once, not on every pass.
    reader.catch_up().unwrap();
    assert_eq!(problems(&reader).len(), 3);
}

#[test]
fn a_rewritten_file_keeps_the_garbage_it_still_holds_and_drops_the_rest() {
    let l = Local::new(&["a", "b"]);
    let mut s = l.session("a");
    send(&mut s, "b", "one", "first");
    drop(s);
    let seg = segment(&l.feed_dir("a"));
    let next = next_record(&l, "a", &role_key(&l, "a"), None, None);
    let clean = fs::read(&seg).unwrap();
    append_raw(&seg, b"this is not json\n");
    let mut reader = local::open(&l.dir, &Home::at(l.tmp.path().join("reader")));
    reader.catch_up().unwrap();
    let first = problems(&reader);
    assert_eq!(first.len(), 1);
    // Rewritten from the junk on (a checkout): other junk at the same
    // place, and more after it. Both stand; the first keeps its report.
    let mut rewritten = clean.clone();
    rewritten.extend_from_slice(b"{nor is this\n[1, 2]\n");
    fs::write(&seg, &rewritten).unwrap();
    reader.catch_up().unwrap();
    let p = problems(&reader);
    assert_eq!(p.len(), 2, "{p:?}");
    assert!(p.iter().all(|(k, _)| k == "garbage"), "{p:?}");
    assert!(p.contains(&first[0]), "{p:?} keeps {first:?}");
    // Rewritten again with a record where the junk was: nothing stands.
    let mut repaired = clean;
    repaired.extend_from_slice(next.to_line().as_bytes());
    fs::write(&seg, &repaired).unwrap();
    reader.catch_up().unwrap();
    assert!(problems(&reader).is_empty(), "{:?}", problems(&reader));
    assert_eq!(messages(&reader), 1);
}

#[test]
fn a_forged_record_is_quarantined_and_the_owner_keeps_writing() {
    let l = Local::new(&["a", "b"]);
    let mut s = l.session("a");
    send(&mut s, "b", "one", "first");
    let forger = SigningKey::from_bytes(&[9u8; 32]);
    let forged = next_record(&l, "a", &forger, None, None);
    append_raw(&segment(&l.feed_dir("a")), forged.to_line().as_bytes());
    send(&mut s, "b", "two", "second");
    let mut reader = l.channel();
    reader.catch_up().unwrap();
    assert_eq!(messages(&reader), 2);
    let p = problems(&reader);
    assert_eq!(
        p,
        vec![("quarantine".to_owned(), "bad signature".to_owned())]
    );
    let known: i64 = db(reader.index())
        .query_row(
            "SELECT count(*) FROM records WHERE id = ?1",
            [forged.id.hex()],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(known, 0, "a forged record is never applied");
}

#[test]
fn records_of_another_channel_or_another_feed_are_quarantined() {
    let l = Local::new(&["a", "b"]);
    let mut s = l.session("a");
    send(&mut s, "b", "one", "first");
    let mut sb = l.session("b");
    send(&mut sb, "a", "hi", "from b");
    let key = role_key(&l, "a");
    let other_channel = next_record(&l, "a", &key, Some(&"f".repeat(64)), None);
    // A record of feed a replayed into feed b.
    let replayed = next_record(&l, "a", &key, None, None);
    append_raw(
        &segment(&l.feed_dir("a")),
        other_channel.to_line().as_bytes(),
    );
    append_raw(&segment(&l.feed_dir("b")), replayed.to_line().as_bytes());
    let mut reader = l.channel();
    reader.catch_up().unwrap();
    let p = problems(&reader);
    assert!(
        p.contains(&(
            "quarantine".into(),
            format!("record of another channel ({}…)", "f".repeat(12))
        )),
        "{p:?}"
    );
    assert!(
        p.iter()
            .any(|(k, r)| k == "quarantine" && r.contains("signed for feed")),
        "{p:?}"
    );
    assert_eq!(messages(&reader), 2);
}

#[test]
fn a_broken_chain_is_quarantined() {
    let l = Local::new(&["a", "b"]);
    let mut s = l.session("a");
    send(&mut s, "b", "one", "first");
    let key = role_key(&l, "a");
    let mut rec = next_record(&l, "a", &key, None, None);
    rec.header.prev = Some(RecordId::of_body(b"elsewhere"));
    let rec = record::encode(&rec.header, &Op::Read(Ids { ids: vec![] }), &key);
    append_raw(&segment(&l.feed_dir("a")), rec.to_line().as_bytes());
    let mut reader = l.channel();
    reader.catch_up().unwrap();
    let p = problems(&reader);
    assert_eq!(p.len(), 1, "{p:?}");
    assert!(
        p[0].1.starts_with("broken chain: prev does not name"),
        "{p:?}"
    );
}

#[test]
fn a_duplicated_line_applies_once_and_is_no_problem() {
    let l = Local::new(&["a", "b"]);
    let mut s = l.session("a");
    send(&mut s, "b", "one", "first");
    let seg = segment(&l.feed_dir("a"));
    let line = last_record(&seg).to_line();
    append_raw(&seg, line.as_bytes());
    let mut reader = l.channel();
    reader.catch_up().unwrap();
    assert_eq!(messages(&reader), 1);
    assert!(problems(&reader).is_empty(), "{:?}", problems(&reader));
}

#[test]
fn an_unknown_op_freezes_the_feed_with_an_upgrade_alarm() {
    let l = Local::new(&["a", "b"]);
    let mut s = l.session("a");
    send(&mut s, "b", "one", "first");
    let key = role_key(&l, "a");
    let rec = next_record(&l, "a", &key, None, None);
    // Re-sign a body that names an op from the future.
    let body = rec.body.replace("\"op\":\"read\"", "\"op\":\"teleport\"");
    let mut msg = record::SIG_DOMAIN.to_vec();
    msg.extend_from_slice(body.as_bytes());
    use ed25519_dalek::Signer as _;
    let sig = key.sign(&msg);
    use base64::Engine as _;
    let line = format!(
        "{{\"body\":{body},\"sig\":\"{}\"}}\n",
        base64::engine::general_purpose::STANDARD.encode(sig.to_bytes())
    );
    append_raw(&segment(&l.feed_dir("a")), line.as_bytes());
    let mut reader = l.channel();
    let report = reader.catch_up().unwrap();
    let p = problems(&reader);
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!(p[0].0, "unknown_op");
    assert!(p[0].1.contains("upgrade countersign"), "{p:?}");
    assert!(
        report.waiting.iter().any(|w| w.contains("teleport")),
        "{report:?}"
    );
}

/// Appends `n` small messages from `role` to `to` in one burst.
fn burst(l: &Local, role: &str, to: &str, n: i64) {
    use countersign::core::ids::Role;
    let mut writer = l.channel();
    let mut run = writer.bulk(&Role::new(role).unwrap(), 1).unwrap();
    let now = countersign::store::now_ms();
    for i in 0..n {
        let op = Op::Send(countersign::core::op::Send {
            to: vec![Role::new(to).unwrap()],
            topic: format!("bulk {i}"),
            body: "x".into(),
            decision_requested: true,
            ..Default::default()
        });
        run.push(&op, now + i, Hlc(now, 0));
    }
    run.flush().unwrap();
}

#[test]
fn a_complete_segment_replaced_under_its_name_is_read_again() {
    // A reader skips the segments it found complete while the folder lists
    // the same files, even once the folder changed (its head replaced). A
    // file renamed over one of them is another file, and is read again: here
    // to find the junk line it brought.
    let l = Local::new(&["a", "b"]);
    burst(&l, "a", "b", 700);
    let segments = list_segments(&l.feed_dir("a")).unwrap();
    assert!(segments.len() >= 2, "the burst filled a segment");
    let mut reader = l.channel();
    reader.catch_up().unwrap();
    assert_eq!(messages(&reader), 700);
    // The writer goes on: its head is replaced, so the folder changed.
    let mut s = l.session("a");
    send(&mut s, "b", "after", "y");
    reader.catch_up().unwrap();
    assert_eq!(messages(&reader), 701);
    assert!(problems(&reader).is_empty());
    let first = &segments[0].path;
    let mut bytes = fs::read(first).unwrap();
    bytes.extend_from_slice(b"this is not json\n");
    let tmp = first.with_extension("swap");
    fs::write(&tmp, &bytes).unwrap();
    fs::rename(&tmp, first).unwrap();
    reader.catch_up().unwrap();
    let p = problems(&reader);
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!(p[0].0, "garbage", "{p:?}");
    assert_eq!(messages(&reader), 701);
}

#[test]
fn records_that_fill_a_segment_and_start_the_next_are_all_read() {
    // A reader that already knows the newest segment must notice that it grew
    // when, in the same burst (a sync, a bulk load), a new segment started.
    let l = Local::new(&["a", "b"]);
    let mut s = l.session("a");
    send(&mut s, "b", "first", "one");
    let mut reader = l.channel();
    reader.catch_up().unwrap();
    assert_eq!(messages(&reader), 1);
    burst(&l, "a", "b", 700);
    assert!(
        list_segments(&l.feed_dir("a")).unwrap().len() >= 2,
        "the burst started a new segment"
    );
    let report = reader.catch_up().unwrap();
    assert!(report.waiting.is_empty(), "{report:?}");
    assert_eq!(messages(&reader), 701);
}
