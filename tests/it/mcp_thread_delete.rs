//! get_thread (tree, order, tombstones, unknown ids), delete_message (refusals and effects),
//! and the information tools: list_roles, server_build, get_protocol.

use crate::common;
use crate::common::{TestChannel, ids};
use serde_json::{Value, json};

#[tokio::test]
async fn a_thread_is_the_whole_tree_from_any_of_its_messages() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let fe = ch.client("frontend").await;
    let be = ch.client("backend").await;
    let root = fe.send("backend", "root", "r").await;
    let unrelated = fe.send("backend", "other", "o").await;
    let a = be
        .send_with(
            json!("frontend"),
            "re: root",
            "a",
            json!({"reply_to": root}),
        )
        .await;
    let c = be
        .send_with(json!("frontend"), "sibling", "c", json!({"reply_to": root}))
        .await;
    let b = fe
        .send_with(
            json!("backend"),
            "re: re: root",
            "b body",
            json!({"reply_to": a}),
        )
        .await;
    be.send_with(
        json!("frontend"),
        "other reply",
        "x",
        json!({"reply_to": unrelated}),
    )
    .await;

    let expected = vec![root.clone(), a.clone(), c.clone(), b.clone()];
    for start in [&root, &a, &b, &c] {
        let v = fe
            .call("get_thread", json!({"message_id": start}))
            .await
            .ok();
        assert!(v.get("truncated").is_none());
        let rows = v["result"].as_array().unwrap();
        assert_eq!(
            ids(rows),
            expected,
            "from {start}: oldest first, the whole tree"
        );
    }
    let rows = be
        .call("get_thread", json!({"message_id": &b[..6]}))
        .await
        .rows();
    assert_eq!(ids(&rows), expected, "a 6-character prefix works");
    let leaf = &rows[3];
    assert_eq!(leaf["reply_to"], a);
    assert_eq!(leaf["body"], "b body");
    assert!(leaf.get("body_sha256").is_none(), "lean: {leaf}");
    assert_eq!(rows[0]["reply_to"], Value::Null);
    assert!(rows.iter().all(|r| r["deleted_at"].is_null()));

    fe.call("get_thread", json!({"message_id": "abcdef123456"}))
        .await
        .value_error("not found");
    fe.call("get_thread", json!({"message_id": "abc"}))
        .await
        .value_error("must be a message id");
    fe.close().await;
    be.close().await;
}

#[tokio::test]
async fn deleting_leaves_a_tombstone_that_only_the_thread_shows() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let fe = ch.client("frontend").await;
    let be = ch.client("backend").await;
    let root = fe.send("backend", "root", "searchable root").await;
    let mid = be
        .send_with(
            json!("frontend"),
            "middle",
            "searchable middle",
            json!({"reply_to": root}),
        )
        .await;
    let leaf = fe
        .send_with(
            json!("backend"),
            "leaf",
            "searchable leaf",
            json!({"reply_to": mid}),
        )
        .await;

    // The recipient deletes a message sent to it.
    let v = fe
        .call("delete_message", json!({"message_id": mid}))
        .await
        .ok();
    assert_eq!(v, json!({"id": mid, "deleted": true, "superseded": []}));

    // Gone from listings, inboxes and search; every other op says "not found".
    assert!(!ids(&fe.all_messages().await).contains(&mid));
    assert!(
        !ids(&fe
            .call("read_inbox", json!({"unread_only": false}))
            .await
            .rows())
        .contains(&mid)
    );
    assert!(
        !ids(&fe
            .call("search_messages", json!({"query": "middle"}))
            .await
            .rows())
        .contains(&mid)
    );
    fe.call("mark_read", json!({"message_id": mid}))
        .await
        .value_error("not found");
    fe.call("delete_message", json!({"message_id": mid}))
        .await
        .value_error("not found");
    be.call("delete_message", json!({"message_id": mid}))
        .await
        .value_error("not found");
    fe.call(
        "send_message",
        json!({"to": "backend", "topic": "t", "body": "b", "reply_to": mid}),
    )
    .await
    .value_error("not found");

    // The thread keeps it in place, from any id, the deleted one included.
    for start in [&root, &mid, &leaf] {
        let rows = be
            .call("get_thread", json!({"message_id": start}))
            .await
            .rows();
        assert_eq!(ids(&rows), vec![root.clone(), mid.clone(), leaf.clone()]);
        let tomb = &rows[1];
        assert!(
            tomb["deleted_at"]
                .as_str()
                .is_some_and(common::is_rfc3339_ms),
            "{tomb}"
        );
        assert!(rows[0]["deleted_at"].is_null() && rows[2]["deleted_at"].is_null());
    }
    // The sender may delete too.
    let mine = fe.send("backend", "mine", "x").await;
    fe.call("delete_message", json!({"message_id": mine}))
        .await
        .ok();
    assert!(!ids(&be.call("read_inbox", json!({})).await.rows()).contains(&mine));
    fe.close().await;
    be.close().await;
}

#[tokio::test]
async fn delete_refusals_write_nothing() {
    let ch = TestChannel::new(&["alpha", "beta", "gamma"]);
    let a = ch.client("alpha").await;
    let b = ch.client("beta").await;
    let g = ch.client("gamma").await;
    let between = a.send("beta", "between a and b", "x").await;
    let debt = a
        .send_with(
            json!("beta"),
            "debt",
            "owed",
            json!({"action_required": true}),
        )
        .await;
    let proposal = a
        .send_with(
            json!("beta"),
            "proposal",
            "let us",
            json!({"kind": "proc", "pin_key": null, "about_message_id": null}),
        )
        .await;
    g.send("alpha", "gamma writes once", "x").await;
    b.send("alpha", "beta writes once", "x").await;
    let before = ch.feed_records();
    let count = a.all_messages().await.len();

    g.call("delete_message", json!({"message_id": between}))
        .await
        .permission_error("not a party");
    g.call("delete_message", json!({"message_id": proposal}))
        .await
        .permission_error("not a party");
    g.call("delete_message", json!({"message_id": debt}))
        .await
        .permission_error("not a party");
    b.call("delete_message", json!({"message_id": proposal}))
        .await
        .permission_error("only its author");
    for who in [&a, &b] {
        who.call("delete_message", json!({"message_id": debt}))
            .await
            .value_error("open obligation");
    }
    a.call("delete_message", json!({"message_id": "abcdef123456"}))
        .await
        .value_error("not found");
    a.call("delete_message", json!({"message_id": "12345"}))
        .await
        .value_error("must be a message id");
    assert_eq!(ch.feed_records(), before, "refused deletes write nothing");
    assert_eq!(a.all_messages().await.len(), count);

    // The author withdraws the proposal; the recipient deletes ordinary mail.
    a.call("delete_message", json!({"message_id": proposal}))
        .await
        .ok();
    b.call("delete_message", json!({"message_id": between}))
        .await
        .ok();
    assert_eq!(a.all_messages().await.len(), count - 2);
    assert_eq!(ch.feed_records(), before + 2);

    // One recipient deletes a multi-recipient message: it is gone for every recipient.
    let bcast = a
        .send_with(json!("*"), "status", "x", json!({"kind": "status"}))
        .await;
    assert!(ids(&g.call("read_inbox", json!({})).await.rows()).contains(&bcast));
    b.call("delete_message", json!({"message_id": bcast}))
        .await
        .ok();
    assert!(
        !ids(&g
            .call("read_inbox", json!({"unread_only": false}))
            .await
            .rows())
        .contains(&bcast)
    );
    g.call("mark_read", json!({"message_id": bcast}))
        .await
        .value_error("not found");
    a.close().await;
    b.close().await;
    g.close().await;
}

#[tokio::test]
async fn list_roles_answers_the_sorted_roster() {
    let ch = TestChannel::new(&["infra", "frontend", "backend"]);
    let fe = ch.client("frontend").await;
    let v = fe.call("list_roles", json!({})).await.ok();
    assert_eq!(
        v,
        json!({"roles": ["backend", "frontend", "infra"], "you": "frontend", "source": "channel-registry",
               "devices": {"backend": [], "frontend": [], "infra": []}})
    );
    // The roster holds roles that never spoke, and answers the same to everyone but `you`.
    let infra = ch.client("infra").await;
    let v = infra.call("list_roles", json!({})).await.ok();
    assert_eq!(v["you"], "infra");
    assert_eq!(v["roles"], json!(["backend", "frontend", "infra"]));
    fe.close().await;
    infra.close().await;
}

#[tokio::test]
async fn server_build_and_get_protocol() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let fe = ch.client("frontend").await;
    let before = ch.feed_records();
    let v = fe.call("server_build", json!({})).await.ok();
    let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "build",
            "version",
            "protocol_contract",
            "whats_new",
            "shipped",
            "not_shipped",
            "source",
            "toolsets"
        ]
    );
    assert_eq!(v["toolsets"], json!(["all"]));
    assert_eq!(v["version"], env!("CARGO_PKG_VERSION"));
    assert!(
        v["build"]
            .as_str()
            .unwrap()
            .contains(env!("CARGO_PKG_VERSION"))
    );
    assert!(
        v["protocol_contract"]
            .as_str()
            .unwrap()
            .contains("get_protocol")
    );
    let shape = |list: &Value, fields: &[&str]| {
        let list = list.as_array().unwrap();
        assert!(!list.is_empty());
        for e in list {
            let got: Vec<&String> = e.as_object().unwrap().keys().collect();
            assert_eq!(got, fields, "{e}");
            assert!(
                e.as_object()
                    .unwrap()
                    .values()
                    .all(|x| x.as_str().is_some_and(|s| !s.is_empty())),
                "{e}"
            );
        }
    };
    shape(&v["whats_new"], &["since", "what", "do"]);
    shape(&v["shipped"], &["id", "shipped_at", "what"]);
    shape(&v["not_shipped"], &["id", "why"]);
    let shipped = v["shipped"].to_string();
    for tool in [
        "send_message",
        "read_inbox",
        "mark_read",
        "delete_message",
        "list_messages",
        "search_messages",
        "get_thread",
    ] {
        assert!(shipped.contains(tool), "shipped names {tool}");
    }

    // get_protocol hands over the document itself as text.
    let text = fe.call_text("get_protocol", json!({})).await;
    assert_eq!(text, include_str!("../../docs/PROTOCOL.md"));
    assert!(text.contains("Permission matrix"));
    for tool in [
        "send_message",
        "read_inbox",
        "mark_read",
        "delete_message",
        "list_messages",
        "search_messages",
        "get_thread",
        "list_roles",
        "server_build",
        "get_protocol",
    ] {
        assert!(
            text.contains(&format!("`{tool}(")),
            "the protocol documents {tool}"
        );
    }
    assert_eq!(ch.feed_records(), before, "information tools write nothing");
    fe.close().await;
}

#[tokio::test]
async fn a_refusal_travels_as_an_error_result_with_its_message_as_text() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let fe = ch.client("frontend").await;
    let raw = fe
        .call_raw(
            "send_message",
            json!({"to": "frontend", "topic": "t", "body": "b"}),
        )
        .await;
    assert_eq!(raw.is_error, Some(true));
    let sc = raw.structured_content.clone().unwrap();
    assert_eq!(sc["error"], "ValueError");
    let text = raw
        .content
        .first()
        .and_then(|c| c.as_text())
        .map(|t| t.text.clone())
        .unwrap();
    assert_eq!(sc["message"], text.as_str());
    assert!(text.contains("cannot send to self"));
    fe.close().await;
}

#[test]
fn the_server_refuses_to_start_without_a_role_naming_both_variables() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let out = ch.cli(&["mcp"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("COUNTERSIGN_ROLE") && err.contains("AI_AGENT_CHANNEL_ROLE"),
        "{err}"
    );
    assert!(
        out.stdout.is_empty(),
        "stdout is the protocol; nothing goes there"
    );
}
