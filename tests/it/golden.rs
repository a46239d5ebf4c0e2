//! Golden tests: the record format is frozen byte for byte.
//!
//! A fixed key and fixed bodies must give exactly the committed lines (and so
//! the same signatures) and ids. If one of these fails, the change breaks every
//! channel already written: do not "update the fixture" unless the format
//! version changes. `UPDATE_GOLDEN=1 cargo test --test it golden::` rewrites them.

use std::collections::BTreeMap;

use countersign::core::genesis::{FORMAT, Genesis, channel_id};
use countersign::core::hlc::Hlc;
use countersign::core::ids::{FeedId, RecordId, Role};
use countersign::core::op::{
    Ack, Admit, Backfill, BodyRef, FeedInit, Ids, Op, PinSet, Revise, Seal, Send, Target,
    UndoBackfill, UploadChunk,
};
use countersign::core::record::{self, Header, encode, pubkey_hex};
use countersign::core::vocab::{Decision, Kind, WorkStatus};
use ed25519_dalek::SigningKey;

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/golden");

fn role(s: &str) -> Role {
    Role::new(s).unwrap()
}

fn owner() -> SigningKey {
    SigningKey::from_bytes(&[1u8; 32])
}

fn backend() -> SigningKey {
    SigningKey::from_bytes(&[2u8; 32])
}

fn genesis() -> Genesis {
    Genesis {
        format: FORMAT.into(),
        name: "golden".into(),
        created_at: "2026-11-30T00:00:00.000Z".into(),
        roles: vec![role("backend"), role("frontend")],
        owner_pubkey: pubkey_hex(&owner().verifying_key()),
        nonce: "00112233445566778899aabbccddeeff".into(),
    }
}

/// One record of each op, chained as a writer would chain them.
fn records() -> Vec<String> {
    let ch = channel_id(&genesis().to_bytes());
    let owner_feed = FeedId::new("_owner", "golden-000001").unwrap();
    let feed = FeedId::new("backend", "golden-000001").unwrap();
    let admit = encode(
        &Header {
            ch: ch.clone(),
            feed: owner_feed,
            seq: 1,
            prev: None,
            hlc: Hlc(1_796_000_000_000, 0),
        },
        &Op::Admit(Admit {
            feed: feed.clone(),
            pubkey: pubkey_hex(&backend().verifying_key()),
            role: role("backend"),
        }),
        &owner(),
    );
    let mut out = vec![admit.to_line()];
    let parent = RecordId::of_body(b"parent");
    let ops = vec![
        Op::FeedInit(FeedInit {
            role: role("backend"),
            pubkey: pubkey_hex(&backend().verifying_key()),
            device_name: "golden".into(),
        }),
        Op::Send(Send {
            to: vec![role("frontend")],
            topic: "Schema v2 — ready?".into(),
            body: "Line one\nline \"two\" with unicode: é ✓\n".into(),
            action_required: true,
            reply_to: Some(parent),
            kind: Some(Kind::Question),
            work_status: Some(WorkStatus::NeedsYou),
            addenda: BTreeMap::from([(role("frontend"), "just for you".to_owned())]),
            decision_requested: false,
            ..Send::default()
        }),
        Op::Send(Send {
            to: vec![role("frontend")],
            topic: "plain".into(),
            body: "b".into(),
            decision_requested: true,
            ..Send::default()
        }),
        Op::Opened(Ids { ids: vec![parent] }),
        Op::Read(Ids { ids: vec![parent] }),
        Op::Delete(Target { id: parent }),
    ];
    out.extend(chain(&ch, &feed, ops, 1_796_000_000_100));
    out
}

/// One record of each consent and upload op, on a feed of its own.
fn consent_records() -> Vec<String> {
    let ch = channel_id(&genesis().to_bytes());
    let feed = FeedId::new("backend", "golden-000002").unwrap();
    let p = RecordId::of_body(b"proposal");
    let upload = RecordId::of_body(b"upload");
    let body_ref = BodyRef {
        upload,
        sha256: "ab".repeat(32),
    };
    let ops = vec![
        Op::FeedInit(FeedInit {
            role: role("backend"),
            pubkey: pubkey_hex(&backend().verifying_key()),
            device_name: "golden".into(),
        }),
        Op::Send(Send {
            to: vec![role("frontend")],
            topic: "Adopt the glossary".into(),
            body: "Terms as listed.".into(),
            kind: Some(Kind::Proc),
            decision_requested: true,
            pin_key: Some("glossary".into()),
            voters: Some(vec![role("frontend")]),
            ..Send::default()
        }),
        Op::Send(Send {
            to: vec![role("frontend")],
            topic: "Still need your vote".into(),
            decision_requested: true,
            about: Some(p),
            body_ref: Some(body_ref.clone()),
            ..Send::default()
        }),
        Op::Revise(Revise {
            id: p,
            topic: Some("Adopt the glossary (v2)".into()),
            body: "Terms as listed, with one more.".into(),
            body_ref: None,
            note: Some("added a term".into()),
        }),
        Op::Ack(Ack {
            id: p,
            decision: Decision::NeedsChanges,
            note: Some("one term is wrong".into()),
            body_sha256: "cd".repeat(32),
            pin_head: Some(RecordId::of_body(b"head")),
        }),
        Op::PinSet(PinSet {
            key: "glossary".into(),
            title: "Glossary".into(),
            version: "v2".into(),
            body: String::new(),
            body_ref: Some(body_ref),
            approved_by: Some(p),
            base: Some(RecordId::of_body(b"head")),
        }),
        Op::Backfill(Backfill {
            ids: vec![p],
            keys: vec!["glossary".into()],
            words: vec![RecordId::of_body(b"word")],
        }),
        Op::UndoBackfill(UndoBackfill {
            ids: vec![p],
            reason: Some("too early".into()),
        }),
        Op::UploadChunk(UploadChunk {
            upload: None,
            text: "first piece, ".into(),
            label: Some("spec".into()),
        }),
        Op::UploadChunk(UploadChunk {
            upload: Some(upload),
            text: "second piece".into(),
            label: None,
        }),
        Op::Seal(Seal {
            upload,
            sha256: "ef".repeat(32),
            length_bytes: 25,
            length_chars: 25,
            chunks: 2,
        }),
    ];
    chain(&ch, &feed, ops, 1_796_000_001_000)
}

/// Signs `ops` as consecutive records of `feed`, one millisecond apart.
fn chain(ch: &str, feed: &FeedId, ops: Vec<Op>, start_ms: i64) -> Vec<String> {
    let mut prev = None;
    let mut out = Vec::new();
    for (i, op) in ops.into_iter().enumerate() {
        let header = Header {
            ch: ch.to_owned(),
            feed: feed.clone(),
            seq: i as u64 + 1,
            prev,
            hlc: Hlc(start_ms + i as i64, i as u32 % 2),
        };
        let rec = encode(&header, &op, &backend());
        prev = Some(rec.id);
        out.push(rec.to_line());
    }
    out
}

fn check(name: &str, actual: &str) {
    let path = format!("{DIR}/{name}");
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, actual).unwrap();
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    assert_eq!(
        actual, expected,
        "{name} changed: this breaks every existing channel"
    );
}

#[test]
fn genesis_bytes_and_channel_id_are_frozen() {
    let bytes = genesis().to_bytes();
    check("channel.json", std::str::from_utf8(&bytes).unwrap());
    check("channel.id", &format!("{}\n", channel_id(&bytes)));
}

#[test]
fn record_lines_signatures_and_ids_are_frozen() {
    let lines = records();
    check("records.jsonl", &lines.concat());
    let ids: String = lines
        .iter()
        .map(|l| format!("{}\n", record::decode(l.trim_end().as_bytes()).unwrap().id))
        .collect();
    check("records.ids", &ids);
}

#[test]
fn consent_and_upload_lines_are_frozen_and_verify() {
    let lines = consent_records();
    check("consent.jsonl", &lines.concat());
    let text = std::fs::read_to_string(format!("{DIR}/consent.jsonl")).unwrap();
    for (i, line) in text.lines().enumerate() {
        let rec = record::decode(line.as_bytes()).unwrap();
        assert_eq!(rec.to_line(), format!("{line}\n"), "line {i} re-encodes");
        assert!(rec.verify(&backend().verifying_key()), "line {i} verifies");
        assert!(rec.op.is_some(), "line {i} decodes to a known op");
    }
}

#[test]
fn frozen_lines_decode_and_verify() {
    let text = std::fs::read_to_string(format!("{DIR}/records.jsonl")).unwrap();
    let ids = std::fs::read_to_string(format!("{DIR}/records.ids")).unwrap();
    for (i, (line, id)) in text.lines().zip(ids.lines()).enumerate() {
        let rec = record::decode(line.as_bytes()).unwrap();
        assert_eq!(rec.id.hex(), id);
        assert_eq!(
            rec.to_line(),
            format!("{line}\n"),
            "re-encoding changed bytes"
        );
        let key = if i == 0 { owner() } else { backend() };
        assert!(
            rec.verify(&key.verifying_key()),
            "line {i} no longer verifies"
        );
        assert!(rec.op.is_some());
    }
}

#[test]
fn head_json_is_frozen() {
    let feed = FeedId::new("backend", "golden-000001").unwrap();
    let head = record::encode_head(
        &feed,
        7,
        RecordId::of_body(b"x"),
        Hlc(1_796_000_000_000, 3),
        &backend(),
    );
    check("head.json", &head);
}
