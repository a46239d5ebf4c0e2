//! Every refusal is one clear sentence, then the fix: a representative set
//! of refusals, each met through the real stdio server, must read as what is
//! wrong (naming the field or the id) and then what to do (a tool to call, a
//! value to pass, a step to take), on one line, with no raw decoder text.

use serde_json::json;

use crate::common::{Client, TestChannel};

/// The imperative words a fix starts with: what the caller is told to do.
const FIX_VERBS: [&str; 29] = [
    "acknowledge",
    "add",
    "address",
    "ask",
    "block",
    "call",
    "check",
    "choose",
    "copy",
    "drop",
    "give",
    "key",
    "leave",
    "mark",
    "name",
    "omit",
    "pass",
    "read",
    "remove",
    "reply",
    "resolve",
    "run",
    "send",
    "set",
    "split",
    "start",
    "try",
    "wait",
    "write",
];

/// Where the sentence saying what is wrong ends and the fix begins.
const SEPARATORS: [&str; 4] = ["; ", " — ", ": ", ". "];

/// Why `text` is not "what is wrong, then the fix", or `None` when it is.
/// `tools` are the tool names the server lists: pointing to one is a fix.
fn shape_fault(text: &str, tools: &[String]) -> Option<String> {
    if text.contains('\n') {
        return Some("it is more than one line".into());
    }
    for raw in [
        "missing field `",
        "invalid value: ",
        "invalid type: ",
        "unknown variant `",
        "did not match any",
    ] {
        if text.contains(raw) {
            return Some(format!("it holds the decoder's own text {raw:?}"));
        }
    }
    // The fix starts with what to do: a verb, a tool, or a command to run.
    // The schema's refusals put the value to use first: "`field` must be
    // an integer; got the string \"x\"".
    if text.contains("` must be ") && text.contains("; got ") {
        return None;
    }
    let names_a_fix = |rest: &str| {
        let first = rest
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .next()
            .unwrap_or_default()
            .to_lowercase();
        FIX_VERBS.contains(&first.as_str())
            || tools.contains(&first)
            || rest.starts_with("`countersign ")
    };
    for (at, sep) in SEPARATORS
        .iter()
        .filter_map(|s| text.find(s).map(|at| (at, *s)))
        .collect::<std::collections::BTreeMap<_, _>>()
    {
        let (what, rest) = (&text[..at], &text[at + sep.len()..]);
        if what.trim().is_empty() {
            return Some("it says nothing of what is wrong".into());
        }
        if what.contains(". ") {
            return Some("two sentences run together before the fix".into());
        }
        if names_a_fix(rest) {
            return None;
        }
    }
    Some("no fix follows what is wrong (a tool to call, a value to pass, a step to take)".into())
}

#[test]
fn the_shape_rule_tells_a_bare_refusal_from_one_with_its_fix() {
    let tools = vec!["list_messages".to_owned(), "search_messages".to_owned()];
    // The texts these refusals had before they named their fix.
    for bare in [
        "message abcdef123456 not found",
        "upload abcdef123456 not found",
        "cannot send to self (role='frontend')",
        "'title' is required",
        "nothing to write",
        "search_messages was cancelled by the client",
        "message abcdef123456 has action_required=false, nothing to resolve",
        "no paused or failed line starts with 'abcdef12' here",
        "role 'qa' is not a role of this channel — its roles are ['a', 'b']. The channel folder \
         used: /x",
    ] {
        assert!(shape_fault(bare, &tools).is_some(), "passed: {bare}");
    }
    for good in [
        "message abcdef123456 not found; list_messages or search_messages shows the ids this role \
         can see",
        "'topic' cannot be empty — omit it to keep the current topic",
        "index catching up: the full-text index holds 1 of 2 message texts. Try again in a few \
         seconds",
    ] {
        assert_eq!(shape_fault(good, &tools), None, "{good}");
    }
    assert!(shape_fault("a; pass it\nb", &tools).is_some());
    assert!(shape_fault("send_message: missing field `to`; pass it", &tools).is_some());
}

/// Checks the refusal `(kind, message)` has the shape and names `names`;
/// what is wrong with it goes to `faults`, so one run shows every offender.
fn check_shape(
    faults: &mut Vec<String>,
    tool: &str,
    refusal: (String, String),
    (kind, names): (&str, &str),
    tools: &[String],
) {
    let (got_kind, message) = refusal;
    assert_eq!(got_kind, kind, "{tool}: {message}");
    assert!(
        message.contains(names),
        "{tool}: {message:?} does not name {names:?}"
    );
    if let Some(why) = shape_fault(&message, tools) {
        faults.push(format!("{tool}: {why}: {message:?}"));
    }
}

#[tokio::test]
async fn every_refusal_says_what_is_wrong_then_the_fix() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let c = ch.client("frontend").await;
    let be = ch.client("backend").await;
    // A server of one toolset, for a tool it does not serve and the
    // compactor's own refusals.
    let jobs = Client::spawn_with(&ch.home, &ch.dir, "frontend", &["--tools", "jobs"]).await;
    let mut tools: Vec<String> = Vec::new();
    for client in [&c, &jobs] {
        let listed = client.inner.list_all_tools().await.expect("tools/list");
        tools.extend(listed.into_iter().map(|t| t.name.to_string()));
    }
    let plain = c.send("backend", "plain", "no debt here").await;
    let theirs = be.send("frontend", "theirs", "to frontend only").await;
    let before = ch.feed_records();
    let unknown = "abcdef123456";
    let cases = [
        (
            "get_thread",
            json!({"message_id": unknown}),
            "ValueError",
            unknown,
        ),
        (
            "resolve_message",
            json!({"message_id": unknown}),
            "ValueError",
            unknown,
        ),
        (
            "get_thread",
            json!({"message_id": "xyz"}),
            "ValueError",
            "message_id",
        ),
        (
            "send_message",
            json!({"to": "frontend", "topic": "t", "body": "b"}),
            "ValueError",
            "self",
        ),
        (
            "send_message",
            json!({"to": "qa", "topic": "t", "body": "b"}),
            "ValueError",
            "'qa'",
        ),
        (
            "send_message",
            json!({"to": "backend", "topic": "t", "body": "b", "reply_to": unknown}),
            "ValueError",
            "reply_to",
        ),
        (
            "send_message",
            json!({"to": "backend", "topic": "t", "body": "b", "addenda": {"qa": "x"}}),
            "ValueError",
            "addenda",
        ),
        (
            "get_content",
            json!({"upload_id": unknown}),
            "ValueError",
            unknown,
        ),
        (
            "upload_content",
            json!({"text": ""}),
            "ValueError",
            "'text'",
        ),
        (
            "pin_set",
            json!({"key": "glossary", "title": " ", "version": "1", "body": "b"}),
            "ValueError",
            "'title'",
        ),
        (
            "resolve_message",
            json!({"message_id": plain}),
            "ValueError",
            "action_required",
        ),
        (
            "set_work_status",
            json!({"message_id": plain, "work_status": "in_progress", "blocked_by": plain}),
            "ValueError",
            "blocked_by",
        ),
        (
            "search_messages",
            json!({"query": " "}),
            "ValueError",
            "'query'",
        ),
        ("resolve_message", json!({}), "ValueError", "message_id"),
        (
            "list_messages",
            json!({"fields": ["nope"]}),
            "ValueError",
            "nope",
        ),
        (
            "mark_read",
            json!({"message_ids": [unknown]}),
            "ValueError",
            "nothing was marked",
        ),
    ];
    let mut faults = Vec::new();
    for (tool, args, kind, names) in cases {
        let refusal = c.call(tool, args).await.refused();
        check_shape(&mut faults, tool, refusal, (kind, names), &tools);
    }
    // Acknowledging one's own message; marking read what is not one's own.
    let refusal = be
        .call(
            "acknowledge",
            json!({"message_id": theirs, "decision": "agree"}),
        )
        .await
        .refused();
    check_shape(
        &mut faults,
        "acknowledge",
        refusal,
        ("ValueError", "own message"),
        &tools,
    );
    let refusal = c
        .call("mark_read", json!({"message_ids": [plain]}))
        .await
        .refused();
    let foreign = ("PermissionError", "'frontend'");
    check_shape(&mut faults, "mark_read", refusal, foreign, &tools);
    let cases = [
        (
            "resolve_message",
            json!({"message_id": plain}),
            "ValueError",
            "resolve_message",
        ),
        (
            "compact_resume",
            json!({"line": "abcdef12"}),
            "ValueError",
            "abcdef12",
        ),
        (
            "compact_read",
            json!({"job": "j", "offset": -1}),
            "ValueError",
            "`offset`",
        ),
    ];
    for (tool, args, kind, names) in cases {
        let refusal = jobs.call(tool, args).await.refused();
        check_shape(&mut faults, tool, refusal, (kind, names), &tools);
    }
    assert_eq!(ch.feed_records(), before, "a refused call wrote something");
    assert!(faults.is_empty(), "{}", faults.join("\n"));
    jobs.close().await;
    be.close().await;
    c.close().await;
}
