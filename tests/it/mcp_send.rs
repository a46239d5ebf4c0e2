//! send_message through the real server: addressing against the roster, broadcast and the
//! audience rules, addenda, enumerations, topic/body limits, reply_to, and that every
//! refusal writes nothing.

use crate::common;
use crate::common::{TestChannel, is_message_id, is_rfc3339_ms, sha256_hex};
use serde_json::{Value, json};

#[tokio::test]
async fn a_sent_message_round_trips_every_field() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let fe = ch.client("frontend").await;
    let be = ch.client("backend").await;
    let sent = fe
        .call(
            "send_message",
            json!({"to": "backend", "topic": "  schema v2  ", "body": "line one\nline two é",
                   "action_required": true, "kind": "feat", "work_status": "proposed"}),
        )
        .await
        .ok();
    let id = sent["id"].as_str().unwrap().to_owned();
    assert!(is_message_id(&id), "{id}");
    assert!(
        is_rfc3339_ms(sent["created_at"].as_str().unwrap()),
        "{sent}"
    );
    assert!(
        sent.get("recipients").is_none(),
        "one recipient carries no recipients: {sent}"
    );

    let rows = be.call("read_inbox", json!({})).await.rows();
    assert_eq!(rows.len(), 1);
    let r = &rows[0];
    assert_eq!(r["id"], id);
    assert_eq!(r["from"], "frontend");
    assert_eq!(r["to"], "backend");
    assert_eq!(r["topic"], "schema v2", "the topic is stripped");
    assert_eq!(r["body"], "line one\nline two é");
    assert_eq!(r["action_required"], true);
    assert_eq!(r["status"], "open", "a debt is open");
    assert_eq!(r["kind"], "feat");
    assert_eq!(r["work_status"], "proposed");
    assert_eq!(r["created_at"], sent["created_at"]);
    assert_eq!(r["reply_to"], Value::Null);
    assert_eq!(r["read_at"], Value::Null);
    assert_eq!(r["decision_requested"], true);
    assert!(r.get("body_sha256").is_none(), "lean: {r}");
    let digests = be
        .call(
            "read_inbox",
            json!({"fields": ["body_sha256", "body_length_bytes", "body_length_chars"]}),
        )
        .await
        .rows();
    let r = &digests[0];
    assert_eq!(r["body_sha256"], sha256_hex("line one\nline two é"));
    assert_eq!(r["body_length_bytes"], "line one\nline two é".len());
    assert_eq!(
        r["body_length_chars"],
        "line one\nline two é".chars().count()
    );

    // Defaults: no kind, no work status, not a debt (status null).
    let plain = fe.send("backend", "plain", "b").await;
    let all = fe.all_messages().await;
    let p = all.iter().find(|r| r["id"] == plain).unwrap();
    assert_eq!(p["kind"], Value::Null);
    assert_eq!(p["work_status"], Value::Null);
    assert_eq!(p["action_required"], false);
    assert_eq!(p["status"], Value::Null);
    fe.close().await;
    be.close().await;
}

#[tokio::test]
async fn addressing_follows_the_roster() {
    let ch = TestChannel::new(&["frontend", "backend", "infra"]);
    let fe = ch.client("frontend").await;
    fe.send("backend", "warm up", "first write").await;
    let before = ch.feed_records();

    fe.call(
        "send_message",
        json!({"to": "frontend", "topic": "t", "body": "b"}),
    )
    .await
    .value_error("cannot send to self (role='frontend')");
    fe.call(
        "send_message",
        json!({"to": ["backend", "frontend"], "topic": "t", "body": "b", "kind": "status"}),
    )
    .await
    .value_error("cannot send to self");
    let m = fe
        .call(
            "send_message",
            json!({"to": "qa", "topic": "t", "body": "b"}),
        )
        .await
        .value_error("cannot address 'qa'");
    assert!(
        m.contains("['backend', 'frontend', 'infra']"),
        "the refusal lists the roster: {m}"
    );
    fe.call(
        "send_message",
        json!({"to": "Backend", "topic": "t", "body": "b"}),
    )
    .await
    .value_error("cannot address 'Backend'");
    fe.call(
        "send_message",
        json!({"to": ["backend", "qa"], "topic": "t", "body": "b", "kind": "status"}),
    )
    .await
    .value_error("cannot address 'qa'");
    for empty in [json!(""), json!("   "), json!([]), json!(["backend", " "])] {
        fe.call(
            "send_message",
            json!({"to": empty, "topic": "t", "body": "b"}),
        )
        .await
        .value_error("'to' is required");
    }
    fe.call(
        "send_message",
        json!({"to": ["*"], "topic": "t", "body": "b", "kind": "status"}),
    )
    .await
    .value_error("cannot appear inside a list");
    fe.call(
        "send_message",
        json!({"to": ["backend", "*"], "topic": "t", "body": "b", "kind": "status"}),
    )
    .await
    .value_error("cannot appear inside a list");
    assert_eq!(ch.feed_records(), before, "refused sends write nothing");
    assert_eq!(fe.all_messages().await.len(), 1);

    // Names are stripped; a one-element list and duplicates stay point-to-point.
    for to in [
        json!(" backend "),
        json!(["backend"]),
        json!(["backend", " backend"]),
    ] {
        let v = fe
            .call("send_message", json!({"to": to, "topic": "t", "body": "b"}))
            .await
            .ok();
        assert!(v.get("recipients").is_none(), "{to}: {v}");
        let row = fe
            .all_messages()
            .await
            .into_iter()
            .find(|r| r["id"] == v["id"])
            .unwrap();
        assert_eq!(row["to"], "backend", "{to}");
    }
    fe.close().await;
}

#[tokio::test]
async fn star_and_explicit_lists_reach_every_other_role_as_one_message() {
    let ch = TestChannel::new(&["alpha", "beta", "gamma", "delta"]);
    let a = ch.client("alpha").await;
    let b = ch.client("beta").await;
    let star = a
        .call(
            "send_message",
            json!({"to": " * ", "topic": "status", "body": "all good", "kind": "status"}),
        )
        .await
        .ok();
    assert_eq!(
        star["recipients"],
        json!(["beta", "delta", "gamma"]),
        "sorted, without the sender"
    );
    let list = a
        .call(
            "send_message",
            json!({"to": ["gamma", "beta"], "topic": "pair", "body": "two", "kind": "status"}),
        )
        .await
        .ok();
    assert_eq!(list["recipients"], json!(["beta", "gamma"]));

    let all = a.all_messages().await;
    assert_eq!(all.len(), 2, "one message per send, not one per recipient");
    assert_eq!(all[0]["to"], json!(["beta", "gamma"]));
    assert_eq!(all[1]["to"], json!(["beta", "delta", "gamma"]));
    for role in ["beta", "gamma"] {
        let rows = a
            .call("list_messages", json!({"to_role": role}))
            .await
            .rows();
        assert_eq!(rows.len(), 2, "{role} is a recipient of both");
    }
    let rows = a
        .call("list_messages", json!({"to_role": "delta"}))
        .await
        .rows();
    assert_eq!(common::ids(&rows), vec![star["id"].as_str().unwrap()]);
    let inbox = b.call("read_inbox", json!({})).await.rows();
    assert_eq!(inbox.len(), 2);
    a.close().await;
    b.close().await;
}

#[tokio::test]
async fn star_with_a_single_other_role_is_point_to_point() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let fe = ch.client("frontend").await;
    let v = fe
        .call(
            "send_message",
            json!({"to": "*", "topic": "hello", "body": "b"}),
        )
        .await
        .ok();
    assert!(v.get("recipients").is_none(), "{v}");
    assert_eq!(fe.all_messages().await[0]["to"], "backend");
    fe.close().await;
}

#[tokio::test]
async fn only_proc_and_status_go_to_several_roles_on_their_own_and_debts_never_do() {
    let ch = TestChannel::new(&["alpha", "beta", "gamma"]);
    let a = ch.client("alpha").await;
    a.send("beta", "warm up", "first write").await;
    let before = ch.feed_records();
    for kind in [
        json!(null),
        json!("bug"),
        json!("feat"),
        json!("question"),
        json!("answer"),
    ] {
        a.call(
            "send_message",
            json!({"to": "*", "topic": "t", "body": "b", "kind": kind}),
        )
        .await
        .value_error("only ['proc', 'status'] may be sent to several roles on their own");
        a.call(
            "send_message",
            json!({"to": ["beta", "gamma"], "topic": "t", "body": "b", "kind": kind}),
        )
        .await
        .value_error("only ['proc', 'status']");
    }
    for kind in [json!(null), json!("status"), json!("proc")] {
        a.call(
            "send_message",
            json!({"to": "*", "topic": "t", "body": "b", "kind": kind, "action_required": true,
                   "pin_key": null, "about_message_id": null}),
        )
        .await
        .value_error("action_required cannot be broadcast");
    }
    assert_eq!(
        ch.feed_records(),
        before,
        "refused broadcasts write nothing"
    );
    // A debt to one role is fine, as a one-element list too.
    let v = a
        .call(
            "send_message",
            json!({"to": ["beta"], "topic": "t", "body": "b", "action_required": true}),
        )
        .await
        .ok();
    assert!(v.get("recipients").is_none());
    a.call(
        "send_message",
        json!({"to": "*", "topic": "t", "body": "b", "kind": "status"}),
    )
    .await
    .ok();
    a.close().await;
}

#[tokio::test]
async fn a_reply_may_keep_its_multi_recipient_parents_audience_and_no_more() {
    let ch = TestChannel::new(&["alpha", "beta", "gamma", "delta"]);
    let a = ch.client("alpha").await;
    let b = ch.client("beta").await;
    let parent = a
        .send_with(
            json!(["beta", "gamma"]),
            "plan",
            "the plan",
            json!({"kind": "status"}),
        )
        .await;
    let single = a.send("beta", "one to one", "just beta").await;

    // T-14: an answer may keep the parent's audience (author + recipients).
    let v = b
        .call(
            "send_message",
            json!({"to": ["alpha", "gamma"], "topic": "re: plan", "body": "ok", "reply_to": parent, "kind": "answer"}),
        )
        .await
        .ok();
    assert_eq!(v["recipients"], json!(["alpha", "gamma"]));
    // Untagged replies too.
    b.call(
        "send_message",
        json!({"to": ["alpha", "gamma"], "topic": "re", "body": "ok", "reply_to": parent}),
    )
    .await
    .ok();

    let before = ch.feed_records();
    let m = b
        .call(
            "send_message",
            json!({"to": ["alpha", "delta"], "topic": "re", "body": "x", "reply_to": parent, "kind": "answer"}),
        )
        .await
        .value_error("were not party to it");
    assert!(
        m.contains("delta") && !m.contains("alpha'"),
        "names only the outsider: {m}"
    );
    // The ban stands without reply_to, and a reply to a one-recipient parent cannot widen.
    b.call(
        "send_message",
        json!({"to": ["alpha", "gamma"], "topic": "re", "body": "x", "kind": "answer"}),
    )
    .await
    .value_error("only ['proc', 'status']");
    b.call(
        "send_message",
        json!({"to": ["alpha", "gamma"], "topic": "re", "body": "x", "reply_to": single}),
    )
    .await
    .value_error("only ['proc', 'status']");
    // A debt stays single-recipient even as a reply.
    b.call(
        "send_message",
        json!({"to": ["alpha", "gamma"], "topic": "re", "body": "x", "reply_to": parent, "action_required": true}),
    )
    .await
    .value_error("action_required cannot be broadcast");
    b.call(
        "send_message",
        json!({"to": "alpha", "topic": "re", "body": "x", "reply_to": parent, "action_required": true}),
    )
    .await
    .ok();
    assert_eq!(
        ch.feed_records(),
        before + 1,
        "only the accepted reply was written"
    );
    // The thread shows the multi-recipient parent and its replies with their audiences.
    let thread = a
        .call("get_thread", json!({"message_id": parent}))
        .await
        .rows();
    assert_eq!(thread.len(), 4);
    assert_eq!(thread[0]["to"], json!(["beta", "gamma"]));
    assert_eq!(thread[1]["to"], json!(["alpha", "gamma"]));
    assert_eq!(thread[3]["to"], "alpha");
    assert!(thread[1..].iter().all(|r| r["reply_to"] == parent.as_str()));
    a.close().await;
    b.close().await;
}

#[tokio::test]
async fn reply_to_must_name_a_live_message_and_threads_the_reply() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let fe = ch.client("frontend").await;
    let be = ch.client("backend").await;
    let root = fe.send("backend", "question", "why?").await;
    let reply = be
        .call("send_message", json!({"to": "frontend", "topic": "re: question", "body": "because", "reply_to": &root[..6]}))
        .await
        .ok();
    let row = fe
        .all_messages()
        .await
        .into_iter()
        .find(|r| r["id"] == reply["id"])
        .unwrap();
    assert_eq!(
        row["reply_to"], root,
        "a 6-character prefix resolves to the full id"
    );

    let before = ch.feed_records();
    be.call(
        "send_message",
        json!({"to": "frontend", "topic": "t", "body": "b", "reply_to": "abcdef123456"}),
    )
    .await
    .value_error("reply_to message abcdef123456 not found");
    let gone = fe.send("backend", "to delete", "x").await;
    fe.call("delete_message", json!({"message_id": gone}))
        .await
        .ok();
    let before_deleted = ch.feed_records();
    assert_eq!(before_deleted, before + 2);
    be.call(
        "send_message",
        json!({"to": "frontend", "topic": "t", "body": "b", "reply_to": gone}),
    )
    .await
    .value_error("not found");
    assert_eq!(
        ch.feed_records(),
        before_deleted,
        "refused replies write nothing"
    );
    fe.close().await;
    be.close().await;
}

#[tokio::test]
async fn topic_and_body_limits() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let fe = ch.client("frontend").await;
    fe.send("backend", "warm up", "first write").await;
    let before = ch.feed_records();

    let m = fe
        .call(
            "send_message",
            json!({"to": "backend", "topic": "x".repeat(81), "body": "b"}),
        )
        .await
        .value_error("'topic' must be <= 80 characters (got 81)");
    assert!(m.contains("subject line"), "{m}");
    for blank in ["", "   "] {
        fe.call(
            "send_message",
            json!({"to": "backend", "topic": blank, "body": "b"}),
        )
        .await
        .value_error("'topic' is required");
    }
    fe.call(
        "send_message",
        json!({"to": "backend", "topic": "t", "body": ""}),
    )
    .await
    .value_error("'body' is required");
    fe.call("send_message", json!({"to": "backend", "topic": "t"}))
        .await
        .value_error("'body' is required");
    let big = "a".repeat(256 * 1024 + 1);
    fe.call(
        "send_message",
        json!({"to": "backend", "topic": "t", "body": big}),
    )
    .await
    .value_error("upload_content");
    assert_eq!(ch.feed_records(), before, "refused sends write nothing");

    // At the limits: 80 characters (after stripping; multi-byte counts as one), a blank body
    // (bodies are not stripped), exactly 256 KiB inline.
    let eighty = "é".repeat(80);
    let v = fe
        .call(
            "send_message",
            json!({"to": "backend", "topic": format!("  {eighty}  "), "body": " "}),
        )
        .await
        .ok();
    let row = fe
        .all_messages()
        .await
        .into_iter()
        .find(|r| r["id"] == v["id"])
        .unwrap();
    assert_eq!(row["topic"], eighty);
    assert_eq!(row["body"], " ");
    fe.call(
        "send_message",
        json!({"to": "backend", "topic": "big", "body": "a".repeat(256 * 1024)}),
    )
    .await
    .ok();

    // T-15: the limit is named in the tool description and the topic parameter.
    let tools = fe.inner.list_all_tools().await.unwrap();
    let send = tools.iter().find(|t| t.name == "send_message").unwrap();
    assert!(
        send.description
            .as_deref()
            .unwrap_or("")
            .contains("80 characters")
    );
    let topic_doc = send.input_schema["properties"]["topic"]["description"]
        .as_str()
        .unwrap_or("");
    assert!(topic_doc.contains("80 characters"), "{topic_doc}");
    fe.close().await;
}

#[tokio::test]
async fn checks_run_in_the_protocols_order() {
    let ch = TestChannel::new(&["alpha", "beta", "gamma"]);
    let a = ch.client("alpha").await;
    // topic before body before enums before recipients.
    a.call(
        "send_message",
        json!({"to": "nobody", "topic": "", "body": "", "kind": "nope"}),
    )
    .await
    .value_error("'topic' is required");
    a.call(
        "send_message",
        json!({"to": "nobody", "topic": "t", "body": "", "kind": "nope"}),
    )
    .await
    .value_error("'body' is required");
    a.call(
        "send_message",
        json!({"to": "nobody", "topic": "t", "body": "b", "kind": "nope"}),
    )
    .await
    .value_error("'kind' must be one of");
    a.call(
        "send_message",
        json!({"to": "nobody", "topic": "t", "body": "b", "work_status": "nope"}),
    )
    .await
    .value_error("'work_status' must be one of");
    // The parent and the audience are checked before the addenda.
    a.call(
        "send_message",
        json!({"to": "beta", "topic": "t", "body": "b", "reply_to": "abcdef123456", "addenda": {"gamma": "x"}}),
    )
    .await
    .value_error("reply_to message abcdef123456 not found");
    a.call(
        "send_message",
        json!({"to": ["beta", "gamma"], "topic": "t", "body": "b", "addenda": {"delta": "x"}}),
    )
    .await
    .value_error("only ['proc', 'status']");
    a.close().await;
}

#[tokio::test]
async fn kind_and_work_status_are_closed_vocabularies() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let fe = ch.client("frontend").await;
    let m = fe
        .call(
            "send_message",
            json!({"to": "backend", "topic": "t", "body": "b", "kind": "chore"}),
        )
        .await
        .value_error("'kind' must be one of");
    for k in ["bug", "feat", "proc", "status", "question", "answer"] {
        assert!(m.contains(k), "{m} lacks {k}");
    }
    let m = fe
        .call(
            "send_message",
            json!({"to": "backend", "topic": "t", "body": "b", "work_status": "finished"}),
        )
        .await
        .value_error("'work_status' must be one of");
    for w in [
        "proposed",
        "in_progress",
        "done_local",
        "needs_you",
        "done",
        "blocked",
    ] {
        assert!(m.contains(w), "{m} lacks {w}");
    }
    fe.call(
        "send_message",
        json!({"to": "backend", "topic": "t", "body": "b", "kind": "Bug"}),
    )
    .await
    .value_error("'kind' must be one of");
    // Every value is accepted and stored, done and blocked at send time included.
    for k in ["bug", "feat", "status", "question", "answer"] {
        fe.send_with(json!("backend"), k, "b", json!({"kind": k}))
            .await;
    }
    for w in [
        "proposed",
        "in_progress",
        "done_local",
        "needs_you",
        "done",
        "blocked",
    ] {
        fe.send_with(json!("backend"), w, "b", json!({"work_status": w}))
            .await;
    }
    for r in fe.all_messages().await {
        let topic = r["topic"].as_str().unwrap();
        assert!(r["kind"] == topic || r["work_status"] == topic, "{r}");
    }
    fe.close().await;
}

#[tokio::test]
async fn addenda_are_per_recipient_and_never_part_of_the_shared_digest() {
    let ch = TestChannel::new(&["alpha", "beta", "gamma"]);
    let a = ch.client("alpha").await;
    let b = ch.client("beta").await;
    let g = ch.client("gamma").await;
    a.send("beta", "warm up", "first write").await;
    let before = ch.feed_records();
    let m = a
        .call(
            "send_message",
            json!({"to": "beta", "topic": "t", "body": "b", "addenda": {"beta": "x", "gamma": "y"}}),
        )
        .await
        .value_error("'addenda' names");
    assert!(m.contains("gamma") && m.contains("not recipients"), "{m}");
    a.call(
        "send_message",
        json!({"to": ["beta", "gamma"], "topic": "t", "body": "b", "kind": "status", "addenda": {"beta": "x".repeat(4001)}}),
    )
    .await
    .value_error("must be <= 4000 characters (got 4001)");
    assert_eq!(ch.feed_records(), before);

    let body = "shared body";
    let id = a
        .send_with(
            json!("*"),
            "status",
            body,
            json!({"kind": "status", "addenda": {"beta": "only for beta", "gamma": "g".repeat(4000)}}),
        )
        .await;
    let rb = b.call("read_inbox", json!({})).await.rows();
    let rb = rb.iter().find(|r| r["id"] == id).unwrap();
    assert_eq!(rb["addendum"], "only for beta");
    assert_eq!(rb["body"], body);
    let rg = g.call("read_inbox", json!({})).await.rows();
    assert_eq!(rg[0]["addendum"], "g".repeat(4000));
    // T-17: the digest covers the shared body only.
    let digests = json!({"fields": ["id", "addendum", "body_sha256", "body_length_bytes"]});
    for reader in [&b, &g] {
        let rows = reader.call("read_inbox", digests.clone()).await.rows();
        let r = rows.iter().find(|r| r["id"] == id).unwrap();
        assert!(r["addendum"].is_string(), "{r}");
        assert_eq!(r["body_sha256"], sha256_hex(body));
        assert_eq!(r["body_length_bytes"], body.len());
    }
    // A recipient without an addendum gets null; listings show the whole map.
    let plain = a.send("beta", "no addenda", "b").await;
    let rb = b.call("read_inbox", json!({})).await.rows();
    assert_eq!(
        rb.iter().find(|r| r["id"] == plain).unwrap()["addendum"],
        Value::Null
    );
    let listed = a
        .call("list_messages", json!({"kind": "status"}))
        .await
        .rows();
    assert_eq!(listed[0]["addenda"]["beta"], "only for beta");
    a.close().await;
    b.close().await;
    g.close().await;
}

#[tokio::test]
async fn t01_star_and_list_addressing_behave_the_same_for_a_batch_mark_read() {
    let ch = TestChannel::new(&["alpha", "beta", "gamma"]);
    let a = ch.client("alpha").await;
    let b = ch.client("beta").await;
    let star = a
        .send_with(json!("*"), "s1", "b", json!({"kind": "status"}))
        .await;
    let list = a
        .send_with(
            json!(["beta", "gamma"]),
            "s2",
            "b",
            json!({"kind": "status"}),
        )
        .await;
    let rows = a.all_messages().await;
    assert_eq!(rows[0]["to"], rows[1]["to"]);
    let marked = b
        .call("mark_read", json!({"message_ids": [star, list]}))
        .await
        .rows();
    assert_eq!(marked.len(), 2);
    assert!(marked.iter().all(|m| m["already_read"] == false));
    // Someone else's mail refuses the whole batch.
    let mine = a.send("gamma", "for gamma", "b").await;
    let again = a
        .send_with(json!("*"), "s3", "b", json!({"kind": "status"}))
        .await;
    b.call("mark_read", json!({"message_ids": [again, mine]}))
        .await
        .permission_error("nothing was marked");
    let unread = b
        .call(
            "list_messages",
            json!({"to_role": "beta", "unread_only": true}),
        )
        .await
        .rows();
    assert_eq!(common::ids(&unread), vec![again]);
    a.close().await;
    b.close().await;
}
