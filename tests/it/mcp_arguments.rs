//! Refusals that teach, through the real stdio server: an unknown parameter
//! is refused with the closest known name, a wrong type names the field, what
//! was given and what is expected; all as isError tool results that write
//! nothing.

use serde_json::json;

use crate::common::TestChannel;

#[tokio::test]
async fn a_misspelled_action_required_sends_nothing_and_names_the_field() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let c = ch.client("frontend").await;
    let before = ch.feed_records();
    for spelling in ["actionRequired", "action-required", "action_requierd"] {
        let msg = c
            .call(
                "send_message",
                json!({"to": "backend", "topic": "debt", "body": "do it", spelling: true}),
            )
            .await
            .value_error("did you mean `action_required`?");
        assert!(
            msg.contains(&format!("unknown parameter `{spelling}`")),
            "{msg}"
        );
    }
    // `from` is no parameter of send_message and close to none of them.
    let msg = c
        .call(
            "send_message",
            json!({"to": "backend", "topic": "t", "body": "b", "from": "frontend"}),
        )
        .await
        .value_error("unknown parameter `from`");
    assert!(msg.contains("`to`, `topic`, `body`"), "{msg}");
    assert_eq!(ch.feed_records(), before, "a refused call wrote something");
    // Listing takes from_role: `from` is taken for it.
    c.call("list_messages", json!({"from": "backend"}))
        .await
        .value_error("did you mean `from_role`?");
    // The right spelling does make a debt.
    let sent = c
        .call(
            "send_message",
            json!({"to": "backend", "topic": "debt", "body": "do it", "action_required": true}),
        )
        .await
        .ok();
    let be = ch.client("backend").await;
    let owed = be.call("open_obligations", json!({})).await.ok();
    assert!(
        owed.to_string().contains(sent["id"].as_str().unwrap()),
        "{owed}"
    );
    be.close().await;
    c.close().await;
}

#[tokio::test]
async fn a_wrong_type_names_the_field_the_value_and_what_is_expected() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let c = ch.client("frontend").await;
    let id = c.send("backend", "hello", "body").await;
    let before = ch.feed_records();
    let cases = [
        (
            "send_message",
            json!({"to": "backend", "topic": "t", "body": "b", "action_required": "yes"}),
            "send_message: the parameter `action_required` must be a boolean (true or false); \
             got the string \"yes\"",
        ),
        (
            "send_message",
            json!({"to": ["backend", 3], "topic": "t", "body": "b"}),
            "send_message: the field `to[1]` must be a string; got the integer 3",
        ),
        (
            "send_message",
            json!({"to": {"role": "backend"}, "topic": "t", "body": "b"}),
            "the parameter `to` must be a string or a list of strings; got the object",
        ),
        (
            "read_inbox",
            json!({"limit": "10"}),
            "read_inbox: the parameter `limit` must be an integer; got the string \"10\"",
        ),
        (
            "mark_read",
            json!({"message_ids": id}),
            "the parameter `message_ids` must be a list of strings",
        ),
        (
            "wait_for_mail",
            json!({"timeout_s": "soon"}),
            "the parameter `timeout_s` must be a number; got the string \"soon\"",
        ),
        (
            "set_work_status",
            json!({"message_id": id, "work_status": 5}),
            "the parameter `work_status` must be a string; got the integer 5",
        ),
        (
            "resolve_message",
            json!({}),
            "resolve_message: the parameter `message_id` is required",
        ),
        (
            "channel_status",
            json!({"verbose": true}),
            "unknown parameter `verbose`; channel_status takes no parameters",
        ),
    ];
    for (tool, args, expected) in cases {
        let res = c.call_raw(tool, args.clone()).await;
        assert_eq!(res.is_error, Some(true), "{tool} {args}");
        c.call(tool, args).await.value_error(expected);
    }
    assert_eq!(ch.feed_records(), before, "a refused call wrote something");
    // null for an optional parameter is its absence, as before.
    c.call(
        "send_message",
        json!({"to": "backend", "topic": "t", "body": "b", "reply_to": null}),
    )
    .await
    .ok();
    c.close().await;
}

#[tokio::test]
async fn a_field_inside_an_object_is_refused_by_its_path_like_a_parameter() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let c = crate::common::Client::spawn_with(&ch.home, &ch.dir, "frontend", &["--tools", "jobs"])
        .await;
    let before = ch.feed_records();
    let cases = [
        (
            json!({"job": "j", "lines": [{"line": "ab12", "txt": "a summary"}]}),
            "compact_submit: unknown field `lines[0].txt`; did you mean `lines[0].text`?",
        ),
        (
            json!({"job": "j", "lines": [{"line": "ab12", "text": "s"}, {"line": "cd34"}]}),
            "compact_submit: the field `lines[1].text` is required; `lines[1]` takes `line`, `text`",
        ),
        (
            json!({"job": "j", "lines": [{"line": 12, "text": "s"}]}),
            "compact_submit: the field `lines[0].line` must be a string; got the integer 12",
        ),
        (
            json!({"job": "j", "lines": ["ab12: a summary"]}),
            "compact_submit: the field `lines[0]` must be an object; got the string",
        ),
    ];
    for (args, expected) in cases {
        let res = c.call_raw("compact_submit", args.clone()).await;
        assert_eq!(res.is_error, Some(true), "{args}");
        let msg = c.call("compact_submit", args).await.value_error(expected);
        assert!(!msg.contains("missing field"), "{msg}");
    }
    assert_eq!(ch.feed_records(), before, "a refused call wrote something");
    c.close().await;
}
