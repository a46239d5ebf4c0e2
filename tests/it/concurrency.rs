//! Several processes write at once: two roles, and two processes of one role
//! sharing a feed. Nothing may be lost and every chain must stay intact.

use crate::common;
use crate::common::TestChannel;
use crate::common::raw::RawSession;
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

/// A stdio server answers a write before its index rows are committed (they
/// are committed while the client reads the answer). A server killed right
/// after answering may take those rows with it, but never the message: the
/// next process folds it from the feed, once.
#[tokio::test]
async fn a_server_killed_right_after_answering_a_send_loses_nothing() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    const ROUNDS: usize = 6;
    for round in 0..ROUNDS {
        let mut s = RawSession::start(&ch, "frontend").await;
        let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "send_message", "arguments": {
                "to": "backend", "topic": format!("killed {round}"),
                "body": "sent just before the server was killed"}}});
        s.line(call.to_string().as_bytes()).await;
        let answer = s.answer().await;
        // SIGKILL, at once: nothing runs after it, not even the commit.
        s.kill().await;
        assert_eq!(answer["id"], 1, "{answer}");
        assert_ne!(answer["result"]["isError"], true, "{answer}");
    }
    // The index the killed servers wrote to (one per machine, whatever the
    // role) has each message once.
    let out = ch.cli(&[
        "--role", "backend", "inbox", "--all", "--limit", "1000", "--json",
    ]);
    let expected: Vec<String> = (0..ROUNDS).map(|r| format!("killed {r}")).collect();
    assert_eq!(inbox_topics(&out), expected);
}

/// A client that stops reading its answers keeps the server from writing
/// the answer to its last write, which is when the server commits that
/// write's index rows. The idle server commits them anyway (its tidy, a
/// quarter of a second after the last call), so other processes of the
/// machine that write the index are not stopped by the stalled one.
#[tokio::test]
async fn a_client_that_stops_reading_does_not_hold_the_index_for_other_processes() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let mut s = RawSession::start(&ch, "frontend").await;
    let call = |id: i64, name: &str, arguments: serde_json::Value| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": name, "arguments": arguments}})
        .to_string()
    };
    // Two large bodies, so that a listing answers far more than a pipe holds.
    for id in 1..=2 {
        let big = call(
            id,
            "send_message",
            json!({"to": "backend", "topic": format!("big {id}"), "body": "x".repeat(200_000)}),
        );
        s.line(big.as_bytes()).await;
        assert_eq!(s.answer().await["id"], id);
    }
    let before = ch.feed_records();
    // From here on nothing is read: the first listing's answer fills the
    // pipe, and every later answer waits behind it, the write's included.
    for id in 3..=4 {
        s.line(call(id, "list_messages", json!({"limit": 10})).as_bytes())
            .await;
    }
    s.line(
        call(
            5,
            "send_message",
            json!({"to": "backend", "topic": "unanswered", "body": "its answer waits"}),
        )
        .as_bytes(),
    )
    .await;
    // The write is made (its record is published before it is answered);
    // its rows wait for the answer that cannot be written.
    for _ in 0..600 {
        if ch.feed_records() > before {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(ch.feed_records(), before + 1, "the server made the write");
    // Another process writes the index (a catch-up, then its own record).
    let mut other = tokio::process::Command::new(common::bin());
    other
        .env("COUNTERSIGN_HOME", &ch.home)
        .args([
            "--role",
            "backend",
            "send",
            "--to",
            "frontend",
            "--topic",
            "meanwhile",
        ])
        .args([
            "--body",
            "written while the other server's client reads nothing",
            "--channel",
        ])
        .arg(&ch.dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    let done = tokio::time::timeout(std::time::Duration::from_secs(60), other.output())
        .await
        .expect("the other process is not held up by the stalled server")
        .unwrap();
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    s.kill().await;
}

/// A run of writes a client sends without waiting (pipelined) shares one
/// open index transaction in its stdio server, which commits it once the
/// client has its answers and sends nothing more: another process of the
/// machine then reads every message, with nothing more asked of the server.
#[tokio::test]
async fn a_run_of_pipelined_sends_is_committed_once_the_client_goes_quiet() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let mut s = RawSession::start(&ch, "frontend").await;
    const SENDS: i64 = 5;
    let mut lines = String::new();
    for id in 1..=SENDS {
        lines.push_str(
            &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
                "name": "send_message", "arguments": {
                    "to": "backend", "topic": format!("run {id}"), "body": "one of a run"}}})
            .to_string(),
        );
        lines.push('\n');
    }
    // All at once: each write after the first finds the run open.
    s.line(lines.trim_end().as_bytes()).await;
    for id in 1..=SENDS {
        let answer = s.answer().await;
        assert_eq!(answer["id"], id, "{answer}");
        assert_ne!(answer["result"]["isError"], true, "{answer}");
    }
    // Another process: its catch-up needs the index lock the run holds
    // until it is committed, so it answers only once the run is.
    let mut reader = tokio::process::Command::new(common::bin());
    reader
        .env("COUNTERSIGN_HOME", &ch.home)
        .args(["--role", "backend", "inbox", "--all", "--json", "--channel"])
        .arg(&ch.dir)
        .stderr(std::process::Stdio::piped());
    let out = tokio::time::timeout(std::time::Duration::from_secs(60), reader.output())
        .await
        .expect("the run is committed without another call")
        .unwrap();
    let expected: Vec<String> = (1..=SENDS).map(|id| format!("run {id}")).collect();
    assert_eq!(inbox_topics(&out), expected);
    s.kill().await;
}

/// The topics of `inbox --json`'s messages, sorted; the command must have
/// succeeded.
fn inbox_topics(out: &std::process::Output) -> Vec<String> {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut topics: Vec<String> = v["result"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["topic"].as_str().map(str::to_owned))
        .collect();
    topics.sort_unstable();
    topics
}
