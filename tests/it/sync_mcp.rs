//! `countersign mcp --sync-every`: a write through one machine's server
//! travels by itself, and what the other machine's background sync pulls in
//! wakes a waiting call there through the folder watcher.

use std::time::Duration;

use crate::common::Client;
use crate::common::machines::World;
use serde_json::json;

const ROLES: [&str; 2] = ["frontend", "backend"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_on_one_machine_wakes_a_wait_on_the_other_with_no_manual_sync() {
    let w = World::git(2, &ROLES);
    let (a, b) = (&w.machines[0], &w.machines[1]);
    let fe = Client::spawn_with(&a.home, &a.dir, "frontend", &["--sync-every", "1s"]).await;
    let be = Client::spawn_with(&b.home, &b.dir, "backend", &["--sync-every", "1s"]).await;
    let waiting = tokio::spawn(async move {
        // Rescans only every 60 s: before that, only the watcher can wake it.
        let v = be
            .call(
                "wait_for_mail",
                json!({"timeout_s": 50, "poll_interval_s": 60}),
            )
            .await
            .ok();
        (v, be)
    });
    fe.send("backend", "across machines", "sent through the server")
        .await;
    let (v, be) = tokio::time::timeout(Duration::from_secs(55), waiting)
        .await
        .expect("the wait answers")
        .unwrap();
    assert_eq!(v["timed_out"], false, "{v}");
    let inbox = be.call("read_inbox", json!({})).await.ok();
    assert!(inbox.to_string().contains("across machines"), "{inbox}");
    fe.close().await;
    be.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_background_sync_never_stops_the_server() {
    let w = World::git(2, &ROLES);
    let b = &w.machines[1];
    b.ok(&["remote", "set", "git", "/nonexistent/remote.git"]);
    let be = Client::spawn_with(&b.home, &b.dir, "backend", &["--sync-every", "200ms"]).await;
    for i in 0..3 {
        // Each write triggers a sync that fails; the tools keep answering.
        be.send("frontend", &format!("offline {i}"), "body").await;
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let status = be.call("channel_status", json!({})).await.ok();
    assert!(status.is_object());
    be.close().await;
    let target = w.remote.to_str().unwrap();
    b.ok(&["remote", "set", "git", target]);
    b.sync();
    w.machines[0].sync();
    let topics = w.machines[0].inbox_topics("frontend");
    assert!(topics.contains(&"offline 2".to_owned()), "{topics:?}");
}
