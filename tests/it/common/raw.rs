//! `countersign mcp` on raw pipes: for what a real client never does (bad
//! lines) or a test must do between two bytes (kill the server right after an
//! answer).

use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::time::timeout;

use super::TestChannel;

/// How long an answer may take before the test calls it missing (the old
/// transport gave none at all).
const ANSWER_WITHIN: Duration = Duration::from_secs(60);

/// `countersign mcp` on raw pipes, past the initialize handshake.
pub struct RawSession {
    child: Child,
    stdin: Option<ChildStdin>,
    answers: Lines<BufReader<ChildStdout>>,
}

impl RawSession {
    pub async fn start(ch: &TestChannel, role: &str) -> Self {
        let mut child = Command::new(super::bin())
            .arg("mcp")
            .arg("--role")
            .arg(role)
            .arg("--channel")
            .arg(&ch.dir)
            .env("COUNTERSIGN_HOME", &ch.home)
            .env_remove("COUNTERSIGN_ROLE")
            .env_remove("AI_AGENT_CHANNEL_ROLE")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn the server");
        let stdin = child.stdin.take();
        let answers = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let mut s = Self {
            child,
            stdin,
            answers,
        };
        s.line(
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"}}})
            .to_string()
            .as_bytes(),
        )
        .await;
        let init = s.answer().await;
        assert_eq!(init["id"], 0, "{init}");
        assert!(init["result"]["serverInfo"].is_object(), "{init}");
        s.line(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
            .await;
        s
    }

    /// The server's input, to write to it byte by byte.
    pub fn stdin(&mut self) -> &mut ChildStdin {
        self.stdin.as_mut().expect("stdin open")
    }

    /// Sends `bytes` and a newline.
    pub async fn line(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).await.expect("write a line");
        stdin.write_all(b"\n").await.expect("write a newline");
        stdin.flush().await.expect("flush");
    }

    /// The next line the server writes, parsed.
    pub async fn answer(&mut self) -> Value {
        let line = timeout(ANSWER_WITHIN, self.answers.next_line())
            .await
            .expect("the server answers in time")
            .expect("stdout readable")
            .expect("the server is still there");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: not JSON: {line}"))
    }

    /// Asserts the next answer is the error `code` with `id`.
    pub async fn error(&mut self, code: i64, id: Value) -> Value {
        let a = self.answer().await;
        assert_eq!(a["jsonrpc"], "2.0", "{a}");
        assert_eq!(a["error"]["code"], code, "{a}");
        assert_eq!(a["id"], id, "{a}");
        assert!(
            a.as_object().unwrap().contains_key("id"),
            "the id is there, if null: {a}"
        );
        a
    }

    /// Lists the tools under `id` and checks the answer: the session goes on.
    pub async fn still_serves(&mut self, id: i64) {
        self.line(
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"})
                .to_string()
                .as_bytes(),
        )
        .await;
        let a = self.answer().await;
        assert_eq!(a["id"], id, "{a}");
        assert!(
            a["result"]["tools"]
                .as_array()
                .is_some_and(|t| t.len() > 10),
            "{a}"
        );
    }

    /// Kills the server with SIGKILL, which lets nothing run after it.
    pub async fn kill(mut self) {
        self.child.start_kill().expect("kill the server");
        self.child.wait().await.expect("wait");
    }

    /// Closes stdin; the server must exit cleanly.
    pub async fn finish(mut self) {
        drop(self.stdin.take());
        let status = timeout(Duration::from_secs(20), self.child.wait())
            .await
            .expect("the server exits once its input closes")
            .expect("wait");
        assert!(status.success(), "{status}");
    }
}
