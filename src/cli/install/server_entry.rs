//! The MCP server entry `install` writes for a client: the command, its
//! arguments and the environment it passes, and its JSON form (Claude Code's
//! `mcpServers`). Its TOML forms are Codex's, in [`super::codex`]. It must not
//! read or write files.

use serde_json::{Map, Value, json};

/// The server entry as a client runs it: the command, its arguments and
/// the environment it passes.
pub(super) struct ServerEntry {
    pub(super) command: String,
    pub(super) args: Vec<String>,
    /// `COUNTERSIGN_HOME`, when a home was chosen.
    pub(super) home: Option<String>,
}

impl ServerEntry {
    /// The entry as Claude Code's JSON.
    pub(super) fn json(&self, typed: bool) -> Value {
        let mut v = Map::new();
        if typed {
            v.insert("type".into(), json!("stdio"));
        }
        v.insert("command".into(), json!(self.command));
        v.insert("args".into(), json!(self.args));
        if let Some(h) = &self.home {
            v.insert("env".into(), json!({"COUNTERSIGN_HOME": h}));
        }
        Value::Object(v)
    }
}
