//! Golden tests: the record format is frozen byte for byte.
//!
//! A fixed key and fixed bodies must give exactly the committed lines (and so
//! the same signatures) and ids. If one of these fails, the change breaks every
//! channel already written: do not "update the fixture" unless the format
//! version changes. `UPDATE_GOLDEN=1 cargo test --test it golden::` rewrites them.
//!
//! Every op has at least one frozen line: `every_op_has_a_frozen_line` asks serde
//! for the op names it knows, so a new op fails it until a line of it is frozen
//! here (in a new fixture file, or appended to one: existing lines never change).

use std::collections::BTreeMap;

use countersign::core::genesis::{FORMAT, Genesis, channel_id};
use countersign::core::hlc::Hlc;
use countersign::core::ids::{FeedId, RecordId, Role};
use countersign::core::invitation::{self, InviteCode};
use countersign::core::memory::note::{self, NoteKind};
use countersign::core::op::{
    Ack, Admit, Backfill, BodyRef, Claim, FeedInit, Ids, Invite, MemoryNote, Note, Op, PinSet,
    Revise, Seal, Send, Summary, Target, UndoBackfill, UploadChunk, WorkStatusMove,
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

/// One record of each lifecycle op (resolve, confirm, reopen, with and
/// without a note) and a work-status move to every value, on a feed of its
/// own. The values are listed by hand, not taken from `WorkStatus::ALL`: a new
/// value gets new lines, it must not change these.
fn lifecycle_records() -> Vec<String> {
    let ch = channel_id(&genesis().to_bytes());
    let feed = FeedId::new("backend", "golden-000003").unwrap();
    let debt = RecordId::of_body(b"debt");
    let task = RecordId::of_body(b"task");
    let seen = RecordId::of_body(b"seen");
    let mv = |value, base| {
        Op::WorkStatus(WorkStatusMove {
            id: task,
            value,
            blocked_by: None,
            note: None,
            base,
        })
    };
    let ops = vec![
        Op::FeedInit(FeedInit {
            role: role("backend"),
            pubkey: pubkey_hex(&backend().verifying_key()),
            device_name: "golden".into(),
        }),
        Op::Resolve(Note {
            id: debt,
            note: Some("fixed in 4f2a — \"quotes\", é".into()),
        }),
        Op::Confirm(Note {
            id: debt,
            note: None,
        }),
        Op::Reopen(Note {
            id: debt,
            note: Some("fails again on ARM".into()),
        }),
        Op::Resolve(Note {
            id: debt,
            note: None,
        }),
        Op::Confirm(Note {
            id: debt,
            note: Some("checked".into()),
        }),
        Op::Reopen(Note {
            id: debt,
            note: None,
        }),
        mv(WorkStatus::Proposed, None),
        mv(WorkStatus::InProgress, Some(seen)),
        mv(WorkStatus::NeedsYou, Some(seen)),
        Op::WorkStatus(WorkStatusMove {
            id: task,
            value: WorkStatus::Blocked,
            blocked_by: Some(debt),
            note: Some("waits for the schema".into()),
            base: Some(seen),
        }),
        mv(WorkStatus::Blocked, Some(seen)),
        mv(WorkStatus::DoneLocal, Some(seen)),
        Op::WorkStatus(WorkStatusMove {
            id: task,
            value: WorkStatus::Done,
            blocked_by: None,
            note: Some("confirmed on staging".into()),
            base: Some(seen),
        }),
    ];
    chain(&ch, &feed, ops, 1_796_000_002_000)
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
fn lifecycle_and_work_status_lines_are_frozen_and_verify() {
    let lines = lifecycle_records();
    check("lifecycle.jsonl", &lines.concat());
    let ids: String = lines
        .iter()
        .map(|l| format!("{}\n", record::decode(l.trim_end().as_bytes()).unwrap().id))
        .collect();
    check("lifecycle.ids", &ids);
    let text = std::fs::read_to_string(format!("{DIR}/lifecycle.jsonl")).unwrap();
    let ids = std::fs::read_to_string(format!("{DIR}/lifecycle.ids")).unwrap();
    assert_eq!(text.lines().count(), ids.lines().count());
    for (i, (line, id)) in text.lines().zip(ids.lines()).enumerate() {
        let rec = record::decode(line.as_bytes()).unwrap();
        assert_eq!(rec.id.hex(), id, "line {i}");
        assert_eq!(rec.to_line(), format!("{line}\n"), "line {i} re-encodes");
        assert!(rec.verify(&backend().verifying_key()), "line {i} verifies");
        assert!(rec.op.is_some(), "line {i} decodes to a known op");
    }
}

/// The op names serde knows, read from its refusal of an unknown one ("unknown
/// variant `x`, expected one of `a`, `b`, ..."): the list follows the enum
/// with no hand-kept copy.
fn every_op_name() -> Vec<String> {
    let err = serde_json::from_str::<Op>(r#"{"op":"no-such-op","data":{}}"#)
        .expect_err("an unknown op is refused")
        .to_string();
    let expected = err
        .split_once("expected one of ")
        .unwrap_or_else(|| panic!("serde no longer lists the variants: {err}"))
        .1;
    let names: Vec<String> = expected
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect();
    // The list is whole: each name is one `Op::decode` knows, and names itself.
    assert!(names.len() >= 19, "{err}");
    for name in &names {
        match Op::decode(name, "{}") {
            Ok(None) => panic!("serde knows op {name}, Op::decode does not"),
            Ok(Some(op)) => assert_eq!(op.name(), name),
            Err(_) => {} // Its data has required fields: the name is known.
        }
    }
    names
}

#[test]
fn every_op_has_a_frozen_line() {
    let mut frozen = BTreeMap::<String, usize>::new();
    for entry in std::fs::read_dir(DIR).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "jsonl") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for line in text.lines() {
            let rec = record::decode(line.as_bytes())
                .unwrap_or_else(|e| panic!("{}: {e:?}", path.display()));
            let op = rec.op.expect("a frozen line decodes to a known op");
            *frozen.entry(op.name().to_owned()).or_default() += 1;
        }
    }
    let missing: Vec<String> = every_op_name()
        .into_iter()
        .filter(|name| !frozen.contains_key(name))
        .collect();
    assert!(
        missing.is_empty(),
        "ops with no frozen line in fixtures/golden: {missing:?} (frozen: {frozen:?})"
    );
}

#[test]
fn every_work_status_value_has_a_frozen_line() {
    let text = std::fs::read_to_string(format!("{DIR}/lifecycle.jsonl")).unwrap();
    for value in WorkStatus::ALL {
        let needle = r#""op":"work_status","data":{"id":"#;
        let spelled = format!(r#""value":"{}""#, value.as_str());
        assert!(
            text.lines()
                .any(|l| l.contains(needle) && l.contains(&spelled)),
            "no frozen work_status line moves to {value}"
        );
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

/// The invitation ops: the owner's `invite` and the `claim` that starts a
/// joining feed, with the code that made its proof.
fn invitation_records() -> (Vec<String>, String) {
    let ch = channel_id(&genesis().to_bytes());
    let owner_feed = FeedId::new("_owner", "golden-000001").unwrap();
    let code = InviteCode::new(&ch, [4u8; 32]);
    let invite = encode(
        &Header {
            ch: ch.clone(),
            feed: owner_feed,
            seq: 1,
            prev: None,
            hlc: Hlc(1_796_000_003_000, 0),
        },
        &Op::Invite(Invite {
            role: role("backend"),
            key: code.key_hex(),
            expires_ms: 1_796_086_403_000,
        }),
        &owner(),
    );
    let joiner = SigningKey::from_bytes(&[3u8; 32]);
    let feed = FeedId::new("backend", "golden-000003").unwrap();
    let pubkey = pubkey_hex(&joiner.verifying_key());
    let claim = encode(
        &Header {
            ch: ch.clone(),
            feed: feed.clone(),
            seq: 1,
            prev: None,
            hlc: Hlc(1_796_000_004_000, 0),
        },
        &Op::Claim(Claim {
            invitation: invite.id,
            role: role("backend"),
            proof: code.prove(&ch, &invite.id, &feed, &pubkey),
            pubkey,
            device_name: "golden".into(),
        }),
        &joiner,
    );
    (
        vec![invite.to_line(), claim.to_line()],
        format!("{}\n", code.to_text()),
    )
}

#[test]
fn invitation_lines_and_code_are_frozen_and_verify() {
    let (lines, code) = invitation_records();
    check("invitation.jsonl", &lines.concat());
    check("invitation.code", &code);
    let ids: String = lines
        .iter()
        .map(|l| format!("{}\n", record::decode(l.trim_end().as_bytes()).unwrap().id))
        .collect();
    check("invitation.ids", &ids);
    let ch = channel_id(&genesis().to_bytes());
    let text = std::fs::read_to_string(format!("{DIR}/invitation.jsonl")).unwrap();
    let recs: Vec<_> = text
        .lines()
        .map(|l| record::decode(l.as_bytes()).unwrap())
        .collect();
    assert!(recs[0].verify(&owner().verifying_key()));
    let (Some(Op::Invite(inv)), Some(Op::Claim(claim))) = (&recs[0].op, &recs[1].op) else {
        panic!("an invite, then a claim");
    };
    let joiner = record::parse_pubkey(&claim.pubkey).unwrap();
    assert!(
        recs[1].verify(&joiner),
        "the claim is signed by the key it names"
    );
    assert_eq!(claim.invitation, recs[0].id);
    // The frozen code still opens the frozen invitation, and its proof holds.
    let code = InviteCode::parse(code.trim()).unwrap();
    assert_eq!(code.key_hex(), inv.key);
    assert!(invitation::proof_holds(
        &ch,
        &claim.invitation,
        &inv.key,
        &recs[1].header.feed,
        &claim.pubkey,
        &claim.proof
    ));
}

/// The memory's summary records: a line of one long item, and a line made of
/// two lines (the digest of their names, `core::memory::summary::merged`), on
/// a feed of its own.
fn memory_records() -> Vec<String> {
    let ch = channel_id(&genesis().to_bytes());
    let feed = FeedId::new("backend", "golden-000004").unwrap();
    let ops = vec![
        Op::FeedInit(FeedInit {
            role: role("backend"),
            pubkey: pubkey_hex(&backend().verifying_key()),
            device_name: "golden".into(),
        }),
        Op::Summary(Summary {
            covers: vec![RecordId::of_body(b"long item")],
            text: "backend asks which fields POST /login returns".into(),
        }),
        Op::Summary(Summary {
            covers: vec![RecordId::of_body(b"left"), RecordId::of_body(b"right")],
            text: "login fields agreed: token, expires_at; frontend adopts them".into(),
        }),
    ];
    chain(&ch, &feed, ops, 1_796_000_003_000)
}

#[test]
fn memory_summary_lines_are_frozen_and_verify() {
    let lines = memory_records();
    check("memory.jsonl", &lines.concat());
    let ids: String = lines
        .iter()
        .map(|l| format!("{}\n", record::decode(l.trim_end().as_bytes()).unwrap().id))
        .collect();
    check("memory.ids", &ids);
    let text = std::fs::read_to_string(format!("{DIR}/memory.jsonl")).unwrap();
    for (i, line) in text.lines().enumerate() {
        let rec = record::decode(line.as_bytes()).unwrap();
        assert_eq!(rec.to_line(), format!("{line}\n"), "line {i} re-encodes");
        assert!(rec.verify(&backend().verifying_key()), "line {i} verifies");
        if let Some(Op::Summary(s)) = &rec.op {
            countersign::core::memory::summary::check(s).expect("a frozen summary passes");
        }
    }
}

/// The memory's note records: a prompt and a reply recorded by a hook (with
/// their event, agent and session hash), a note by hand, and a subagent's
/// report with the folder it was recorded in, on a feed of their own.
fn note_records() -> Vec<String> {
    let ch = channel_id(&genesis().to_bytes());
    let feed = FeedId::new("backend", "golden-000005").unwrap();
    let ops = vec![
        Op::FeedInit(FeedInit {
            role: role("backend"),
            pubkey: pubkey_hex(&backend().verifying_key()),
            device_name: "golden".into(),
        }),
        Op::Note(MemoryNote {
            kind: NoteKind::Prompt,
            text: "Make the login form show the server's error.\nKeep the layout.".into(),
            event: Some(note::event_id(&[
                "claude",
                "golden-session",
                "UserPromptSubmit",
                "1",
            ])),
            agent: Some("claude".into()),
            session: Some(note::session_hash("golden-session")),
            folder: None,
            folder_hash: None,
        }),
        Op::Note(MemoryNote {
            kind: NoteKind::Reply,
            text: "The form now shows the error under the password field.".into(),
            event: Some(note::event_id(&["claude", "golden-session", "Stop", "2"])),
            agent: Some("claude".into()),
            session: Some(note::session_hash("golden-session")),
            folder: None,
            folder_hash: None,
        }),
        Op::Note(MemoryNote {
            kind: NoteKind::Note,
            text: "staging is down until Monday".into(),
            event: None,
            agent: None,
            session: None,
            folder: None,
            folder_hash: None,
        }),
        // Since notes record their folder: a subagent's report from a
        // folder below the project root, appended after the notes above,
        // which stay as they were written.
        Op::Note(MemoryNote {
            kind: NoteKind::Report,
            text: "Check the tests:\nThe login tests cover the error path.".into(),
            event: Some(note::event_id(&[
                "claude",
                "golden-session",
                "entry",
                "5291c4ea-0000-4000-8000-000000000001",
                "report",
            ])),
            agent: Some("claude".into()),
            session: Some(note::session_hash("golden-session")),
            folder: Some("web/src".into()),
            folder_hash: Some(countersign::core::memory::provenance::folder_hash(
                "/home/golden/project/web/src",
            )),
        }),
    ];
    chain(&ch, &feed, ops, 1_796_000_004_000)
}

#[test]
fn memory_note_lines_are_frozen_and_verify() {
    let lines = note_records();
    check("notes.jsonl", &lines.concat());
    let ids: String = lines
        .iter()
        .map(|l| format!("{}\n", record::decode(l.trim_end().as_bytes()).unwrap().id))
        .collect();
    check("notes.ids", &ids);
    let text = std::fs::read_to_string(format!("{DIR}/notes.jsonl")).unwrap();
    let mut notes = 0;
    for (i, line) in text.lines().enumerate() {
        let rec = record::decode(line.as_bytes()).unwrap();
        assert_eq!(rec.to_line(), format!("{line}\n"), "line {i} re-encodes");
        assert!(rec.verify(&backend().verifying_key()), "line {i} verifies");
        if let Some(Op::Note(n)) = &rec.op {
            note::check(n).expect("a frozen note passes");
            notes += 1;
        }
    }
    assert_eq!(notes, 4);
}
