//! wait_for_mail and wait_for_reply: woken by the folder watcher when another
//! process writes, on new ids rather than counts, with the timeout shape.

use std::time::Duration;

use crate::common::TestChannel;
use serde_json::json;

#[tokio::test]
async fn backlog_is_reported_not_woken_on_and_the_timeout_has_its_shape() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let fe = ch.client("frontend").await;
    let be = ch.client("backend").await;
    fe.send("backend", "old", "already waiting").await;
    let v = be
        .call(
            "wait_for_mail",
            json!({"timeout_s": 1, "poll_interval_s": 0.2}),
        )
        .await
        .ok();
    assert_eq!(v["timed_out"], true, "{v}");
    assert_eq!(v["retry"], true);
    assert_eq!(v["pending_at_entry"]["unread"], 1, "{v}");
    assert!(v["waited_s"].as_f64().unwrap() >= 0.9, "{v}");
    assert!(v["note"].as_str().unwrap().contains("call again"));
    // Without ignoring the backlog, it answers at once.
    let v = be
        .call(
            "wait_for_mail",
            json!({"timeout_s": 30, "ignore_backlog": false}),
        )
        .await
        .ok();
    assert_eq!(v["timed_out"], false);
    assert_eq!(v["pending"]["unread"], 1, "{v}");
    fe.close().await;
    be.close().await;
}

#[tokio::test]
async fn mail_written_by_another_process_wakes_a_waiting_call() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let fe = ch.client("frontend").await;
    let be = ch.client("backend").await;
    fe.send("backend", "first", "backlog").await;
    let waiting = tokio::spawn(async move {
        let v = be
            .call(
                "wait_for_mail",
                json!({"timeout_s": 40, "poll_interval_s": 30}),
            )
            .await
            .ok();
        (v, be)
    });
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(
        !waiting.is_finished(),
        "the backlog alone must not wake the wait"
    );
    fe.send("backend", "second", "news").await;
    // The poll interval is 30 s: only the watcher can wake it before that.
    let (v, be) = tokio::time::timeout(Duration::from_secs(20), waiting)
        .await
        .expect("woken")
        .unwrap();
    assert_eq!(v["timed_out"], false, "{v}");
    assert_eq!(v["pending"]["unread"], 2, "the count covers both: {v}");
    assert_eq!(v["pending_at_entry"]["unread"], 1, "{v}");
    fe.close().await;
    be.close().await;
}

#[tokio::test]
async fn wait_parameters_are_checked() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let be = ch.client("backend").await;
    for (args, needle) in [
        (
            json!({"timeout_s": -1}),
            "'timeout_s' must be between 0 and 3600",
        ),
        (
            json!({"timeout_s": 3601}),
            "'timeout_s' must be between 0 and 3600",
        ),
        (
            json!({"poll_interval_s": 0.05}),
            "'poll_interval_s' must be between 0.1 and 60",
        ),
        (
            json!({"poll_interval_s": 61}),
            "'poll_interval_s' must be between 0.1 and 60",
        ),
    ] {
        be.call("wait_for_mail", args.clone())
            .await
            .value_error(needle);
        let mut r = args;
        r["message_id"] = json!("abcdef");
        be.call("wait_for_reply", r).await.value_error(needle);
    }
    be.call(
        "wait_for_reply",
        json!({"message_id": "abcdef", "timeout_s": 0}),
    )
    .await
    .value_error("not found");
    let tools = be.inner.list_all_tools().await.unwrap();
    for name in ["wait_for_mail", "wait_for_reply"] {
        let t = tools.iter().find(|t| t.name == name).unwrap();
        assert!(
            t.description.as_deref().unwrap().contains("50 s"),
            "{name} states its cap"
        );
    }
    be.close().await;
}

#[tokio::test]
async fn wait_for_reply_returns_the_reply_once_it_exists() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let fe = ch.client("frontend").await;
    let be = ch.client("backend").await;
    let q = fe.send("backend", "question", "what is the port?").await;
    let v = fe
        .call(
            "wait_for_reply",
            json!({"message_id": q, "timeout_s": 0.5, "poll_interval_s": 0.1}),
        )
        .await
        .ok();
    assert_eq!(v["timed_out"], true, "{v}");
    let parent = q.clone();
    let fe_wait = tokio::spawn(async move {
        let v = fe
            .call(
                "wait_for_reply",
                json!({"message_id": q, "timeout_s": 40, "poll_interval_s": 30}),
            )
            .await
            .ok();
        (v, fe, q)
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let a = be
        .call(
            "send_message",
            json!({"to": "frontend", "topic": "re", "body": "5432", "reply_to": parent}),
        )
        .await;
    let (v, fe, q) = fe_wait.await.unwrap();
    let a = a.ok();
    assert_eq!(v["id"], a["id"], "{v}");
    assert_eq!(v["body"], "5432");
    // Marked read, the reply no longer counts unless include_read…
    fe.call("mark_read", json!({"message_id": a["id"]}))
        .await
        .ok();
    let v = fe
        .call(
            "wait_for_reply",
            json!({"message_id": q, "timeout_s": 0.3, "poll_interval_s": 0.1}),
        )
        .await
        .ok();
    assert_eq!(v["timed_out"], true);
    let v = fe
        .call(
            "wait_for_reply",
            json!({"message_id": q, "timeout_s": 0.3, "include_read": true}),
        )
        .await
        .ok();
    assert_eq!(v["id"], a["id"]);
    // …and after_id skips replies up to the one given.
    let v = fe
        .call("wait_for_reply", json!({"message_id": q, "timeout_s": 0.3, "poll_interval_s": 0.1, "include_read": true, "after_id": a["id"]}))
        .await
        .ok();
    assert_eq!(v["timed_out"], true, "{v}");
    fe.close().await;
    be.close().await;
}

#[tokio::test]
async fn a_wait_ends_at_its_deadline_not_a_poll_interval_later() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let be = ch.client("backend").await;
    let started = std::time::Instant::now();
    let v = be
        .call(
            "wait_for_mail",
            json!({"timeout_s": 0.5, "poll_interval_s": 30}),
        )
        .await
        .ok();
    assert_eq!(v["timed_out"], true);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "slept a poll interval past the deadline"
    );
    be.close().await;
}

#[tokio::test]
async fn new_items_wake_even_when_the_count_nets_out() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let fe = ch.client("frontend").await;
    let be = ch.client("backend").await;
    let be2 = ch.client("backend").await;
    let old = fe
        .send("backend", "old", "read while the other waits")
        .await;
    let waiting = tokio::spawn(async move {
        let v = be
            .call(
                "wait_for_mail",
                json!({"timeout_s": 40, "poll_interval_s": 30}),
            )
            .await
            .ok();
        (v, be)
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    be2.call("mark_read", json!({"message_id": old})).await.ok();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiting.is_finished(), "reading mail is not news");
    fe.send("backend", "new", "one in, one out: still one unread")
        .await;
    let (v, be) = tokio::time::timeout(Duration::from_secs(20), waiting)
        .await
        .expect("woken")
        .unwrap();
    assert_eq!(v["timed_out"], false, "{v}");
    assert_eq!(v["pending"]["unread"], 1, "{v}");
    assert_eq!(v["pending_at_entry"]["unread"], 1, "{v}");
    for c in [fe, be, be2] {
        c.close().await;
    }
}

#[tokio::test]
async fn an_item_that_leaves_and_comes_back_wakes() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let fe = ch.client("frontend").await;
    let be = ch.client("backend").await;
    let be2 = ch.client("backend").await;
    let debt = fe
        .call(
            "send_message",
            json!({"to": "backend", "topic": "fix", "body": "the bug", "action_required": true}),
        )
        .await
        .ok()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    be2.call("mark_read", json!({"message_id": debt}))
        .await
        .ok();
    let waiting = tokio::spawn(async move {
        let v = be
            .call(
                "wait_for_mail",
                json!({"timeout_s": 40, "poll_interval_s": 30}),
            )
            .await
            .ok();
        (v, be)
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    // The addressee takes the debt: it leaves open_obligations_untaken…
    be2.call(
        "set_work_status",
        json!({"message_id": debt, "work_status": "in_progress"}),
    )
    .await
    .ok();
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(!waiting.is_finished(), "an item leaving is not news");
    // …and the author's poke puts it back: that is news again.
    fe.call(
        "set_work_status",
        json!({"message_id": debt, "work_status": "in_progress"}),
    )
    .await
    .ok();
    let (v, be) = tokio::time::timeout(Duration::from_secs(20), waiting)
        .await
        .expect("woken")
        .unwrap();
    assert_eq!(v["timed_out"], false, "{v}");
    assert_eq!(v["pending"]["open_obligations_untaken"], 1, "{v}");
    assert_eq!(v["pending_at_entry"]["open_obligations_untaken"], 1, "{v}");
    for c in [fe, be, be2] {
        c.close().await;
    }
}
