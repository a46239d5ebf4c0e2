//! The debt lifecycle over a real MCP client: resolve, confirm, reopen with every refusal,
//! confirmation per resolution, author withdrawal, delete along the lifecycle,
//! message_history and the note limit.

use crate::common::{Client, TestChannel, ids, is_rfc3339_ms, status_items};
use serde_json::{Value, json};

/// Sends a debt (`action_required`) and returns its id.
async fn debt(from: &Client, to: &str, topic: &str) -> String {
    from.send_with(json!(to), topic, "owed", json!({"action_required": true}))
        .await
}

/// The `[event, role, note]` of each history entry.
async fn history(c: &Client, id: &str) -> Vec<(String, String, Option<String>)> {
    c.call("message_history", json!({"message_id": id}))
        .await
        .rows()
        .iter()
        .map(|e| {
            (
                e["event"].as_str().unwrap().to_owned(),
                e["role"].as_str().unwrap().to_owned(),
                e["note"].as_str().map(str::to_owned),
            )
        })
        .collect()
}

fn ev(event: &str, role: &str, note: Option<&str>) -> (String, String, Option<String>) {
    (event.to_owned(), role.to_owned(), note.map(str::to_owned))
}

/// The ids in one of channel_status's lists.
async fn status_list(c: &Client, list: &str) -> Vec<String> {
    let v = c.call("channel_status", json!({})).await.ok();
    ids(status_items(&v, list))
}

/// The row of one message as list_messages shows it.
async fn row(c: &Client, id: &str) -> Value {
    c.all_messages()
        .await
        .into_iter()
        .find(|r| r["id"] == id)
        .unwrap_or_else(|| panic!("message {id} not listed"))
}

#[tokio::test]
async fn resolve_confirm_reopen_refusals_and_repeats_write_nothing() {
    let ch = TestChannel::new(&["frontend", "backend", "infra"]);
    let fe = ch.client("frontend").await;
    let be = ch.client("backend").await;
    let inf = ch.client("infra").await;
    let d = debt(&fe, "backend", "build the endpoint").await;
    let plain = fe.send("backend", "fyi", "no debt").await;
    inf.send("frontend", "infra writes once", "x").await;
    be.send("frontend", "backend writes once", "x").await;
    let before = ch.feed_records();

    // A third role may do none of it.
    for tool in ["resolve_message", "confirm_resolution", "reopen_message"] {
        inf.call(tool, json!({"message_id": d}))
            .await
            .permission_error("not a party");
    }
    // Not a debt: nothing to resolve, confirm or reopen.
    be.call("resolve_message", json!({"message_id": plain}))
        .await
        .value_error("has action_required=false, nothing to resolve");
    fe.call("confirm_resolution", json!({"message_id": plain}))
        .await
        .value_error("has action_required=false, nothing to confirm");
    fe.call("reopen_message", json!({"message_id": plain}))
        .await
        .value_error("action_required=false");
    // Confirm before any resolve.
    for c in [&fe, &be] {
        c.call("confirm_resolution", json!({"message_id": d}))
            .await
            .value_error("is not resolved — confirm_resolution follows resolve_message");
    }
    // Unknown ids.
    for tool in [
        "resolve_message",
        "confirm_resolution",
        "reopen_message",
        "message_history",
    ] {
        fe.call(tool, json!({"message_id": "abcdef123456"}))
            .await
            .value_error("not found");
    }
    // Reopening an open debt is a no-op.
    let v = be
        .call("reopen_message", json!({"message_id": d}))
        .await
        .ok();
    assert_eq!(v, json!({"id": d, "status": "open", "already_open": true}));
    assert_eq!(
        ch.feed_records(),
        before,
        "refusals and repeats write nothing"
    );

    // The addressee resolves.
    let v = be
        .call(
            "resolve_message",
            json!({"message_id": d, "resolution_note": "shipped"}),
        )
        .await
        .ok();
    assert_eq!(v["id"], d);
    assert_eq!(v["status"], "resolved");
    assert_eq!(v["resolved_by"], "backend");
    assert!(is_rfc3339_ms(v["resolved_at"].as_str().unwrap()), "{v}");
    assert_eq!(v["resolution_note"], "shipped");
    assert_eq!(v["already_resolved"], false);
    assert_eq!(v["unblocked"], json!([]));
    assert_eq!(ch.feed_records(), before + 1);
    let first_at = v["resolved_at"].clone();

    // Resolving again, by either party, keeps the first resolution and writes nothing.
    for c in [&be, &fe] {
        let v = c
            .call(
                "resolve_message",
                json!({"message_id": d, "resolution_note": "again"}),
            )
            .await
            .ok();
        assert_eq!(v["already_resolved"], true, "{v}");
        assert_eq!(v["resolved_by"], "backend");
        assert_eq!(v["resolved_at"], first_at);
        assert!(v.get("unblocked").is_none(), "{v}");
    }
    assert_eq!(ch.feed_records(), before + 1);

    // The resolver cannot confirm; a third role cannot either.
    be.call("confirm_resolution", json!({"message_id": d}))
        .await
        .permission_error("cannot also confirm");
    inf.call("confirm_resolution", json!({"message_id": d}))
        .await
        .permission_error("not a party");
    // The author sees it waiting for confirmation; the resolver does not.
    let v = fe.call("channel_status", json!({})).await.ok();
    assert_eq!(
        v["resolved_for_you"],
        json!([{"id": d, "topic": "build the endpoint", "resolved_by": "backend",
                "resolved_at": first_at, "resolution_note": "shipped"}])
    );
    assert_eq!(v["counts"]["resolved_for_you"], 1);
    assert!(status_list(&be, "resolved_for_you").await.is_empty());
    assert!(status_list(&inf, "resolved_for_you").await.is_empty());
    assert_eq!(ch.feed_records(), before + 1);

    let v = fe
        .call(
            "confirm_resolution",
            json!({"message_id": d, "note": "verified"}),
        )
        .await
        .ok();
    assert_eq!(v, json!({"id": d, "already_confirmed": false}));
    assert_eq!(ch.feed_records(), before + 2);
    let v = fe
        .call("confirm_resolution", json!({"message_id": d}))
        .await
        .ok();
    assert_eq!(v, json!({"id": d, "already_confirmed": true}));
    // The resolver is still refused, before the repeat is considered.
    be.call("confirm_resolution", json!({"message_id": d}))
        .await
        .permission_error("cannot also confirm");
    assert_eq!(ch.feed_records(), before + 2);
    assert!(status_list(&fe, "resolved_for_you").await.is_empty());

    // Reopen after confirmation: the resolution is cleared, the work status untouched.
    be.call(
        "set_work_status",
        json!({"message_id": d, "work_status": "in_progress"}),
    )
    .await
    .ok();
    let v = fe
        .call(
            "reopen_message",
            json!({"message_id": d, "reason": "500 on empty input"}),
        )
        .await
        .ok();
    assert_eq!(v, json!({"id": d, "status": "open", "already_open": false}));
    let r = row(&fe, &d).await;
    assert_eq!(r["status"], "open");
    assert_eq!(
        (&r["resolved_by"], &r["resolved_at"], &r["resolution_note"]),
        (&Value::Null, &Value::Null, &Value::Null)
    );
    assert_eq!(r["work_status"], "in_progress");
    let n = ch.feed_records();
    let v = be
        .call("reopen_message", json!({"message_id": d}))
        .await
        .ok();
    assert_eq!(v["already_open"], true);
    assert_eq!(ch.feed_records(), n);
    assert!(ids(&be.call("open_obligations", json!({})).await.rows()).contains(&d));

    // A new resolution needs a new confirmation.
    fe.call("confirm_resolution", json!({"message_id": d}))
        .await
        .value_error("is not resolved");
    be.call(
        "resolve_message",
        json!({"message_id": d, "resolution_note": "fixed"}),
    )
    .await
    .ok();
    let v = fe.call("channel_status", json!({})).await.ok();
    assert_eq!(
        ids(v["resolved_for_you"].as_array().unwrap()),
        vec![d.clone()]
    );
    assert_eq!(v["resolved_for_you"][0]["resolution_note"], "fixed");
    let v = fe
        .call("confirm_resolution", json!({"message_id": d}))
        .await
        .ok();
    assert_eq!(
        v["already_confirmed"], false,
        "the old confirmation does not carry over"
    );
    assert_eq!(
        history(&inf, &d).await,
        vec![
            ev("resolve", "backend", Some("shipped")),
            ev("resolution_confirmed", "frontend", Some("verified")),
            ev("work_status:in_progress", "backend", None),
            ev("reopen", "frontend", Some("500 on empty input")),
            ev("resolve", "backend", Some("fixed")),
            ev("resolution_confirmed", "frontend", None),
        ]
    );
    for c in [fe, be, inf] {
        c.close().await;
    }
}

#[tokio::test]
async fn an_author_withdrawal_waits_for_the_addressee() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let fe = ch.client("frontend").await;
    let be = ch.client("backend").await;
    let d = debt(&fe, "backend", "maybe later").await;
    assert_eq!(
        ids(&be.call("open_obligations", json!({})).await.rows()),
        vec![d.clone()]
    );

    let v = fe
        .call(
            "resolve_message",
            json!({"message_id": d, "resolution_note": "withdrawn"}),
        )
        .await
        .ok();
    assert_eq!(v["resolved_by"], "frontend");
    assert!(
        be.call("open_obligations", json!({}))
            .await
            .rows()
            .is_empty(),
        "no longer owed"
    );
    let v = be.call("channel_status", json!({})).await.ok();
    assert_eq!(v["resolved_for_you"][0]["id"], d);
    assert_eq!(v["resolved_for_you"][0]["resolved_by"], "frontend");
    assert_eq!(v["resolved_for_you"][0]["resolution_note"], "withdrawn");
    assert!(status_list(&fe, "resolved_for_you").await.is_empty());

    fe.call("confirm_resolution", json!({"message_id": d}))
        .await
        .permission_error("cannot also confirm");
    be.call("confirm_resolution", json!({"message_id": d}))
        .await
        .ok();
    assert!(status_list(&be, "resolved_for_you").await.is_empty());
    fe.close().await;
    be.close().await;
}

#[tokio::test]
async fn delete_follows_the_debt_lifecycle() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let fe = ch.client("frontend").await;
    let be = ch.client("backend").await;
    let d = debt(&fe, "backend", "to delete").await;
    be.send("frontend", "backend writes once", "x").await;
    let before = ch.feed_records();
    for c in [&fe, &be] {
        c.call("delete_message", json!({"message_id": d}))
            .await
            .value_error("open obligation");
    }
    be.call("resolve_message", json!({"message_id": d}))
        .await
        .ok();
    for c in [&fe, &be] {
        c.call("delete_message", json!({"message_id": d}))
            .await
            .value_error("resolved but not yet confirmed");
    }
    fe.call("confirm_resolution", json!({"message_id": d}))
        .await
        .ok();
    // Reopened and resolved again: the verification window is open again.
    be.call("reopen_message", json!({"message_id": d}))
        .await
        .ok();
    for c in [&fe, &be] {
        c.call("delete_message", json!({"message_id": d}))
            .await
            .value_error("open obligation");
    }
    fe.call(
        "resolve_message",
        json!({"message_id": d, "resolution_note": "withdrawn"}),
    )
    .await
    .ok();
    for c in [&fe, &be] {
        c.call("delete_message", json!({"message_id": d}))
            .await
            .value_error("not yet confirmed");
    }
    assert_eq!(
        ch.feed_records(),
        before + 4,
        "only the four lifecycle steps were written"
    );
    be.call("confirm_resolution", json!({"message_id": d}))
        .await
        .ok();
    let v = be
        .call("delete_message", json!({"message_id": d}))
        .await
        .ok();
    assert_eq!(v["deleted"], true);
    // Afterwards every lifecycle tool says "not found".
    for tool in [
        "resolve_message",
        "confirm_resolution",
        "reopen_message",
        "message_history",
        "delete_message",
    ] {
        fe.call(tool, json!({"message_id": d}))
            .await
            .value_error("not found");
    }
    fe.call(
        "set_work_status",
        json!({"message_id": d, "work_status": "done_local"}),
    )
    .await
    .value_error("not found");
    fe.close().await;
    be.close().await;
}

#[tokio::test]
async fn message_history_tells_who_when_and_why() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let fe = ch.client("frontend").await;
    let be = ch.client("backend").await;
    let d = fe
        .send_with(
            json!("backend"),
            "tagged",
            "owed",
            json!({"action_required": true, "work_status": "needs_you"}),
        )
        .await;
    be.call(
        "set_work_status",
        json!({"message_id": d, "work_status": "in_progress"}),
    )
    .await
    .ok();
    be.call(
        "set_work_status",
        json!({"message_id": d, "work_status": "done_local", "note": "merged in #42"}),
    )
    .await
    .ok();
    fe.call(
        "set_work_status",
        json!({"message_id": d, "work_status": "done"}),
    )
    .await
    .ok();
    be.call("resolve_message", json!({"message_id": d}))
        .await
        .ok();
    let rows = be
        .call("message_history", json!({"message_id": d}))
        .await
        .rows();
    let got: Vec<_> = rows
        .iter()
        .map(|e| {
            (
                e["event"].as_str().unwrap(),
                e["role"].as_str().unwrap(),
                e["note"].as_str(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (
                "work_status:needs_you",
                "frontend",
                Some("set at send time")
            ),
            ("work_status:in_progress", "backend", None),
            ("work_status:done_local", "backend", Some("merged in #42")),
            ("work_status:done", "frontend", None),
            ("resolve", "backend", None),
        ]
    );
    let mut last = String::new();
    for e in &rows {
        assert_eq!(e["message_id"], d);
        let at = e["created_at"].as_str().unwrap();
        assert!(is_rfc3339_ms(at) && at >= last.as_str(), "{rows:?}");
        last = at.to_owned();
        let keys: Vec<&str> = e.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys.len(), 5, "{e}");
    }
    // A message without lifecycle has an empty history; a plain message too.
    let plain = fe.send("backend", "plain", "x").await;
    assert!(
        fe.call("message_history", json!({"message_id": plain}))
            .await
            .rows()
            .is_empty()
    );
    fe.close().await;
    be.close().await;
}

#[tokio::test]
async fn notes_over_4000_characters_are_refused_on_every_tool_that_takes_one() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let fe = ch.client("frontend").await;
    let be = ch.client("backend").await;
    let d = debt(&fe, "backend", "notes").await;
    let long = "é".repeat(4001);
    let fits = "é".repeat(4000);
    be.send("frontend", "backend writes once", "x").await;
    let before = ch.feed_records();
    let cases = [
        (&be, "resolve_message", "resolution_note", json!({})),
        (&fe, "confirm_resolution", "note", json!({})),
        (&fe, "reopen_message", "reason", json!({})),
        (
            &be,
            "set_work_status",
            "note",
            json!({"work_status": "in_progress"}),
        ),
    ];
    for (c, tool, field, extra) in &cases {
        let mut args = extra.clone();
        args["message_id"] = json!(d);
        args[*field] = json!(long);
        let msg = c
            .call(tool, args)
            .await
            .value_error(&format!("'{field}' must be <= 4000 characters (got 4001)"));
        assert!(!msg.contains("not found"), "{msg}");
    }
    assert_eq!(ch.feed_records(), before, "nothing was written");
    // Exactly 4000 characters (8000 bytes) are accepted, in lifecycle order.
    be.call(
        "set_work_status",
        json!({"message_id": d, "work_status": "in_progress", "note": fits}),
    )
    .await
    .ok();
    be.call(
        "resolve_message",
        json!({"message_id": d, "resolution_note": fits}),
    )
    .await
    .ok();
    fe.call("confirm_resolution", json!({"message_id": d, "note": fits}))
        .await
        .ok();
    fe.call("reopen_message", json!({"message_id": d, "reason": fits}))
        .await
        .ok();
    assert_eq!(ch.feed_records(), before + 4);
    let notes: Vec<_> = history(&fe, &d)
        .await
        .into_iter()
        .map(|(_, _, n)| n.unwrap().chars().count())
        .collect();
    assert_eq!(notes, vec![4000; 4]);
    fe.close().await;
    be.close().await;
}
