//! Editing a JSON config file (`.mcp.json`, `~/.claude.json`,
//! `.claude/settings*.json`, Codex's `hooks.json`): parsing it as an object,
//! reaching into it, and writing it back indented as it was, key order kept.
//! It must not know which keys are countersign's.

use std::path::Path;

use anyhow::bail;
use serde_json::{Map, Value, json};

use super::edit::Edit;
use super::file::read;
use super::json_text::rewrite;

/// The file at `path` as it is (`None`: no such file) and the JSON object it
/// holds (empty for no file or an empty one).
pub(super) fn read_object(path: &Path) -> anyhow::Result<(Option<String>, Map<String, Value>)> {
    let before = read(path)?;
    let orig = parse_object(path, before.as_deref())?;
    Ok((before, orig))
}

pub(super) fn parse_object(path: &Path, text: Option<&str>) -> anyhow::Result<Map<String, Value>> {
    let text = text.unwrap_or_default();
    if text.trim().is_empty() {
        return Ok(Map::new());
    }
    match serde_json::from_str(text) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => bail!(
            "{} does not hold a JSON object; fix or move it — nothing was changed",
            path.display()
        ),
        Err(e) => bail!(
            "{} is not valid JSON ({e}); fix or move it — nothing was changed",
            path.display()
        ),
    }
}

/// The object under `key`, created if absent.
pub(super) fn object_at<'a>(
    root: &'a mut Map<String, Value>,
    key: &str,
    path: &Path,
) -> anyhow::Result<&'a mut Map<String, Value>> {
    match root.entry(key).or_insert_with(|| json!({})) {
        Value::Object(m) => Ok(m),
        _ => bail!(
            "\"{key}\" in {} is not an object; fix it — nothing was changed",
            path.display()
        ),
    }
}

/// The edit turning `before` into `root`: only what changed is rewritten
/// ([`rewrite`]: every other byte of the file stays), and an emptied file
/// is removed.
pub(super) fn json_edit(
    path: &Path,
    before: Option<String>,
    orig: &Map<String, Value>,
    root: Map<String, Value>,
    notes: Vec<String>,
) -> Edit {
    let root_hollow = root.values().all(|v| match v {
        Value::Object(m) => m.is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    });
    let after = if root == *orig {
        before.clone()
    } else if root.is_empty() {
        None
    } else {
        let new = Value::Object(root);
        let kept = before
            .as_deref()
            .filter(|t| !t.trim().is_empty())
            .and_then(|t| rewrite(t, &Value::Object(orig.clone()), &new, &indent_unit(Some(t))));
        Some(kept.unwrap_or_else(|| pretty(&new, before.as_deref())))
    };
    let mut e = Edit::new(path, before, after, notes);
    e.empty = "{}\n";
    e.hollow = root_hollow;
    e
}

/// `v` as indented JSON, indented as `like` is (its first indented line's
/// tabs or spaces; two spaces for a new or one-line file), with a final
/// newline: key order is kept, the rest of a layout JSON cannot carry.
pub(super) fn pretty(v: &Value, like: Option<&str>) -> String {
    use serde::Serialize as _;
    let indent = indent_unit(like);
    let mut out = Vec::new();
    let fmt = serde_json::ser::PrettyFormatter::with_indent(indent.as_bytes());
    let mut ser = serde_json::Serializer::with_formatter(&mut out, fmt);
    v.serialize(&mut ser).expect("JSON serializes");
    let mut text = String::from_utf8(out).expect("JSON is UTF-8");
    text.push('\n');
    text
}

/// One level of indentation in `like`: its first indented line's tabs or
/// spaces; two spaces for a new or one-line file.
fn indent_unit(like: Option<&str>) -> String {
    like.and_then(|t| {
        t.lines().skip(1).find_map(|l| {
            let ws: String = l.chars().take_while(|c| *c == ' ' || *c == '\t').collect();
            (!ws.is_empty() && ws.len() < l.len()).then_some(ws)
        })
    })
    .unwrap_or_else(|| "  ".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewritten_json_keeps_the_files_indentation() {
        let v = json!({"a": {"b": 1}});
        assert_eq!(
            pretty(&v, Some("{\n\t\"x\": 1\n}")),
            "{\n\t\"a\": {\n\t\t\"b\": 1\n\t}\n}\n"
        );
        assert_eq!(
            pretty(&v, Some("{\n\n    \"x\": {\n        \"y\": 2 }\n}")),
            "{\n    \"a\": {\n        \"b\": 1\n    }\n}\n"
        );
        for like in [None, Some("{\"x\": 1}")] {
            assert_eq!(pretty(&v, like), "{\n  \"a\": {\n    \"b\": 1\n  }\n}\n");
        }
    }
}
