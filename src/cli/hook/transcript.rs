//! The end of a client's transcript file, read for the recording hook: the
//! agent's last reply and the tool calls of the last turn (files changed,
//! commands that failed), in Claude Code's and Codex's formats.
//!
//! Reads at most [`TAIL_BYTES`] from the end of a regular file (no symlink
//! followed); lines it cannot read are skipped. It never fails a hook: what
//! it cannot find is simply not recorded.

use std::collections::{BTreeSet, HashMap};
use std::fs::File;
use std::io::{Read as _, Seek as _, SeekFrom};
use std::path::Path;

use serde_json::Value;

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

/// What one turn did with its tools.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Turn {
    /// Files written or edited, in the order first seen.
    pub files: Vec<String>,
    /// Commands that failed, with their exit code when known.
    pub failed: Vec<String>,
    /// The agent's last text of the turn.
    pub reply: Option<String>,
}

impl Turn {
    /// The turn as one short record, `None` when it changed no file and no
    /// command failed.
    pub fn record(&self) -> Option<String> {
        let mut parts = Vec::new();
        if !self.files.is_empty() {
            parts.push(format!("files changed: {}", list(&self.files, MAX_FILES)));
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

fn push_file(files: &mut Vec<String>, seen: &mut BTreeSet<String>, path: &str, cwd: &str) {
    let p = path.trim();
    if p.is_empty() {
        return;
    }
    let shown = Path::new(p)
        .strip_prefix(cwd)
        .ok()
        .filter(|r| !r.as_os_str().is_empty() && !cwd.is_empty())
        .map_or_else(|| p.to_owned(), |r| r.display().to_string());
    if seen.insert(shown.clone()) {
        files.push(shown);
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
    let mut commands: HashMap<String, String> = HashMap::new();
    for l in &lines[start..] {
        let Some(parts) = l["message"]["content"].as_array() else {
            continue;
        };
        if l["type"] == "assistant" {
            if let Some(t) = content_text(&l["message"]["content"]) {
                turn.reply = Some(t);
            }
            for p in parts.iter().filter(|p| p["type"] == "tool_use") {
                let input = &p["input"];
                match p["name"].as_str().unwrap_or_default() {
                    "Edit" | "Write" | "MultiEdit" => {
                        if let Some(f) = input["file_path"].as_str() {
                            push_file(&mut turn.files, &mut seen, f, cwd);
                        }
                    }
                    "NotebookEdit" => {
                        if let Some(f) = input["notebook_path"].as_str() {
                            push_file(&mut turn.files, &mut seen, f, cwd);
                        }
                    }
                    "Bash" => {
                        if let (Some(id), Some(c)) = (p["id"].as_str(), input["command"].as_str()) {
                            commands.insert(id.to_owned(), c.to_owned());
                        }
                    }
                    _ => {}
                }
            }
        } else if l["type"] == "user" {
            for p in parts.iter().filter(|p| p["type"] == "tool_result") {
                if p["is_error"] != Value::Bool(true) {
                    continue;
                }
                if let Some(c) = p["tool_use_id"].as_str().and_then(|id| commands.get(id)) {
                    turn.failed.push(short_command(c));
                }
            }
        }
    }
    turn
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
                {"type": "tool_result", "tool_use_id": "t2", "is_error": true, "content": "1 failed"},
                {"type": "tool_result", "tool_use_id": "t3", "content": "src"}]}}),
            json!({"type": "assistant", "message": {"content": [
                {"type": "tool_use", "id": "t4", "name": "Write",
                 "input": {"file_path": "/elsewhere/notes.md"}},
                {"type": "tool_use", "id": "t5", "name": "Edit",
                 "input": {"file_path": "/p/src/login.rs"}}]}}),
            json!({"type": "assistant", "message": {"content": [
                {"type": "text", "text": "Done: the login is fixed."}]}}),
        ];
        let t = claude_turn(&lines, "/p");
        assert_eq!(t.files, ["src/login.rs", "/elsewhere/notes.md"]);
        assert_eq!(t.failed, ["`cargo test --quiet`"]);
        assert_eq!(t.reply.as_deref(), Some("Done: the login is fixed."));
        assert_eq!(
            t.record().unwrap(),
            "files changed: src/login.rs, /elsewhere/notes.md; commands failed: `cargo test --quiet`"
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
