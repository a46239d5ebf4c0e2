//! read_inbox (window, truncation, opened vs read, per recipient) and mark_read (single,
//! batch, refusals that mark nothing).

use crate::common;
use crate::common::{TestChannel, ids, is_rfc3339_ms};
use serde_json::{Value, json};

/// `opened_at` of each message for `role`, through list_messages(to_role=role).
async fn opened(c: &common::Client, role: &str) -> Vec<(String, bool)> {
    let rows = c
        .call("list_messages", json!({"to_role": role, "limit": 1000}))
        .await
        .rows();
    rows.iter()
        .map(|r| {
            (
                r["id"].as_str().unwrap().to_owned(),
                !r["opened_at"].is_null(),
            )
        })
        .collect()
}

#[tokio::test]
async fn the_inbox_holds_only_my_mail_newest_window_oldest_first() {
    let ch = TestChannel::new(&["frontend", "backend", "infra"]);
    let fe = ch.client("frontend").await;
    let be = ch.client("backend").await;
    let m1 = fe.send("backend", "one", "1").await;
    let m2 = fe.send("backend", "two", "2").await;
    fe.send("infra", "not for backend", "x").await;
    let m3 = fe.send("backend", "three", "3").await;
    be.send("frontend", "mine, outgoing", "y").await;

    // T-15: limit=2 returns the newest two, oldest first, and says more matched.
    let v = be.call("read_inbox", json!({"limit": 2})).await.ok();
    let rows = v["result"].as_array().unwrap();
    assert_eq!(ids(rows), vec![m2.clone(), m3.clone()]);
    assert_eq!(v["truncated"]["limit"], 2);
    assert_eq!(v["truncated"]["returned"], 2);
    assert!(
        v["truncated"]["note"]
            .as_str()
            .is_some_and(|n| n.contains("list_messages")),
        "{v}"
    );
    // Only the rows handed over were opened: the oldest (the probe row's neighbour) was not.
    let op = opened(&be, "backend").await;
    assert!(op.contains(&(m1.clone(), false)), "{op:?}");
    assert!(
        op.contains(&(m2.clone(), true)) && op.contains(&(m3.clone(), true)),
        "{op:?}"
    );
    // Reading never marks read: all three are still unread.
    let unread = be
        .call(
            "list_messages",
            json!({"to_role": "backend", "unread_only": true}),
        )
        .await
        .rows();
    assert_eq!(unread.len(), 3);

    let v = be.call("read_inbox", json!({})).await.ok();
    assert_eq!(
        ids(v["result"].as_array().unwrap()),
        vec![m1.clone(), m2, m3]
    );
    assert!(v.get("truncated").is_none(), "everything fits: {v}");
    for r in v["result"].as_array().unwrap() {
        assert_eq!(r["to"], "backend");
        // Lean: no addendum, read time or digest of a plain message.
        for k in ["read_at", "addendum", "body_sha256"] {
            assert!(r.get(k).is_none(), "{k} left out: {r}");
        }
    }
    // The sender's inbox holds only what was sent to it.
    let fe_rows = fe.call("read_inbox", json!({})).await.rows();
    assert_eq!(fe_rows.len(), 1);
    assert_eq!(fe_rows[0]["from"], "backend");
    fe.close().await;
    be.close().await;
}

#[tokio::test]
async fn reading_records_delivery_once_and_only_mark_read_reads() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let fe = ch.client("frontend").await;
    let be = ch.client("backend").await;
    let a = fe.send("backend", "a", "1").await;
    let b = fe.send("backend", "b", "2").await;

    let n0 = ch.feed_records();
    be.call("read_inbox", json!({})).await.ok();
    let n1 = ch.feed_records();
    assert!(n1 > n0, "the first delivery is recorded");
    be.call("read_inbox", json!({})).await.ok();
    assert_eq!(
        ch.feed_records(),
        n1,
        "a second read of opened mail writes nothing"
    );
    let rows = be.call("read_inbox", json!({})).await.rows();
    assert!(
        rows.iter()
            .all(|r| r["opened_at"].as_str().is_some_and(is_rfc3339_ms)),
        "{rows:?}"
    );

    let marked = be.call("mark_read", json!({"message_id": a})).await.ok();
    assert_eq!(marked["id"], a);
    assert_eq!(marked["already_read"], false);
    let read_at = marked["read_at"].as_str().unwrap().to_owned();
    assert!(is_rfc3339_ms(&read_at));
    let n2 = ch.feed_records();
    assert_eq!(n2, n1 + 1, "mark_read writes one record");

    // Unread only (the default) drops it; unread_only=false keeps it with its read_at.
    assert_eq!(
        ids(&be.call("read_inbox", json!({})).await.rows()),
        vec![b.clone()]
    );
    let all = be
        .call("read_inbox", json!({"unread_only": false}))
        .await
        .rows();
    assert_eq!(ids(&all), vec![a.clone(), b]);
    assert_eq!(all[0]["read_at"], read_at.as_str());

    // Marking again is a no-op that says so and writes nothing.
    let again = be.call("mark_read", json!({"message_id": a})).await.ok();
    assert_eq!(again["already_read"], true);
    assert_eq!(
        again["read_at"],
        read_at.as_str(),
        "the first read time is kept"
    );
    assert_eq!(ch.feed_records(), n2);
    fe.close().await;
    be.close().await;
}

#[tokio::test]
async fn read_and_opened_are_per_recipient_on_a_multi_recipient_message() {
    let ch = TestChannel::new(&["alpha", "beta", "gamma"]);
    let a = ch.client("alpha").await;
    let b = ch.client("beta").await;
    let g = ch.client("gamma").await;
    let id = a
        .send_with(json!("*"), "status", "body", json!({"kind": "status"}))
        .await;

    b.call("read_inbox", json!({})).await.ok();
    assert_eq!(opened(&a, "beta").await, vec![(id.clone(), true)]);
    assert_eq!(
        opened(&a, "gamma").await,
        vec![(id.clone(), false)],
        "beta's read does not open gamma's"
    );

    b.call("mark_read", json!({"message_id": id})).await.ok();
    assert!(b.call("read_inbox", json!({})).await.rows().is_empty());
    let grows = g.call("read_inbox", json!({})).await.rows();
    assert_eq!(ids(&grows), vec![id.clone()], "still unread for gamma");
    assert_eq!(grows[0]["read_at"], Value::Null);
    assert_eq!(grows[0]["to"], json!(["beta", "gamma"]));
    let brows = b
        .call("read_inbox", json!({"unread_only": false}))
        .await
        .rows();
    assert!(
        brows[0]["read_at"].is_string(),
        "beta's row shows beta's read"
    );

    // Per-recipient unread through list_messages(to_role); without to_role a multi-recipient
    // message has no read state of its own and always looks unread.
    assert!(
        a.call(
            "list_messages",
            json!({"to_role": "beta", "unread_only": true})
        )
        .await
        .rows()
        .is_empty()
    );
    assert_eq!(
        a.call(
            "list_messages",
            json!({"to_role": "gamma", "unread_only": true})
        )
        .await
        .rows()
        .len(),
        1
    );
    g.call("mark_read", json!({"message_id": id})).await.ok();
    let rows = a
        .call("list_messages", json!({"unread_only": true}))
        .await
        .rows();
    assert_eq!(ids(&rows), vec![id.clone()]);
    assert_eq!(rows[0]["read_at"], Value::Null);

    // The author and a non-recipient cannot mark it.
    a.call("mark_read", json!({"message_id": id}))
        .await
        .permission_error("not addressed to 'alpha'");
    let solo = b.send("gamma", "to gamma", "x").await;
    a.call("mark_read", json!({"message_id": solo}))
        .await
        .permission_error("not addressed to 'alpha'");
    a.close().await;
    b.close().await;
    g.close().await;
}

#[tokio::test]
async fn mark_read_takes_exactly_one_argument_and_refuses_what_it_cannot_mark() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let fe = ch.client("frontend").await;
    let be = ch.client("backend").await;
    let id = fe.send("backend", "t", "b").await;
    be.call("read_inbox", json!({})).await.ok();
    let before = ch.feed_records();

    be.call("mark_read", json!({}))
        .await
        .value_error("pass exactly one of");
    be.call("mark_read", json!({"message_id": id, "message_ids": [id]}))
        .await
        .value_error("pass exactly one of");
    be.call("mark_read", json!({"message_id": "abcdef123456"}))
        .await
        .value_error("message abcdef123456 not found");
    be.call("mark_read", json!({"message_id": "abcde"}))
        .await
        .value_error("'message_id' must be a message id");
    be.call("mark_read", json!({"message_id": "not-hex!"}))
        .await
        .value_error("'message_id' must be a message id");
    fe.call("mark_read", json!({"message_id": id}))
        .await
        .permission_error("only its recipients");
    assert_eq!(ch.feed_records(), before, "refusals write nothing");

    // Any unambiguous prefix of 6+ characters works, with '#' and in capitals too.
    let v = be
        .call(
            "mark_read",
            json!({"message_id": format!("#{}", id[..6].to_uppercase())}),
        )
        .await
        .ok();
    assert_eq!(v["id"], id, "the result gives the full 12 characters");
    assert_eq!(v["already_read"], false);

    // A deleted message is not found.
    let gone = fe.send("backend", "gone", "x").await;
    fe.call("delete_message", json!({"message_id": gone}))
        .await
        .ok();
    be.call("mark_read", json!({"message_id": gone}))
        .await
        .value_error("not found");
    fe.close().await;
    be.close().await;
}

#[tokio::test]
async fn a_batch_is_checked_whole_before_anything_is_marked() {
    let ch = TestChannel::new(&["alpha", "beta", "gamma"]);
    let a = ch.client("alpha").await;
    let b = ch.client("beta").await;
    let m1 = a.send("beta", "one", "1").await;
    let m2 = a.send("beta", "two", "2").await;
    let foreign = a.send("gamma", "for gamma", "3").await;
    b.call("read_inbox", json!({})).await.ok();
    let before = ch.feed_records();

    let m = b
        .call(
            "mark_read",
            json!({"message_ids": [m1, "abcdef123456", m2]}),
        )
        .await
        .value_error("nothing was marked: message abcdef123456 not found; list_messages");
    assert!(!m.is_empty());
    b.call("mark_read", json!({"message_ids": [m1, foreign]}))
        .await
        .permission_error("nothing was marked");
    let m = b
        .call("mark_read", json!({"message_ids": [m1, "xyz"]}))
        .await
        .value_error("nothing was marked");
    assert!(
        m.contains("'message_ids'"),
        "the refusal names the parameter passed: {m}"
    );
    assert_eq!(ch.feed_records(), before, "a refused batch writes nothing");
    assert_eq!(
        b.call("read_inbox", json!({})).await.rows().len(),
        2,
        "nothing was marked"
    );

    // An empty batch answers an empty list and writes nothing.
    let raw = b.call_raw("mark_read", json!({"message_ids": []})).await;
    assert_ne!(raw.is_error, Some(true));
    assert_eq!(
        b.call_text("mark_read", json!({"message_ids": []})).await,
        "[]"
    );
    assert_eq!(ch.feed_records(), before);

    b.call("mark_read", json!({"message_id": m1})).await.ok();
    let n = ch.feed_records();
    // A batch returns a bare list (the text is the list itself), one entry per message.
    let text = b
        .call_text("mark_read", json!({"message_ids": [m1, m2, m2]}))
        .await;
    let list: Value = serde_json::from_str(&text).unwrap();
    let list = list
        .as_array()
        .unwrap_or_else(|| panic!("not a bare list: {text}"));
    assert_eq!(list.len(), 2, "duplicates collapse: {text}");
    assert_eq!(list[0]["id"], m1);
    assert_eq!(list[0]["already_read"], true);
    assert_eq!(list[1]["id"], m2);
    assert_eq!(list[1]["already_read"], false);
    assert!(
        list.iter()
            .all(|e| e["read_at"].as_str().is_some_and(is_rfc3339_ms))
    );
    assert_eq!(ch.feed_records(), n + 1, "one record for the batch");
    assert!(b.call("read_inbox", json!({})).await.rows().is_empty());
    a.close().await;
    b.close().await;
}

#[tokio::test]
async fn read_inbox_limits_and_projection() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let fe = ch.client("frontend").await;
    let be = ch.client("backend").await;
    fe.send("backend", "t", "body text").await;
    let before = ch.feed_records();
    for bad in [0, -1, 1001] {
        be.call("read_inbox", json!({"limit": bad}))
            .await
            .value_error("'limit' must be between 1 and 1000");
    }
    be.call("read_inbox", json!({"fields": []}))
        .await
        .value_error("'fields' cannot be empty");
    be.call("read_inbox", json!({"fields": ["id", "nope"]}))
        .await
        .value_error("unknown field(s)");
    assert_eq!(
        ch.feed_records(),
        before,
        "a refused read records no delivery"
    );
    for ok in [1, 1000] {
        assert_eq!(
            be.call("read_inbox", json!({"limit": ok}))
                .await
                .rows()
                .len(),
            1
        );
    }
    let rows = be
        .call("read_inbox", json!({"fields": "headers"}))
        .await
        .rows();
    let r = rows[0].as_object().unwrap();
    assert!(r.contains_key("topic") && r.contains_key("body_sha256") && r.contains_key("from"));
    assert!(
        !r.contains_key("body") && !r.contains_key("addendum"),
        "{r:?}"
    );
    let rows = be
        .call(
            "read_inbox",
            json!({"fields": ["id", "addendum", "from_role"]}),
        )
        .await
        .rows();
    let keys: Vec<&String> = rows[0].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["id", "addendum", "from"]);
    fe.close().await;
    be.close().await;
}
