//! Uploads through the real server: upload_content, seal_content, get_content, body_ref on
//! send_message, the 8 MiB cap, who may append and seal, and the charter template.

use crate::common;
use crate::common::{TestChannel, is_message_id, is_rfc3339_ms, sha256_hex};
use serde_json::{Value, json};

const CAP: usize = 8 * 1024 * 1024;

fn upload_id(v: &Value) -> String {
    v["upload_id"].as_str().expect("an upload_id").to_owned()
}

#[tokio::test]
async fn an_upload_in_two_parts_is_sealed_and_sent_by_reference() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let fe = ch.client("frontend").await;
    let be = ch.client("backend").await;
    let (one, two) = ("# Spec\n\nPart one: ünïcode ✓\r\n", "part two, the end.\n");
    let whole = format!("{one}{two}");

    let v = fe
        .call("upload_content", json!({"text": one, "label": "the spec"}))
        .await
        .ok();
    let id = upload_id(&v);
    assert!(is_message_id(&id), "{id}");
    let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "upload_id",
            "uploaded_by",
            "label",
            "sealed",
            "created_at",
            "sealed_at",
            "sha256",
            "length_bytes",
            "length_chars",
            "note"
        ]
    );
    assert_eq!(v["uploaded_by"], "frontend");
    assert_eq!(v["label"], "the spec");
    assert_eq!(v["sealed"], false);
    assert!(is_rfc3339_ms(v["created_at"].as_str().unwrap()));
    assert_eq!(v["sealed_at"], Value::Null);
    assert_eq!(v["sha256"], sha256_hex(one));
    assert!(v["note"].as_str().unwrap().contains("seal_content"));

    let v = fe
        .call(
            "upload_content",
            json!({"text": two, "upload_id": &id[..8]}),
        )
        .await
        .ok();
    assert_eq!(upload_id(&v), id);
    assert_eq!(v["sha256"], sha256_hex(&whole));
    assert_eq!(v["length_bytes"], whole.len());
    assert_eq!(v["length_chars"], whole.chars().count());
    assert_eq!(v["label"], "the spec", "the label stays the first one's");

    // Not sealed yet: not a body.
    let before = ch.feed_records();
    be.call(
        "send_message",
        json!({"to": "frontend", "topic": "spec", "body_ref": id}),
    )
    .await
    .value_error("is not sealed");
    assert_eq!(ch.feed_records(), before, "a refusal writes nothing");

    let sealed = fe.call("seal_content", json!({"upload_id": id})).await.ok();
    assert_eq!(sealed["sealed"], true);
    assert_eq!(sealed["sha256"], sha256_hex(&whole));
    assert!(is_rfc3339_ms(sealed["sealed_at"].as_str().unwrap()));
    // Sealing again is a no-op, and a sealed upload never changes.
    let before = ch.feed_records();
    assert_eq!(
        fe.call("seal_content", json!({"upload_id": id})).await.ok(),
        sealed
    );
    fe.call("upload_content", json!({"text": "more", "upload_id": id}))
        .await
        .value_error("is sealed");
    assert_eq!(ch.feed_records(), before);
    assert_eq!(
        be.call("get_content", json!({"upload_id": id})).await.ok(),
        sealed,
        "any role reads any upload, without the body by default"
    );

    be.call(
        "send_message",
        json!({"to": "frontend", "topic": "spec", "body": "x", "body_ref": id}),
    )
    .await
    .value_error("pass either 'body' or 'body_ref', not both");

    // Anyone's sealed upload is a body: the message body is the document exactly.
    let mid = be
        .send_with(json!("frontend"), "the spec", "", json!({"body_ref": id}))
        .await;
    let rows = fe
        .call(
            "read_inbox",
            json!({"fields": ["id", "body", "body_sha256", "body_length_bytes", "body_length_chars"]}),
        )
        .await
        .rows();
    assert_eq!(rows.len(), 1);
    let row = &rows[0];
    assert_eq!(row["id"], mid);
    assert_eq!(row["body"], whole);
    assert_eq!(row["body_sha256"], sealed["sha256"]);
    assert_eq!(row["body_length_bytes"], whole.len());
    assert_eq!(row["body_length_chars"], whole.chars().count());
    // The document's text is searchable like any body.
    let found = fe
        .call("search_messages", json!({"query": "ünïcode"}))
        .await
        .rows();
    assert_eq!(common::ids(&found), [mid]);

    let full = fe
        .call("get_content", json!({"upload_id": id, "with_body": true}))
        .await
        .ok();
    assert_eq!(full["body"], whole);
    fe.close().await;
    be.close().await;
}

#[tokio::test]
async fn a_large_document_is_split_into_chunks_and_read_back_whole() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let fe = ch.client("frontend").await;
    let before = ch.feed_records();
    // 600 KiB of two-byte characters and quotes: more than two chunk records.
    let text: String = "ä\"".repeat(200 * 1024);
    let v = fe.call("upload_content", json!({"text": text})).await.ok();
    assert!(ch.feed_records() - before >= 3, "several chunk records");
    assert_eq!(v["length_bytes"], text.len());
    assert_eq!(v["sha256"], sha256_hex(&text));
    let id = upload_id(&v);
    let got = fe
        .call("get_content", json!({"upload_id": id, "with_body": true}))
        .await
        .ok();
    assert_eq!(got["body"].as_str().unwrap(), text);
    // Appending a large piece keeps the order.
    let tail = "z".repeat(300 * 1024);
    let v = fe
        .call("upload_content", json!({"text": tail, "upload_id": id}))
        .await
        .ok();
    assert_eq!(v["sha256"], sha256_hex(&format!("{text}{tail}")));
    // An inline body that large is refused with the way out.
    fe.call(
        "send_message",
        json!({"to": "backend", "topic": "big", "body": text}),
    )
    .await
    .value_error("upload_content");
    fe.close().await;
}

#[tokio::test]
async fn the_cap_is_eight_mebibytes_counted_in_bytes() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let fe = ch.client("frontend").await;

    // A first piece over the cap is refused whole.
    let before = ch.feed_records();
    let m = fe
        .call("upload_content", json!({"text": "a".repeat(CAP + 1)}))
        .await
        .value_error(&format!("{}", CAP + 1));
    assert!(m.contains("8388608"), "{m}");
    assert_eq!(ch.feed_records(), before);

    // One byte short of the cap.
    let v = fe
        .call("upload_content", json!({"text": "a".repeat(CAP - 1)}))
        .await
        .ok();
    let id = upload_id(&v);
    assert_eq!(v["length_bytes"], CAP - 1);
    // One character, two bytes: over the cap in bytes though not in characters.
    let before = ch.feed_records();
    let m = fe
        .call("upload_content", json!({"text": "é", "upload_id": id}))
        .await
        .value_error(&format!("would make it {} bytes", CAP + 1));
    assert!(m.contains("Nothing was appended"), "{m}");
    assert_eq!(ch.feed_records(), before);
    let same = fe.call("get_content", json!({"upload_id": id})).await.ok();
    assert_eq!(same["length_bytes"], CAP - 1, "unchanged");
    assert_eq!(same["sha256"], v["sha256"]);
    // Exactly at the cap is fine.
    let v = fe
        .call("upload_content", json!({"text": "b", "upload_id": id}))
        .await
        .ok();
    assert_eq!(v["length_bytes"], CAP);
    fe.call("upload_content", json!({"text": "c", "upload_id": id}))
        .await
        .value_error("Nothing was appended");
    let sealed = fe.call("seal_content", json!({"upload_id": id})).await.ok();
    assert_eq!(sealed["length_bytes"], CAP);
    fe.close().await;
}

#[tokio::test]
async fn only_the_uploader_appends_and_seals_and_unknown_uploads_are_named() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let fe = ch.client("frontend").await;
    let be = ch.client("backend").await;
    let v = fe
        .call("upload_content", json!({"text": "mine"}))
        .await
        .ok();
    let id = upload_id(&v);
    // Refused before the backend has ever written: not even its feed is set up.
    let before = ch.feed_records();
    be.call("upload_content", json!({"text": "x", "upload_id": id}))
        .await
        .permission_error("belongs to 'frontend', not 'backend'");
    be.call("seal_content", json!({"upload_id": id}))
        .await
        .permission_error("belongs to 'frontend'");
    assert_eq!(ch.feed_records(), before);
    // Reading is open to every role, body included.
    let got = be
        .call("get_content", json!({"upload_id": id, "with_body": true}))
        .await
        .ok();
    assert_eq!(got["body"], "mine");
    assert_eq!(got["sealed"], false);

    let unknown = "abcdef123456";
    fe.call("upload_content", json!({"text": "x", "upload_id": unknown}))
        .await
        .value_error(&format!("upload {unknown} not found"));
    fe.call("seal_content", json!({"upload_id": unknown}))
        .await
        .value_error(&format!("upload {unknown} not found"));
    fe.call("get_content", json!({"upload_id": unknown}))
        .await
        .value_error(&format!("upload {unknown} not found"));
    fe.call(
        "send_message",
        json!({"to": "backend", "topic": "t", "body_ref": unknown}),
    )
    .await
    .value_error(&format!("upload {unknown} not found"));
    // A message id is not an upload id.
    let mid = fe.send("backend", "t", "b").await;
    fe.call("get_content", json!({"upload_id": mid}))
        .await
        .value_error("not found");
    fe.call("get_content", json!({"upload_id": "xyz"}))
        .await
        .value_error("'upload_id' must be an upload id");
    fe.call("upload_content", json!({"text": ""}))
        .await
        .value_error("'text' is required");
    fe.call(
        "upload_content",
        json!({"text": "x", "label": "l".repeat(81)}),
    )
    .await
    .value_error("'label' must be <= 80 characters (got 81)");
    assert_eq!(
        ch.feed_records(),
        before + 1,
        "only the message was written (frontend's feed existed)"
    );
    fe.close().await;
    be.close().await;
}

#[tokio::test]
async fn the_charter_template_is_served_as_text() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let fe = ch.client("frontend").await;
    let text = fe.call_text("get_charter_template", json!({})).await;
    assert_eq!(text, include_str!("../../docs/charter-template.md"));
    assert!(text.contains("Team charter"));
    assert!(text.contains("team-charter"));
    let rules = text
        .split("## Ground rules")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .unwrap();
    let numbered: Vec<usize> = rules
        .lines()
        .filter_map(|l| {
            l.split_once(". **")
                .and_then(|(n, _)| n.trim().parse().ok())
        })
        .collect();
    assert_eq!(numbered, (1..=10).collect::<Vec<_>>());
    fe.close().await;
}

#[tokio::test]
async fn revise_message_and_pin_set_take_a_sealed_upload_as_body() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let fe = ch.client("frontend").await;
    let be = ch.client("backend").await;
    let doc = "Ä document of record.\n".repeat(50);
    let up = fe.call("upload_content", json!({"text": doc})).await.ok();
    let id = upload_id(&up);
    let open = fe
        .call("upload_content", json!({"text": "draft"}))
        .await
        .ok();
    let open = upload_id(&open);
    fe.call("seal_content", json!({"upload_id": id})).await.ok();

    let mid = fe.send("backend", "notes", "short version").await;
    fe.call(
        "revise_message",
        json!({"message_id": mid, "body": "x", "body_ref": id}),
    )
    .await
    .value_error("pass either 'body' or 'body_ref', not both");
    fe.call(
        "revise_message",
        json!({"message_id": mid, "body_ref": open}),
    )
    .await
    .value_error("is not sealed");
    let v = fe
        .call("revise_message", json!({"message_id": mid, "body_ref": id}))
        .await
        .ok();
    assert_eq!(v["unchanged"], false);
    assert_eq!(v["previous_body_sha256"], sha256_hex("short version"));
    assert_eq!(v["body_sha256"], sha256_hex(&doc));
    assert_eq!(v["body_length_bytes"], doc.len());
    assert_eq!(v["body_length_chars"], doc.chars().count());
    let rows = be.call("read_inbox", json!({})).await.rows();
    assert_eq!(rows[0]["body"], doc);
    assert_eq!(rows[0]["body_sha256"], sha256_hex(&doc));
    // The same document again changes nothing.
    let again = fe
        .call("revise_message", json!({"message_id": mid, "body_ref": id}))
        .await
        .ok();
    assert_eq!(again["unchanged"], true);

    let dry = be
        .call(
            "pin_set",
            json!({"key": "notes", "title": "Notes", "version": "1", "body_ref": id,
                   "dry_run": true}),
        )
        .await
        .ok();
    assert_eq!(dry["ok"], true);
    assert_eq!(dry["would_write"]["body_sha256"], sha256_hex(&doc));
    assert_eq!(dry["would_write"]["body_length_bytes"], doc.len());
    let set = be
        .call(
            "pin_set",
            json!({"key": "notes", "title": "Notes", "version": "1", "body_ref": &id[..8]}),
        )
        .await
        .ok();
    assert_eq!(set["body_sha256"], sha256_hex(&doc));
    assert_eq!(set["body_length_bytes"], doc.len());
    let pin = fe.call("pin_get", json!({"key": "notes"})).await.ok();
    assert_eq!(pin["body"], doc);
    assert_eq!(pin["body_length_chars"], doc.chars().count());
    be.call(
        "pin_set",
        json!({"key": "notes", "title": "Notes", "version": "2", "body_ref": open}),
    )
    .await
    .value_error("is not sealed");
    fe.close().await;
    be.close().await;
}
