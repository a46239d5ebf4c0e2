//! `countersign mcp`'s background sync: a write through one machine's server
//! travels by itself, and what the other machine's background sync pulls in
//! wakes a waiting call there through the folder watcher; a failed sync shows
//! in channel_status and `status` until one succeeds; `--sync-every off`
//! keeps everything on the machine.

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

/// Polls `channel_status` through `c` until `f` holds of it or `secs` pass.
async fn status_until(
    c: &Client,
    secs: u64,
    f: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let end = tokio::time::Instant::now() + Duration::from_secs(secs);
    loop {
        let v = c.call("channel_status", json!({})).await.ok();
        if f(&v) || tokio::time::Instant::now() > end {
            return v;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_background_sync_shows_in_the_status_until_a_sync_succeeds() {
    let w = World::git(2, &ROLES);
    let b = &w.machines[1];
    b.ok(&["remote", "set", "git", "/nonexistent/remote.git"]);
    // No flag: the server syncs by default, a second after the write.
    let be = Client::spawn(&b.home, &b.dir, "backend").await;
    be.send("frontend", "while offline", "body").await;
    let v = status_until(&be, 20, |v| v.get("sync_failed").is_some()).await;
    let failed = &v["sync_failed"];
    let error = failed["error"].as_str().expect("the failure says why");
    assert!(error.contains("/nonexistent/remote.git"), "{v}");
    // git's words, on one line: its line breaks escaped.
    assert!(
        error.contains("does not appear to be a git repository"),
        "{v}"
    );
    assert!(!error.contains('\n'), "{v}");
    assert!(
        failed["at"].as_str().is_some_and(|t| t.ends_with('Z')),
        "{v}"
    );
    assert!(
        failed["fix"].as_str().unwrap().contains("countersign sync"),
        "{v}"
    );
    let text = String::from_utf8_lossy(&b.cli(&["--role", "backend", "status", "--text"]).stdout)
        .into_owned();
    let line = text
        .lines()
        .find(|l| l.starts_with("sync failed at "))
        .unwrap_or_else(|| panic!("no failure line in:\n{text}"));
    assert!(line.contains("/nonexistent/remote.git"), "{text}");
    be.close().await;
    // Once a sync succeeds, the line is gone.
    let target = w.remote.to_str().unwrap();
    b.ok(&["remote", "set", "git", target]);
    b.sync();
    // (exit 1: backend has unread mail; the report is what matters here)
    let out = b.cli(&["--role", "backend", "status"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["counts"].is_object(), "{v}");
    assert!(v.get("sync_failed").is_none(), "{v}");
    w.machines[0].sync();
    let topics = w.machines[0].inbox_topics("frontend");
    assert!(topics.contains(&"while offline".to_owned()), "{topics:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_sync_every_off_a_write_stays_on_the_machine() {
    let w = World::git(2, &ROLES);
    let (a, b) = (&w.machines[0], &w.machines[1]);
    let fe = Client::spawn_with(&a.home, &a.dir, "frontend", &["--sync-every", "off"]).await;
    fe.send("backend", "kept here", "body").await;
    // With sync on, this write would be on the remote a second from now.
    tokio::time::sleep(Duration::from_secs(4)).await;
    b.sync();
    let topics = b.inbox_topics("backend");
    assert!(!topics.contains(&"kept here".to_owned()), "{topics:?}");
    fe.close().await;
    a.sync();
    b.sync();
    assert!(b.inbox_topics("backend").contains(&"kept here".to_owned()));
}

/// The background syncs the servers logged (`COUNTERSIGN_LOG=info`) in `logs`.
fn syncs_logged(logs: &[std::path::PathBuf]) -> usize {
    logs.iter()
        .map(|p| {
            std::fs::read_to_string(p)
                .unwrap_or_default()
                .matches("background sync: committed")
                .count()
        })
        .sum()
}

#[test]
fn one_sync_serves_every_server_on_the_machine() {
    use std::process::{Command, Stdio};
    let w = World::git(2, &ROLES);
    let (a, b) = (&w.machines[0], &w.machines[1]);
    let logs: Vec<_> = ROLES
        .iter()
        .map(|r| w.tmp.path().join(format!("{r}.log")))
        .collect();
    let mut servers: Vec<_> = ROLES
        .iter()
        .zip(&logs)
        .map(|(role, log)| {
            Command::new(crate::common::bin())
                .env("COUNTERSIGN_HOME", &a.home)
                .env("COUNTERSIGN_LOG", "info")
                .env_remove("COUNTERSIGN_ROLE")
                .env_remove("COUNTERSIGN_CHANNEL")
                .args(["--channel", a.dir.to_str().unwrap(), "mcp", "--role", role])
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .stderr(std::fs::File::create(log).unwrap())
                .spawn()
                .unwrap()
        })
        .collect();
    // Both servers up and past their first round.
    std::thread::sleep(Duration::from_secs(4));
    let before = syncs_logged(&logs);
    // One write wakes both servers; one exchange with the remote serves them.
    a.send("frontend", "backend", "one write, one sync");
    std::thread::sleep(Duration::from_secs(7));
    let after = syncs_logged(&logs);
    for s in &mut servers {
        let _ = s.kill();
        let _ = s.wait();
    }
    assert_eq!(
        after - before,
        1,
        "{after} syncs logged, {before} before the write"
    );
    b.sync();
    let topics = b.inbox_topics("backend");
    assert!(
        topics.contains(&"one write, one sync".to_owned()),
        "{topics:?}"
    );
}

/// A session that writes and quits before the background sync's debounce
/// still publishes: the server syncs once more after its client leaves, so
/// the other machine sees the write without another session here.
#[test]
fn a_write_just_before_the_client_leaves_still_reaches_the_other_machine() {
    use std::io::{BufRead as _, BufReader, Write as _};
    use std::process::{Command, Stdio};
    let w = World::git(2, &ROLES);
    let (a, b) = (&w.machines[0], &w.machines[1]);
    let mut server = Command::new(crate::common::bin())
        .env("COUNTERSIGN_HOME", &a.home)
        .env_remove("COUNTERSIGN_ROLE")
        .env_remove("COUNTERSIGN_CHANNEL")
        .args([
            "--channel",
            a.dir.to_str().unwrap(),
            "mcp",
            "--role",
            "frontend",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = server.stdin.take().unwrap();
    let mut lines = BufReader::new(server.stdout.take().unwrap()).lines();
    let mut answer = |stdin: &mut std::process::ChildStdin, msg: serde_json::Value| {
        writeln!(stdin, "{msg}").unwrap();
        if msg.get("id").is_some() {
            let line = lines.next().unwrap().unwrap();
            assert!(line.contains("\"result\""), "{line}");
        }
    };
    answer(
        &mut stdin,
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}}),
    );
    answer(
        &mut stdin,
        serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    answer(
        &mut stdin,
        serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "send_message",
            "arguments": {"to": "backend", "topic": "sent on the way out", "body": "b"}}}),
    );
    // The client leaves at once, well within the debounce.
    drop(stdin);
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while server.try_wait().unwrap().is_none() {
        assert!(
            std::time::Instant::now() < deadline,
            "the server never exited"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    b.sync();
    let topics = b.inbox_topics("backend");
    assert!(
        topics.contains(&"sent on the way out".to_owned()),
        "{topics:?}"
    );
}
