//! The MCP surface itself: tool list, order, schemas, annotations, and a first exchange.

use crate::common::TestChannel;
use serde_json::json;

#[tokio::test]
async fn tools_are_listed_in_protocol_order_with_annotations_and_described_parameters() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let c = ch.client("frontend").await;
    let tools = c.inner.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(
        names,
        [
            "send_message",
            "read_inbox",
            "mark_read",
            "delete_message",
            "list_messages",
            "search_messages",
            "resolve_message",
            "confirm_resolution",
            "reopen_message",
            "open_obligations",
            "set_work_status",
            "ready_work",
            "awaiting_ack",
            "get_thread",
            "upload_content",
            "seal_content",
            "get_content",
            "revise_message",
            "message_history",
            "pin_set",
            "pin_get",
            "pin_list",
            "pin_history",
            "acknowledge",
            "get_acknowledgements",
            "backfill_superseded",
            "undo_backfill",
            "list_roles",
            "channel_status",
            "wait_for_reply",
            "wait_for_mail",
            "server_build",
            "get_protocol",
            "get_charter_template",
            "board_link",
            "memory_view",
            "memory_zoom",
            "memory_read",
            "memory_search",
            "memory_thread"
        ]
    );
    // read_inbox and channel_status write (delivery, seen news), so they are not read-only.
    let read_only = [
        "list_messages",
        "search_messages",
        "open_obligations",
        "ready_work",
        "awaiting_ack",
        "get_thread",
        "get_content",
        "message_history",
        "pin_get",
        "pin_list",
        "pin_history",
        "get_acknowledgements",
        "list_roles",
        "wait_for_reply",
        "wait_for_mail",
        "server_build",
        "get_protocol",
        "get_charter_template",
        "memory_view",
        "memory_zoom",
        "memory_read",
        "memory_search",
        "memory_thread",
    ];
    for t in &tools {
        let a = t
            .annotations
            .as_ref()
            .unwrap_or_else(|| panic!("{} has no annotations", t.name));
        assert_eq!(
            a.read_only_hint,
            Some(read_only.contains(&t.name.as_ref())),
            "{}",
            t.name
        );
        assert!(
            a.destructive_hint.is_some() && a.idempotent_hint.is_some(),
            "{}",
            t.name
        );
        let props = t.input_schema.get("properties").and_then(|p| p.as_object());
        for (name, schema) in props.into_iter().flatten() {
            assert!(
                schema
                    .get("description")
                    .and_then(|d| d.as_str())
                    .is_some_and(|d| !d.is_empty()),
                "{}.{name} has no description",
                t.name
            );
        }
    }
    for peer_text in [
        "read_inbox",
        "get_thread",
        "get_content",
        "memory_view",
        "memory_zoom",
        "memory_read",
        "memory_search",
        "memory_thread",
    ] {
        let t = tools.iter().find(|t| t.name == peer_text).unwrap();
        assert!(
            t.description
                .as_deref()
                .unwrap_or("")
                .contains("ANOTHER AGENT SESSION"),
            "{peer_text}"
        );
    }
    c.close().await;
}

/// The two documents answer Markdown; every other tool answers JSON.
const DOCUMENTS: [&str; 2] = ["get_protocol", "get_charter_template"];

#[tokio::test]
async fn every_tool_that_answers_json_declares_an_object_output_schema() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let c = ch.client("frontend").await;
    let tools = c.inner.list_all_tools().await.unwrap();
    for t in &tools {
        let schema = t.output_schema.as_deref();
        if DOCUMENTS.contains(&t.name.as_ref()) {
            assert!(schema.is_none(), "{} answers a document, not JSON", t.name);
            continue;
        }
        let schema = schema.unwrap_or_else(|| panic!("{} has no outputSchema", t.name));
        assert_eq!(
            schema.get("type"),
            Some(&json!("object")),
            "{}: MCP wants an object at the root of an outputSchema",
            t.name
        );
    }
    // And the documents really are no JSON (else they would owe a schema).
    for name in DOCUMENTS {
        let text = c.call_text(name, json!({})).await;
        assert!(
            serde_json::from_str::<serde_json::Value>(&text).is_err(),
            "{name} answers JSON"
        );
    }
    c.close().await;
}

#[tokio::test]
async fn a_message_goes_from_one_session_to_another() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let fe = ch.client("frontend").await;
    let be = ch.client("backend").await;
    let id = fe
        .send("backend", "schema", "please review the schema")
        .await;
    let inbox = be.call("read_inbox", json!({})).await.ok();
    let rows = inbox["result"].as_array().unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["id"], id);
    assert_eq!(rows[0]["from"], "frontend");
    assert_eq!(rows[0]["to"], "backend");
    let marked = be.call("mark_read", json!({"message_id": id})).await.ok();
    assert_eq!(marked["already_read"], false);
    let inbox = be.call("read_inbox", json!({})).await.ok();
    assert!(inbox["result"].as_array().unwrap().is_empty());
    fe.close().await;
    be.close().await;
}

/// The triage every place teaches: the server's instructions, the
/// session-start hook (`status_hooks`) and the CLAUDE.md / AGENTS.md note.
pub const TRIAGE_ORDER: &str = "unblocked, open_obligations, awaiting_ack, needs_you, \
    resolved_for_you, awaiting_done, unread, in_progress";

#[tokio::test]
async fn the_instructions_start_where_the_hooks_and_notes_start() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let c = ch.client("frontend").await;
    let info = c.inner.peer_info().expect("the server introduced itself");
    let text = info.instructions.as_deref().unwrap_or_default();
    assert!(text.contains("Start with channel_status()"), "{text}");
    assert!(text.contains(TRIAGE_ORDER), "{text}");
    assert!(!text.contains("list_roles"), "one first step: {text}");
}
