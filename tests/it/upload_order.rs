//! A message and a pin version whose body is an upload, when the feeds reach a machine in
//! different orders:
//! the message first (its body waits, its digest already known), the upload first, or the
//! upload's chunks before its seal. Every order ends in the state of the machine that wrote
//! them, and a rebuild gives the same digest.
//!
//! The writing machine is the owner's (frontend uploads, backend sends). The reading machine
//! is another home with a copy of the folder, fed one feed folder at a time (real files, real
//! SQLite, the library's own API).

use std::fs;
use std::path::Path;

use crate::common::copy_dir;
use crate::common::local::{self, Local};
use crate::common::sha256_hex;
use countersign::app::pin::{PinRequest, pin_set};
use countersign::app::send::{SendRequest, send_message};
use countersign::app::upload::{get_content, seal_content, upload_content};
use countersign::core::hlc::Hlc;
use countersign::core::ids::{RecordId, Role};
use countersign::core::op::{Op, UploadChunk};
use countersign::store::{Channel, Home, Index};

/// A connection of the test's own to the index file: the index keeps its
/// connection to `store`, so tests that look at tables open one beside it.
fn db(ix: &Index) -> rusqlite::Connection {
    rusqlite::Connection::open(ix.path()).unwrap()
}

/// `(body, body_sha256, body_length_bytes)` of the message `short_id` on `ch`.
fn body_of(ch: &mut Channel, short_id: &str) -> (String, String, i64) {
    ch.catch_up().unwrap();
    db(ch.index())
        .query_row(
            "SELECT (SELECT body FROM bodies b WHERE b.message_id = m.id ORDER BY b.rowid DESC \
             LIMIT 1), body_sha256, body_bytes FROM messages m WHERE id LIKE ?1 || '%'",
            [short_id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap()
}

/// `(body, bytes)` of the current version of pin `notes` on `ch`.
fn pin_body(ch: &mut Channel) -> (String, i64) {
    ch.catch_up().unwrap();
    db(ch.index())
        .query_row(
            "SELECT body, bytes FROM pins WHERE key = 'notes' ORDER BY pos DESC LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap()
}

struct Written {
    local: Local,
    text: String,
    message: String,
    digest: String,
}

/// frontend uploads a two-chunk document and seals it; backend sends it by reference.
fn written() -> Written {
    let local = Local::new(&["frontend", "backend"]);
    let text = format!("{}{}", "ö".repeat(150 * 1024), "the end");
    let mut fe = local.session("frontend");
    let up = upload_content(&mut fe, &text, None, Some("doc")).unwrap();
    let id = up.upload_id;
    let sealed = seal_content(&mut fe, &id).unwrap();
    assert_eq!(sealed.sha256, sha256_hex(&text));
    let mut be = local.session("backend");
    let sent = send_message(
        &mut be,
        SendRequest {
            body_ref: Some(id.clone()),
            ..SendRequest::new("frontend", "the doc", "")
        },
    )
    .unwrap();
    let message = sent.id;
    pin_set(
        &mut be,
        PinRequest {
            key: "notes".into(),
            title: "Notes".into(),
            version: "1".into(),
            body_ref: Some(id),
            ..PinRequest::default()
        },
    )
    .unwrap();
    let mut ch = local.channel();
    let (body, sha, bytes) = body_of(&mut ch, &message);
    assert_eq!(body, text);
    assert_eq!(sha, sha256_hex(&text));
    assert_eq!(bytes, text.len() as i64);
    assert_eq!(pin_body(&mut ch), (text.clone(), text.len() as i64));
    let digest = ch.index().digest().unwrap();
    Written {
        local,
        text,
        message,
        digest,
    }
}

/// A reading machine: another home, and a copy of the folder without the `held` feeds.
fn reader(w: &Written, name: &str, held: &[&str]) -> (std::path::PathBuf, Home) {
    let dir = w.local.tmp.path().join(format!("channel-{name}"));
    copy_dir(&w.local.dir, &dir);
    for role in held {
        fs::remove_dir_all(dir.join("feeds").join(role)).unwrap();
    }
    (
        dir,
        Home::at(w.local.tmp.path().join(format!("home-{name}"))),
    )
}

fn arrive(w: &Written, dir: &Path, role: &str) {
    copy_dir(
        &w.local.dir.join("feeds").join(role),
        &dir.join("feeds").join(role),
    );
}

fn assert_whole(w: &Written, dir: &Path, home: &Home) {
    let mut ch = local::open(dir, home);
    let (body, sha, bytes) = body_of(&mut ch, &w.message);
    assert_eq!(body, w.text);
    assert_eq!(sha, sha256_hex(&w.text));
    assert_eq!(bytes, w.text.len() as i64);
    assert_eq!(pin_body(&mut ch), (w.text.clone(), w.text.len() as i64));
    assert_eq!(ch.index().digest().unwrap(), w.digest, "incremental");
    ch.reindex(None).unwrap();
    assert_eq!(ch.index().digest().unwrap(), w.digest, "rebuilt");
}

#[test]
fn the_message_before_the_upload() {
    let w = written();
    let (dir, home) = reader(&w, "b", &["frontend"]);
    let mut ch = local::open(&dir, &home);
    let (body, sha, bytes) = body_of(&mut ch, &w.message);
    assert_eq!(body, "", "the text waits for its upload");
    assert_eq!(
        sha,
        sha256_hex(&w.text),
        "the digest is known from the reference"
    );
    assert_eq!(bytes, 0);
    assert_eq!(pin_body(&mut ch), (String::new(), 0), "so does the pin's");
    drop(ch);
    arrive(&w, &dir, "frontend");
    assert_whole(&w, &dir, &home);
}

#[test]
fn the_upload_before_the_message() {
    let w = written();
    let (dir, home) = reader(&w, "b", &["backend"]);
    let mut ch = local::open(&dir, &home);
    ch.catch_up().unwrap();
    drop(ch);
    arrive(&w, &dir, "backend");
    assert_whole(&w, &dir, &home);
}

#[test]
fn the_chunks_then_the_message_then_the_seal() {
    let w = written();
    let (dir, home) = reader(&w, "b", &["frontend"]);
    // The uploader's feed without its last record, the seal.
    arrive(&w, &dir, "frontend");
    let feed = dir.join("feeds").join("frontend");
    let device = fs::read_dir(&feed).unwrap().next().unwrap().unwrap().path();
    let mut segments: Vec<_> = fs::read_dir(&device)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    segments.sort();
    let last = segments.last().unwrap();
    let bytes = fs::read(last).unwrap();
    let cut = bytes[..bytes.len() - 1]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    assert!(String::from_utf8_lossy(&bytes[cut..]).contains("\"op\":\"seal\""));
    fs::write(last, &bytes[..cut]).unwrap();
    let mut ch = local::open(&dir, &home);
    let (body, _, _) = body_of(&mut ch, &w.message);
    assert_eq!(body, "", "an unsealed upload is not a body");
    drop(ch);
    fs::write(last, &bytes).unwrap();
    assert_whole(&w, &dir, &home);
}

#[test]
fn a_piece_written_after_the_seal_changes_nothing() {
    let local = Local::new(&["frontend", "backend"]);
    let mut fe = local.session("frontend");
    let up = upload_content(&mut fe, "sealed text", None, None).unwrap();
    let id = up.upload_id;
    let sealed = seal_content(&mut fe, &id).unwrap();
    drop(fe);
    // A piece that sorts after the seal, as one from another device of the uploader that had
    // not seen the seal would: written past the app's checks, kept by the fold without effect.
    let mut ch = local.channel();
    ch.catch_up().unwrap();
    let (full, seen): (String, (i64, i64)) = db(ch.index())
        .query_row(
            "SELECT id, (SELECT ms FROM records ORDER BY ms DESC, c DESC LIMIT 1), \
             (SELECT c FROM records ORDER BY ms DESC, c DESC LIMIT 1) FROM uploads",
            [],
            |r| Ok((r.get(0)?, (r.get(1)?, r.get(2)?))),
        )
        .unwrap();
    let upload = RecordId::parse(&full).unwrap();
    let role = Role::new("frontend").unwrap();
    let mut bulk = ch.bulk(&role, seen.0).unwrap();
    bulk.push(
        &Op::UploadChunk(UploadChunk {
            upload: Some(upload),
            text: " and more".into(),
            label: None,
        }),
        seen.0 + 1,
        Hlc(seen.0, seen.1 as u32),
    );
    bulk.flush().unwrap();
    drop(bulk);
    ch.catch_up().unwrap();
    let mut fe = local.session("frontend");
    let now = get_content(&mut fe, &id, true).unwrap();
    assert_eq!(now.body.as_deref(), Some("sealed text"));
    assert_eq!(now.sha256, sealed.sha256);
    let conflicts: String = db(ch.index())
        .query_row("SELECT conflicts FROM uploads", [], |r| r.get(0))
        .unwrap();
    assert!(conflicts.contains("is sealed"), "{conflicts}");
    let digest = ch.index().digest().unwrap();
    ch.reindex(None).unwrap();
    assert_eq!(ch.index().digest().unwrap(), digest);
}
