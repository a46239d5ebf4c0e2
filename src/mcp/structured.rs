//! How a tool's structured content travels over stdio: as the very text the
//! answer already carries, not as a second tree.
//!
//! Every successful answer carries its JSON twice, as the text content and
//! as `structuredContent` (the text is what clients read since before output
//! schemas; the structured form is what they check against the schema). Built
//! the plain way, an answer becomes a `serde_json::Value` tree (one allocation
//! per field and string), is written out once as the text, and the tree is
//! written out again inside the response: for a 60 kB inbox that was about a
//! third of the server's time per call. Over stdio the server writes its own
//! lines (`line_transport`), so [`deferred`] serializes the answer once, to
//! the text, and leaves a mark where the structured content goes; [`line`]
//! writes the response with the text itself spliced in as
//! `structuredContent`. Same bytes on the wire as JSON values go, same
//! meaning: a client parses one object either way.
//!
//! The text and the line are written into buffers kept from the answer
//! before ([`recycle`]): a listing's are a few hundred kilobytes, and
//! allocated afresh for every answer they ended at the top of the heap,
//! which glibc gave back to the system after each answer and took again,
//! page by page, at the next (about a tenth of a list's time went to those
//! page faults).
//!
//! tools/list gets the same treatment: over stdio its answer is marked
//! ([`deferred_listing`]) and [`line`] writes the catalogue's own text of
//! the tools served, the bytes the parsed tools would serialize to.
//!
//! Owns the marks, the splices and the kept buffers; must not change what an
//! answer says. Other transports (HTTP, where rmcp writes the response) use
//! [`super::to_result`], which builds the value.

use rmcp::RoleServer;
use rmcp::model::{CallToolResult, ContentBlock, JsonRpcMessage, ListToolsResult, ServerResult};
use rmcp::service::TxJsonRpcMessage;
use serde::Serialize;
use serde_json::{Value, json};

use super::toolset::Toolsets;
use crate::app::AppResult;
use crate::core::peer_text;
use rmcp::ErrorData as McpError;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// The key of the mark [`deferred`] leaves in `structuredContent`. No answer
/// has a field of this name (it starts with a NUL), and the mark is an
/// object, which rmcp keeps as it is for every protocol version.
const MARK: &str = "\u{0}countersign:structured-is-the-text";

/// What the text is, so the splice knows how to write it.
const OBJECT: &str = "object";
/// A value that is no object (a list): structured content must be an
/// object, so it travels as `{"result": …}`, as [`super::to_result`] wraps it.
const WRAPPED: &str = "wrapped";

/// A tool's outcome as a result whose structured content is its text,
/// marked for [`line`] to write; refusals and documents as
/// [`super::to_result`] makes them.
pub fn deferred<T: Serialize>(outcome: AppResult<T>) -> Result<CallToolResult, McpError> {
    let v = match outcome {
        Ok(v) => v,
        Err(e) => return super::to_result::<()>(Err(e)),
    };
    let mut text = std::mem::take(&mut spare().text);
    serde_json::to_writer(&mut text, &v)
        .map_err(|e| McpError::internal_error(format!("serializing a tool result: {e}"), None))?;
    let text = String::from_utf8(text)
        .map_err(|e| McpError::internal_error(format!("serializing a tool result: {e}"), None))?;
    // Peer text inert in the text a model reads; it parses to the same value.
    let text = peer_text::json(text);
    let shape = match text.as_bytes().first() {
        Some(b'{') => OBJECT,
        // A document (get_protocol) travels as itself, not as a quoted string.
        Some(b'"') => {
            let doc: Value = serde_json::from_str(&text).map_err(|e| {
                McpError::internal_error(format!("reading back a tool result: {e}"), None)
            })?;
            return super::to_result(Ok(doc));
        }
        _ => WRAPPED,
    };
    let mut r = CallToolResult::success(vec![ContentBlock::text(text)]);
    r.structured_content = Some(json!({ MARK: shape }));
    Ok(r)
}

/// What a tools/list answer's `next_cursor` begins with when [`line`] is to
/// write the listing of the toolsets after it (see [`deferred_listing`]).
/// No cursor of ours looks so: the server lists every tool at once.
const LISTING_MARK: &str = "\u{0}countersign:listing:";

/// tools/list's answer for a stdio server serving `served`, marked for
/// [`line`]: it writes the catalogue's own text of those tools
/// (`catalogue::listed`), the bytes the parsed tools would serialize to, so
/// that the first answer after initialize parses and builds nothing.
pub fn deferred_listing(served: &Toolsets) -> ListToolsResult {
    let mut r = ListToolsResult::with_all_items(Vec::new());
    r.next_cursor = Some(format!("{LISTING_MARK}{served}"));
    r
}

/// The toolsets a marked tools/list answer lists, if it is marked.
fn listing_mark(r: &ListToolsResult) -> Option<Toolsets> {
    let sets = r.next_cursor.as_deref()?.strip_prefix(LISTING_MARK)?;
    Toolsets::parse(sets).ok()
}

/// The shape a marked result's text has, if the result is marked.
fn mark(r: &CallToolResult) -> Option<&'static str> {
    let shape = r.structured_content.as_ref()?.as_object()?.get(MARK)?;
    [OBJECT, WRAPPED].into_iter().find(|s| shape == *s)
}

/// What stands for the text in the serialized result until [`line`] writes
/// the text there (plain ASCII, so it is written as itself).
const TEXT_MARK: &str = "countersign:the-text-goes-here";

/// One message as a line of JSON (newline included), a marked tool result
/// with its text spliced in as `structuredContent`. Hand the line to
/// [`recycle`] once it is written.
pub fn line(mut item: TxJsonRpcMessage<RoleServer>) -> serde_json::Result<Vec<u8>> {
    if let JsonRpcMessage::Response(resp) = &mut item
        && let ServerResult::ListToolsResult(r) = &mut resp.result
        && let Some(served) = listing_mark(r)
    {
        // The answer as serde writes it with no tools and no cursor, and
        // the tools' text where its empty list is.
        r.next_cursor = None;
        let shell = plain(&item)?;
        const NO_TOOLS: &[u8] = br#""tools":[]"#;
        // Just past the empty list, which is its last two bytes.
        let end = memchr::memmem::find(&shell, NO_TOOLS)
            .ok_or_else(|| serde::ser::Error::custom("no tool list in a tools/list answer"))?
            + NO_TOOLS.len();
        let tools = super::catalogue::listed(|name| served.serves(name));
        let mut out = Vec::with_capacity(shell.len() + tools.len());
        out.extend_from_slice(&shell[..end - b"[]".len()]);
        out.extend_from_slice(tools.as_bytes());
        out.extend_from_slice(&shell[end..]);
        return Ok(out);
    }
    if let JsonRpcMessage::Response(resp) = &mut item
        && let ServerResult::CallToolResult(r) = &mut resp.result
        && let Some(shape) = mark(r)
        && let Some(ContentBlock::Text(t)) = r.content.first_mut()
    {
        let text = std::mem::replace(&mut t.text, TEXT_MARK.to_owned());
        r.structured_content = None;
        // The result without its text: a few dozen bytes, the mark where the
        // text goes.
        let rest = serde_json::to_vec(&*r)?;
        // The mark and the quotes around it, which serde wrote as they are.
        let (at, end) = memchr::memmem::find(&rest, TEXT_MARK.as_bytes())
            .map(|i| (i - 1, i + TEXT_MARK.len() + 1))
            .ok_or_else(|| serde::ser::Error::custom("the text's mark is not in the result"))?;
        // Kept buffers are empty ([`keep`]).
        let mut out = std::mem::take(&mut spare().line);
        out.reserve(2 * text.len() + text.len() / 8 + rest.len() + 64);
        out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
        serde_json::to_writer(&mut out, &resp.id)?;
        out.extend_from_slice(br#","result":"#);
        out.extend_from_slice(&rest[..at]);
        quote(&text, &mut out)?;
        // The result is an object holding content: reopen it for one more field.
        out.extend_from_slice(&rest[end..rest.len() - 1]);
        out.extend_from_slice(br#","structuredContent":"#);
        if shape == WRAPPED {
            out.extend_from_slice(br#"{"result":"#);
            out.extend_from_slice(text.as_bytes());
            out.push(b'}');
        } else {
            out.extend_from_slice(text.as_bytes());
        }
        out.extend_from_slice(b"}}\n");
        keep(&mut spare().text, text.into_bytes());
        return Ok(out);
    }
    plain(&item)
}

/// Buffers kept from one answer for the next (see the module docs).
struct Spare {
    /// For a result's text ([`deferred`]).
    text: Vec<u8>,
    /// For a marked result's line ([`line`]).
    line: Vec<u8>,
}

static SPARE: Mutex<Spare> = Mutex::new(Spare {
    text: Vec::new(),
    line: Vec::new(),
});

/// The most a kept buffer holds: one large answer does not keep its memory
/// for the rest of the session.
const KEEP_MAX: usize = 1024 * 1024;

/// The kept buffers, also after a panic while they were held (an empty or
/// half-filled buffer is as good as any: each use empties it first).
fn spare() -> MutexGuard<'static, Spare> {
    SPARE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Keeps `buf` in `slot`, emptied, unless it is over [`KEEP_MAX`] or
/// smaller than what the slot holds.
fn keep(slot: &mut Vec<u8>, mut buf: Vec<u8>) {
    if buf.capacity() <= KEEP_MAX && buf.capacity() > slot.capacity() {
        buf.clear();
        *slot = buf;
    }
}

/// Takes back a line [`line`] made, once it is written, for the next.
pub fn recycle(line: Vec<u8>) {
    keep(&mut spare().line, line);
}

/// Writes `text` as a JSON string, quotes included. The text is JSON a
/// writer made (and [`peer_text::json`] made inert), so it holds no control
/// character and only `"` and `\` need escaping: found with `memchr`, they
/// cost a fraction of a general escaper's walk through every byte, which
/// was the largest single part of writing a listing's answer. Text with a
/// control character goes through serde_json's general escaper.
fn quote(text: &str, out: &mut Vec<u8>) -> serde_json::Result<()> {
    let bytes = text.as_bytes();
    // Without a short cut, so the compiler checks many bytes at a time.
    if bytes.iter().fold(false, |seen, b| seen | (*b < 0x20)) {
        return serde_json::to_writer(out, text);
    }
    out.push(b'"');
    let mut from = 0;
    for at in memchr::memchr2_iter(b'"', b'\\', bytes) {
        out.extend_from_slice(&bytes[from..at]);
        out.push(b'\\');
        out.push(bytes[at]);
        from = at + 1;
    }
    out.extend_from_slice(&bytes[from..]);
    out.push(b'"');
    Ok(())
}

/// A message as serde writes it, newline included.
fn plain(item: &TxJsonRpcMessage<RoleServer>) -> serde_json::Result<Vec<u8>> {
    let mut line = serde_json::to_vec(item)?;
    line.push(b'\n');
    Ok(line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{JsonRpcResponse, JsonRpcVersion2_0, NumberOrString};
    use serde::Serialize;

    #[derive(Serialize)]
    struct Answer {
        id: &'static str,
        body: String,
        tags: Vec<u32>,
    }

    fn response(r: CallToolResult) -> TxJsonRpcMessage<RoleServer> {
        JsonRpcMessage::Response(JsonRpcResponse {
            jsonrpc: JsonRpcVersion2_0,
            id: NumberOrString::Number(7),
            result: ServerResult::CallToolResult(r),
        })
    }

    /// The line of a deferred result and of the same result built as values
    /// parse to the same JSON.
    fn same_as_values<T: Serialize + Clone>(v: T) -> Value {
        let spliced = line(response(deferred(Ok(v.clone())).unwrap())).unwrap();
        assert_eq!(spliced.last(), Some(&b'\n'));
        let built = line(response(super::super::to_result(Ok(v)).unwrap())).unwrap();
        let (a, b): (Value, Value) = (
            serde_json::from_slice(&spliced).unwrap(),
            serde_json::from_slice(&built).unwrap(),
        );
        assert_eq!(a, b);
        a
    }

    #[test]
    fn a_deferred_listing_is_the_line_its_tools_make_byte_for_byte() {
        for sets in ["all", "mail,debts", "memory", "jobs", "uploads,consent"] {
            let served = Toolsets::parse(sets).unwrap();
            let answer = |result: ListToolsResult, id: i64| {
                JsonRpcMessage::Response(JsonRpcResponse {
                    jsonrpc: JsonRpcVersion2_0,
                    id: NumberOrString::Number(id),
                    result: ServerResult::ListToolsResult(result),
                })
            };
            let spliced = line(answer(deferred_listing(&served), 12)).unwrap();
            let built = line(answer(super::super::listing(&served).list(), 12)).unwrap();
            assert_eq!(
                String::from_utf8(spliced).unwrap(),
                String::from_utf8(built).unwrap(),
                "--tools {sets}"
            );
        }
    }

    #[test]
    fn an_object_travels_as_its_text_and_means_the_same() {
        let a = Answer {
            id: "m1",
            body: "quotes \" and \\ and \n and \u{7f} and é".into(),
            tags: vec![1, 2],
        };
        let v = same_as_values(serde_json::to_value(&a).unwrap());
        assert_eq!(v["result"]["structuredContent"]["body"], json!(a.body));
        let text = v["result"]["content"][0]["text"].as_str().unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(text).unwrap(),
            v["result"]["structuredContent"]
        );
        assert_eq!(v["id"], json!(7));
    }

    #[test]
    fn a_list_is_wrapped_and_a_document_is_its_own_text() {
        let v = same_as_values(vec![json!({"a": 1}), json!("two")]);
        assert_eq!(v["result"]["structuredContent"]["result"][1], json!("two"));
        let v = same_as_values(Value::String("# A document\n".into()));
        assert_eq!(v["result"]["content"][0]["text"], json!("# A document\n"));
        assert_eq!(
            v["result"]["structuredContent"]["result"],
            json!("# A document\n")
        );
    }

    #[test]
    fn text_is_quoted_as_serde_quotes_it() {
        for text in [
            "",
            "plain",
            r#"{"a":"b \" c \\ d","e":[1,2]}"#,
            "\"\"\\\\",
            "é ü 漢字 \u{1f600} \u{7f}",
            "a line\nbreak and a \u{1} control",
            "\\",
        ] {
            let mut out = Vec::new();
            quote(text, &mut out).unwrap();
            assert_eq!(
                String::from_utf8(out).unwrap(),
                serde_json::to_string(text).unwrap(),
                "{text:?}"
            );
        }
    }

    #[test]
    fn a_kept_buffer_is_emptied_and_bounded() {
        let mut slot = Vec::new();
        let mut line = Vec::with_capacity(4096);
        line.extend_from_slice(b"an answer");
        let at = line.as_ptr();
        keep(&mut slot, line);
        assert!(slot.is_empty());
        assert_eq!((slot.as_ptr(), slot.capacity()), (at, 4096));
        // A smaller buffer does not take a larger one's place.
        keep(&mut slot, Vec::with_capacity(16));
        assert_eq!(slot.capacity(), 4096);
        // Nor does one past the bound: its memory goes back.
        keep(&mut slot, Vec::with_capacity(KEEP_MAX + 1));
        assert_eq!(slot.capacity(), 4096);
        keep(&mut slot, Vec::with_capacity(KEEP_MAX));
        assert_eq!(slot.capacity(), KEEP_MAX);
    }

    #[test]
    fn an_unmarked_message_is_written_as_serde_writes_it() {
        let r = super::super::to_result(Ok(json!({"x": 1}))).unwrap();
        let item = response(r);
        let mut expected = serde_json::to_vec(&item).unwrap();
        expected.push(b'\n');
        assert_eq!(line(item).unwrap(), expected);
    }
}
