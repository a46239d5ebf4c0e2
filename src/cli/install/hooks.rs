//! The SessionStart and Stop hooks, and with `install --record` the
//! recording hooks (UserPromptSubmit and a second Stop hook running `hook
//! record`), in Claude Code's settings format (`.claude/settings*.json`, and
//! Codex's `hooks.json`, which takes the same format): their commands, and
//! adding or taking out countersign's. It must not touch a hook that does
//! not run `countersign hook`.

use std::path::Path;

use anyhow::bail;
use serde_json::{Value, json};

use super::edit::Edit;
use super::json::{json_edit, object_at, read_object};
use super::shell::sh_quote;
use crate::cli::remote_channel::{TOKEN_VAR, URL_VAR};

/// The hooks: settings.json event and `countersign hook` name.
const HOOKS: [(&str, &str); 2] = [("SessionStart", "session-start"), ("Stop", "stop")];

/// The recording hooks (`install --record`): the events whose input they
/// record, each running `countersign hook record <event>`.
const RECORD_HOOKS: [(&str, &str); 2] = [("UserPromptSubmit", "record"), ("Stop", "record")];

/// One hook to set: its event, its `countersign hook` name, its command.
pub(super) type HookCommand = (&'static str, &'static str, String);

/// The recording hooks' commands for `agent` (claude, codex); `bound` and
/// `home` as for [`hook_commands`].
pub(super) fn record_commands(
    exe: &str,
    agent: &str,
    bound: Option<(&str, &str)>,
    home: Option<&str>,
) -> [HookCommand; 2] {
    RECORD_HOOKS.map(|(event, name)| {
        let mut words = vec![exe, "hook", name, event, "--agent", agent];
        if let Some((role, dir)) = bound {
            words.extend(["--role", role, "--channel", dir]);
        }
        if let Some(h) = home {
            words.extend(["--home", h]);
        }
        let cmd: Vec<String> = words.iter().map(|w| sh_quote(w)).collect();
        (event, name, cmd.join(" "))
    })
}

/// The hook commands (event, hook name, shell command). `bound` (role,
/// channel) is written into a project's own settings only; a user-level
/// file (Codex's) names neither, and the hook takes them from the binding
/// of the session's folder, as the server does. `tools` is the server
/// entry's `--tools`, passed on so the hooks' texts name only the tools the
/// session is served.
pub(super) fn hook_commands(
    exe: &str,
    bound: Option<(&str, &str)>,
    home: Option<&str>,
    tools: Option<&str>,
) -> [HookCommand; 2] {
    HOOKS.map(|(event, name)| {
        let mut words = vec![exe, "hook", name];
        if let Some((role, dir)) = bound {
            words.extend(["--role", role, "--channel", dir]);
        }
        if let Some(t) = tools {
            words.extend(["--tools", t]);
        }
        if let Some(h) = home {
            words.extend(["--home", h]);
        }
        let cmd: Vec<String> = words.iter().map(|w| sh_quote(w)).collect();
        (event, name, cmd.join(" "))
    })
}

/// The hook commands for a channel served over HTTP: each reads the channel
/// through the server at `base` (`COUNTERSIGN_URL`), with the role token
/// the shell takes from the variable `token_var` when the hook runs. Only
/// the variable's name is written: the token never lands in a file or an
/// argument list. `token_var` must be a variable name (checked by the caller).
pub(super) fn served_hook_commands(
    exe: &str,
    base: &str,
    token_var: &str,
    home: Option<&str>,
) -> [HookCommand; 2] {
    HOOKS.map(|(event, name)| {
        let mut words = vec![exe, "hook", name];
        if let Some(h) = home {
            words.extend(["--home", h]);
        }
        let cmd: Vec<String> = words.iter().map(|w| sh_quote(w)).collect();
        let token = if token_var == TOKEN_VAR {
            String::new()
        } else {
            format!(" {TOKEN_VAR}=\"${token_var}\"")
        };
        (
            event,
            name,
            format!("{URL_VAR}={}{token} {}", sh_quote(base), cmd.join(" ")),
        )
    })
}

/// True for a hook command that runs `countersign hook <name>`.
pub(super) fn is_our_hook(h: &Value, name: &str) -> bool {
    h["command"]
        .as_str()
        .is_some_and(|c| c.contains("countersign") && c.contains(&format!(" hook {name}")))
}

/// Takes countersign's `hook <name>` commands out of an event's groups,
/// dropping groups left empty. Returns how many were removed.
pub(super) fn remove_hooks(groups: &mut Vec<Value>, name: &str) -> usize {
    let mut removed = 0;
    groups.retain_mut(|g| {
        let Some(list) = g.get_mut("hooks").and_then(Value::as_array_mut) else {
            return true;
        };
        let n = list.len();
        list.retain(|h| !is_our_hook(h, name));
        removed += n - list.len();
        !(list.is_empty() && n > 0)
    });
    removed
}

/// Adds (`Some`: event, hook name, command) or removes (`None`) the hooks.
/// Adding takes out the recording hooks `hooks` does not name, so an
/// install without `--record` stops recording.
pub(super) fn settings(path: &Path, hooks: Option<&[HookCommand]>) -> anyhow::Result<Edit> {
    let (before, orig) = read_object(path)?;
    let mut root = orig.clone();
    let mut notes = Vec::new();
    match hooks {
        Some(hooks) => {
            let all = object_at(&mut root, "hooks", path)?;
            for (event, name, command) in hooks {
                let Value::Array(groups) = all.entry(*event).or_insert_with(|| json!([])) else {
                    bail!(
                        "\"hooks.{event}\" in {} is not a list; fix it — nothing was changed",
                        path.display()
                    );
                };
                let present = groups.iter().any(|g| {
                    g["hooks"]
                        .as_array()
                        .is_some_and(|l| l.iter().any(|h| h["command"] == command.as_str()))
                });
                if present {
                    notes.push(format!("the {event} hook is already set up"));
                    continue;
                }
                let replaced = remove_hooks(groups, name) > 0;
                groups.push(json!({"hooks": [{"type": "command", "command": command}]}));
                notes.push(format!(
                    "{} {event} hook: {command}",
                    if replaced { "replace the" } else { "add a" }
                ));
            }
            let unnamed = RECORD_HOOKS
                .iter()
                .filter(|(e, n)| !hooks.iter().any(|(he, hn, _)| he == e && hn == n));
            for (event, name) in unnamed {
                let Some(Value::Array(groups)) = all.get_mut(*event) else {
                    continue;
                };
                if remove_hooks(groups, name) > 0 {
                    notes.push(format!(
                        "remove the {event} hook (countersign hook {name}): nothing is recorded \
                         without --record"
                    ));
                    if groups.is_empty() {
                        all.remove(*event);
                    }
                }
            }
        }
        None => {
            if let Some(Value::Object(all)) = root.get_mut("hooks") {
                for (event, name) in HOOKS.into_iter().chain(RECORD_HOOKS) {
                    let Some(Value::Array(groups)) = all.get_mut(event) else {
                        continue;
                    };
                    let removed = remove_hooks(groups, name);
                    if removed == 0 {
                        continue;
                    }
                    notes.push(format!("remove the {event} hook (countersign hook {name})"));
                    if groups.is_empty() {
                        all.remove(event);
                    }
                }
                if all.is_empty() && !notes.is_empty() {
                    root.remove("hooks");
                }
            }
        }
    }
    Ok(json_edit(path, before, &orig, root, notes))
}
