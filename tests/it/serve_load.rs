//! Load on one `countersign serve`: eight sessions over streamable HTTP,
//! one per role, each making 500 tool calls at once with the others (sends
//! of debts, inbox reads, resolves of the debts addressed to it). Nothing
//! may fail, and the folder must hold exactly what the answers said: every
//! send once, every resolve once, and each role's open debts what was sent
//! to it minus what it resolved.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use serde_json::{Value, json};

use crate::common::serve::{Served, assert_verified, logged, token};
use crate::common::{Client, Reply, TestChannel};

/// The roles, one session each.
const ROLES: [&str; 8] = [
    "api", "web", "infra", "qa", "docs", "data", "ops", "security",
];
/// Calls per session.
const CALLS: usize = 500;

/// What one session did, as its answers told it.
#[derive(Default)]
struct Done {
    /// Debts sent: id → recipient.
    sent: BTreeMap<String, String>,
    /// Debts resolved (ids).
    resolved: BTreeSet<String>,
    /// Calls made.
    calls: usize,
}

/// A call that must succeed.
async fn ok(c: &Client, role: &str, tool: &str, args: Value) -> Value {
    match c.call(tool, args).await {
        Reply::Ok(v) => v,
        Reply::Refused { kind, message } => panic!("{role}: {tool} refused: {kind}: {message}"),
    }
}

/// One session's 500 calls: send a debt, read the inbox, list what it
/// owes, resolve one of those (or, with nothing owed yet, send again).
async fn session(c: Client, me: usize) -> Done {
    let role = ROLES[me];
    let mut done = Done::default();
    let mut owed: Vec<String> = Vec::new();
    let mut k = 0;
    while done.calls < CALLS {
        match done.calls % 4 {
            1 => {
                let inbox = ok(
                    &c,
                    role,
                    "read_inbox",
                    json!({"limit": 20, "fields": "headers"}),
                )
                .await;
                for m in inbox["result"].as_array().expect("inbox rows") {
                    let to = m["to"].to_string();
                    assert!(to.contains(role), "{role} read a message not for it: {m}");
                }
            }
            2 => {
                let open = ok(
                    &c,
                    role,
                    "open_obligations",
                    json!({"limit": 50, "fields": ["id"]}),
                )
                .await;
                owed = open["result"]
                    .as_array()
                    .expect("debt rows")
                    .iter()
                    .map(|m| m["id"].as_str().unwrap().to_owned())
                    .filter(|id| !done.resolved.contains(id))
                    .collect();
            }
            3 if !owed.is_empty() => {
                let id = owed.remove(0);
                let r = ok(&c, role, "resolve_message", json!({"message_id": id})).await;
                assert_eq!(r["already_resolved"], false, "{role}: {r}");
                done.resolved.insert(id);
            }
            _ => {
                // The others in turn, never itself.
                let to = ROLES[(me + 1 + k % (ROLES.len() - 1)) % ROLES.len()];
                k += 1;
                let r = ok(
                    &c,
                    role,
                    "send_message",
                    json!({"to": to, "topic": format!("{role} #{k}"),
                           "body": format!("load: debt {k} of {role} for {to}"),
                           "action_required": true}),
                )
                .await;
                let id = r["id"].as_str().expect("an id").to_owned();
                assert!(
                    done.sent.insert(id.clone(), to.to_owned()).is_none(),
                    "{role}: id {id} answered twice"
                );
            }
        }
        done.calls += 1;
    }
    c.close().await;
    done
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_sessions_of_500_calls_lose_and_duplicate_nothing() {
    let tc = TestChannel::new(&ROLES);
    let tokens: Vec<String> = ROLES.iter().map(|r| token(&tc.home, &tc.dir, r)).collect();
    let server = Served::start(&tc.home, &["--channel", tc.dir.to_str().unwrap()], &[]);

    let started = Instant::now();
    let mut tasks = Vec::new();
    for (me, t) in tokens.iter().enumerate() {
        let c = server.client(t).await;
        tasks.push(tokio::spawn(session(c, me)));
    }
    let mut done = Vec::new();
    for t in tasks {
        done.push(t.await.expect("a session panicked"));
    }
    let took = started.elapsed();
    let calls: usize = done.iter().map(|d| d.calls).sum();
    let sends: usize = done.iter().map(|d| d.sent.len()).sum();
    let resolves: usize = done.iter().map(|d| d.resolved.len()).sum();
    println!(
        "{calls} calls ({sends} sends, {resolves} resolves) over {} sessions in {:.1} s",
        ROLES.len(),
        took.as_secs_f64()
    );
    assert_eq!(calls, ROLES.len() * CALLS);

    // The folder, read by another process: exactly what the answers said.
    let log = logged(&tc.home, &tc.dir);
    for (me, d) in done.iter().enumerate() {
        let role = ROLES[me];
        let sends: Vec<_> = log
            .iter()
            .filter(|r| r.op == "send" && r.role == role)
            .collect();
        let ids: BTreeSet<&str> = sends.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids.len(), sends.len(), "{role}: a send recorded twice");
        let answered: BTreeSet<&str> = d.sent.keys().map(String::as_str).collect();
        assert_eq!(
            ids, answered,
            "{role}: the sends recorded are not the ones answered"
        );
        for r in &sends {
            assert_eq!(r.data["to"], json!([d.sent[&r.id]]), "{role}: {:?}", r.data);
            assert_eq!(r.data["action_required"], true);
        }
        let resolved: Vec<&str> = log
            .iter()
            .filter(|r| r.op == "resolve" && r.role == role)
            .map(|r| r.data["id"].as_str().expect("a resolve's id"))
            .collect();
        assert_eq!(
            resolved.len(),
            d.resolved.len(),
            "{role}: resolves recorded"
        );
        for id in &d.resolved {
            assert_eq!(
                resolved
                    .iter()
                    .filter(|full| full.starts_with(id.as_str()))
                    .count(),
                1,
                "{role}: resolve of {id}"
            );
        }
    }
    // Each role owes what was sent to it and it did not resolve.
    let probe = server.client(&tokens[0]).await;
    for (me, role) in ROLES.iter().enumerate() {
        let mut want: BTreeSet<String> = done
            .iter()
            .flat_map(|d| d.sent.iter())
            .filter(|(_, to)| to.as_str() == *role)
            .map(|(id, _)| id.clone())
            .collect();
        for id in &done[me].resolved {
            assert!(want.remove(id), "{role} resolved {id}, never sent to it");
        }
        let open = probe
            .call(
                "open_obligations",
                json!({"to_role": role, "limit": 1000, "fields": ["id"]}),
            )
            .await
            .rows();
        let got: BTreeSet<String> = open
            .iter()
            .map(|m| m["id"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(got, want, "{role}: open debts");
    }
    probe.close().await;
    assert!(server.stop().success());
    println!("{}", assert_verified(&tc.home, &tc.dir));
}
