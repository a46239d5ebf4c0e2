//! The tools timed on the wire: the reads of the server section, the two
//! durable writes, made by a client that writes each request as one JSON
//! line, reads the answer's line and parses it into a JSON value — what any
//! client must do, without rmcp's typed model on top (which for a 60 kB
//! answer is a good part of the figure the rmcp client's rows show). These
//! are the figures the budgets are judged on. Each row also says how many
//! bytes the answer's line holds, the figure agents pay in tokens.

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use serde_json::{Value, json};

use super::corpus::{Rng, body};
use super::sampler::{MIN_CALLS, Sampler, WARMUP};
use super::seed::Seeded;
use super::{RARE_TERM, SERVER_ROLE};
use countersign::mcp_client::server_command;

/// Per row: its name (the tool's, unless [`Wire::time_as`] named it), its
/// samples on the wire and its answer's bytes.
pub struct Wire {
    pub rows: Vec<(&'static str, Vec<Duration>, usize)>,
}

/// A stdio MCP server (`countersign mcp`, or another server of the same
/// tools) spoken to in raw JSON lines.
pub(super) struct Raw {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
    /// The last answer's line, as read.
    pub(super) line: String,
    next_id: u64,
}

impl Raw {
    fn spawn(exe: &Path, seeded: &Seeded, role: &str) -> anyhow::Result<Self> {
        Self::start(server_command(
            exe,
            seeded.dir.root(),
            &seeded.home_path,
            role,
            &[],
        ))
    }

    /// Starts `server` and initializes the session (its stderr is dropped).
    pub(super) fn start(mut server: Command) -> anyhow::Result<Self> {
        let mut child = server
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("starting {:?}", server.get_program()))?;
        let input = child.stdin.take().context("the server's stdin")?;
        let output = BufReader::new(child.stdout.take().context("the server's stdout")?);
        let mut raw = Self {
            child,
            input,
            output,
            line: String::new(),
            next_id: 0,
        };
        raw.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "countersign-bench-wire", "version": "1"}}),
        )?;
        raw.input
            .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")?;
        Ok(raw)
    }

    /// Sends one request, reads its answer's line (kept in `self.line`) and
    /// parses it.
    pub(super) fn request(&mut self, method: &str, params: Value) -> anyhow::Result<Value> {
        self.next_id += 1;
        let mut req = serde_json::to_vec(
            &json!({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}),
        )?;
        req.push(b'\n');
        self.input.write_all(&req)?;
        self.input.flush()?;
        // Lines that are not this request's answer (a server's
        // notifications) are read past.
        loop {
            self.line.clear();
            let n = self.output.read_line(&mut self.line)?;
            ensure!(n > 0, "the server closed its output");
            let answer: Value =
                serde_json::from_str(&self.line).context("the answer is not one JSON line")?;
            if answer["id"] == self.next_id {
                return Ok(answer);
            }
        }
    }

    /// The server's process id.
    pub(super) fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Wire {
    pub fn measure(exe: &Path, seeded: &Seeded, calls: usize) -> anyhow::Result<Self> {
        let mut raw = Raw::spawn(exe, seeded, SERVER_ROLE)?;
        let mut wire = Self { rows: Vec::new() };
        for (tool, args) in [
            ("read_inbox", json!({})),
            ("list_messages", json!({"limit": 50})),
            ("search_messages", json!({"query": RARE_TERM})),
            ("open_obligations", json!({"limit": 50})),
            ("channel_status", json!({})),
        ] {
            wire.time(&mut raw, tool, calls, |_| args.clone())?;
        }
        // The writes last, so the reads above see the channel as seeded.
        wire.time_sends(&mut raw, calls)?;
        let author = Raw::spawn(exe, seeded, "backend")?;
        let last = wire.time_resolves(&mut raw, author, calls)?;
        ensure!(
            last["result"]["structuredContent"]["already_resolved"] == Value::Bool(false),
            "resolve_message did not resolve a fresh debt: {last}"
        );
        Ok(wire)
    }

    /// Times sends from the server's role to `backend`, with the bodies the
    /// rmcp client's sends draw (100 to 1,000 characters).
    pub(super) fn time_sends(&mut self, raw: &mut Raw, calls: usize) -> anyhow::Result<Value> {
        let mut rng = Rng(7);
        self.time(raw, "send_message", calls, |i| {
            let len = 100 + rng.below(900) as usize;
            json!({"to": "backend", "topic": format!("on the wire {i}"),
                   "body": body(&mut rng, len, false)})
        })
    }

    /// Times resolves of debts that `author`, another role's server, first
    /// sends the server's role (untimed), resolved newest first as the rmcp
    /// client's resolves are; ids as the author's answers give them. Returns
    /// the last answer.
    pub(super) fn time_resolves(
        &mut self,
        raw: &mut Raw,
        mut author: Raw,
        calls: usize,
    ) -> anyhow::Result<Value> {
        let mut ids = Vec::with_capacity(calls + WARMUP);
        for i in 0..calls + WARMUP {
            let sent = author.request(
                "tools/call",
                json!({"name": "send_message", "arguments": {
                    "to": SERVER_ROLE, "topic": format!("debt on the wire {i}"),
                    "body": "please look at the retry path", "action_required": true}}),
            )?;
            let id = sent["result"]["structuredContent"]["id"].clone();
            ensure!(!id.is_null(), "send_message answered no id: {sent}");
            ids.push(id);
        }
        drop(author);
        self.time(
            raw,
            "resolve_message",
            calls,
            |_| json!({"message_id": ids.pop().unwrap_or_default(), "resolution_note": "done"}),
        )
    }

    /// Times calls of `tool` (see [`Sampler`]), keeps its row, and returns
    /// the last answer (a refusal is an error).
    pub(super) fn time(
        &mut self,
        raw: &mut Raw,
        tool: &'static str,
        calls: usize,
        args: impl FnMut(usize) -> Value,
    ) -> anyhow::Result<Value> {
        self.time_as(raw, tool, tool, calls, args)
    }

    /// [`Self::time`], the row named `label` (a tool timed with other
    /// arguments than its own row's).
    pub(super) fn time_as(
        &mut self,
        raw: &mut Raw,
        label: &'static str,
        tool: &'static str,
        calls: usize,
        mut args: impl FnMut(usize) -> Value,
    ) -> anyhow::Result<Value> {
        let mut sampler = Sampler::new(calls, MIN_CALLS);
        let mut answer = Value::Null;
        let mut i = 0;
        while sampler.more() {
            let params = json!({"name": tool, "arguments": args(i)});
            let t = Instant::now();
            answer = raw.request("tools/call", params)?;
            sampler.record(t.elapsed());
            i += 1;
        }
        ensure!(
            answer["result"]["isError"] != Value::Bool(true),
            "{tool} was refused: {}",
            raw.line.chars().take(300).collect::<String>()
        );
        self.rows
            .push((label, sampler.into_samples(), raw.line.len()));
        Ok(answer)
    }

    /// The bytes of `tool`'s last answer line (0 when it was not timed).
    pub fn bytes(&self, tool: &str) -> usize {
        self.rows
            .iter()
            .find(|(t, _, _)| *t == tool)
            .map_or(0, |(_, _, b)| *b)
    }

    /// The samples of `tool` (empty when it was not timed).
    pub fn samples(&self, tool: &str) -> &[Duration] {
        self.rows
            .iter()
            .find(|(t, _, _)| *t == tool)
            .map_or(&[], |(_, v, _)| v)
    }
}
