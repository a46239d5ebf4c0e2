//! The stdio transport: every line the client sends gets an answer, and the
//! line bound admits every call a tool accepts. The server is the real
//! binary; the bad lines go down a raw pipe, since a real client never sends
//! them.

use std::time::Duration;

use countersign::MAX_LINE_BYTES;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt as _;
use tokio::time::timeout;

use crate::common::TestChannel;
use crate::common::raw::RawSession;

#[tokio::test]
async fn every_bad_line_gets_its_answer_and_the_session_goes_on() {
    let ch = TestChannel::new(&["a", "b"]);
    let mut s = RawSession::start(&ch, "a").await;
    let before = ch.feed_records();

    s.line(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list""#)
        .await;
    s.error(-32700, Value::Null).await;
    s.still_serves(101).await;

    s.line(b"not json at all").await;
    s.error(-32700, Value::Null).await;
    s.still_serves(102).await;

    // Grammatical JSON, but no Unicode text: the id is read and echoed so
    // the client's call ends, and nothing is sent.
    s.line(
        br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"send_message","arguments":{"to":"b","topic":"t","body":"\ud800"}}}"#,
    )
    .await;
    let a = s.error(-32600, json!(2)).await;
    assert!(
        a["error"]["message"]
            .as_str()
            .unwrap()
            .contains("surrogate"),
        "{a}"
    );
    s.still_serves(103).await;
    assert_eq!(ch.feed_records(), before, "the refused call wrote nothing");

    // Nested past the decoder's depth: refused as too deep, not as a bad
    // string.
    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"name":"send_message","arguments":{{"to":"b","topic":"t","body":{}1{}}}}}}}"#,
        "[".repeat(300),
        "]".repeat(300)
    );
    s.line(deep.as_bytes()).await;
    let a = s.error(-32600, json!(3)).await;
    let msg = a["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("more than 128 deep") && !msg.contains("surrogate"),
        "{a}"
    );
    s.still_serves(110).await;
    assert_eq!(ch.feed_records(), before, "the refused call wrote nothing");

    s.line(b"{}").await;
    s.error(-32600, Value::Null).await;
    s.still_serves(104).await;

    s.line(b"[1,2]").await;
    s.error(-32600, Value::Null).await;
    s.still_serves(105).await;

    s.line(br#"{"jsonrpc":"1.0","id":"v1","method":"tools/list"}"#)
        .await;
    let a = s.error(-32600, json!("v1")).await;
    assert!(
        a["error"]["message"].as_str().unwrap().contains("jsonrpc"),
        "{a}"
    );
    s.still_serves(106).await;

    s.line(br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":7}"#)
        .await;
    s.error(-32600, json!(7)).await;
    s.still_serves(107).await;

    // A malformed notification gets nothing: the next answer is the list's.
    s.line(br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":"x"}"#)
        .await;
    s.still_serves(108).await;

    // A real call still works after all that.
    s.line(
        json!({"jsonrpc": "2.0", "id": 109, "method": "tools/call", "params": {
            "name": "send_message", "arguments": {"to": "b", "topic": "t", "body": "hi"}}})
        .to_string()
        .as_bytes(),
    )
    .await;
    let a = s.answer().await;
    assert_eq!(a["id"], 109, "{a}");
    assert_eq!(a["result"]["isError"], false, "{a}");
    s.finish().await;
}

#[tokio::test]
async fn an_overlong_line_is_answered_with_the_limit_and_skipped() {
    let ch = TestChannel::new(&["a", "b"]);
    let mut s = RawSession::start(&ch, "a").await;
    let before = ch.feed_records();
    let stdin = s.stdin();
    stdin
        .write_all(br#"{"jsonrpc":"2.0","id":66,"method":"tools/call","params":{"name":"upload_content","arguments":{"text":""#)
        .await
        .unwrap();
    // 70 MiB, from one reused buffer, so the test holds 1 MiB of it.
    let block = vec![b'x'; 1 << 20];
    for _ in 0..70 {
        stdin.write_all(&block).await.unwrap();
    }
    stdin.write_all(b"\"}}}").await.unwrap();
    s.line(b"").await;
    let a = s.error(-32600, json!(66)).await;
    let message = a["error"]["message"].as_str().unwrap();
    assert!(message.contains(&MAX_LINE_BYTES.to_string()), "{a}");
    assert_eq!(a["error"]["data"]["max_line_bytes"], MAX_LINE_BYTES, "{a}");
    s.still_serves(67).await;
    assert_eq!(ch.feed_records(), before, "nothing of the long line ran");
    s.finish().await;
}

/// Uploads `text` (8 MiB) through rmcp's client and checks it arrived whole.
async fn upload_whole(text: String) {
    let ch = TestChannel::new(&["a", "b"]);
    let a = ch.client("a").await;
    let len = text.len();
    let v = timeout(
        Duration::from_secs(300),
        a.call("upload_content", json!({"text": text})),
    )
    .await
    .expect("the upload is answered")
    .ok();
    assert_eq!(v["length_bytes"], len, "{v}");
    a.close().await;
}

#[tokio::test]
async fn an_8_mib_upload_of_newlines_goes_through() {
    // Each newline is two bytes escaped: over rmcp's 16 MiB line.
    upload_whole("\n".repeat(8 << 20)).await;
}

#[tokio::test]
async fn an_8_mib_upload_of_control_characters_goes_through() {
    // Each one is `\u0001` escaped, six bytes: the worst case the bound is
    // made for.
    upload_whole("\u{1}".repeat(8 << 20)).await;
}
