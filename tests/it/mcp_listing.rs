//! list_messages (filters, since, unread_only, pin_key) and what every listing shares:
//! limits, the `fields` projection, the truncation marker and the digests on rows.

use crate::common::{TestChannel, ids, sha256_hex};
use countersign::core::timestamp::{format_rfc3339, parse_since};
use serde_json::{Value, json};

#[tokio::test]
async fn filters_on_topic_text_roles_and_enums() {
    let ch = TestChannel::new(&["alpha", "beta", "gamma"]);
    let a = ch.client("alpha").await;
    let b = ch.client("beta").await;
    let deploy = a
        .send_with(
            json!("beta"),
            "Deploy Friday",
            "ship it",
            json!({"kind": "feat"}),
        )
        .await;
    let debt = a
        .send_with(
            json!("gamma"),
            "fix the build",
            "the DEPLOY broke",
            json!({"action_required": true, "kind": "bug", "work_status": "in_progress"}),
        )
        .await;
    let status = a
        .send_with(json!("*"), "weekly", "all quiet", json!({"kind": "status"}))
        .await;
    let reply = b.send("alpha", "re: deploy", "done").await;

    let topic = |t: &str| a.call("list_messages", json!({"topic": t}));
    assert_eq!(
        ids(&topic("deploy").await.rows()),
        vec![reply.clone(), deploy.clone()],
        "case-insensitive, newest first"
    );
    assert!(
        topic("ship").await.rows().is_empty(),
        "topic= does not look in bodies"
    );
    let text = a
        .call("list_messages", json!({"text": "deploy"}))
        .await
        .rows();
    assert_eq!(
        ids(&text),
        vec![reply.clone(), debt.clone(), deploy.clone()],
        "text= looks in topic or body"
    );

    let from_b = a
        .call("list_messages", json!({"from_role": "beta"}))
        .await
        .rows();
    assert_eq!(ids(&from_b), vec![reply.clone()]);
    let to_gamma = a
        .call("list_messages", json!({"to_role": "gamma"}))
        .await
        .rows();
    assert_eq!(
        ids(&to_gamma),
        vec![status.clone(), debt.clone()],
        "to_role matches multi-recipient too"
    );
    let both = a
        .call(
            "list_messages",
            json!({"from_role": "alpha", "to_role": "beta"}),
        )
        .await
        .rows();
    assert_eq!(ids(&both), vec![status.clone(), deploy.clone()]);

    let k = a.call("list_messages", json!({"kind": "bug"})).await.rows();
    assert_eq!(ids(&k), vec![debt.clone()]);
    let w = a
        .call("list_messages", json!({"work_status": "in_progress"}))
        .await
        .rows();
    assert_eq!(ids(&w), vec![debt.clone()]);
    let open = a
        .call("list_messages", json!({"status": "open"}))
        .await
        .rows();
    assert_eq!(ids(&open), vec![debt.clone()]);
    assert!(
        a.call("list_messages", json!({"status": "resolved"}))
            .await
            .rows()
            .is_empty()
    );

    a.call("list_messages", json!({"kind": "chore"}))
        .await
        .value_error("'kind' must be one of");
    a.call("list_messages", json!({"work_status": "idle"}))
        .await
        .value_error("'work_status' must be one of");
    a.call("list_messages", json!({"status": "closed"}))
        .await
        .value_error("'status' must be one of");

    // Filter lengths: 200 characters at most.
    for field in ["topic", "text"] {
        a.call("list_messages", json!({field: "x".repeat(201)}))
            .await
            .value_error(&format!("'{field}' must be <= 200 characters (got 201)"));
        assert!(
            a.call("list_messages", json!({field: "x".repeat(200)}))
                .await
                .rows()
                .is_empty()
        );
    }
    a.close().await;
    b.close().await;
}

#[tokio::test]
async fn substring_filters_are_literal_and_ascii_case_insensitive() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let fe = ch.client("frontend").await;
    let pct = fe.send("backend", "100% done", "x").await;
    let plain = fe.send("backend", "1000 done", "x").await;
    let under = fe.send("backend", "snake_case", "x").await;
    let no_under = fe.send("backend", "snakeXcase", "x").await;
    let slash = fe.send("backend", "path", r"C:\temp\new").await;
    let accent = fe.send("backend", "ÉCOLE", "x").await;
    let _ = (plain, no_under);

    let text = |t: &str| fe.call("list_messages", json!({"text": t}));
    assert_eq!(
        ids(&text("0%").await.rows()),
        vec![pct.clone()],
        "% is literal"
    );
    assert_eq!(
        ids(&text("e_c").await.rows()),
        vec![under.clone()],
        "_ is literal"
    );
    assert_eq!(
        ids(&text(r"\temp").await.rows()),
        vec![slash.clone()],
        r"\ is literal"
    );
    assert_eq!(ids(&text(r"p\n").await.rows()), vec![slash.clone()]);
    assert!(text(r"\%").await.rows().is_empty());
    assert_eq!(
        ids(&fe
            .call("list_messages", json!({"topic": "SNAKE_CASE"}))
            .await
            .rows()),
        vec![under]
    );
    assert_eq!(ids(&text("c:\\TEMP").await.rows()), vec![slash]);
    assert!(
        text("école").await.rows().is_empty(),
        "case folding is ASCII only"
    );
    assert_eq!(ids(&text("ÉCOLE").await.rows()), vec![accent]);
    fe.close().await;
}

#[tokio::test]
async fn since_is_an_iso_instant_compared_inclusively() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let fe = ch.client("frontend").await;
    let first = fe.send("backend", "first", "x").await;
    let second = fe.send("backend", "second", "x").await;
    let rows = fe.all_messages().await;
    let created = rows.iter().find(|r| r["id"] == second).unwrap()["created_at"]
        .as_str()
        .unwrap()
        .to_owned();
    let ms = parse_since(&created).unwrap();
    let first_ms = parse_since(
        rows.iter().find(|r| r["id"] == first).unwrap()["created_at"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert!(first_ms < ms, "the two sends have distinct times");

    // One instant, four spellings: Z, +02:00, -0530, and naive (read as UTC).
    let shifted = |offset_min: i64, suffix: &str| {
        let local = format_rfc3339(ms + offset_min * 60_000);
        format!("{}{suffix}", &local[..23])
    };
    for since in [
        created.clone(),
        shifted(120, "+02:00"),
        shifted(-330, "-0530"),
        shifted(0, ""),
    ] {
        let rows = fe
            .call("list_messages", json!({"since": since}))
            .await
            .rows();
        assert_eq!(ids(&rows), vec![second.clone()], "since={since}");
    }
    // Minutes only, an hours-only offset; a space instead of T; one millisecond later excludes it.
    let minute = format!("{}+00", &created[..16]);
    assert!(
        ids(&fe
            .call("list_messages", json!({"since": minute}))
            .await
            .rows())
        .contains(&second)
    );
    assert_eq!(
        ids(&fe
            .call("list_messages", json!({"since": shifted(60, "+01")}))
            .await
            .rows()),
        vec![second.clone()]
    );
    let spaced = created.replacen('T', " ", 1);
    assert_eq!(
        fe.call("list_messages", json!({"since": spaced}))
            .await
            .rows()
            .len(),
        1
    );
    let later = format_rfc3339(ms + 1);
    assert!(
        fe.call("list_messages", json!({"since": later}))
            .await
            .rows()
            .is_empty()
    );
    // Bare dates; an offset that stays in range normalises.
    assert_eq!(
        fe.call("list_messages", json!({"since": "2000-01-01"}))
            .await
            .rows()
            .len(),
        2
    );
    assert!(
        fe.call("list_messages", json!({"since": "9999-12-31"}))
            .await
            .rows()
            .is_empty()
    );
    assert_eq!(
        fe.call(
            "list_messages",
            json!({"since": "0001-01-01T05:00:00+03:00"})
        )
        .await
        .rows()
        .len(),
        2
    );

    for bad in [
        "yesterday",
        "2026-13-01",
        "2026-02-30",
        "10000-01-01",
        "0000-01-01",
        "2026-08-09T25:00:00Z",
        "",
    ] {
        fe.call("list_messages", json!({"since": bad}))
            .await
            .value_error("'since' must be an ISO-8601 timestamp such as 2026-08-09T10:00:00Z");
    }
    fe.close().await;
}

#[tokio::test]
async fn unread_only_is_per_recipient_with_to_role_and_row_state_without() {
    let ch = TestChannel::new(&["alpha", "beta", "gamma"]);
    let a = ch.client("alpha").await;
    let b = ch.client("beta").await;
    let solo = a.send("beta", "solo", "x").await;
    let multi = a
        .send_with(json!("*"), "multi", "x", json!({"kind": "status"}))
        .await;
    let unread = |args: Value| a.call("list_messages", args);
    assert_eq!(
        ids(&unread(json!({"unread_only": true})).await.rows()),
        vec![multi.clone(), solo.clone()]
    );

    b.call("mark_read", json!({"message_ids": [solo, multi]}))
        .await
        .ok();
    assert!(
        unread(json!({"unread_only": true, "to_role": "beta"}))
            .await
            .rows()
            .is_empty()
    );
    assert_eq!(
        ids(&unread(json!({"unread_only": true, "to_role": "gamma"}))
            .await
            .rows()),
        vec![multi.clone()]
    );
    // Without to_role: the single recipient's read counts; a multi-recipient row looks unread.
    assert_eq!(
        ids(&unread(json!({"unread_only": true})).await.rows()),
        vec![multi.clone()]
    );
    let all = unread(json!({})).await.rows();
    let s = all.iter().find(|r| r["id"] == solo).unwrap();
    assert!(
        s["read_at"].is_string(),
        "a one-recipient row shows its recipient's read: {s}"
    );
    let with_to = unread(json!({"to_role": "beta"})).await.rows();
    assert!(
        with_to.iter().all(|r| r["read_at"].is_string()),
        "with to_role rows show that role's read"
    );
    a.close().await;
    b.close().await;
}

#[tokio::test]
async fn pin_key_filters_structurally_and_prose_does_not_count() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let fe = ch.client("frontend").await;
    let prose = fe
        .send(
            "backend",
            "about team-charter",
            "we should update team-charter",
        )
        .await;
    assert!(
        fe.call("list_messages", json!({"pin_key": "team-charter"}))
            .await
            .rows()
            .is_empty()
    );
    assert_eq!(
        ids(&fe
            .call("list_messages", json!({"text": "team-charter"}))
            .await
            .rows()),
        vec![prose]
    );
    fe.close().await;
}

#[tokio::test]
async fn limits_are_refused_outside_1_to_1000_on_every_listing() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let fe = ch.client("frontend").await;
    let be = ch.client("backend").await;
    fe.send("backend", "deploy", "deploy notes").await;
    for (tool, extra) in [
        ("read_inbox", json!({"unread_only": false})),
        ("list_messages", json!({})),
        ("search_messages", json!({"query": "deploy"})),
        ("search_messages", json!({"query": "de"})),
    ] {
        for bad in [0, -1, 1001] {
            let mut args = extra.clone();
            args["limit"] = json!(bad);
            be.call(tool, args)
                .await
                .value_error("'limit' must be between 1 and 1000");
        }
        for ok in [1, 1000] {
            let mut args = extra.clone();
            args["limit"] = json!(ok);
            assert_eq!(
                be.call(tool, args).await.rows().len(),
                1,
                "{tool} limit={ok}"
            );
        }
    }
    fe.close().await;
    be.close().await;
}

#[tokio::test]
async fn listings_are_newest_first_and_mark_truncation() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let fe = ch.client("frontend").await;
    let mut sent = Vec::new();
    for i in 0..5 {
        sent.push(
            fe.send("backend", &format!("deploy {i}"), "deploy body")
                .await,
        );
    }
    let newest_first: Vec<String> = sent.iter().rev().cloned().collect();
    let v = fe.call("list_messages", json!({"limit": 3})).await.ok();
    assert_eq!(
        ids(v["result"].as_array().unwrap()),
        newest_first[..3].to_vec()
    );
    assert_eq!(v["truncated"]["limit"], 3);
    assert_eq!(v["truncated"]["returned"], 3);
    assert!(
        v["truncated"]["note"]
            .as_str()
            .is_some_and(|n| !n.is_empty())
    );
    // Exactly `limit` matches: no marker.
    let v = fe.call("list_messages", json!({"limit": 5})).await.ok();
    assert_eq!(ids(v["result"].as_array().unwrap()), newest_first);
    assert!(v.get("truncated").is_none(), "{v}");
    let v = fe
        .call("search_messages", json!({"query": "deploy", "limit": 2}))
        .await
        .ok();
    assert_eq!(v["result"].as_array().unwrap().len(), 2);
    assert_eq!(v["truncated"]["returned"], 2);
    let v = fe
        .call("search_messages", json!({"query": "0 OR 1", "limit": 1}))
        .await
        .ok();
    assert_eq!(
        v["result"].as_array().unwrap().len(),
        1,
        "scan path truncates too"
    );
    assert_eq!(v["truncated"]["limit"], 1);
    assert!(
        fe.call("search_messages", json!({"query": "deploy"}))
            .await
            .ok()
            .get("truncated")
            .is_none()
    );
    fe.close().await;
}

#[tokio::test]
async fn fields_project_rows_on_every_message_listing() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let fe = ch.client("frontend").await;
    let be = ch.client("backend").await;
    let body = "deploy the thing, naïvely";
    let id = fe.send("backend", "deploy", body).await;

    // Default: lean rows with bodies; no null or empty field, and no digest
    // of a plain message (absent means null).
    let full = fe.call("list_messages", json!({})).await.rows();
    let r = full[0].as_object().unwrap();
    for k in [
        "id",
        "from",
        "to",
        "topic",
        "body",
        "created_at",
        "action_required",
    ] {
        assert!(r.contains_key(k), "full rows carry {k}: {r:?}");
    }
    for k in [
        "reply_to",
        "kind",
        "work_status",
        "status",
        "addenda",
        "body_sha256",
        "body_length_bytes",
        "body_length_chars",
    ] {
        assert!(!r.contains_key(k), "lean rows leave out {k}: {r:?}");
    }
    assert!(r.values().all(|v| !v.is_null()), "{r:?}");
    // The digests when `fields` names them.
    let named = fe
        .call(
            "list_messages",
            json!({"fields": ["body_sha256", "body_length_bytes", "body_length_chars", "reply_to"]}),
        )
        .await
        .rows();
    let r = named[0].as_object().unwrap();
    assert_eq!(
        r["reply_to"],
        Value::Null,
        "a named field is there, null: {r:?}"
    );
    assert_eq!(r["body_sha256"], sha256_hex(body));
    assert_eq!(r["body_length_bytes"], body.len());
    assert_eq!(r["body_length_chars"], body.chars().count());
    assert_ne!(r["body_length_bytes"], r["body_length_chars"]);

    let calls: [(&str, Value); 4] = [
        ("list_messages", json!({})),
        ("search_messages", json!({"query": "deploy"})),
        ("get_thread", json!({"message_id": id})),
        ("read_inbox", json!({"unread_only": false})),
    ];
    for (tool, base) in calls {
        let with = |fields: Value| {
            let mut args = base.clone();
            args["fields"] = fields;
            args
        };
        // "headers" as a string or a one-element list: no body, digests kept.
        for h in [json!("headers"), json!(["headers"])] {
            let rows = be.call(tool, with(h)).await.rows();
            let r = rows[0].as_object().unwrap();
            assert!(!r.contains_key("body"), "{tool}: {r:?}");
            for k in [
                "id",
                "from",
                "to",
                "topic",
                "created_at",
                "body_sha256",
                "body_length_bytes",
                "body_length_chars",
            ] {
                assert!(r.contains_key(k), "{tool} headers carry {k}: {r:?}");
            }
            assert_eq!(r["body_sha256"], sha256_hex(body), "{tool}");
        }
        // Explicit names, with the from_role/to_role aliases; absent keys are simply left out.
        let rows = be
            .call(
                tool,
                with(json!(["to_role", "id", "from_role", "superseded_at"])),
            )
            .await
            .rows();
        let keys: Vec<&String> = rows[0].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["to", "id", "from", "superseded_at"], "{tool}");
        assert_eq!(rows[0]["from"], "frontend");
        assert_eq!(rows[0]["to"], "backend");

        let m = be
            .call(tool, with(json!(["id", "bogus", "from"])))
            .await
            .value_error("unknown field(s)");
        assert!(m.contains("bogus") && m.contains("allowed"), "{tool}: {m}");
        be.call(tool, with(json!([])))
            .await
            .value_error("'fields' cannot be empty");
        be.call(tool, with(json!("bogus")))
            .await
            .value_error("unknown field(s)");
    }
    // search keeps its snippet and match under "headers".
    let rows = be
        .call(
            "search_messages",
            json!({"query": "deploy", "fields": "headers"}),
        )
        .await
        .rows();
    assert!(
        rows[0]["snippet"].is_string() && rows[0]["match"] == "fts",
        "{:?}",
        rows[0]
    );
    // list_messages rows carry no addendum; a name asked for by itself is
    // there all the same, null.
    let rows = be
        .call("list_messages", json!({"fields": ["addendum"]}))
        .await
        .rows();
    assert_eq!(rows[0], json!({"addendum": null}));
    fe.close().await;
    be.close().await;
}
