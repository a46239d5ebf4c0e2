//! Several processes write at once: two roles, and two processes of one role
//! sharing a feed. Nothing may be lost and every chain must stay intact.

use crate::common;
use crate::common::TestChannel;
use serde_json::json;

const EACH: usize = 500;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn four_processes_append_500_messages_each_without_loss() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    // Two processes per role: the same-role pair shares one feed and its lock.
    let clients = vec![
        (ch.client("frontend").await, "backend", "fe1"),
        (ch.client("frontend").await, "backend", "fe2"),
        (ch.client("backend").await, "frontend", "be1"),
        (ch.client("backend").await, "frontend", "be2"),
    ];
    let mut tasks = Vec::new();
    for (client, to, tag) in clients {
        tasks.push(tokio::spawn(async move {
            let mut ids = Vec::with_capacity(EACH);
            for i in 0..EACH {
                let v = client
                    .call("send_message", json!({"to": to, "topic": format!("{tag} {i}"), "body": format!("{tag} message {i}")}))
                    .await
                    .ok();
                ids.push(v["id"].as_str().unwrap().to_owned());
            }
            client.close().await;
            ids
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    let mut unique = all.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 4 * EACH, "every send got its own id");

    // Every message is in the index of a fresh reader…
    let reader = ch.client("frontend").await;
    let listed = reader
        .call(
            "list_messages",
            json!({"limit": 1000, "fields": ["id"], "from_role": "frontend"}),
        )
        .await
        .ok();
    assert_eq!(listed["result"].as_array().unwrap().len(), 2 * EACH);
    let listed = reader
        .call(
            "list_messages",
            json!({"limit": 1000, "fields": ["id"], "from_role": "backend"}),
        )
        .await
        .ok();
    assert_eq!(listed["result"].as_array().unwrap().len(), 2 * EACH);
    reader.close().await;

    // …and the files themselves verify: every signature and chain intact.
    let out = ch.cli(&["verify"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "verify failed: {text}");
    assert!(
        text.contains("0 problem(s), 0 feed(s) waiting — clean"),
        "{text}"
    );
    // 2000 sends + 2 feed_init + 2 admits.
    assert!(
        text.starts_with(&format!("{} records verified", 4 * EACH + 4)),
        "{text}"
    );
}

/// The first processes to open a fresh channel create its index together; none
/// of them may fail with "database is locked" (SQLite switches a new database
/// to WAL without waiting on its busy handler).
#[test]
fn processes_opening_a_fresh_channel_at_once_all_succeed() {
    for round in 0..8 {
        let ch = TestChannel::new(&["frontend", "backend"]);
        let children: Vec<_> = ["frontend", "backend", "frontend", "backend", "frontend"]
            .iter()
            .map(|role| {
                std::process::Command::new(common::bin())
                    .env("COUNTERSIGN_HOME", &ch.home)
                    .env_remove("COUNTERSIGN_ROLE")
                    .args(["inbox", "--role", role, "--channel"])
                    .arg(&ch.dir)
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .expect("the binary runs")
            })
            .collect();
        for child in children {
            let out = child.wait_with_output().expect("the child ends");
            assert!(
                out.status.success(),
                "round {round}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}
