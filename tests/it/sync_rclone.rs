//! `countersign sync` through rclone with a local-backend remote
//! (`:local:/path`): separate homes and separate folders, the real binary and
//! the real rclone. These tests fail, never skip, when rclone is missing.

use crate::common;
use std::fs;

use crate::common::machines::{TWELVE, World};

const ROLES: [&str; 2] = ["frontend", "backend"];

#[test]
fn a_send_on_one_machine_reaches_the_other_and_both_converge() {
    let w = World::rclone(2, &ROLES);
    let (a, b) = (&w.machines[0], &w.machines[1]);
    assert!(
        b.inbox_topics("backend")
            .contains(&"hello from the owner".to_owned())
    );
    for i in 0..3 {
        a.send("frontend", "backend", &format!("from a {i}"));
        b.send("backend", "frontend", &format!("from b {i}"));
    }
    a.sync();
    b.sync();
    a.sync();
    assert_eq!(a.digest(), b.digest());
    let topics = a.inbox_topics("frontend");
    assert!(topics.contains(&"from b 2".to_owned()), "{topics:?}");
    w.settle();
}

#[test]
fn rclone_never_deletes_another_writers_file() {
    let w = World::rclone(2, &ROLES);
    let (a, b) = (&w.machines[0], &w.machines[1]);
    b.send("backend", "frontend", "b writes");
    b.sync();
    // A file only the remote holds (another writer's, not yet seen by anyone)
    // and B's feed, which A deletes from its own copy by mistake.
    let only_remote = w
        .remote
        .join("feeds/backend/elsewhere-000000/00000001.jsonl");
    fs::create_dir_all(only_remote.parent().unwrap()).unwrap();
    fs::write(&only_remote, "{\"not\":\"yet seen\"}\n").unwrap();
    a.sync();
    let b_feed = format!("feeds/backend/{}", b.device());
    fs::remove_dir_all(a.dir.join(&b_feed)).unwrap();
    a.send("frontend", "backend", "a writes");
    a.sync();
    assert!(
        only_remote.exists(),
        "a file present only on the remote survives"
    );
    assert!(
        w.remote.join(&b_feed).join("00000001.jsonl").exists(),
        "a local deletion never reaches the remote"
    );
    assert!(
        a.dir.join(&b_feed).join("00000001.jsonl").exists(),
        "and comes back down"
    );
    b.sync();
    assert!(b.inbox_topics("backend").contains(&"a writes".to_owned()));
}

#[test]
fn sealed_segments_go_up_immutable_and_own_feeds_never_come_down() {
    let w = World::rclone(2, &ROLES);
    let (a, b) = (&w.machines[0], &w.machines[1]);
    a.send("frontend", "backend", "one");
    a.sync();
    // The remote copy of A's own feed is damaged (a partial upload, a stray
    // edit): the next sync must not pull it over A's copy.
    let a_feed = format!("feeds/frontend/{}", a.device());
    let remote_seg = w.remote.join(&a_feed).join("00000001.jsonl");
    let local_seg = a.dir.join(&a_feed).join("00000001.jsonl");
    let good = fs::read(&local_seg).unwrap();
    fs::write(&remote_seg, b"garbage\n").unwrap();
    a.send("frontend", "backend", "two");
    a.sync();
    let now = fs::read(&local_seg).unwrap();
    assert!(
        now.starts_with(&good),
        "A's own feed was not overwritten from the remote"
    );
    assert_eq!(
        fs::read(&remote_seg).unwrap(),
        now,
        "the growing segment went up again"
    );
    b.sync();
    assert!(b.inbox_topics("backend").contains(&"two".to_owned()));
    assert_eq!(b.cli(&["verify"]).status.code(), Some(0));
}

#[test]
fn an_unreachable_remote_is_reported_and_the_channel_keeps_working() {
    let w = World::rclone(2, &ROLES);
    let a = &w.machines[0];
    a.ok(&["remote", "set", "rclone", "nosuchremote:chan"]);
    a.send("frontend", "backend", "offline");
    let out = a.cli(&["sync"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("nosuchremote:chan"), "names the remote: {err}");
    a.send("frontend", "backend", "still writing");
    assert_eq!(a.cli(&["verify"]).status.code(), Some(0));
    let target = format!(":local:{}", w.remote.display());
    a.ok(&["remote", "set", "rclone", &target]);
    a.sync();
    w.machines[1].sync();
    let topics = w.machines[1].inbox_topics("backend");
    assert!(topics.contains(&"offline".to_owned()) && topics.contains(&"still writing".to_owned()));
}

#[test]
fn the_remote_is_kept_per_device_and_shown() {
    let w = World::rclone(2, &ROLES);
    let (a, b) = (&w.machines[0], &w.machines[1]);
    let target = format!(":local:{}", w.remote.display());
    assert_eq!(a.ok(&["remote", "show"]).trim(), format!("rclone {target}"));
    assert_eq!(b.ok(&["remote", "show"]).trim(), format!("rclone {target}"));
    // The choice lives in the device's local config, never in the folder.
    let local = fs::read_dir(a.home.join("state"))
        .unwrap()
        .flatten()
        .map(|e| e.path().join("local.json"))
        .find(|p| p.exists())
        .expect("local.json");
    assert!(fs::read_to_string(local).unwrap().contains(&target));
    assert!(!w.remote.join("local.json").exists());
    // A fresh copy without a remote says so, with exit 1, and sync refuses.
    let c = common::machines::Machine {
        name: "C".into(),
        home: w.tmp.path().join("home-c"),
        dir: b.dir.clone(),
    };
    let out = c.cli(&["remote", "show"]);
    assert_eq!(out.status.code(), Some(1));
    let out = c.cli(&["sync"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("remote set"));
}

#[test]
fn sealed_segments_travel_gzip_compressed_through_rclone() {
    use countersign::core::hlc::Hlc;
    use countersign::core::ids::Role;
    use countersign::core::op::{Op, Send};
    use countersign::store::{Channel, ChannelDir, Home};

    let w = World::rclone(2, &ROLES);
    let (a, b) = (&w.machines[0], &w.machines[1]);
    // Enough records to seal the first segment of A's feed (500 per segment).
    {
        let mut ch =
            Channel::open(ChannelDir::open(&a.dir).unwrap(), Home::at(a.home.clone())).unwrap();
        let role = Role::new("frontend").unwrap();
        let start = countersign::store::now_ms() - 60_000;
        let mut run = ch.bulk(&role, start).unwrap();
        let mut seen = Hlc::default();
        for i in 0..600 {
            let op = Op::Send(Send {
                to: vec![Role::new("backend").unwrap()],
                topic: format!("bulk {i}"),
                body: "b".into(),
                decision_requested: true,
                ..Send::default()
            });
            seen = run.push(&op, start + i, seen).header.hlc;
        }
        run.flush().unwrap();
    }
    a.sync();
    let feed = format!("feeds/frontend/{}", a.device());
    for dir in [a.dir.join(&feed), w.remote.join(&feed)] {
        assert!(dir.join("00000001.jsonl.gz").exists(), "{}", dir.display());
        assert!(
            dir.join("00000501.jsonl").exists(),
            "the growing one stays plain"
        );
    }
    assert!(
        !a.dir.join(&feed).join("00000001.jsonl").exists(),
        "the plain form of a sealed segment is replaced locally"
    );
    b.sync();
    assert_eq!(a.digest(), b.digest());
    assert!(b.inbox_topics("backend").contains(&"bulk 599".to_owned()));
    assert_eq!(b.cli(&["verify"]).status.code(), Some(0));
}

#[test]
fn twelve_machines_writing_and_syncing_at_once_all_land_and_converge() {
    let roles = TWELVE;
    let w = World::rclone(roles.len(), &roles);
    // Every machine copies up and down at the same moments as the others:
    // copies meet files that other machines are replacing, and each sync
    // must still land.
    w.assert_contention_lands(&roles, 3);
}

#[test]
fn a_sync_with_nothing_new_copies_nothing_up_and_the_next_write_puts_back_what_the_remote_lost() {
    let w = World::rclone(2, &ROLES);
    let (a, b) = (&w.machines[0], &w.machines[1]);
    a.send("frontend", "backend", "one");
    assert!(a.sync().contains("published"));
    let head = w
        .remote
        .join(format!("feeds/frontend/{}", a.device()))
        .join("head.json");
    assert!(head.exists());
    // The remote loses a file of A's; A has written nothing since its last
    // copy up, so a sync only copies down.
    fs::remove_file(&head).unwrap();
    let out = a.sync();
    assert!(!out.contains("published"), "{out}");
    assert!(!head.exists(), "nothing went up");
    // A's next write copies everything up again, the lost file with it.
    a.send("frontend", "backend", "two");
    assert!(a.sync().contains("published"));
    assert!(head.exists(), "put back");
    b.sync();
    let topics = b.inbox_topics("backend");
    assert!(topics.contains(&"two".to_owned()), "{topics:?}");
}
