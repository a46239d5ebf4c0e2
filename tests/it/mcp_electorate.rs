//! The electorate of a proposal and the votes on it, case by case: who is counted, who
//! owes a decision, what a void does, how votes are recorded, and that two sessions racing
//! on one machine still write one version per approval and one round per key.

use crate::common;
use crate::common::{Client, TestChannel, counter, ids};
use serde_json::{Value, json};

const ROLES: &[&str] = &["alpha", "beta", "gamma", "delta"];

async fn round(c: &Client, key: &str, voters: Value) -> String {
    c.send_with(
        json!("*"),
        &format!("round on {key}"),
        &format!("the {key} text"),
        json!({"kind": "proc", "pin_key": key, "about_message_id": null, "voters": voters}),
    )
    .await
}

async fn vote(c: &Client, id: &str, decision: &str) -> Value {
    c.call(
        "acknowledge",
        json!({"message_id": id, "decision": decision}),
    )
    .await
    .ok()
}

async fn headers(c: &Client, id: &str) -> Value {
    c.call(
        "get_acknowledgements",
        json!({"message_id": id, "fields": "headers"}),
    )
    .await
    .ok()
}

async fn awaiting(c: &Client, role: &str) -> Vec<String> {
    ids(&c
        .call("awaiting_ack", json!({"to_role": role}))
        .await
        .rows())
}

fn pin(key: &str, approved_by: &str) -> Value {
    json!({"key": key, "title": "t", "version": "1", "body": "agreed text",
           "approved_by": approved_by})
}

#[tokio::test]
async fn declared_voters_scope_the_decision_not_the_audience() {
    let ch = TestChannel::new(ROLES);
    let a = ch.client("alpha").await;
    let b = ch.client("beta").await;
    let g = ch.client("gamma").await;
    let p = round(&a, "api", json!(["beta"])).await;
    // Everyone reads it; only beta owes a decision.
    let row = a
        .all_messages()
        .await
        .into_iter()
        .find(|r| r["id"] == p.as_str())
        .unwrap();
    assert_eq!(row["to"], json!(["beta", "delta", "gamma"]));
    assert_eq!(awaiting(&a, "beta").await, vec![p.clone()]);
    assert!(
        awaiting(&a, "gamma").await.is_empty(),
        "an outsider owes nothing"
    );
    let st = g.call("channel_status", json!({})).await.ok();
    assert_eq!(counter(&st, "awaiting_ack"), 0);
    // An outsider's vote is shown, not counted, and cannot approve.
    vote(&g, &p, "agree").await;
    let t = headers(&a, &p).await;
    assert_eq!(t["from_non_voters"], json!({"gamma": "agree"}));
    assert_eq!(
        (t["agreed"].clone(), t["needed"].clone()),
        (json!(0), json!(1))
    );
    a.call("pin_set", pin("api", &p))
        .await
        .value_error("still lacks 'agree' from ['beta']");
    // The declared electorate closes the round without the others.
    vote(&b, &p, "agree").await;
    a.call("pin_set", pin("api", &p)).await.ok();
    // voters is projectable.
    let rows = a
        .call(
            "list_messages",
            json!({"fields": ["id", "voters", "pin_key"]}),
        )
        .await
        .rows();
    let r = rows.iter().find(|r| r["id"] == p.as_str()).unwrap();
    assert_eq!(r["voters"], json!(["beta"]));
    assert_eq!(r.as_object().unwrap().len(), 3);
}

#[tokio::test]
async fn every_role_is_needed_when_voters_are_not_declared() {
    let ch = TestChannel::new(ROLES);
    let a = ch.client("alpha").await;
    let b = ch.client("beta").await;
    let g = ch.client("gamma").await;
    let d = ch.client("delta").await;
    // Voters '*' names every other role; a prose proposal (no pin_key) needs them all too.
    let p = round(&a, "style", json!("*")).await;
    assert_eq!(
        headers(&a, &p).await["voters"],
        json!(["beta", "delta", "gamma"])
    );
    let prose = a
        .send_with(
            json!("beta"),
            "glossary change",
            "the glossary gains one word",
            json!({"kind": "proc", "pin_key": null, "about_message_id": null}),
        )
        .await;
    vote(&b, &prose, "agree").await;
    let t = headers(&a, &prose).await;
    assert_eq!(
        (t["agreed"].clone(), t["needed"].clone()),
        (json!(1), json!(1))
    );
    a.call("pin_set", pin("glossary", &prose))
        .await
        .value_error("ALL roles: proposal");
    vote(&g, &prose, "agree").await;
    vote(&d, &prose, "agree").await;
    // Any role may apply the pin once the rule holds.
    d.call("pin_set", pin("glossary", &prose)).await.ok();
}

#[tokio::test]
async fn only_a_voters_void_ends_a_round() {
    let ch = TestChannel::new(ROLES);
    let a = ch.client("alpha").await;
    let b = ch.client("beta").await;
    let g = ch.client("gamma").await;
    let p = round(&a, "k", json!(["beta"])).await;
    // The author's void and a bystander's void are recorded and end nothing.
    vote(&g, &p, "void").await;
    let t = headers(&b, &p).await;
    assert!(t.get("declared_dead_by").is_none(), "{t}");
    assert_eq!(t["from_non_voters"], json!({"gamma": "void"}));
    assert_eq!(awaiting(&a, "beta").await, vec![p.clone()]);
    // A void from the electorate: three views agree the round is dead.
    vote(&b, &p, "void").await;
    let t = headers(&a, &p).await;
    assert_eq!(t["declared_dead_by"], json!(["beta"]));
    assert_eq!(t["agreed"], 0, "a void is never agreement");
    assert!(awaiting(&a, "beta").await.is_empty());
    round(&g, "k", json!("*")).await;
    // A void on an older text no longer closes anything after a revision.
    let q = round(&a, "k2", json!(["beta"])).await;
    vote(&b, &q, "void").await;
    a.call(
        "revise_message",
        json!({"message_id": q, "body": "reworded"}),
    )
    .await
    .ok();
    let t = headers(&a, &q).await;
    assert!(t.get("declared_dead_by").is_none());
    assert_eq!(t["quenched_by_revision"], json!({"beta": "void"}));
    g.call(
        "send_message",
        json!({"to": "*", "topic": "t", "body": "b", "kind": "proc", "pin_key": "k2",
               "about_message_id": null, "voters": "*"}),
    )
    .await
    .value_error("already has an open round");
}

#[tokio::test]
async fn a_vote_is_one_row_per_role_that_a_new_call_replaces() {
    let ch = TestChannel::new(ROLES);
    let a = ch.client("alpha").await;
    let b = ch.client("beta").await;
    let p = round(&a, "k", json!(["beta"])).await;
    let v = b
        .call(
            "acknowledge",
            json!({"message_id": p, "decision": "reject", "note": "too broad"}),
        )
        .await
        .ok();
    assert_eq!(v["note"], "too broad");
    assert!(v["created_at"].as_str().unwrap().ends_with('Z'));
    assert_eq!(v["superseded"], json!([]));
    vote(&b, &p, "agree").await;
    vote(&b, &p, "agree").await;
    let full = a
        .call("get_acknowledgements", json!({"message_id": p}))
        .await
        .ok();
    let acks = full["acknowledgements"].as_array().unwrap();
    assert_eq!(acks.len(), 1, "one row per role: {acks:?}");
    assert_eq!(acks[0]["decision"], "agree");
    assert_eq!(
        acks[0]["note"],
        Value::Null,
        "a new call replaces the note too"
    );
    assert_eq!(acks[0]["stale"], false);
    assert_eq!(full["roles_source"], "channel-registry");
    b.call(
        "acknowledge",
        json!({"message_id": "abcdef000000", "decision": "agree"}),
    )
    .await
    .value_error("not found");
    b.call(
        "acknowledge",
        json!({"message_id": p, "decision": "agree", "note": "x".repeat(4001)}),
    )
    .await
    .value_error("'note' must be <= 4000 characters");
    // Any kind may be voted on; only proposals carry a tally in listings.
    let plain = a.send("beta", "plain", "plain").await;
    vote(&b, &plain, "agree").await;
    assert_eq!(headers(&a, &plain).await["agreed"], 1);
}

#[tokio::test]
async fn awaiting_ack_rows_carry_digests_acks_and_the_debt_side() {
    let ch = TestChannel::new(ROLES);
    let a = ch.client("alpha").await;
    let b = ch.client("beta").await;
    let p = a
        .send_with(
            json!("beta"),
            "decide and do",
            "both a vote and a debt",
            json!({"kind": "proc", "pin_key": null, "about_message_id": null,
                   "action_required": true}),
        )
        .await;
    b.call(
        "resolve_message",
        json!({"message_id": p, "resolution_note": "done"}),
    )
    .await
    .ok();
    a.call("confirm_resolution", json!({"message_id": p}))
        .await
        .ok();
    let v = b
        .call("awaiting_ack", json!({"fields": "headers"}))
        .await
        .ok();
    let row = &v["result"][0];
    assert_eq!(row["id"], p.as_str());
    assert_eq!(
        row["obligation"],
        json!({"status": "resolved", "resolved_by": "beta",
               "resolved_at": row["obligation"]["resolved_at"], "confirmed": true})
    );
    assert_eq!(
        row["acks"],
        json!({"agreed": 0, "needed": 1, "missing": ["beta"]})
    );
    assert_eq!(
        row["body_sha256"],
        common::sha256_hex("both a vote and a debt")
    );
    assert!(row.get("body").is_none());
    assert!(v["generated_at"].as_str().unwrap().ends_with('Z'));
    let many = b
        .call("awaiting_ack", json!({"limit": 0}))
        .await
        .value_error("'limit' must be between 1 and 1000");
    assert!(many.contains("got 0"));
}

#[tokio::test]
async fn sessions_racing_on_one_machine_spend_an_approval_once_and_open_one_round() {
    let ch = TestChannel::new(ROLES);
    let a = ch.client("alpha").await;
    let a2 = ch.client("alpha").await;
    let b = ch.client("beta").await;
    let g = ch.client("gamma").await;
    for i in 0..5 {
        let key = format!("race{i}");
        // Two sessions try to open a round on one key at once: exactly one succeeds.
        let args = |who: &str| {
            json!({"to": "*", "topic": format!("{who} on {key}"), "body": "b", "kind": "proc",
                   "pin_key": key, "about_message_id": null, "voters": "*"})
        };
        let (x, y) = tokio::join!(
            b.call("send_message", args("beta")),
            g.call("send_message", args("gamma"))
        );
        let won: Vec<_> = [x, y]
            .into_iter()
            .filter_map(|r| match r {
                common::Reply::Ok(v) => Some(v["id"].as_str().unwrap().to_owned()),
                common::Reply::Refused { message, .. } => {
                    assert!(message.contains("already has an open round"), "{message}");
                    None
                }
            })
            .collect();
        assert_eq!(won.len(), 1, "one round per key");
        let p = round(&a, &format!("pin{i}"), json!(["beta"])).await;
        vote(&b, &p, "agree").await;
        // Two sessions of one role write with the same approval at once: one version.
        let (x, y) = tokio::join!(
            a.call("pin_set", pin(&format!("pin{i}"), &p)),
            a2.call("pin_set", pin(&format!("pin{i}"), &p))
        );
        let ok = [x, y]
            .into_iter()
            .filter(|r| matches!(r, common::Reply::Ok(_)))
            .count();
        assert_eq!(ok, 1, "one approval, one version");
        let hist = a
            .call("pin_history", json!({"key": format!("pin{i}")}))
            .await
            .rows();
        assert_eq!(hist.len(), 1);
    }
}
