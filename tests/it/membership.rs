//! Membership across machines through the real binary, two homes and a real
//! git remote: join and admit, add-role, rotate-key signed by the old key, and
//! rotate-key --lost signed by the owner.

use crate::common;
use std::fs;

use crate::common::machines::{Machine, World};
use countersign::core::hlc::Hlc;
use countersign::core::ids::{FeedId, Role};
use countersign::core::op::{Op, Send};
use countersign::core::record::{self, Header};
use countersign::store::KeyName;
use ed25519_dalek::SigningKey;

const ROLES: [&str; 2] = ["frontend", "backend"];

fn refusal(m: &Machine, args: &[&str]) -> String {
    let out = m.cli(args);
    assert!(!out.status.success(), "expected a refusal for {args:?}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_joined_device_writes_only_once_the_owner_admitted_it() {
    let w = World::git(1, &ROLES);
    let (a, b) = (&w.machines[0], w.clone_machine(1));
    // Before joining: the refusal names the way in.
    let err = refusal(
        &b,
        &[
            "--role", "backend", "send", "--to", "frontend", "--topic", "t", "--body", "b",
        ],
    );
    assert!(err.contains("countersign join --role backend"), "{err}");
    let out = b.ok(&["--role", "backend", "join"]);
    assert!(
        out.contains(&format!("feed:   backend/{}", b.device())),
        "{out}"
    );
    let command = out
        .lines()
        .find(|l| l.trim_start().starts_with("countersign admit backend "))
        .unwrap_or_else(|| panic!("{out}"))
        .trim()
        .to_owned();
    // Joined but not admitted: still refused, pointing at `countersign admit`.
    let err = refusal(
        &b,
        &[
            "--role", "backend", "send", "--to", "frontend", "--topic", "t", "--body", "b",
        ],
    );
    assert!(err.contains(&command), "{err}");
    // Joining again keeps the key.
    assert!(b.ok(&["--role", "backend", "join"]).contains(&command));
    // The owner admits (twice: the second writes nothing) and syncs.
    let args: Vec<&str> = command.split_whitespace().skip(1).collect();
    assert!(a.ok(&args).contains("admitted backend/"));
    assert!(a.ok(&args).contains("already admitted"));
    // Only the owner can admit.
    let err = refusal(&b, &args);
    assert!(err.contains("owner key"), "{err}");
    a.sync();
    b.sync();
    assert!(b.ok(&["--role", "backend", "join"]).contains("is admitted"));
    b.send("backend", "frontend", "from the joined device");
    b.sync();
    a.sync();
    assert!(
        a.inbox_topics("frontend")
            .contains(&"from the joined device".to_owned())
    );
    assert_eq!(a.cli(&["verify"]).status.code(), Some(0));
}

#[test]
fn an_added_role_is_in_the_roster_on_every_machine() {
    let w = World::git(2, &ROLES);
    let (a, b) = (&w.machines[0], &w.machines[1]);
    let err = refusal(
        b,
        &[
            "--role", "backend", "send", "--to", "infra", "--topic", "t", "--body", "b",
        ],
    );
    assert!(err.contains("infra"), "{err}");
    let err = refusal(b, &["add-role", "infra"]);
    assert!(err.contains("owner"), "only the owner adds roles: {err}");
    assert!(a.ok(&["add-role", "infra"]).contains("infra"));
    assert!(refusal(a, &["add-role", "infra"]).contains("already"));
    a.sync();
    b.sync();
    b.send("backend", "infra", "welcome");
    // The owner's machine can act as the new role at once.
    a.send("infra", "backend", "hello from infra");
    a.sync();
    b.sync();
    a.sync();
    assert!(a.inbox_topics("infra").contains(&"welcome".to_owned()));
    assert!(
        b.inbox_topics("backend")
            .contains(&"hello from infra".to_owned())
    );
    w.settle();
}

/// Appends to `m`'s copy of `feed` a `send` signed by `key`, chained after the feed's last record.
fn forge_next(m: &Machine, feed: &str, key: &SigningKey) {
    let seg = m.dir.join("feeds").join(feed).join("00000001.jsonl");
    let text = fs::read_to_string(&seg).unwrap();
    let last = record::decode(text.lines().last().unwrap().as_bytes()).unwrap();
    let header = Header {
        ch: last.header.ch.clone(),
        feed: FeedId::try_from(feed.to_owned()).unwrap(),
        seq: last.header.seq + 1,
        prev: Some(last.id),
        hlc: Hlc(last.header.hlc.0 + 1, 0),
    };
    let op = Op::Send(Send {
        to: vec![Role::new("frontend").unwrap()],
        topic: "signed with the retired key".into(),
        body: "x".into(),
        ..Send::default()
    });
    let rec = record::encode(&header, &op, key);
    fs::write(&seg, format!("{text}{}", rec.to_line())).unwrap();
}

fn load_key(path: &std::path::Path) -> SigningKey {
    let mut seed = [0u8; 32];
    hex::decode_to_slice(fs::read_to_string(path).unwrap().trim(), &mut seed).unwrap();
    SigningKey::from_bytes(&seed)
}

#[test]
fn a_rotated_key_signs_from_then_on_and_the_old_one_no_longer_counts() {
    let w = World::git(2, &ROLES);
    let (a, b) = (&w.machines[0], &w.machines[1]);
    b.send("backend", "frontend", "before");
    let keys = fs::read_dir(b.home.join("keys"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path()
        .join("roles");
    let old = load_key(&keys.join("backend.key"));
    let out = b.ok(&["--role", "backend", "rotate-key"]);
    assert!(out.contains("signed by the old key"), "{out}");
    let new = load_key(&keys.join("backend.key"));
    assert_ne!(
        old.to_bytes(),
        new.to_bytes(),
        "the key file now holds the new key"
    );
    let kept = fs::read_dir(&keys).unwrap().flatten().any(|e| {
        e.file_name()
            .to_string_lossy()
            .starts_with("backend.replaced-")
    });
    assert!(kept, "the old key is kept beside it");
    b.send("backend", "frontend", "after");
    b.sync();
    a.sync();
    let topics = a.inbox_topics("frontend");
    assert!(topics.contains(&"before".to_owned()) && topics.contains(&"after".to_owned()));
    assert_eq!(a.cli(&["verify"]).status.code(), Some(0));
    // A record signed by the retired key is not applied.
    let feed = format!("backend/{}", b.device());
    forge_next(a, &feed, &old);
    assert_eq!(a.cli(&["verify"]).status.code(), Some(1));
    assert!(
        !a.inbox_topics("frontend")
            .contains(&"signed with the retired key".to_owned())
    );
}

#[test]
fn a_lost_key_is_replaced_by_the_owner() {
    let w = World::git(2, &ROLES);
    let (a, b) = (&w.machines[0], &w.machines[1]);
    b.send("backend", "frontend", "before the loss");
    b.sync();
    a.sync();
    let keys = fs::read_dir(b.home.join("keys"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path()
        .join("roles");
    fs::remove_file(keys.join("backend.key")).unwrap();
    // The device makes a new key; join sees the feed holds another key and
    // prints the owner's command.
    let out = b.ok(&["--role", "backend", "join"]);
    let command = out
        .lines()
        .find(|l| l.trim_start().starts_with("countersign rotate-key"))
        .unwrap_or_else(|| panic!("{out}"))
        .trim()
        .to_owned();
    assert!(command.contains("--lost"), "{command}");
    let err = refusal(
        b,
        &[
            "--role", "backend", "send", "--to", "frontend", "--topic", "t", "--body", "b",
        ],
    );
    assert!(err.contains("rotate-key"), "{err}");
    let args: Vec<&str> = command.split_whitespace().skip(1).collect();
    assert!(a.ok(&args).contains("signed by the owner"));
    a.sync();
    b.sync();
    b.send("backend", "frontend", "after the loss");
    b.sync();
    a.sync();
    let topics = a.inbox_topics("frontend");
    assert!(topics.contains(&"before the loss".to_owned()), "{topics:?}");
    assert!(topics.contains(&"after the loss".to_owned()), "{topics:?}");
    for m in [a, b] {
        let out = m.cli(&["verify"]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
    let digest = w.settle();
    // A rebuild reads the owner's replacement before the feed it applies to,
    // and still takes the old key up to its seq.
    a.ok(&["reindex"]);
    assert_eq!(a.digest(), digest);
}

/// More records than ingest verifies ahead in parallel (64) on both sides of a
/// rotation, and a record signed by the retired key at the end: a rebuild
/// accepts every genuine record, applies none signed by the wrong key, and
/// gives the incremental digest.
#[test]
fn a_rotation_inside_a_long_run_of_records_is_read_alike_by_every_pass() {
    use crate::common::local::{self, Local};
    let l = Local::new(&["frontend", "backend"]);
    let mut s = l.session("backend");
    for i in 0..70 {
        local::send(&mut s, "frontend", &format!("old key {i}"), "b");
    }
    drop(s);
    let role = Role::new("backend").unwrap();
    let ch = countersign::store::ChannelDir::open(&l.dir)
        .unwrap()
        .id()
        .to_owned();
    let old = l.home.load_key(&ch, KeyName::Role(&role)).unwrap().unwrap();
    countersign::app::key_rotation::rotate_own_key(&mut l.channel(), &role).unwrap();
    let mut s = l.session("backend");
    for i in 0..70 {
        local::send(&mut s, "frontend", &format!("new key {i}"), "b");
    }
    drop(s);
    let feed = format!("backend/{}", l.home.device().unwrap().id);
    let m = Machine {
        name: "local".into(),
        home: l.tmp.path().join("home"),
        dir: l.dir.clone(),
    };
    forge_next(&m, &feed, &old);
    let before = m.digest();
    m.ok(&["reindex"]);
    assert_eq!(m.digest(), before, "a rebuild gives the incremental state");
    let out = m.cli(&["verify"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("1 problem(s)") && text.contains("bad signature"),
        "{text}"
    );
    let topics = m.inbox_topics("frontend");
    assert_eq!(topics.len(), 140, "every genuine message, none forged");
}

/// A running server sees a role added meanwhile: list_roles lists it and
/// send_message accepts it as a recipient.
#[tokio::test]
async fn a_running_server_sees_a_role_added_meanwhile() {
    let ch = common::TestChannel::new(&["frontend", "backend"]);
    let fe = ch.client("frontend").await;
    let before = fe.call("list_roles", serde_json::json!({})).await.ok();
    assert!(!before.to_string().contains("infra"), "{before}");
    let out = ch.cli(&["add-role", "infra"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let after = fe.call("list_roles", serde_json::json!({})).await.ok();
    assert!(
        after["roles"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r == "infra"),
        "{after}"
    );
    fe.send("infra", "welcome", "to the new role").await;
    fe.close().await;
}
