//! Shared test support: a throwaway channel with its own home, the real
//! binary, and real MCP clients over stdio (rmcp's client) or, against a
//! real `countersign serve`, over streamable HTTP (`serve`).

pub mod local;
pub mod machines;
pub mod raw;
pub mod serve;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::{ConfigureCommandExt as _, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt as _};
use serde_json::{Value, json};

/// Path of the binary under test.
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_countersign")
}

/// A channel folder plus a home, both in a temporary folder.
pub struct TestChannel {
    pub tmp: tempfile::TempDir,
    pub dir: PathBuf,
    pub home: PathBuf,
}

impl TestChannel {
    /// `countersign init` with these roles.
    pub fn new(roles: &[&str]) -> Self {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("channel");
        let home = tmp.path().join("home");
        let me = Self { tmp, dir, home };
        let out = me.cli(&[
            "init",
            me.dir.to_str().unwrap(),
            "--roles",
            &roles.join(","),
            "--name",
            "test",
        ]);
        assert!(
            out.status.success(),
            "init failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        me
    }

    /// Runs the binary with this channel's home and folder.
    pub fn cli(&self, args: &[&str]) -> Output {
        self.cli_with(args, &[])
    }

    /// Runs the binary with extra environment variables.
    pub fn cli_with(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut c = Command::new(bin());
        c.env("COUNTERSIGN_HOME", &self.home)
            .env_remove("COUNTERSIGN_ROLE")
            .env_remove("AI_AGENT_CHANNEL_ROLE")
            .env_remove("COUNTERSIGN_CHANNEL")
            .args(args);
        if args.first() != Some(&"init") {
            c.arg("--channel").arg(&self.dir);
        }
        for (k, v) in env {
            c.env(k, v);
        }
        c.output().expect("the binary runs")
    }

    /// An MCP client connected to `countersign mcp --role <role>`.
    pub async fn client(&self, role: &str) -> Client {
        Client::spawn(&self.home, &self.dir, role).await
    }
}

/// A real MCP client talking to the real server over stdio.
pub struct Client {
    pub inner: RunningService<RoleClient, ()>,
}

/// A tool call's outcome: the structured result, or the refusal.
#[derive(Debug, Clone)]
pub enum Reply {
    Ok(Value),
    Refused { kind: String, message: String },
}

impl Reply {
    /// The result; panics with the refusal otherwise.
    pub fn ok(self) -> Value {
        match self {
            Reply::Ok(v) => v,
            Reply::Refused { kind, message } => panic!("expected success, got {kind}: {message}"),
        }
    }

    /// The refusal `(kind, message)`; panics on success.
    pub fn refused(self) -> (String, String) {
        match self {
            Reply::Refused { kind, message } => (kind, message),
            Reply::Ok(v) => panic!("expected a refusal, got {v}"),
        }
    }

    /// Asserts a ValueError whose message contains `needle`.
    pub fn value_error(self, needle: &str) -> String {
        let (kind, message) = self.refused();
        assert_eq!(kind, "ValueError", "{message}");
        assert!(
            message.contains(needle),
            "{message:?} does not contain {needle:?}"
        );
        message
    }

    /// Asserts a PermissionError whose message contains `needle`.
    pub fn permission_error(self, needle: &str) -> String {
        let (kind, message) = self.refused();
        assert_eq!(kind, "PermissionError", "{message}");
        assert!(
            message.contains(needle),
            "{message:?} does not contain {needle:?}"
        );
        message
    }
}

impl Client {
    /// Spawns the server for `role`.
    pub async fn spawn(home: &Path, dir: &Path, role: &str) -> Self {
        Self::spawn_with(home, dir, role, &[]).await
    }

    /// Spawns the server for `role` with extra arguments to `mcp`.
    pub async fn spawn_with(home: &Path, dir: &Path, role: &str, extra: &[&str]) -> Self {
        let (home, dir, role) = (home.to_path_buf(), dir.to_path_buf(), role.to_owned());
        let transport =
            TokioChildProcess::new(tokio::process::Command::new(bin()).configure(|c| {
                c.arg("mcp")
                    .args(extra)
                    .arg("--role")
                    .arg(&role)
                    .arg("--channel")
                    .arg(&dir)
                    .env("COUNTERSIGN_HOME", &home)
                    .env_remove("COUNTERSIGN_ROLE")
                    .env_remove("AI_AGENT_CHANNEL_ROLE");
            }))
            .expect("spawn the server");
        let inner = ().serve(transport).await.expect("MCP handshake");
        Self { inner }
    }

    /// Calls a tool with JSON arguments.
    pub async fn call(&self, tool: &str, args: Value) -> Reply {
        let args = match args {
            Value::Object(m) => m,
            Value::Null => serde_json::Map::new(),
            other => panic!("arguments must be an object, got {other}"),
        };
        let res = self
            .inner
            .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(args))
            .await
            .unwrap_or_else(|e| panic!("protocol error calling {tool}: {e}"));
        let structured = res.structured_content.clone().unwrap_or(Value::Null);
        if res.is_error == Some(true) {
            return Reply::Refused {
                kind: structured["error"].as_str().unwrap_or("").to_owned(),
                message: structured["message"].as_str().unwrap_or("").to_owned(),
            };
        }
        Reply::Ok(structured)
    }

    /// Sends a plain message and returns its id.
    pub async fn send(&self, to: &str, topic: &str, body: &str) -> String {
        let v = self
            .call(
                "send_message",
                json!({"to": to, "topic": topic, "body": body}),
            )
            .await
            .ok();
        v["id"].as_str().expect("an id").to_owned()
    }

    /// Closes the connection (the server exits on EOF).
    pub async fn close(self) {
        let _ = self.inner.cancel().await;
    }
}

// ---------------------------------------------------------------------------------------
// Helpers for the tool-surface tests (mcp_send, mcp_inbox, mcp_listing, mcp_search,
// mcp_thread_delete).

impl TestChannel {
    /// Every record line in the channel folder's feeds (all roles, the owner's included):
    /// a refusal must leave this unchanged.
    pub fn feed_records(&self) -> usize {
        fn walk(dir: &Path, n: &mut usize) {
            let Ok(entries) = std::fs::read_dir(dir) else {
                return;
            };
            for e in entries.flatten() {
                let p = e.path();
                if p.is_dir() {
                    walk(&p, n);
                } else if p.extension().is_some_and(|x| x == "jsonl") {
                    let text = std::fs::read_to_string(&p).unwrap_or_default();
                    *n += text.lines().filter(|l| !l.trim().is_empty()).count();
                }
            }
        }
        let mut n = 0;
        walk(&self.dir.join("feeds"), &mut n);
        n
    }
}

impl Reply {
    /// The rows of a `{"result": [...]}` answer; panics on a refusal.
    pub fn rows(self) -> Vec<Value> {
        let v = self.ok();
        v["result"]
            .as_array()
            .unwrap_or_else(|| panic!("no result list in {v}"))
            .clone()
    }
}

impl Client {
    /// Calls a tool and returns the raw MCP result (text content and all).
    pub async fn call_raw(&self, tool: &str, args: Value) -> rmcp::model::CallToolResult {
        let args = match args {
            Value::Object(m) => m,
            Value::Null => serde_json::Map::new(),
            other => panic!("arguments must be an object, got {other}"),
        };
        self.inner
            .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(args))
            .await
            .unwrap_or_else(|e| panic!("protocol error calling {tool}: {e}"))
    }

    /// The text of a tool result's first content block.
    pub async fn call_text(&self, tool: &str, args: Value) -> String {
        let res = self.call_raw(tool, args).await;
        res.content
            .first()
            .and_then(|c| c.as_text())
            .map(|t| t.text.clone())
            .unwrap_or_else(|| panic!("{tool} returned no text content"))
    }

    /// Sends with extra arguments merged over `{to, topic, body}`; returns the id.
    pub async fn send_with(&self, to: Value, topic: &str, body: &str, extra: Value) -> String {
        let mut args = json!({"to": to, "topic": topic, "body": body});
        if let Value::Object(m) = extra {
            args.as_object_mut().unwrap().extend(m);
        }
        let v = self.call("send_message", args).await.ok();
        v["id"].as_str().expect("an id").to_owned()
    }

    /// All non-deleted messages, newest first (`list_messages` with limit 1000).
    pub async fn all_messages(&self) -> Vec<Value> {
        self.call("list_messages", json!({"limit": 1000}))
            .await
            .rows()
    }
}

/// The `id` of every row, in order.
pub fn ids(rows: &[Value]) -> Vec<String> {
    rows.iter()
        .map(|r| r["id"].as_str().expect("row id").to_owned())
        .collect()
}

/// A counter of a status answer (channel_status, `status --json`, `/status`,
/// `/hook-status`). The answer is lean: a counter at zero is absent.
pub fn counter(status: &Value, name: &str) -> u64 {
    match status["counts"].get(name) {
        None => 0,
        Some(n) => {
            let n = n.as_u64();
            assert!(
                n.is_some_and(|n| n > 0),
                "counts.{name} is present only as a positive number: {status}"
            );
            n.unwrap_or_default()
        }
    }
}

/// A list of a status answer (`blocked`, `resolved_for_you` …). The answer is
/// lean: an empty list is absent.
pub fn status_items<'v>(status: &'v Value, name: &str) -> &'v [Value] {
    match status.get(name) {
        None => &[],
        Some(v) => {
            let items = v
                .as_array()
                .unwrap_or_else(|| panic!("{name} is not a list in {status}"));
            assert!(!items.is_empty(), "an empty {name} is left out: {status}");
            items
        }
    }
}

/// True for `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub fn is_rfc3339_ms(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 24
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            10 => *c == b'T',
            13 | 16 => *c == b':',
            19 => *c == b'.',
            23 => *c == b'Z',
            _ => c.is_ascii_digit(),
        })
}

/// True for a 12-character lowercase hex message id.
pub fn is_message_id(s: &str) -> bool {
    s.len() == 12
        && s.bytes()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c))
}

/// Hex sha256 of a text's UTF-8 bytes.
pub fn sha256_hex(s: &str) -> String {
    use sha2::Digest as _;
    hex::encode(sha2::Sha256::digest(s.as_bytes()))
}

/// Every Rust source file under `dir` (recursively), sorted by path.
pub fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// Every file under `dir` (recursively) with its bytes, sorted by path.
pub fn files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(files(&p));
        } else {
            out.push((p.clone(), std::fs::read(&p).unwrap()));
        }
    }
    out.sort();
    out
}

/// Copies a folder tree as a second machine would receive it (regular files
/// and folders only; the suites that use it never plant links).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let (src, dst) = (e.path(), to.join(e.file_name()));
        if src.is_dir() {
            copy_dir(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).unwrap();
        }
    }
}
