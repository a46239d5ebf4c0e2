//! Golden records of the membership ops (`add_role`, `replace_key` in a role
//! feed and in the owner's feed): a fixed key and body give exactly the
//! committed lines and ids. `UPDATE_GOLDEN=1` rewrites them (only with a new
//! format version: existing channels hold these bytes).

use countersign::core::genesis::channel_id;
use countersign::core::hlc::Hlc;
use countersign::core::ids::{FeedId, Role};
use countersign::core::op::{AddRole, Op, ReplaceKey};
use countersign::core::record::{self, Header, encode, pubkey_hex};
use ed25519_dalek::SigningKey;

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/golden");

fn key(b: u8) -> SigningKey {
    SigningKey::from_bytes(&[b; 32])
}

fn lines() -> Vec<String> {
    let genesis = std::fs::read(format!("{DIR}/channel.json")).unwrap();
    let ch = channel_id(&genesis);
    let owner_feed = FeedId::new("_owner", "golden-000001").unwrap();
    let feed = FeedId::new("backend", "golden-000001").unwrap();
    let header = |feed: &FeedId, seq: u64, ms: i64| Header {
        ch: ch.clone(),
        feed: feed.clone(),
        seq,
        prev: None,
        hlc: Hlc(ms, 0),
    };
    vec![
        encode(
            &header(&owner_feed, 2, 1_796_000_001_000),
            &Op::AddRole(AddRole {
                role: Role::new("infra").unwrap(),
            }),
            &key(1),
        )
        .to_line(),
        encode(
            &header(&feed, 7, 1_796_000_001_100),
            &Op::ReplaceKey(ReplaceKey {
                feed: feed.clone(),
                pubkey: pubkey_hex(&key(3).verifying_key()),
                from_seq: None,
            }),
            &key(2),
        )
        .to_line(),
        encode(
            &header(&owner_feed, 3, 1_796_000_001_200),
            &Op::ReplaceKey(ReplaceKey {
                feed: feed.clone(),
                pubkey: pubkey_hex(&key(4).verifying_key()),
                from_seq: Some(9),
            }),
            &key(1),
        )
        .to_line(),
    ]
}

#[test]
fn membership_records_are_frozen() {
    let lines = lines();
    let text: String = lines.concat();
    let ids: String = lines
        .iter()
        .map(|l| format!("{}\n", record::decode(l.trim_end().as_bytes()).unwrap().id))
        .collect();
    for (name, actual) in [("membership.jsonl", &text), ("membership.ids", &ids)] {
        let path = format!("{DIR}/{name}");
        if std::env::var_os("UPDATE_GOLDEN").is_some() {
            std::fs::write(&path, actual).unwrap();
        }
        let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        assert_eq!(
            *actual, expected,
            "{name} changed: this breaks existing channels"
        );
    }
    for line in text.lines() {
        let rec = record::decode(line.as_bytes()).unwrap();
        assert_eq!(
            rec.to_line(),
            format!("{line}\n"),
            "re-encoding changed bytes"
        );
        assert!(rec.op.is_some(), "the op decodes: {line}");
    }
    assert!(
        text.contains(r#""op":"add_role","data":{"role":"infra"}"#),
        "{text}"
    );
    assert!(
        text.contains(r#""op":"replace_key","data":{"feed":"backend/golden-000001","pubkey":""#),
        "{text}"
    );
    assert!(text.contains(r#"","from_seq":9}}"#), "{text}");
}
