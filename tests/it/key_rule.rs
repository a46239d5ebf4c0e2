//! Keys of small order or in non-canonical encoding never enter a channel:
//! under the signature rule (ZIP-215) anything verifies under a small-order
//! key, so a peer's record that brings one in is quarantined, and a local
//! `admit` or `rotate-key --pubkey` naming one is refused.

use std::fs::{self, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::common::files;
use crate::common::local::{Local, quarantined, send};
use countersign::app::{key_rotation, membership};
use countersign::core::hlc::Hlc;
use countersign::core::ids::{FeedId, OWNER_FEED_ROLE, Role};
use countersign::core::op::{Admit, FeedInit, Invite, Op, ReplaceKey, Send};
use countersign::core::record::{self, Header, Record};
use countersign::store::KeyName;
use countersign::store::now_ms;
use countersign::store::survey::list_segments;
use countersign::store::{ChannelDir, Home};
use ed25519_dalek::{Signature, SigningKey, VerifyingKey};

/// The identity point: of order 1.
const IDENTITY: [u8; 32] = {
    let mut b = [0u8; 32];
    b[0] = 1;
    b
};

/// The identity again, written with y = p + 1: not canonical.
const IDENTITY_HIGH: &str = "eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f";

/// A "signature" that holds for every message under a small-order key:
/// R the identity, s = 0.
fn forged_sig() -> Signature {
    let mut b = [0u8; 64];
    b[..32].copy_from_slice(&IDENTITY);
    Signature::from_bytes(&b)
}

fn segment(dir: &Path) -> PathBuf {
    list_segments(dir).unwrap().pop().unwrap().path
}

fn append(path: &Path, rec: &Record) {
    OpenOptions::new()
        .append(true)
        .open(path)
        .unwrap()
        .write_all(rec.to_line().as_bytes())
        .unwrap();
}

/// The record of `op` after the last one in `seg`, signed with `key`.
fn next(seg: &Path, key: &SigningKey, op: &Op) -> Record {
    let text = fs::read_to_string(seg).unwrap();
    let last = record::decode(text.lines().last().unwrap().as_bytes()).unwrap();
    let header = Header {
        ch: last.header.ch.clone(),
        feed: last.header.feed.clone(),
        seq: last.header.seq + 1,
        prev: Some(last.id),
        hlc: Hlc(now_ms().max(last.header.hlc.0 + 1), 0),
    };
    record::encode(&header, op, key)
}

fn owner(l: &Local) -> (SigningKey, PathBuf) {
    let ch = ChannelDir::open(&l.dir).unwrap().id().to_owned();
    let key = l.home.load_key(&ch, KeyName::Owner).unwrap().unwrap();
    let device = l.home.device().unwrap().id;
    let dir = l.dir.join("feeds").join(OWNER_FEED_ROLE).join(device);
    (key, dir)
}

#[test]
fn a_small_order_key_admitted_by_the_owner_is_quarantined_and_forgeries_under_it_never_apply() {
    let l = Local::new(&["a", "b"]);
    send(&mut l.session("a"), "b", "one", "real");
    let ch = ChannelDir::open(&l.dir).unwrap().id().to_owned();
    let (owner_key, owner_dir) = owner(&l);
    // The owner's feed admits feed a/evil-000001 with the identity as its key.
    let evil = FeedId::new("a", "evil-000001").unwrap();
    let admit = next(
        &segment(&owner_dir),
        &owner_key,
        &Op::Admit(Admit {
            feed: evil.clone(),
            pubkey: hex::encode(IDENTITY),
            role: Role::new("a").unwrap(),
        }),
    );
    append(&segment(&owner_dir), &admit);
    // Its feed: a feed_init and a message, each "signed" with R = identity,
    // s = 0, which ZIP-215 accepts under that key for any message.
    let anyone = SigningKey::from_bytes(&[5; 32]);
    let mut init = record::encode(
        &Header {
            ch,
            feed: evil,
            seq: 1,
            prev: None,
            hlc: Hlc(now_ms(), 0),
        },
        &Op::FeedInit(FeedInit {
            role: Role::new("a").unwrap(),
            pubkey: hex::encode(IDENTITY),
            device_name: "evil".into(),
        }),
        &anyone,
    );
    init.sig = forged_sig();
    let mut forged = record::encode(
        &Header {
            seq: 2,
            prev: Some(init.id),
            ..init.header.clone()
        },
        &Op::Send(Send {
            to: vec![Role::new("b").unwrap()],
            topic: "forged".into(),
            body: "signed by nobody".into(),
            ..Default::default()
        }),
        &anyone,
    );
    forged.sig = forged_sig();
    let small = VerifyingKey::from_bytes(&IDENTITY).unwrap();
    assert!(
        init.verify(&small) && forged.verify(&small),
        "forgeries hold"
    );
    let evil_dir = l.dir.join("feeds").join("a").join("evil-000001");
    fs::create_dir_all(&evil_dir).unwrap();
    fs::write(
        evil_dir.join("00000001.jsonl"),
        init.to_line() + &forged.to_line(),
    )
    .unwrap();

    let mut r = countersign::store::Channel::open(
        ChannelDir::open(&l.dir).unwrap(),
        Home::at(l.tmp.path().join("reader")),
    )
    .unwrap();
    r.catch_up().unwrap();
    let topics: Vec<String> = r
        .index()
        .problems()
        .unwrap()
        .into_iter()
        .map(|p| format!("{}: {}", p.kind, p.reason))
        .collect();
    let q = quarantined(&r);
    assert!(
        q.iter().any(|w| w.contains(
            "admit of a/evil-000001 carries no usable public key: the key is of small order"
        )),
        "{topics:?}"
    );
    // The feed was never admitted: its records wait as unadmitted.
    assert!(
        topics
            .iter()
            .any(|t| t.starts_with("unadmitted") && t.contains("evil-000001")),
        "{topics:?}"
    );
    let sends: i64 = rusqlite::Connection::open(r.index().path())
        .unwrap()
        .query_row("SELECT count(*) FROM messages", [], |x| x.get(0))
        .unwrap();
    assert_eq!(sends, 1, "only the real message applies");
}

#[test]
fn a_peers_replace_key_or_invite_with_an_unusable_key_is_quarantined() {
    let l = Local::new(&["a", "b"]);
    send(&mut l.session("b"), "a", "one", "real");
    let device = l.home.device().unwrap().id;
    // b's own replace_key, signed by its real key, naming the identity
    // written non-canonically.
    l.forge(
        "b",
        &Op::ReplaceKey(ReplaceKey {
            feed: FeedId::new("b", &device).unwrap(),
            pubkey: IDENTITY_HIGH.into(),
            from_seq: None,
        }),
    );
    // The owner's invitation with a small-order invitation key.
    let (owner_key, owner_dir) = owner(&l);
    let invite = next(
        &segment(&owner_dir),
        &owner_key,
        &Op::Invite(Invite {
            role: Role::new("a").unwrap(),
            key: "00".repeat(32),
            expires_ms: now_ms() + 3_600_000,
        }),
    );
    append(&segment(&owner_dir), &invite);
    let mut r = countersign::store::Channel::open(
        ChannelDir::open(&l.dir).unwrap(),
        Home::at(l.tmp.path().join("reader")),
    )
    .unwrap();
    r.catch_up().unwrap();
    let q = quarantined(&r);
    assert!(
        q.iter().any(|w| w
            == "replace_key carries no usable public key: the key is not in canonical encoding"),
        "{q:?}"
    );
    assert!(
        q.iter()
            .any(|w| w
                .starts_with("invite carries no usable invitation key: the key is of small order")),
        "{q:?}"
    );
}

#[test]
fn a_local_admit_or_rotation_naming_an_unusable_key_is_refused_and_writes_nothing() {
    let l = Local::new(&["a", "b"]);
    send(&mut l.session("b"), "a", "one", "real");
    let mut ch = l.channel();
    let owner_dir = owner(&l).1;
    let before = files(&owner_dir);
    let e = membership::admit(&mut ch, "a", &hex::encode(IDENTITY), "laptop-1")
        .unwrap_err()
        .to_string();
    assert!(e.contains("small order"), "{e}");
    assert!(e.contains("countersign join"), "{e}");
    let e = membership::admit(&mut ch, "a", IDENTITY_HIGH, "laptop-1")
        .unwrap_err()
        .to_string();
    assert!(e.contains("not in canonical encoding"), "{e}");
    let device = l.home.device().unwrap().id;
    let e = key_rotation::replace_lost_key(
        &mut ch,
        &Role::new("b").unwrap(),
        Some(&device),
        Some(&"00".repeat(32)),
        None,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("small order"), "{e}");
    assert_eq!(files(&owner_dir), before, "the owner's feed is as it was");
}

/// A lost-key replacement naming an unusable device id or public key is a
/// `ValueError` naming the argument (the caller fixes it), not a
/// `PermissionError` about admission.
#[test]
fn a_lost_key_replacement_with_a_bad_argument_is_a_value_error_naming_it() {
    let l = Local::new(&["a", "b"]);
    send(&mut l.session("b"), "a", "one", "real");
    let mut ch = l.channel();
    let e = membership::rotate_key(&mut ch, "b", true, Some("Bad Id"), None, None).unwrap_err();
    assert_eq!(e.kind(), Some("ValueError"), "{e}");
    let msg = e.to_string();
    assert!(
        msg.starts_with("'device' must be a device id") && msg.contains("'Bad Id'"),
        "{msg}"
    );
    let device = l.home.device().unwrap().id;
    let e =
        membership::rotate_key(&mut ch, "b", true, Some(&device), Some("zz"), None).unwrap_err();
    assert_eq!(e.kind(), Some("ValueError"), "{e}");
    assert!(e.to_string().starts_with("'pubkey' must be"), "{e}");
}
