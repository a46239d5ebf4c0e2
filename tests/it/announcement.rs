//! The first-use announcement is an explicit step: looking a writer up
//! writes nothing, and `app::announcement::announce` writes the owner's
//! `admit` and the feed's `feed_init`, once.

use std::fs;
use std::path::Path;

use crate::common::files;
use crate::common::local::{Local, open, send};
use countersign::app::announcement::announce;
use countersign::core::ids::{FeedId, OWNER_FEED_ROLE, Role};
use countersign::core::op::{Admit, FeedInit, Op};
use countersign::core::record::{self, Record};
use countersign::store::Home;
use countersign::store::survey::list_segments;

/// The records of the feed folder `dir`, in order (none if it is missing).
fn records(dir: &Path) -> Vec<Record> {
    let mut out = Vec::new();
    if !dir.exists() {
        return out;
    }
    for seg in list_segments(dir).unwrap() {
        for line in fs::read_to_string(&seg.path).unwrap().lines() {
            out.push(record::decode(line.as_bytes()).unwrap());
        }
    }
    out
}

#[test]
fn a_writer_lookup_writes_nothing_and_announce_begins_a_feed_once() {
    let l = Local::new(&["a", "b"]);
    let mut ch = l.channel();
    let role = Role::new("b").unwrap();
    let device = l.home.device().unwrap();
    let owner_dir = l.dir.join("feeds").join(OWNER_FEED_ROLE).join(&device.id);
    let owner_before = records(&owner_dir);
    let before = files(&l.dir);

    // No key yet: nothing to look up, and nothing is made.
    assert!(ch.writer(&role).unwrap().is_none());
    assert_eq!(files(&l.dir), before, "a lookup writes nothing");

    let w = announce(&mut ch, &role).unwrap();
    let pubkey = w.pubkey();
    let feed = FeedId::new("b", &device.id).unwrap();
    assert_eq!(w.feed(), &feed);
    // The owner's feed gained exactly its admit of the new key…
    let owner_after = records(&owner_dir);
    assert_eq!(owner_after.len(), owner_before.len() + 1);
    assert_eq!(
        owner_after.last().unwrap().op,
        Some(Op::Admit(Admit {
            feed: feed.clone(),
            pubkey: pubkey.clone(),
            role: role.clone(),
        }))
    );
    // …and the role's feed starts with its feed_init, alone.
    let own: Vec<Option<Op>> = records(&l.feed_dir("b"))
        .into_iter()
        .map(|r| r.op)
        .collect();
    assert_eq!(
        own,
        vec![Some(Op::FeedInit(FeedInit {
            role: role.clone(),
            pubkey: pubkey.clone(),
            device_name: device.name,
        }))]
    );

    // Announced once: again, from this process or another, writes nothing;
    // the plain lookup now finds the same writer and writes nothing either.
    let announced = files(&l.dir);
    announce(&mut ch, &role).unwrap();
    announce(&mut l.channel(), &role).unwrap();
    let again = ch.writer(&role).unwrap().expect("the key is made");
    assert_eq!((again.feed(), again.pubkey()), (&feed, pubkey));
    assert_eq!(files(&l.dir), announced, "nothing more is written");

    // A first send, which announces its feed itself, writes the same two
    // records before its message.
    let other = Local::new(&["a", "b"]);
    send(&mut other.session("b"), "a", "t", "hello");
    let ops: Vec<&'static str> = records(&other.feed_dir("b"))
        .iter()
        .filter_map(|r| r.op.as_ref().map(Op::name))
        .collect();
    assert_eq!(ops, ["feed_init", "send"]);
}

/// A device that holds no key of the role and no owner key is refused with
/// the way in, and nothing is written, neither key nor record.
#[test]
fn announce_on_a_device_without_keys_is_refused_with_the_way_in() {
    let l = Local::new(&["a", "b"]);
    let stranger = Home::at(l.tmp.path().join("stranger"));
    let mut ch = open(&l.dir, &stranger);
    let before = files(&l.dir);
    let e = announce(&mut ch, &Role::new("b").unwrap()).unwrap_err();
    assert_eq!(e.kind(), Some("PermissionError"), "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains("holds no key for role 'b'") && msg.contains("countersign join --role b"),
        "{msg}"
    );
    assert!(msg.contains("This process used the home"), "{msg}");
    assert_eq!(files(&l.dir), before);
    assert!(ch.writer(&Role::new("b").unwrap()).unwrap().is_none());
}
