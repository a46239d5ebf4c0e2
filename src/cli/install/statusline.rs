//! Claude Code's status line: `countersign memory status --statusline`,
//! which shows how many memory items wait once at least 30 do. A status line
//! that was there is kept: ours runs it first (`--with`) and appends to its
//! output, and uninstall puts it back. It must not touch a status line that
//! is not a command.

use std::path::Path;

use serde_json::{Map, Value, json};

use super::edit::Edit;
use super::json::{json_edit, parse_object, read_object};
use super::shell::sh_quote;

/// What marks our command.
const OURS: &str = " memory status --statusline";

/// True for a status line that runs ours.
fn is_ours(v: &Value) -> bool {
    v["command"]
        .as_str()
        .is_some_and(|c| c.contains("countersign") && c.contains(OURS))
}

/// The command that runs ours after `previous`.
fn command(exe: &str, home: Option<&str>, previous: Option<&str>) -> String {
    let mut words = vec![sh_quote(exe)];
    if let Some(h) = home {
        words.extend(["--home".into(), sh_quote(h)]);
    }
    words.extend(["memory", "status", "--statusline"].map(str::to_owned));
    if let Some(p) = previous {
        words.extend(["--with".into(), sh_quote(p)]);
    }
    words.join(" ")
}

/// The command our status line wraps, read back from its `--with` word.
fn wrapped(ours: &str) -> Option<String> {
    let (_, quoted) = ours.split_once(" --with ")?;
    let mut out = String::new();
    let mut chars = quoted.chars();
    let mut inside = false;
    while let Some(c) = chars.next() {
        match (inside, c) {
            (false, '\'') | (true, '\'') => inside = !inside,
            (false, '\\') => out.extend(chars.next()),
            (false, ' ') => break,
            (_, c) => out.push(c),
        }
    }
    Some(out)
}

/// The status line in effect for a file written after `lower` ones: the
/// file's own, else the first of `lower` that has one.
fn in_effect(own: &Map<String, Value>, lower: &[&Path]) -> Option<Value> {
    if let Some(v) = own.get("statusLine") {
        return Some(v.clone());
    }
    lower.iter().find_map(|p| {
        read_object(p)
            .ok()
            .and_then(|(_, o)| o.get("statusLine").cloned())
    })
}

/// Sets (`Some(exe, home)`) or takes out (`None`) our status line in a
/// settings file, on top of `base`, the edit of that file planned so far
/// (its hooks). `lower` are the settings files Claude Code reads under it
/// (their status line is the one kept when the file has none, and the one
/// that shows again when ours goes).
pub(super) fn statusline(
    base: Edit,
    lower: &[&Path],
    ours: Option<(&str, Option<&str>)>,
) -> anyhow::Result<Edit> {
    let path = base.path.clone();
    let path = path.as_path();
    let before = base.before;
    let orig = parse_object(path, before.as_deref())?;
    let mut root = parse_object(path, base.after.as_deref())?;
    let mut notes = base.notes;
    match ours {
        Some((exe, home)) => {
            let current = in_effect(&root, lower);
            let (mut line, previous) = match current {
                Some(v) if is_ours(&v) => {
                    let prev = v["command"].as_str().and_then(wrapped);
                    (v, prev)
                }
                Some(v @ Value::Object(_)) if v["type"] == "command" => {
                    let prev = v["command"].as_str().map(str::to_owned);
                    (v, prev)
                }
                Some(_) => {
                    notes.push(
                        "leave the status line: it is not a command, so ours cannot keep it"
                            .to_owned(),
                    );
                    return Ok(json_edit(path, before, &orig, root, notes));
                }
                None => (json!({"type": "command"}), None),
            };
            let cmd = command(exe, home, previous.as_deref());
            line["command"] = json!(cmd);
            if root.get("statusLine") == Some(&line) {
                notes.push("the status line is already set up".into());
            } else {
                notes.push(match &previous {
                    Some(p) => {
                        format!("status line: keep `{p}` and append how many memory items wait")
                    }
                    None => "status line: how many memory items wait (once 30 do)".to_owned(),
                });
                root.insert("statusLine".into(), line);
            }
        }
        None => {
            if let Some(v) = root.get("statusLine").cloned()
                && is_ours(&v)
            {
                // The status line ours wraps came from a file under this one
                // when that file still has it: ours then just goes.
                let inherited = v["command"].as_str().and_then(wrapped).filter(|prev| {
                    in_effect(&Map::new(), lower)
                        .is_some_and(|l| l["command"].as_str() == Some(prev.as_str()))
                });
                match v["command"].as_str().and_then(wrapped) {
                    Some(prev) if inherited.is_some() => {
                        notes.push(format!(
                            "remove the status line (countersign memory status): `{prev}` of \
                             the settings under this file shows again"
                        ));
                        root.remove("statusLine");
                    }
                    Some(prev) => {
                        let mut line = v.clone();
                        line["command"] = json!(prev);
                        notes.push(format!("status line: back to `{prev}`"));
                        root.insert("statusLine".into(), line);
                    }
                    None => {
                        notes.push("remove the status line (countersign memory status)".into());
                        root.remove("statusLine");
                    }
                }
            }
        }
    }
    Ok(json_edit(path, before, &orig, root, notes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wrapped_command_reads_back_as_it_was() {
        for prev in ["echo hi", "printf '%s' \"$x\" | cut -c1-9", "it's", ""] {
            let c = command("/bin/countersign", Some("/h ome"), Some(prev));
            assert_eq!(wrapped(&c).as_deref(), Some(prev), "{c}");
            assert!(is_ours(&json!({"command": c})));
        }
        assert_eq!(wrapped(&command("/c/countersign", None, None)), None);
    }
}
