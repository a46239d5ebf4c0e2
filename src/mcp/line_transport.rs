//! The wire under the MCP server: one JSON-RPC message per line each way,
//! and an answer for every line the client sends.
//!
//! rmcp's own stdio transport drops, without a word, a line it cannot parse
//! (malformed JSON, a lone surrogate escape such as `"\ud800"`) and any line
//! over its 16 MiB bound, which a legal 8 MiB upload of newlines or control
//! characters exceeds once JSON-escaped; the client then waits for its own
//! timeout. This transport reads the input line by line with
//! [`MAX_LINE_BYTES`] as the bound, hands every message rmcp can take to
//! rmcp, and answers the other lines itself:
//!
//! - a line that is not JSON (not UTF-8, a syntax error): `-32700`, id `null`;
//! - JSON that is not a request this server can take (not an object, a wrong
//!   `jsonrpc`, a bad `method` or `id`, params that do not decode, a lone
//!   surrogate escape): `-32600`, with the request's id when it can be read;
//! - a line over the bound: `-32600` naming the bound, with the id when it
//!   stands before the bound, once the rest of the line has been skipped.
//!
//! A notification (no `id`) gets no answer, even a malformed one, as JSON-RPC
//! wants; neither does a blank line. Every write, rmcp's and these answers
//! alike, is one whole line written under one lock, so two never interleave.

use std::borrow::Cow;
use std::io;
use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::model::{ClientRequest, ErrorCode, ErrorData, JsonRpcRequest};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde::de::IgnoredAny;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;
use tokio::io::{AsyncBufReadExt as _, AsyncRead, AsyncWrite, AsyncWriteExt as _, BufReader};
use tokio::sync::Mutex;
use tokio::task::JoinHandle;

use super::stdio;
use crate::core::upload::UPLOAD_MAX_BYTES;

/// The longest input line read as one message, in bytes, its newline
/// included (49 MiB).
///
/// The largest request a tool accepts is an `upload_content` carrying a whole
/// upload: 8 MiB of UTF-8 text. JSON escaping makes text at most six times
/// longer: a control character (one byte) becomes `\u00XX` (six), and since a
/// client may escape any character that way, a two- or three-byte character
/// becomes six bytes and a four-byte one a surrogate pair of twelve — never
/// more than six bytes per byte of UTF-8. So 48 MiB of text, plus
/// [`ENVELOPE_BYTES`] for the rest of the request.
pub const MAX_LINE_BYTES: usize = 6 * UPLOAD_MAX_BYTES as usize + ENVELOPE_BYTES;

/// Room in [`MAX_LINE_BYTES`] for what surrounds the text: `jsonrpc`, `id`,
/// `method`, the tool name, a label of 80 characters and an upload id (both
/// at most 960 bytes escaped), `_meta`. Generous, since a client may add
/// metadata of its own.
const ENVELOPE_BYTES: usize = 1024 * 1024;

/// How much the input is read by at once.
const READ_CHUNK: usize = 64 * 1024;

/// The line buffer keeps at most this much capacity between lines, so one
/// large request does not hold its memory for the rest of the session.
const KEEP_CAPACITY: usize = 1024 * 1024;

/// A JSON-RPC error message names what went wrong in a sentence; a decoding
/// error can quote the offending value, so it is cut to this many characters.
const REASON_MAX_CHARS: usize = 300;

/// UTF-8 byte order mark, which RFC 8259 lets a reader ignore.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// The stdio transport of `countersign mcp` (see the module docs).
pub struct LineTransport<R, W> {
    read: BufReader<R>,
    /// The line being read: never longer than `max_line`.
    line: Vec<u8>,
    max_line: usize,
    /// While the rest of an over-long line is skipped: the answer it is owed.
    /// Kept here, not in a local, because rmcp drops an unfinished `receive`
    /// whenever something else is ready, and the next call resumes the read.
    skipping: Option<Answer>,
    out: Arc<Mutex<Option<W>>>,
    /// The answer to a bad line while it is being written. The next line is
    /// read only once it is out, so a client that floods the server with bad
    /// lines and never reads gets no queue of answers in memory.
    answering: Option<JoinHandle<io::Result<()>>>,
    /// Run after each answer to a request is written (or failed to be):
    /// work the answer did not wait for ([`Self::after_answers`]).
    after_answer: Option<Arc<dyn Fn() + Send + Sync>>,
}

impl LineTransport<stdio::Input, stdio::Output> {
    /// The transport over this process's stdin and stdout (polled by the
    /// runtime when they are pipes or sockets: [`stdio`]). Must be called
    /// inside the runtime.
    pub fn stdio() -> Self {
        Self::new(stdio::input(), stdio::output())
    }
}

impl<R, W> LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    /// Reads messages from `read` and writes them to `write`.
    pub fn new(read: R, write: W) -> Self {
        Self {
            read: BufReader::with_capacity(READ_CHUNK, read),
            line: Vec::new(),
            max_line: MAX_LINE_BYTES,
            skipping: None,
            out: Arc::new(Mutex::new(Some(write))),
            answering: None,
            after_answer: None,
        }
    }

    /// Runs `then` once each answer to a request has been written, before
    /// the next message is read: the client reads its answer while `then`
    /// runs (the server commits a write's index rows then).
    pub fn after_answers(mut self, then: Arc<dyn Fn() + Send + Sync>) -> Self {
        self.after_answer = Some(then);
        self
    }

    /// The same with another bound, so tests need not send 49 MiB.
    #[cfg(test)]
    fn with_max_line(mut self, max_line: usize) -> Self {
        self.max_line = max_line;
        self
    }

    /// Reads up to the next newline into `self.line`, never letting it grow
    /// past `max_line`: a longer line is cut there, looked at for its id, and
    /// the rest skipped up to its newline.
    ///
    /// Cancel-safe: `fill_buf` consumes nothing when dropped, and what was
    /// taken from the buffer is in `self.line` or `self.skipping` with no
    /// await in between, so a dropped read resumes where it stopped.
    async fn read_line(&mut self) -> LineRead {
        loop {
            let (used, ended) = {
                let chunk = match self.read.fill_buf().await {
                    Ok(chunk) => chunk,
                    Err(e) => return LineRead::Failed(e),
                };
                if chunk.is_empty() {
                    // The input is closed. A last line with no newline is
                    // still a line, and an over-long one is still answered.
                    return if let Some(answer) = self.skipping.take() {
                        LineRead::Overlong(answer)
                    } else if self.line.is_empty() {
                        LineRead::Closed
                    } else {
                        LineRead::Line
                    };
                }
                let newline = chunk.iter().position(|b| *b == b'\n');
                let used = newline.map_or(chunk.len(), |at| at + 1);
                if self.skipping.is_none() {
                    if self.line.len() + used > self.max_line {
                        let room = self.max_line - self.line.len();
                        self.line.extend_from_slice(&chunk[..room]);
                        self.skipping = Some(Answer::overlong(self.max_line, &self.line));
                        self.reset_line();
                    } else {
                        grow(&mut self.line, used, self.max_line);
                        self.line.extend_from_slice(&chunk[..used]);
                    }
                }
                (used, newline.is_some())
            };
            self.read.consume(used);
            if ended {
                return match self.skipping.take() {
                    Some(answer) => LineRead::Overlong(answer),
                    None => LineRead::Line,
                };
            }
        }
    }

    /// Empties the line buffer, giving back the memory of a large line.
    fn reset_line(&mut self) {
        self.line.clear();
        self.line.shrink_to(KEEP_CAPACITY);
    }
}

/// Grows `line` to hold `more` bytes, doubling as a `Vec` does but never
/// past `max`, so the bound holds for memory as well as for content.
fn grow(line: &mut Vec<u8>, more: usize, max: usize) {
    let need = line.len() + more;
    if need > line.capacity() {
        let target = (line.capacity() * 2).min(max).max(need);
        line.reserve_exact(target - line.len());
    }
}

/// What one bounded read found.
enum LineRead {
    /// A whole line is in the buffer (with its newline, unless it was the
    /// last and had none).
    Line,
    /// A line longer than the bound was skipped; it is owed this answer.
    Overlong(Answer),
    /// The client closed the input.
    Closed,
    Failed(io::Error),
}

/// Writes one whole line, holding the lock until it is flushed.
async fn write_line<W: AsyncWrite + Unpin>(
    out: &Mutex<Option<W>>,
    line: Vec<u8>,
) -> io::Result<()> {
    let mut out = out.lock().await;
    let Some(w) = out.as_mut() else {
        return Err(io::Error::new(
            io::ErrorKind::NotConnected,
            "the transport is closed",
        ));
    };
    w.write_all(&line).await?;
    let flushed = w.flush().await;
    super::structured::recycle(line);
    flushed
}

impl<R, W> Transport<RoleServer> for LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let then = match &item {
            rmcp::model::JsonRpcMessage::Response(_) | rmcp::model::JsonRpcMessage::Error(_) => {
                self.after_answer.clone()
            }
            _ => None,
        };
        let line = super::structured::line(item);
        let out = self.out.clone();
        async move {
            let written = match line {
                Ok(line) => write_line(&out, line).await,
                Err(e) => Err(e.into()),
            };
            if let Some(then) = then {
                then();
            }
            written
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            if let Some(writing) = self.answering.as_mut() {
                let written = writing.await;
                self.answering = None;
                match written {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => {
                        tracing::debug!("the client stopped reading: {e}");
                        return None;
                    }
                    Err(e) => {
                        tracing::error!("writing an answer failed: {e}");
                        return None;
                    }
                }
            }
            let answer = match self.read_line().await {
                LineRead::Line => {
                    let verdict = judge(&self.line);
                    self.reset_line();
                    match verdict {
                        Verdict::Message(message) => return Some(*message),
                        Verdict::Quiet => continue,
                        Verdict::Answer(answer) => answer,
                    }
                }
                LineRead::Overlong(answer) => {
                    tracing::warn!(
                        max_line_bytes = self.max_line,
                        "an input line over the limit was skipped unread"
                    );
                    answer
                }
                LineRead::Closed => return None,
                LineRead::Failed(e) => {
                    tracing::error!("reading stdin failed: {e}");
                    return None;
                }
            };
            let out = self.out.clone();
            let line = answer.into_line();
            self.answering = Some(tokio::spawn(async move { write_line(&out, line).await }));
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        drop(self.out.lock().await.take());
        Ok(())
    }
}

/// What to do with one input line.
enum Verdict {
    /// A message for rmcp.
    Message(Box<RxJsonRpcMessage<RoleServer>>),
    /// Nothing: a blank line, or a notification rmcp cannot take.
    Quiet,
    /// An error answer.
    Answer(Answer),
}

/// Reads one line (newline included or not): a message for rmcp, or the
/// answer it is owed.
fn judge(line: &[u8]) -> Verdict {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(BOM).unwrap_or(line);
    if line.trim_ascii().is_empty() {
        return Verdict::Quiet;
    }
    let text = match std::str::from_utf8(line) {
        Ok(text) => text,
        Err(e) => {
            return Verdict::Answer(Answer::parse_error(&format!(
                "the line is not UTF-8 (invalid byte at offset {})",
                e.valid_up_to()
            )));
        }
    };
    let failure = match serde_json::from_str::<RxJsonRpcMessage<RoleServer>>(text) {
        Ok(message) => return Verdict::Message(Box::new(message)),
        Err(e) => e,
    };
    // Skipping a value checks the JSON grammar without decoding strings, so
    // a lone surrogate escape passes here: JSON that rmcp cannot decode.
    if let Err(e) = serde_json::from_str::<IgnoredAny>(text) {
        return Verdict::Answer(Answer::parse_error(&e.to_string()));
    }
    match text.trim_ascii_start().as_bytes().first() {
        Some(b'{') => {}
        Some(b'[') => {
            return Verdict::Answer(Answer::invalid(
                Value::Null,
                "a batch (JSON array) is not taken: send one message per line",
            ));
        }
        _ => {
            return Verdict::Answer(Answer::invalid(
                Value::Null,
                "a message is a JSON object with \"jsonrpc\": \"2.0\"",
            ));
        }
    }
    let Ok(envelope) = serde_json::from_str::<Envelope>(text) else {
        // A member named twice.
        return Verdict::Answer(Answer::invalid(Value::Null, &failure.to_string()));
    };
    envelope.verdict(text, &failure)
}

/// The members of a message object that say what it is, read without
/// decoding anything else (so a lone surrogate elsewhere does not hide the
/// id). A member given as `null` is present.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(default, borrow, deserialize_with = "present")]
    jsonrpc: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    method: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    result: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    error: Option<&'a RawValue>,
}

fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

impl Envelope<'_> {
    /// The answer owed by a JSON object rmcp refused (`failure`).
    fn verdict(&self, text: &str, failure: &serde_json::Error) -> Verdict {
        let is_str = |raw: Option<&RawValue>| {
            raw.and_then(|raw| serde_json::from_str::<Cow<str>>(raw.get()).ok())
        };
        let version_ok = is_str(self.jsonrpc).is_some_and(|v| v == "2.0");
        let method_ok = is_str(self.method).is_some();
        let id = self
            .id
            .and_then(|raw| serde_json::from_str::<Value>(raw.get()).ok())
            .filter(|id| id.is_string() || id.is_number());
        if self.id.is_none() && version_ok && method_ok {
            // A notification: whatever is wrong with it, JSON-RPC gives it
            // no answer.
            tracing::debug!("an undecodable notification was dropped: {failure}");
            return Verdict::Quiet;
        }
        if self.method.is_none() && (self.result.is_some() || self.error.is_some()) {
            // A response: its id numbers this server's requests, so echoing
            // it would answer a request of the client's own that has that id.
            return Verdict::Answer(Answer::invalid(
                Value::Null,
                "a response to no request of this server",
            ));
        }
        let reason = if !version_ok {
            "\"jsonrpc\" must be \"2.0\"".to_owned()
        } else if !method_ok {
            "a request needs \"method\", a string".to_owned()
        } else if id.is_none() {
            "\"id\" must be a string or an integer".to_owned()
        } else {
            // rmcp's own error names no field; decoding the request alone
            // says which part of it is wrong.
            match serde_json::from_str::<JsonRpcRequest<ClientRequest>>(text) {
                // The grammar held; a decoder gives up past its depth bound
                // with an error of the same class as a bad string.
                Err(_) if nesting(text) > MAX_NESTING => format!(
                    "the message nests arrays and objects more than {MAX_NESTING} deep: send the \
                     same arguments with less nesting"
                ),
                // The grammar held, so what failed is decoding a string.
                Err(e) if e.is_syntax() || e.is_eof() => format!(
                    "a string escapes something that is not a character (a lone surrogate such \
                     as \\ud800; a surrogate pair is fine): {e}"
                ),
                Err(e) => format!(
                    "the params do not fit method {}: {e}",
                    self.method.map_or("", RawValue::get)
                ),
                Ok(_) => failure.to_string(),
            }
        };
        Verdict::Answer(Answer::invalid(id.unwrap_or(Value::Null), &reason))
    }
}

/// The deepest nesting of arrays and objects the decoder takes (serde_json's
/// own bound).
const MAX_NESTING: usize = 128;

/// How deep `text` (JSON whose grammar holds) nests arrays and objects:
/// brackets inside strings do not count.
fn nesting(text: &str) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    let (mut in_string, mut escaped) = (false, false);
    for b in text.bytes() {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// The id at the start of an over-long line, when it stands before the
/// bound: the top-level members are walked in order, values skipped unread,
/// until `id` or the end of what was kept. Cost: linear in the prefix, once
/// per over-long line.
fn id_in_prefix(prefix: &[u8]) -> Value {
    fn skip_ws(bytes: &[u8], mut at: usize) -> usize {
        while bytes.get(at).is_some_and(u8::is_ascii_whitespace) {
            at += 1;
        }
        at
    }
    let prefix = prefix.strip_prefix(BOM).unwrap_or(prefix);
    let mut at = skip_ws(prefix, 0);
    if prefix.get(at) != Some(&b'{') {
        return Value::Null;
    }
    at += 1;
    loop {
        at = skip_ws(prefix, at);
        let mut keys = serde_json::Deserializer::from_slice(&prefix[at..]).into_iter::<Cow<str>>();
        let Some(Ok(key)) = keys.next() else {
            return Value::Null;
        };
        at = skip_ws(prefix, at + keys.byte_offset());
        if prefix.get(at) != Some(&b':') {
            return Value::Null;
        }
        at += 1;
        if key == "id" {
            let mut values =
                serde_json::Deserializer::from_slice(&prefix[at..]).into_iter::<Value>();
            return match values.next() {
                Some(Ok(id)) if id.is_string() || id.is_number() => id,
                _ => Value::Null,
            };
        }
        let mut values =
            serde_json::Deserializer::from_slice(&prefix[at..]).into_iter::<IgnoredAny>();
        let Some(Ok(_)) = values.next() else {
            return Value::Null;
        };
        at = skip_ws(prefix, at + values.byte_offset());
        if prefix.get(at) != Some(&b',') {
            return Value::Null;
        }
        at += 1;
    }
}

/// A JSON-RPC error answer written by the transport itself. Unlike rmcp's
/// error type it keeps `"id": null` (JSON-RPC's word for "could not be read")
/// and echoes any id the client chose.
#[derive(Debug, Serialize)]
struct Answer {
    jsonrpc: &'static str,
    id: Value,
    error: ErrorData,
}

impl Answer {
    fn new(id: Value, error: ErrorData) -> Self {
        Self {
            jsonrpc: "2.0",
            id,
            error,
        }
    }

    /// `-32700`: the line is not JSON.
    fn parse_error(reason: &str) -> Self {
        Self::new(
            Value::Null,
            ErrorData::new(
                ErrorCode::PARSE_ERROR,
                format!("Parse error: {}", cut(reason)),
                None,
            ),
        )
    }

    /// `-32600`: JSON, but not a request this server can take.
    fn invalid(id: Value, reason: &str) -> Self {
        Self::new(
            id,
            ErrorData::new(
                ErrorCode::INVALID_REQUEST,
                format!("Invalid Request: {}", cut(reason)),
                None,
            ),
        )
    }

    /// `-32600` for a line over `max` bytes, of which `prefix` was kept.
    fn overlong(max: usize, prefix: &[u8]) -> Self {
        Self::new(
            id_in_prefix(prefix),
            ErrorData::new(
                ErrorCode::INVALID_REQUEST,
                format!(
                    "Invalid Request: the line is longer than {max} bytes, the most this server \
                     reads as one message; it was skipped unread. Every call a tool accepts fits \
                     (an 8 MiB upload_content included); a larger text goes in several \
                     upload_content calls"
                ),
                Some(serde_json::json!({ "max_line_bytes": max })),
            ),
        )
    }

    /// The answer as one line of output.
    fn into_line(self) -> Vec<u8> {
        let mut line = serde_json::to_vec(&self).unwrap_or_else(|_| {
            br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"Internal error"}}"#
                .to_vec()
        });
        line.push(b'\n');
        line
    }
}

/// `reason`, cut to [`REASON_MAX_CHARS`] characters.
fn cut(reason: &str) -> Cow<'_, str> {
    match reason.char_indices().nth(REASON_MAX_CHARS) {
        Some((at, _)) => Cow::Owned(format!("{}…", &reason[..at])),
        None => Cow::Borrowed(reason),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn answer(line: &str) -> Value {
        match judge(line.as_bytes()) {
            Verdict::Answer(a) => {
                serde_json::from_slice(&a.into_line()).expect("an answer is JSON")
            }
            Verdict::Message(_) => panic!("{} was taken as a message", cut(line)),
            Verdict::Quiet => panic!("{} got no answer", cut(line)),
        }
    }

    fn code(v: &Value) -> i64 {
        v["error"]["code"].as_i64().expect("an error code")
    }

    #[test]
    fn not_json_is_a_parse_error_with_a_null_id() {
        for line in [
            "{not json",
            r#"{"jsonrpc":"2.0","id":1,"method":"ping""#,
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"} trailing"#,
            "\"a raw\u{1}control\"",
        ] {
            let v = answer(line);
            assert_eq!(code(&v), -32700, "{line}: {v}");
            assert_eq!(v["id"], Value::Null, "{line}");
            assert!(
                v.as_object().unwrap().contains_key("id"),
                "id is null, not absent"
            );
            assert_eq!(v["jsonrpc"], "2.0");
        }
        let v = match judge(b"{\"a\":\"\xff\"}") {
            Verdict::Answer(a) => serde_json::from_slice::<Value>(&a.into_line()).unwrap(),
            _ => panic!("invalid UTF-8 must be answered"),
        };
        assert_eq!(code(&v), -32700);
        assert!(v["error"]["message"].as_str().unwrap().contains("UTF-8"));
    }

    #[test]
    fn a_lone_surrogate_is_refused_with_the_request_id() {
        let v = answer(
            r#"{"jsonrpc":"2.0","id":41,"method":"tools/call","params":{"name":"send_message","arguments":{"body":"\ud800"}}}"#,
        );
        assert_eq!(code(&v), -32600, "{v}");
        assert_eq!(v["id"], 41);
        assert!(
            v["error"]["message"]
                .as_str()
                .unwrap()
                .contains("surrogate"),
            "{v}"
        );
    }

    #[test]
    fn deep_nesting_is_refused_as_deep_not_as_a_bad_string() {
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{{"name":"send_message","arguments":{{"body":{}1{}}}}}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        let v = answer(&deep);
        assert_eq!(code(&v), -32600, "{v}");
        assert_eq!(v["id"], 42);
        let msg = v["error"]["message"].as_str().unwrap();
        assert!(msg.contains("more than 128 deep"), "{msg}");
        assert!(!msg.contains("surrogate"), "{msg}");
        assert_eq!(nesting(r#"{"a":"[[[{{{\"]]","b":[[1]]}"#), 3);
    }

    #[test]
    fn json_that_is_no_request_is_invalid_and_keeps_a_readable_id() {
        for (line, id) in [
            ("{}", Value::Null),
            ("[1,2]", Value::Null),
            ("[]", Value::Null),
            ("42", Value::Null),
            (r#""text""#, Value::Null),
            (
                r#"{"jsonrpc":"1.0","id":3,"method":"tools/list"}"#,
                json!(3),
            ),
            (r#"{"id":"x","method":"tools/list"}"#, json!("x")),
            (r#"{"jsonrpc":"2.0","id":4,"method":7}"#, json!(4)),
            (
                r#"{"jsonrpc":"2.0","id":null,"method":"tools/list"}"#,
                Value::Null,
            ),
            (
                r#"{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}"#,
                Value::Null,
            ),
            (
                r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":7}"#,
                json!(5),
            ),
            (
                r#"{"jsonrpc":"2.0","method":"tools/list","params":{},"id":6,"id":6}"#,
                Value::Null,
            ),
            (
                r#"{"jsonrpc":"2.0","id":8,"result":{},"error":{}}"#,
                Value::Null,
            ),
            (
                r#"{"jsonrpc":"1.0","method":"notifications/initialized"}"#,
                Value::Null,
            ),
        ] {
            let v = answer(line);
            assert_eq!(code(&v), -32600, "{line}: {v}");
            assert_eq!(v["id"], id, "{line}: {v}");
        }
        let v = answer(r#"{"jsonrpc":"1.0","id":3,"method":"tools/list"}"#);
        assert!(
            v["error"]["message"].as_str().unwrap().contains("\"2.0\""),
            "{v}"
        );
    }

    #[test]
    fn notifications_and_blank_lines_get_nothing() {
        for line in [
            "",
            "\n",
            "  \r\n",
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":7}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"x":"\ud800"}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":"x"}"#,
        ] {
            assert!(matches!(judge(line.as_bytes()), Verdict::Quiet), "{line}");
        }
    }

    #[test]
    fn good_lines_go_to_rmcp_whatever_their_framing() {
        for line in [
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n",
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\r\n",
            "\u{feff}{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}",
            "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}",
        ] {
            assert!(
                matches!(judge(line.as_bytes()), Verdict::Message(_)),
                "{line:?}"
            );
        }
    }

    #[test]
    fn a_long_reason_is_cut() {
        let long = format!("invalid type: string \"{}\"", "é".repeat(10_000));
        let v: Value =
            serde_json::from_slice(&Answer::invalid(json!(1), &long).into_line()).unwrap();
        let message = v["error"]["message"].as_str().unwrap();
        assert!(
            message.starts_with("Invalid Request: invalid type"),
            "{message}"
        );
        assert!(message.ends_with('…'), "{message}");
        assert!(message.chars().count() < 400, "{}", cut(message));
        assert_eq!(cut("short"), "short");
        let v = answer(r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":7}"#);
        assert!(
            v["error"]["message"]
                .as_str()
                .unwrap()
                .contains("\"tools/call\""),
            "{v}"
        );
    }

    #[test]
    fn the_id_is_found_at_the_start_of_a_cut_line() {
        let head =
            r#"{"jsonrpc":"2.0","id":77,"method":"tools/call","params":{"arguments":{"text":"aaaa"#;
        assert_eq!(id_in_prefix(head.as_bytes()), json!(77));
        let head = r#" { "id" : "abc" , "params": "#;
        assert_eq!(id_in_prefix(head.as_bytes()), json!("abc"));
        let late = r#"{"jsonrpc":"2.0","method":"tools/call","params":{"text":"aaaa"#;
        assert_eq!(id_in_prefix(late.as_bytes()), Value::Null);
        assert_eq!(id_in_prefix(br#"{"id":[1"#), Value::Null);
        assert_eq!(id_in_prefix(br#"{"id":null,"#), Value::Null);
        assert_eq!(id_in_prefix(br#"[{"id":1}"#), Value::Null);
        assert_eq!(id_in_prefix(b""), Value::Null);
    }

    #[test]
    fn the_bound_admits_an_escaped_upload_and_its_envelope() {
        let text = "\u{1}".repeat(UPLOAD_MAX_BYTES as usize);
        let request = json!({"jsonrpc": "2.0", "id": i64::MAX, "method": "tools/call",
            "params": {"name": "upload_content", "arguments": {"text": text,
                "label": "\u{1}".repeat(80), "upload_id": "f".repeat(64)}}});
        let len = serde_json::to_vec(&request).unwrap().len();
        assert!(len > 6 * UPLOAD_MAX_BYTES as usize, "{len}");
        assert!(len <= MAX_LINE_BYTES, "{len} > {MAX_LINE_BYTES}");
    }

    /// A transport over an in-memory pipe with a small bound, and the
    /// client's ends.
    fn pipe(
        max: usize,
    ) -> (
        LineTransport<tokio::io::DuplexStream, tokio::io::DuplexStream>,
        tokio::io::DuplexStream,
        tokio::io::Lines<BufReader<tokio::io::DuplexStream>>,
    ) {
        let (client_in, server_in) = tokio::io::duplex(4096);
        let (server_out, client_out) = tokio::io::duplex(1 << 20);
        let t = LineTransport::new(server_in, server_out).with_max_line(max);
        (t, client_in, BufReader::new(client_out).lines())
    }

    async fn next_answer(
        lines: &mut tokio::io::Lines<BufReader<tokio::io::DuplexStream>>,
    ) -> Value {
        let line = lines.next_line().await.unwrap().expect("an answer line");
        serde_json::from_str(&line).unwrap()
    }

    #[tokio::test]
    async fn an_overlong_line_is_answered_and_the_next_is_read() {
        let (mut t, mut client, mut answers) = pipe(1000);
        let writer = tokio::spawn(async move {
            client
                .write_all(br#"{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"t":""#)
                .await
                .unwrap();
            for _ in 0..100 {
                client.write_all(&[b'a'; 1000]).await.unwrap();
            }
            client.write_all(b"\"}}\n").await.unwrap();
            client
                .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":13,\"method\":\"ping\"}\n")
                .await
                .unwrap();
            client
        });
        let message = t.receive().await.expect("the line after the long one");
        assert_eq!(
            message.into_request().map(|(_, id)| id.to_string()),
            Some("13".into())
        );
        assert!(t.line.capacity() <= 1000, "{}", t.line.capacity());
        let v = next_answer(&mut answers).await;
        assert_eq!(code(&v), -32600);
        assert_eq!(v["id"], 12);
        assert_eq!(v["error"]["data"]["max_line_bytes"], 1000);
        assert!(
            v["error"]["message"]
                .as_str()
                .unwrap()
                .contains("1000 bytes"),
            "{v}"
        );
        drop(writer.await.unwrap());
        assert!(
            t.receive().await.is_none(),
            "the closed input ends the session"
        );
    }

    #[tokio::test]
    async fn a_line_of_exactly_the_bound_is_read() {
        let (mut t, mut client, _answers) = pipe(64);
        let mut line = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#.to_vec();
        line.resize(63, b' ');
        line.push(b'\n');
        client.write_all(&line).await.unwrap();
        assert!(t.receive().await.is_some());
    }

    #[tokio::test]
    async fn every_bad_line_is_answered_in_turn_and_the_session_goes_on() {
        let (mut t, mut client, mut answers) = pipe(1 << 16);
        client
            .write_all(
                b"nonsense\n{}\n[1,2]\n{\"jsonrpc\":\"2.0\",\"method\":\"x/y\",\"params\":1}\n\
                  {\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\n",
            )
            .await
            .unwrap();
        assert!(t.receive().await.is_some());
        let got: Vec<i64> = [
            next_answer(&mut answers).await,
            next_answer(&mut answers).await,
            next_answer(&mut answers).await,
        ]
        .iter()
        .map(code)
        .collect();
        assert_eq!(got, [-32700, -32600, -32600]);
        // A last line with no newline before the input closes still counts.
        client.write_all(b"{\"jsonrpc\":").await.unwrap();
        drop(client);
        assert!(t.receive().await.is_none());
        assert_eq!(code(&next_answer(&mut answers).await), -32700);
    }

    #[tokio::test]
    async fn writes_are_whole_lines_and_close_stops_them() {
        let (mut t, _client, mut answers) = pipe(1 << 16);
        let big = TxJsonRpcMessage::<RoleServer>::error(
            ErrorData::internal_error("x".repeat(200_000), None),
            None,
        );
        let sends: Vec<_> = (0..4).map(|_| tokio::spawn(t.send(big.clone()))).collect();
        for _ in 0..4 {
            let line = answers.next_line().await.unwrap().unwrap();
            serde_json::from_str::<Value>(&line).expect("each line is one whole message");
        }
        for s in sends {
            s.await.unwrap().unwrap();
        }
        t.close().await.unwrap();
        assert!(t.send(big).await.is_err());
    }

    #[tokio::test]
    async fn the_work_after_an_answer_runs_once_it_is_written_and_for_answers_only() {
        use rmcp::model::{
            NumberOrString, ServerNotification, ServerResult, ToolListChangedNotification,
        };
        use std::sync::atomic::{AtomicUsize, Ordering};
        let (t, _client, mut answers) = pipe(1 << 16);
        let ran = Arc::new(AtomicUsize::new(0));
        let mut t = t.after_answers({
            let ran = Arc::clone(&ran);
            Arc::new(move || {
                ran.fetch_add(1, Ordering::SeqCst);
            })
        });
        let answer = TxJsonRpcMessage::<RoleServer>::response(
            ServerResult::empty(()),
            NumberOrString::Number(7),
        );
        let sending = t.send(answer);
        assert_eq!(ran.load(Ordering::SeqCst), 0, "not before the write");
        sending.await.unwrap();
        assert_eq!(ran.load(Ordering::SeqCst), 1);
        assert_eq!(next_answer(&mut answers).await["id"], 7);
        let error = TxJsonRpcMessage::<RoleServer>::error(
            ErrorData::internal_error("no", None),
            Some(NumberOrString::Number(8)),
        );
        t.send(error).await.unwrap();
        assert_eq!(ran.load(Ordering::SeqCst), 2, "an error answers too");
        let notice = TxJsonRpcMessage::<RoleServer>::notification(
            ServerNotification::ToolListChangedNotification(ToolListChangedNotification::default()),
        );
        t.send(notice).await.unwrap();
        assert_eq!(
            ran.load(Ordering::SeqCst),
            2,
            "a notification answers nothing"
        );
    }
}
