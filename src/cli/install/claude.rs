//! Claude Code's files: where its user file is (`~/.claude.json`, holding
//! the local scope) and which project a session's local scope is filed
//! under, and the `mcpServers` entry in it or in `.mcp.json`. It must not
//! touch a server entry that does not run countersign.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use serde_json::{Map, Value};

use super::SERVER;
use super::edit::Edit;
use super::env_path;
use super::git::git;
use super::json::{json_edit, object_at, read_object};

/// Claude Code's user file holding its local scope: `$CLAUDE_CONFIG_DIR/.claude.json`,
/// else `~/.claude.json`.
pub(super) fn claude_user_config() -> anyhow::Result<PathBuf> {
    if let Some(d) = env_path("CLAUDE_CONFIG_DIR") {
        return Ok(d.join(".claude.json"));
    }
    let home = env_path("HOME")
        .context("cannot find Claude Code's configuration: set CLAUDE_CONFIG_DIR or HOME")?;
    Ok(home.join(".claude.json"))
}

/// Claude Code's user settings (where a user's status line usually is):
/// `$CLAUDE_CONFIG_DIR/settings.json`, else `~/.claude/settings.json`.
pub(super) fn claude_user_settings() -> anyhow::Result<PathBuf> {
    if let Some(d) = env_path("CLAUDE_CONFIG_DIR") {
        return Ok(d.join("settings.json"));
    }
    let home = env_path("HOME")
        .context("cannot find Claude Code's configuration: set CLAUDE_CONFIG_DIR or HOME")?;
    Ok(home.join(".claude").join("settings.json"))
}

/// The project Claude Code files the local scope of a session in `dir`
/// under: the main worktree of its git repository (all worktrees of a
/// repository share it, as Claude Code 2.1 does), else `dir` itself.
pub(super) fn claude_project(dir: &Path) -> String {
    let common = git(
        dir,
        &["rev-parse", "--path-format=absolute", "--git-common-dir"],
    );
    let root = match common {
        Some(c) if Path::new(&c).file_name().is_some_and(|n| n == ".git") => {
            Path::new(&c).parent().map(Path::to_path_buf)
        }
        Some(_) => git(dir, &["rev-parse", "--show-toplevel"]).map(PathBuf::from),
        None => None,
    };
    let root = root.unwrap_or_else(|| dir.to_path_buf());
    root.canonicalize().unwrap_or(root).display().to_string()
}

/// Countersign's own: any entry or command that runs the countersign binary,
/// or an HTTP entry of the form `install --url` writes (a server's `/mcp`
/// with a bearer token taken from a variable).
pub(super) fn is_ours(v: &Value) -> bool {
    let served = v["type"] == "http"
        && v["url"].as_str().is_some_and(|u| u.ends_with("/mcp"))
        && v["headers"]["Authorization"]
            .as_str()
            .is_some_and(|a| a.starts_with("Bearer ${") && a.ends_with('}'));
    served || v.to_string().contains("countersign")
}

/// Sets (`Some`) or removes (`None`) the MCP server entry in the object
/// at the keys `at` (`.mcp.json`: the top; `~/.claude.json`: a project).
/// Objects left empty by a removal go with it.
pub(super) fn mcp_json(path: &Path, at: &[&str], entry: Option<Value>) -> anyhow::Result<Edit> {
    let (before, orig) = read_object(path)?;
    let mut root = orig.clone();
    let mut notes = Vec::new();
    let describe = |v: &Value| {
        if let Some(url) = v["url"].as_str() {
            let auth = v["headers"]["Authorization"].as_str().unwrap_or_default();
            return format!("{url} (Authorization: {auth})");
        }
        let mut words = vec![v["command"].as_str().unwrap_or_default().to_owned()];
        words.extend(
            v["args"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|a| a.as_str().unwrap_or_default().to_owned()),
        );
        if let Some(h) = v["env"]["COUNTERSIGN_HOME"].as_str() {
            words.insert(0, format!("COUNTERSIGN_HOME={h}"));
        }
        words.join(" ")
    };
    let place = if at.is_empty() {
        String::new()
    } else {
        format!(" (under {})", at.join(" → "))
    };
    match entry {
        Some(entry) => {
            let mut obj = &mut root;
            for key in at {
                obj = object_at(obj, key, path)?;
            }
            let servers = object_at(obj, "mcpServers", path)?;
            notes.push(match servers.get(SERVER) {
                Some(old) if *old == entry => {
                    format!("MCP server \"{SERVER}\"{place} is already set up")
                }
                Some(old) if !is_ours(old) => bail!(
                    "{} already has an MCP server \"{SERVER}\"{place} that does not run \
                     countersign ({old}); rename or remove it — nothing was changed",
                    path.display()
                ),
                Some(old) => format!(
                    "replace MCP server \"{SERVER}\"{place} (was: {})\n  with: {}",
                    describe(old),
                    describe(&entry)
                ),
                None => format!("add MCP server \"{SERVER}\"{place}: {}", describe(&entry)),
            });
            servers.insert(SERVER.into(), entry);
        }
        None => remove_server(&mut root, at, &place, &describe, &mut notes),
    }
    Ok(json_edit(path, before, &orig, root, notes))
}

/// Takes countersign's server out of the object at `at` in `obj`, and the
/// objects its removal leaves empty below the first key of `at` (Claude
/// Code's `projects` stays, even empty: it is Claude Code's).
pub(super) fn remove_server(
    obj: &mut Map<String, Value>,
    at: &[&str],
    place: &str,
    describe: &dyn Fn(&Value) -> String,
    notes: &mut Vec<String>,
) {
    remove_below(obj, at, place, describe, notes, true);
}

fn remove_below(
    obj: &mut Map<String, Value>,
    at: &[&str],
    place: &str,
    describe: &dyn Fn(&Value) -> String,
    notes: &mut Vec<String>,
    top: bool,
) {
    if let Some((key, rest)) = at.split_first() {
        if let Some(Value::Object(inner)) = obj.get_mut(*key) {
            let had = !inner.is_empty();
            remove_below(inner, rest, place, describe, notes, false);
            if had && inner.is_empty() && !top {
                obj.remove(*key);
            }
        }
        return;
    }
    if let Some(Value::Object(servers)) = obj.get_mut("mcpServers") {
        match servers.get(SERVER) {
            Some(v) if is_ours(v) => {
                notes.push(format!(
                    "remove MCP server \"{SERVER}\"{place}: {}",
                    describe(v)
                ));
                servers.remove(SERVER);
                if servers.is_empty() {
                    obj.remove("mcpServers");
                }
            }
            Some(_) => notes.push(format!(
                "leave MCP server \"{SERVER}\"{place}: it does not run countersign"
            )),
            None => {}
        }
    }
}
