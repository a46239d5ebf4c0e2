//! The end of a client's transcript file, read for the recording hook: the
//! agent's last reply, the tool calls of the last turn (what it explored, as
//! counts and a few file names; files changed; what failed), and what the
//! turn brought in that is kept whole or nearly (the user's answers to the
//! agent's questions, subagents' reports, an approved plan), in Claude Code's
//! and Codex's formats.
//!
//! Reads at most [`TAIL_BYTES`] from the end of a regular file (no symlink
//! followed); lines it cannot read are skipped. It never fails a hook: what
//! it cannot find is simply not recorded.

use std::collections::{BTreeSet, HashMap};
use std::fs::File;
use std::io::{Read as _, Seek as _, SeekFrom};
use std::path::Path;

use serde_json::Value;

use crate::core::memory::note::{self, NoteKind};

/// The most files a turn record names of those it read.
const MAX_READ_NAMED: usize = 3;
/// The most bytes read from the end of a transcript.
pub const TAIL_BYTES: u64 = 4 * 1024 * 1024;
/// The most files a turn record names.
const MAX_FILES: usize = 20;
/// The most failed commands a turn record names.
const MAX_COMMANDS: usize = 10;
/// The most characters of one command shown.
const MAX_COMMAND_CHARS: usize = 160;

/// The size of a transcript file, 0 when it cannot be read.
pub fn size(path: &Path) -> u64 {
    std::fs::symlink_metadata(path)
        .ok()
        .filter(std::fs::Metadata::is_file)
        .map_or(0, |m| m.len())
}

/// The last [`TAIL_BYTES`] of the transcript at `path`, as whole lines.
pub fn tail_lines(path: &Path) -> Vec<Value> {
    let Some(meta) = std::fs::symlink_metadata(path).ok().filter(|m| m.is_file()) else {
        return Vec::new();
    };
    let Ok(mut f) = File::open(path) else {
        return Vec::new();
    };
    let start = meta.len().saturating_sub(TAIL_BYTES);
    if f.seek(SeekFrom::Start(start)).is_err() {
        return Vec::new();
    }
    let mut bytes = Vec::new();
    if f.take(TAIL_BYTES).read_to_end(&mut bytes).is_err() {
        return Vec::new();
    }
    let mut lines = bytes.split(|b| *b == b'\n');
    if start > 0 {
        // The first line was cut by the seek.
        lines.next();
    }
    lines
        .filter_map(|l| serde_json::from_slice::<Value>(l).ok())
        .filter(Value::is_object)
        .collect()
}

/// What one turn did with its tools, and what it brought in that matters
/// later.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Turn {
    /// Files written or edited, in the order first seen.
    pub files: Vec<String>,
    /// Commands that failed, with their exit code when known.
    pub failed: Vec<String>,
    /// Files whose edit or write failed.
    pub failed_edits: Vec<String>,
    /// Files read, in the order first seen.
    pub read: Vec<String>,
    /// Searches made (Grep, Glob, a web search, `grep`/`rg`/`find` …).
    pub searches: usize,
    /// Folders listed (`ls`, `tree` …).
    pub listings: usize,
    /// The agent's last text of the turn.
    pub reply: Option<String>,
    /// What the turn brought in, each from one transcript entry.
    pub kept: Vec<Kept>,
}

/// Something of a turn kept as a note of its own: the user's answers to
/// the agent's questions, a subagent's report, an approved plan.
#[derive(Debug, PartialEq, Eq)]
pub struct Kept {
    /// What it is.
    pub kind: NoteKind,
    /// Its text, cut as its kind is (`note::cut_chars` for all but answers).
    pub text: String,
    /// The client's id of the transcript entry it came from.
    pub entry: String,
}

impl Turn {
    /// The turn as one short record, `None` when it explored nothing,
    /// changed no file and nothing failed:
    /// `read 12 files (src/a.rs, …), 3 searches; files changed: …; commands
    /// failed: …`.
    pub fn record(&self) -> Option<String> {
        let mut parts = Vec::new();
        let mut explored = Vec::new();
        if !self.read.is_empty() {
            explored.push(format!(
                "read {} file{} ({})",
                self.read.len(),
                plural(self.read.len()),
                list(&self.read, MAX_READ_NAMED)
            ));
        }
        if self.searches > 0 {
            explored.push(format!(
                "{} search{}",
                self.searches,
                plural_es(self.searches)
            ));
        }
        if self.listings > 0 {
            explored.push(format!(
                "{} listing{}",
                self.listings,
                plural(self.listings)
            ));
        }
        if !explored.is_empty() {
            parts.push(explored.join(", "));
        }
        if !self.files.is_empty() {
            parts.push(format!("files changed: {}", list(&self.files, MAX_FILES)));
        }
        if !self.failed_edits.is_empty() {
            parts.push(format!(
                "edits failed: {}",
                list(&self.failed_edits, MAX_FILES)
            ));
        }
        if !self.failed.is_empty() {
            parts.push(format!(
                "commands failed: {}",
                list(&self.failed, MAX_COMMANDS)
            ));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

fn plural_es(n: usize) -> &'static str {
    if n == 1 { "" } else { "es" }
}

fn list(items: &[String], max: usize) -> String {
    let mut out: Vec<String> = items.iter().take(max).cloned().collect();
    if items.len() > max {
        out.push(format!("and {} more", items.len() - max));
    }
    out.join(", ")
}

fn short_command(c: &str) -> String {
    let flat = c.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut s: String = flat.chars().take(MAX_COMMAND_CHARS).collect();
    if flat.chars().count() > MAX_COMMAND_CHARS {
        s.push('…');
    }
    format!("`{s}`")
}

/// `path` as a turn record names it: relative to `cwd` when under it.
fn shown_path(path: &str, cwd: &str) -> Option<String> {
    let p = path.trim();
    if p.is_empty() {
        return None;
    }
    Some(
        Path::new(p)
            .strip_prefix(cwd)
            .ok()
            .filter(|r| !r.as_os_str().is_empty() && !cwd.is_empty())
            .map_or_else(|| p.to_owned(), |r| r.display().to_string()),
    )
}

fn push_file(files: &mut Vec<String>, seen: &mut BTreeSet<String>, path: &str, cwd: &str) {
    if let Some(shown) = shown_path(path, cwd)
        && seen.insert(shown.clone())
    {
        files.push(shown);
    }
}

/// What a shell command does, as far as a turn record counts it.
enum Exploring<'a> {
    /// Reads these files.
    Read(Vec<&'a str>),
    /// Searches.
    Search,
    /// Lists a folder.
    List,
    /// Anything else.
    Other,
}

/// How a shell command explores, by its first word (a pipeline by its
/// first command).
fn exploring(command: &str) -> Exploring<'_> {
    let first = command.split(['|', ';', '&']).next().unwrap_or_default();
    let mut words = first.split_whitespace();
    match words.next().unwrap_or_default() {
        "cat" | "head" | "tail" | "less" | "more" | "nl" | "bat" => {
            Exploring::Read(words.filter(|w| !w.starts_with('-')).collect())
        }
        "sed" if first.contains(" -n") => Exploring::Read(
            words
                .filter(|w| !w.starts_with('-') && !w.starts_with('\'') && !w.ends_with('p'))
                .collect(),
        ),
        "grep" | "rg" | "ag" | "ack" | "find" | "fd" | "fdfind" | "locate" => Exploring::Search,
        "ls" | "tree" | "exa" | "eza" => Exploring::List,
        _ => Exploring::Other,
    }
}

/// Counts a shell command into the turn's exploration.
fn explore_command(turn: &mut Turn, read_seen: &mut BTreeSet<String>, command: &str, cwd: &str) {
    match exploring(command) {
        Exploring::Read(files) => {
            for f in files {
                push_file(&mut turn.read, read_seen, f, cwd);
            }
        }
        Exploring::Search => turn.searches += 1,
        Exploring::List => turn.listings += 1,
        Exploring::Other => {}
    }
}

/// The text of a message's `content` (a string, or a list of parts with
/// `text`).
fn content_text(content: &Value) -> Option<String> {
    match content {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => {
            let texts: Vec<&str> = parts
                .iter()
                .filter(|p| matches!(p["type"].as_str(), Some("text" | "output_text")))
                .filter_map(|p| p["text"].as_str())
                .collect();
            (!texts.is_empty()).then(|| texts.join("\n"))
        }
        _ => None,
    }
}

/// A Claude Code tool call of the turn, waiting for its result.
struct Call {
    name: String,
    input: Value,
}

/// The user's answers to AskUserQuestion, one `question → answer` a line,
/// from the entry's `toolUseResult.answers` (else the result's own text).
fn answers(entry: &Value, result: &Value) -> Option<String> {
    let lines: Vec<String> = entry["toolUseResult"]["answers"]
        .as_object()
        .map(|a| {
            a.iter()
                .filter_map(|(q, v)| v.as_str().map(|v| format!("{q} → {v}")))
                .collect()
        })
        .unwrap_or_default();
    if !lines.is_empty() {
        return Some(lines.join("\n"));
    }
    content_text(&result["content"]).filter(|t| !t.trim().is_empty())
}

/// A finished subagent's report: the texts of `toolUseResult.content` but
/// the client's own note of the tools it used, after the task's
/// description. `None` for a subagent started in the background (its report
/// comes later, as a notice).
fn report(entry: &Value, call: &Call) -> Option<String> {
    let r = &entry["toolUseResult"];
    if r["status"] != "completed" {
        return None;
    }
    let texts: Vec<&str> = r["content"]
        .as_array()?
        .iter()
        .filter_map(|p| p["text"].as_str())
        .filter(|t| !t.trim_start().starts_with("<tools-used-before-summary>"))
        .collect();
    let body = texts.join("\n");
    if body.trim().is_empty() {
        return None;
    }
    Some(match call.input["description"].as_str() {
        Some(d) if !d.trim().is_empty() => format!("{d}:\n{body}"),
        _ => body,
    })
}

/// The last turn of a Claude Code transcript (`type` user/assistant lines
/// whose `message.content` holds text, `tool_use` and `tool_result` parts).
pub fn claude_turn(lines: &[Value], cwd: &str) -> Turn {
    // The turn starts after the last prompt: a user line that is no tool result.
    let is_prompt = |l: &Value| {
        l["type"] == "user"
            && match &l["message"]["content"] {
                Value::String(_) => true,
                Value::Array(parts) => !parts.iter().any(|p| p["type"] == "tool_result"),
                _ => false,
            }
    };
    let start = lines.iter().rposition(is_prompt).map_or(0, |i| i + 1);
    let mut turn = Turn::default();
    let mut seen = BTreeSet::new();
    let mut failed_seen = BTreeSet::new();
    let mut read_seen = BTreeSet::new();
    let mut calls: HashMap<String, Call> = HashMap::new();
    for l in &lines[start..] {
        let Some(parts) = l["message"]["content"].as_array() else {
            continue;
        };
        if l["type"] == "assistant" {
            if let Some(t) = content_text(&l["message"]["content"]) {
                turn.reply = Some(t);
            }
            for p in parts.iter().filter(|p| p["type"] == "tool_use") {
                let (Some(id), Some(name)) = (p["id"].as_str(), p["name"].as_str()) else {
                    continue;
                };
                let input = &p["input"];
                match name {
                    "Read" | "NotebookRead" => {
                        let f = input["file_path"]
                            .as_str()
                            .or(input["notebook_path"].as_str());
                        if let Some(f) = f {
                            push_file(&mut turn.read, &mut read_seen, f, cwd);
                        }
                    }
                    "Grep" | "Glob" | "WebSearch" | "ToolSearch" => turn.searches += 1,
                    "LS" => turn.listings += 1,
                    "Bash" => {
                        if let Some(c) = input["command"].as_str() {
                            explore_command(&mut turn, &mut read_seen, c, cwd);
                        }
                    }
                    _ => {}
                }
                calls.insert(
                    id.to_owned(),
                    Call {
                        name: name.to_owned(),
                        input: input.clone(),
                    },
                );
            }
        } else if l["type"] == "user" {
            let entry = l["uuid"].as_str().unwrap_or_default();
            for p in parts.iter().filter(|p| p["type"] == "tool_result") {
                let Some(call) = p["tool_use_id"].as_str().and_then(|id| calls.get(id)) else {
                    continue;
                };
                let failed = p["is_error"] == Value::Bool(true);
                let file = call.input["file_path"]
                    .as_str()
                    .or(call.input["notebook_path"].as_str());
                match (call.name.as_str(), failed) {
                    ("Edit" | "Write" | "MultiEdit" | "NotebookEdit", false) => {
                        if let Some(f) = file {
                            push_file(&mut turn.files, &mut seen, f, cwd);
                        }
                    }
                    ("Edit" | "Write" | "MultiEdit" | "NotebookEdit", true) => {
                        if let Some(f) = file {
                            push_file(&mut turn.failed_edits, &mut failed_seen, f, cwd);
                        }
                    }
                    ("Bash", true) => {
                        if let Some(c) = call.input["command"].as_str() {
                            turn.failed.push(short_command(c));
                        }
                    }
                    ("AskUserQuestion", false) => {
                        if let Some(text) = answers(l, p) {
                            turn.kept.push(Kept {
                                kind: NoteKind::Answer,
                                text,
                                entry: entry.to_owned(),
                            });
                        }
                    }
                    ("Agent" | "Task", false) => {
                        if let Some(text) = report(l, call) {
                            turn.kept.push(Kept {
                                kind: NoteKind::Report,
                                text: note::cut_chars(&text),
                                entry: entry.to_owned(),
                            });
                        }
                    }
                    ("ExitPlanMode", false) => {
                        let plan = l["toolUseResult"]["plan"]
                            .as_str()
                            .or(call.input["plan"].as_str())
                            .filter(|p| !p.trim().is_empty());
                        if let Some(plan) = plan {
                            turn.kept.push(Kept {
                                kind: NoteKind::Plan,
                                text: note::cut_chars(plan),
                                entry: entry.to_owned(),
                            });
                        }
                    }
                    _ => {}
                }
            }
        }
    }
    turn
}

/// A background subagent's report, from the notice Claude Code hands the
/// prompt hook when the subagent finishes
/// (`<task-notification>…<summary>Agent "…" finished</summary>…<result>…</result>`):
/// the summary and the result, cut at `note::MAX_KEPT_CHARS`. `None` for any
/// other notice (a background command, a failed or killed task).
pub fn background_report(notice: &str) -> Option<String> {
    let inner = |tag: &str| {
        let open = format!("<{tag}>");
        let close = format!("</{tag}>");
        let from = notice.find(&open)? + open.len();
        let to = from + notice[from..].rfind(&close)?;
        Some(notice[from..to].trim())
    };
    if !notice.trim_start().starts_with("<task-notification>") {
        return None;
    }
    let summary = inner("summary")?;
    if !summary.starts_with("Agent ") {
        return None;
    }
    let result = inner("result").filter(|r| !r.is_empty())?;
    Some(note::cut_chars(&format!("{summary}:\n{result}")))
}

/// The command of a Codex tool call's arguments (a list of words, or one
/// string), if it has one.
fn codex_command(v: &Value) -> Option<String> {
    match &v["command"] {
        Value::Array(words) => {
            let w: Vec<&str> = words.iter().filter_map(Value::as_str).collect();
            // `bash -lc "…"`: the script is what was run.
            match w.as_slice() {
                [sh, flag, script] if sh.ends_with("sh") && flag.starts_with('-') => {
                    Some((*script).to_owned())
                }
                _ => (!w.is_empty()).then(|| w.join(" ")),
            }
        }
        Value::String(s) => Some(s.clone()),
        _ => v["cmd"].as_str().map(str::to_owned),
    }
}

/// The files an `apply_patch` patch touches.
fn patch_files(patch: &str) -> impl Iterator<Item = &str> {
    patch.lines().filter_map(|l| {
        [
            "*** Add File: ",
            "*** Update File: ",
            "*** Delete File: ",
            "*** Move to: ",
        ]
        .iter()
        .find_map(|p| l.strip_prefix(p))
    })
}

/// The last turn of a Codex rollout file (`response_item` and `event_msg`
/// lines, each with a `payload`).
pub fn codex_turn(lines: &[Value], cwd: &str) -> Turn {
    let is_prompt = |l: &Value| {
        let p = &l["payload"];
        (l["type"] == "event_msg" && p["type"] == "user_message")
            || (l["type"] == "response_item" && p["type"] == "message" && p["role"] == "user")
    };
    let start = lines.iter().rposition(is_prompt).map_or(0, |i| i + 1);
    let mut turn = Turn::default();
    let mut seen = BTreeSet::new();
    let mut read_seen = BTreeSet::new();
    let mut commands: HashMap<String, String> = HashMap::new();
    let mut failed_ids = BTreeSet::new();
    for l in &lines[start..] {
        let p = &l["payload"];
        let call_id = p["call_id"].as_str().unwrap_or_default().to_owned();
        match (l["type"].as_str(), p["type"].as_str()) {
            (Some("response_item"), Some("message")) if p["role"] == "assistant" => {
                if let Some(t) = content_text(&p["content"]) {
                    turn.reply = Some(t);
                }
            }
            (Some("response_item"), Some("function_call")) => {
                let args: Value = p["arguments"]
                    .as_str()
                    .and_then(|a| serde_json::from_str(a).ok())
                    .unwrap_or(Value::Null);
                if p["name"] == "apply_patch" {
                    let patch = args["input"].as_str().or(args["patch"].as_str());
                    for f in patch.into_iter().flat_map(patch_files) {
                        push_file(&mut turn.files, &mut seen, f, cwd);
                    }
                } else if let Some(c) = codex_command(&args) {
                    explore_command(&mut turn, &mut read_seen, &c, cwd);
                    commands.insert(call_id, c);
                }
            }
            (Some("response_item"), Some("custom_tool_call")) if p["name"] == "apply_patch" => {
                for f in p["input"].as_str().into_iter().flat_map(patch_files) {
                    push_file(&mut turn.files, &mut seen, f, cwd);
                }
            }
            (Some("event_msg"), Some("exec_command_end")) => {
                let code = p["exit_code"].as_i64().unwrap_or(0);
                if code != 0 && failed_ids.insert(call_id.clone()) {
                    let c = codex_command(p).or_else(|| commands.get(&call_id).cloned());
                    if let Some(c) = c {
                        turn.failed
                            .push(format!("{} (exit {code})", short_command(&c)));
                    }
                }
            }
            (Some("event_msg"), Some("item_completed"))
                if p["item"]["type"] == "CommandExecution" =>
            {
                // Codex 0.17x: a command's end is an item of the turn.
                let item = &p["item"];
                let code = item["exit_code"].as_i64().unwrap_or(0);
                let id = item["id"].as_str().unwrap_or_default().to_owned();
                if code != 0 && failed_ids.insert(id.clone()) {
                    let c = codex_command(item).or_else(|| commands.get(&id).cloned());
                    if let Some(c) = c {
                        turn.failed
                            .push(format!("{} (exit {code})", short_command(&c)));
                    }
                }
            }
            (Some("event_msg"), Some("patch_apply_end")) => {
                if let Some(changes) = p["changes"].as_object() {
                    for f in changes.keys() {
                        push_file(&mut turn.files, &mut seen, f, cwd);
                    }
                }
            }
            (Some("response_item"), Some("function_call_output")) => {
                // Older rollouts: the exit code is in the output's metadata.
                let out: Value = p["output"]
                    .as_str()
                    .and_then(|o| serde_json::from_str(o).ok())
                    .unwrap_or(Value::Null);
                let code = out["metadata"]["exit_code"].as_i64().unwrap_or(0);
                if code != 0
                    && failed_ids.insert(call_id.clone())
                    && let Some(c) = commands.get(&call_id)
                {
                    turn.failed
                        .push(format!("{} (exit {code})", short_command(c)));
                }
            }
            _ => {}
        }
    }
    turn
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_claude_turn_names_files_changed_and_commands_that_failed() {
        let lines = vec![
            json!({"type": "user", "message": {"role": "user", "content": "earlier prompt"}}),
            json!({"type": "assistant", "message": {"content": [
                {"type": "tool_use", "id": "t0", "name": "Write",
                 "input": {"file_path": "/p/old.rs"}}]}}),
            json!({"type": "user", "message": {"role": "user", "content": [
                {"type": "text", "text": "fix the login"}]}}),
            json!({"type": "assistant", "message": {"content": [
                {"type": "text", "text": "Looking."},
                {"type": "tool_use", "id": "t1", "name": "Edit",
                 "input": {"file_path": "/p/src/login.rs", "old_string": "a", "new_string": "b"}},
                {"type": "tool_use", "id": "t2", "name": "Bash",
                 "input": {"command": "cargo   test\n--quiet"}},
                {"type": "tool_use", "id": "t3", "name": "Bash", "input": {"command": "ls"}}]}}),
            json!({"type": "user", "message": {"content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "ok"},
                {"type": "tool_result", "tool_use_id": "t2", "is_error": true, "content": "1 failed"},
                {"type": "tool_result", "tool_use_id": "t3", "content": "src"}]}}),
            json!({"type": "assistant", "message": {"content": [
                {"type": "tool_use", "id": "t4", "name": "Write",
                 "input": {"file_path": "/elsewhere/notes.md"}},
                {"type": "tool_use", "id": "t5", "name": "Edit",
                 "input": {"file_path": "/p/src/login.rs"}},
                {"type": "tool_use", "id": "t6", "name": "Edit",
                 "input": {"file_path": "/p/src/gone.rs"}}]}}),
            json!({"type": "user", "message": {"content": [
                {"type": "tool_result", "tool_use_id": "t4", "content": "ok"},
                {"type": "tool_result", "tool_use_id": "t5", "content": "ok"},
                {"type": "tool_result", "tool_use_id": "t6", "is_error": true,
                 "content": "<tool_use_error>File does not exist.</tool_use_error>"}]}}),
            json!({"type": "assistant", "message": {"content": [
                {"type": "text", "text": "Done: the login is fixed."}]}}),
        ];
        let t = claude_turn(&lines, "/p");
        assert_eq!(t.files, ["src/login.rs", "/elsewhere/notes.md"]);
        assert_eq!(t.failed, ["`cargo test --quiet`"]);
        assert_eq!(t.reply.as_deref(), Some("Done: the login is fixed."));
        assert_eq!(t.failed_edits, ["src/gone.rs"]);
        assert_eq!(
            t.record().unwrap(),
            "1 listing; files changed: src/login.rs, /elsewhere/notes.md; edits failed: \
             src/gone.rs; commands failed: `cargo test --quiet`"
        );
        assert_eq!(claude_turn(&lines[..3], "/p").record(), None);
    }

    #[test]
    fn a_codex_turn_names_files_changed_and_commands_that_failed() {
        let lines = vec![
            json!({"type": "event_msg", "payload": {"type": "user_message", "message": "go"}}),
            json!({"type": "response_item", "payload": {"type": "function_call",
                "name": "shell", "call_id": "c1",
                "arguments": "{\"command\":[\"bash\",\"-lc\",\"make check\"]}"}}),
            json!({"type": "event_msg", "payload": {"type": "exec_command_end",
                "call_id": "c1", "exit_code": 2}}),
            json!({"type": "response_item", "payload": {"type": "function_call_output",
                "call_id": "c1", "output": "{\"metadata\":{\"exit_code\":2}}"}}),
            json!({"type": "response_item", "payload": {"type": "custom_tool_call",
                "name": "apply_patch", "call_id": "c2",
                "input": "*** Begin Patch\n*** Update File: /p/a.rs\n@@\n-x\n+y\n*** Add File: b.rs\n+z\n*** End Patch"}}),
            json!({"type": "response_item", "payload": {"type": "message", "role": "assistant",
                "content": [{"type": "output_text", "text": "Patched."}]}}),
        ];
        let t = codex_turn(&lines, "/p");
        assert_eq!(t.files, ["a.rs", "b.rs"]);
        assert_eq!(t.failed, ["`make check` (exit 2)"]);
        assert_eq!(t.reply.as_deref(), Some("Patched."));
    }

    #[test]
    fn a_tail_skips_the_cut_line_and_garbage() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.jsonl");
        let mut text = String::new();
        let filler = "x".repeat(1000);
        while (text.len() as u64) < TAIL_BYTES + 10_000 {
            text.push_str(&format!("{{\"type\":\"filler\",\"f\":\"{filler}\"}}\n"));
        }
        text.push_str("not json\n{\"type\":\"last\"}\n");
        std::fs::write(&p, &text).unwrap();
        let lines = tail_lines(&p);
        assert_eq!(lines.last().unwrap()["type"], "last");
        assert!(
            lines
                .iter()
                .all(|l| l["type"] == "filler" || l["type"] == "last")
        );
        assert!(tail_lines(&dir.path().join("absent")).is_empty());
        assert_eq!(size(&p), text.len() as u64);
    }
}
