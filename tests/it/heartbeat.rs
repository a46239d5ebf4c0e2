//! Heartbeats: a long-running server rewrites its device's signed head while
//! the device writes nothing, so another machine settles the newest items
//! within a sync period instead of waiting for the next record or for the
//! device to count as away (10 minutes).

use std::path::Path;
use std::time::{Duration, Instant};

use crate::common::machines::{Machine, World};
use crate::common::{Client, bin};
use serde_json::{Value, json};

const ROLES: [&str; 2] = ["frontend", "backend"];

/// Every record line under `feeds/<role>/` of a channel folder.
fn records(dir: &Path, role: &str) -> usize {
    let mut n = 0;
    for device in std::fs::read_dir(dir.join("feeds").join(role)).unwrap() {
        for f in std::fs::read_dir(device.unwrap().path()).unwrap() {
            let p = f.unwrap().path();
            if p.extension().is_some_and(|e| e == "jsonl") {
                n += std::fs::read_to_string(&p).unwrap().lines().count();
            }
        }
    }
    n
}

/// The whole memory view (every page) as text.
async fn view(c: &Client) -> String {
    let mut text = String::new();
    let mut offset = json!(0);
    loop {
        let page = c
            .call("memory_view", json!({ "offset": offset }))
            .await
            .ok();
        text.push_str(&page.to_string());
        match &page["next_offset"] {
            Value::Null => return text,
            next => offset = next.clone(),
        }
    }
}

/// Sends from `fe` and waits, up to 15 s, for the item in `be`'s memory view.
async fn enters_the_other_memory_within_seconds(fe: &Client, be: &Client, topic: &str) {
    fe.send("backend", topic, "the newest item").await;
    let sent = Instant::now();
    // Without a heartbeat the item stays tentative on B until A writes again
    // or counts as away (10 minutes). With one it takes a few sync periods
    // of 1 s each way (A's push, B's pull, the beat's push and pull): 2–4 s
    // on a quiet machine, over 5 s on a loaded one, so the bound leaves room.
    let bound = Duration::from_secs(15);
    let mut seen = String::new();
    while sent.elapsed() < bound {
        seen = view(be).await;
        if seen.contains(topic) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!(
        "not in B's memory view {:?} after the send: {seen}",
        sent.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_item_written_on_one_machine_enters_the_others_memory_within_seconds() {
    let w = World::git(2, &ROLES);
    let (a, b) = (&w.machines[0], &w.machines[1]);
    let fe = Client::spawn_with(&a.home, &a.dir, "frontend", &["--sync-every", "1s"]).await;
    let be = Client::spawn_with(&b.home, &b.dir, "backend", &["--sync-every", "1s"]).await;
    let before = records(&a.dir, "frontend");
    enters_the_other_memory_within_seconds(&fe, &be, "heard across machines").await;
    // Nothing but the message was written: the heartbeat is the head alone.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(records(&a.dir, "frontend"), before + 1);
    let device = std::fs::read_dir(a.dir.join("feeds/frontend"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let head = std::fs::read_to_string(device.join("head.json")).unwrap();
    assert!(head.contains("\"as_of\":"), "{head}");
    fe.close().await;
    be.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_plain_shared_folder_an_item_enters_the_others_memory_within_seconds() {
    // Two homes, one folder, no remote: the heartbeat needs no sync.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("channel");
    let machine = |name: &str, home: &str| Machine {
        name: name.into(),
        home: tmp.path().join(home),
        dir: dir.clone(),
    };
    let (a, b) = (
        machine("machine A", "home-a"),
        machine("machine B", "home-b"),
    );
    let init = std::process::Command::new(bin())
        .env("COUNTERSIGN_HOME", &a.home)
        .env_remove("COUNTERSIGN_CHANNEL")
        .args(["init", dir.to_str().unwrap(), "--roles", "frontend,backend"])
        .output()
        .unwrap();
    assert!(init.status.success(), "{init:?}");
    b.join_via(&a, "backend");
    a.send("frontend", "backend", "from A");
    b.send("backend", "frontend", "from B");
    let fe = Client::spawn_with(&a.home, &dir, "frontend", &["--sync-every", "1s"]).await;
    let be = Client::spawn_with(&b.home, &dir, "backend", &["--sync-every", "1s"]).await;
    enters_the_other_memory_within_seconds(&fe, &be, "heard in one folder").await;
    fe.close().await;
    be.close().await;
}
