//! The schemas a tool publishes in tools/list, made lean and portable.
//!
//! Owns how the schemas derived from the parameter and result types are
//! rewritten before a client sees them; must not change what a tool accepts
//! (arguments are still checked against the derived input schema, see
//! `arguments`) nor what it answers. Every session pays for tools/list in
//! context before its first word, and some model providers take only a
//! subset of JSON Schema, so the published form:
//!
//! - never writes `"type": [T, "null"]` (rejected by single-`type` dialects):
//!   an optional parameter whose `null` means the same as its absence is
//!   published as `T`; one whose `null` is an answer of its own is marked
//!   [`NULL_IS_AN_ANSWER`] (`app::request::NullIsAnAnswer`) and published as `anyOf` with a `null` branch;
//! - inlines `$ref`s (no `$defs`), and keeps descriptions on parameters only;
//! - describes a result to one level: the root's fields with their types, a
//!   list's scalar items, nested objects as `object`, nullable fields left
//!   out. An answer validates against it as it did against the full schema,
//!   and get_protocol says what the nested fields hold. Nothing is marked
//!   `required`: a refusal's `structuredContent` is `{error, message}`, and
//!   some clients (MCP Inspector 2.12) check it against the same schema and
//!   show a validation error instead of the refusal.

use std::borrow::Cow;

use rmcp::model::JsonObject;
use serde_json::{Value, json};

pub use crate::app::request::NULL_IS_AN_ANSWER;

/// The published form of a derived input schema.
pub fn lean_input(schema: &JsonObject) -> JsonObject {
    let defs = schema.get("$defs").cloned().unwrap_or(Value::Null);
    let mut out = JsonObject::new();
    out.insert("type".into(), json!("object"));
    let mut props = JsonObject::new();
    if let Some(Value::Object(named)) = schema.get("properties") {
        for (name, sub) in named {
            props.insert(
                name.clone(),
                Value::Object(lean_parameter(sub, &defs, true)),
            );
        }
    }
    out.insert("properties".into(), Value::Object(props));
    if let Some(required) = schema.get("required") {
        out.insert("required".into(), required.clone());
    }
    out
}

/// One parameter (or a part of one): `$ref`s inlined, `null` dropped unless
/// it is an answer, the description kept where `described`.
fn lean_parameter(node: &Value, defs: &Value, described: bool) -> JsonObject {
    let node = resolve(node, defs);
    let mut out = JsonObject::new();
    let Some(node) = node.as_object() else {
        return out;
    };
    if described && let Some(Value::String(d)) = node.get("description") {
        out.insert("description".into(), json!(one_line(d)));
    }
    let keeps_null = node.get(NULL_IS_AN_ANSWER) == Some(&Value::Bool(true));
    match node.get("type") {
        Some(Value::Array(types)) => {
            let types: Vec<&Value> = types.iter().filter(|t| *t != "null").collect();
            match types.as_slice() {
                [one] => {
                    out.insert("type".into(), (*one).clone());
                }
                many => {
                    let branches = many.iter().map(|t| json!({ "type": t })).collect();
                    out.insert("anyOf".into(), Value::Array(branches));
                }
            }
        }
        Some(t) => {
            out.insert("type".into(), t.clone());
        }
        None => {}
    }
    if let Some(Value::Array(branches)) = node.get("anyOf").or_else(|| node.get("oneOf")) {
        let mut kept: Vec<Value> = flattened(
            branches
                .iter()
                .map(|b| Value::Object(lean_parameter(b, defs, false)))
                .collect(),
        );
        if !keeps_null {
            kept.retain(|b| *b != json!({ "type": "null" }));
        }
        match kept.len() {
            1 => {
                if let Some(Value::Object(only)) = kept.pop() {
                    out.extend(only);
                }
            }
            _ => {
                out.insert("anyOf".into(), Value::Array(kept));
            }
        }
    }
    if let Some(items) = node.get("items") {
        out.insert(
            "items".into(),
            Value::Object(lean_parameter(items, defs, false)),
        );
    }
    if let Some(extra) = node.get("additionalProperties") {
        let extra = match extra {
            Value::Object(_) => Value::Object(lean_parameter(extra, defs, false)),
            other => other.clone(),
        };
        out.insert("additionalProperties".into(), extra);
    }
    for k in ["enum", "minimum", "maximum"] {
        if let Some(v) = node.get(k) {
            out.insert(k.into(), v.clone());
        }
    }
    // A default of null, false or "" is what absence says anyway.
    let said = |d: &&Value| !(d.is_null() || **d == json!(false) || **d == json!(""));
    if let Some(d) = node.get("default").filter(said) {
        out.insert("default".into(), d.clone());
    }
    out
}

/// The published form of a derived output schema (see the module docs).
pub fn lean_output(schema: &JsonObject) -> JsonObject {
    let none = Value::Null;
    let defs = schema.get("$defs").unwrap_or(&none);
    let mut out = lean_result(&Value::Object(schema.clone()), defs, 0);
    // MCP wants an object at the root, also beside a root `anyOf`.
    out.insert("type".into(), json!("object"));
    out
}

/// A result's schema to one level below the root: `depth` is how far `node`
/// is from it.
fn lean_result(node: &Value, defs: &Value, depth: usize) -> JsonObject {
    let node = resolve(node, defs);
    let mut out = JsonObject::new();
    let Some(node) = node.as_object() else {
        return out;
    };
    let mut types: Vec<Value> = match node.get("type") {
        Some(Value::Array(ts)) => ts.clone(),
        Some(t) => vec![t.clone()],
        None => Vec::new(),
    };
    let mut branches: Vec<Value> = Vec::new();
    if let Some(Value::Array(bs)) = node.get("anyOf").or_else(|| node.get("oneOf")) {
        for b in bs {
            let b = lean_result(b, defs, depth);
            if b.is_empty() {
                // A branch that constrains nothing makes the whole node so.
                return JsonObject::new();
            }
            // An alternative of alternatives is one list of them.
            let flat = match b.get("anyOf") {
                Some(Value::Array(inner)) if b.len() == 1 => inner.clone(),
                _ => vec![Value::Object(b)],
            };
            for b in flat {
                if !branches.contains(&b) {
                    branches.push(b);
                }
            }
        }
    }
    let shape = |t: &Value| -> JsonObject {
        let mut one = JsonObject::new();
        one.insert("type".into(), t.clone());
        match t.as_str() {
            Some("object") if depth == 0 => {
                if let Some(Value::Object(named)) = node.get("properties") {
                    let mut props = JsonObject::new();
                    for (name, sub) in named {
                        let sub = lean_result(sub, defs, depth + 1);
                        // A field that may be anything, or null, is left
                        // out: spelling out "T or null" for each of the
                        // many nullable fields would double the schema.
                        if !sub.is_empty() && !admits_null(&sub) {
                            props.insert(name.clone(), Value::Object(sub));
                        }
                    }
                    one.insert("properties".into(), Value::Object(props));
                }
            }
            Some("array") if depth <= 1 => {
                if let Some(items) = node.get("items") {
                    let items = lean_result(items, defs, depth + 1);
                    // Items that are objects are not described (one level).
                    let object = items.len() == 1 && items.get("type") == Some(&json!("object"));
                    if !items.is_empty() && !object {
                        one.insert("items".into(), Value::Object(items));
                    }
                }
            }
            _ => {}
        }
        one
    };
    if types.is_empty() {
        if branches.is_empty() {
            return out;
        }
    } else if branches.is_empty() && types.len() == 1 {
        return shape(&types[0]);
    } else {
        // Several types, or types beside alternatives: each type its branch.
        let typed: Vec<Value> = types.drain(..).map(|t| Value::Object(shape(&t))).collect();
        if branches.is_empty() {
            branches = typed;
        } else {
            // `type` and `anyOf` together mean both must hold; keep the
            // alternatives (they carry their own types).
            let _ = typed;
        }
    }
    if branches.len() == 1
        && let Some(Value::Object(only)) = branches.pop()
    {
        return only;
    }
    out.insert("anyOf".into(), Value::Array(branches));
    out
}

/// `branches` with an alternative of alternatives made one list of them, and
/// repeats dropped.
fn flattened(branches: Vec<Value>) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for b in branches {
        let inner = match b.get("anyOf") {
            Some(Value::Array(inner)) if b.as_object().is_some_and(|o| o.len() == 1) => {
                inner.clone()
            }
            _ => vec![b],
        };
        for i in inner {
            if !out.contains(&i) {
                out.push(i);
            }
        }
    }
    out
}

/// Whether a lean schema admits `null`.
fn admits_null(schema: &JsonObject) -> bool {
    schema.get("type") == Some(&json!("null"))
        || schema
            .get("anyOf")
            .and_then(Value::as_array)
            .is_some_and(|bs| bs.iter().filter_map(Value::as_object).any(admits_null))
}

/// `node` with a `$ref` to `#/$defs/…` replaced by what it names (its other
/// keys, such as a description, kept). A node without one is borrowed, not
/// copied: the passes above call this at every level, and copying each
/// subtree there was most of a server's start-up.
fn resolve<'a>(node: &'a Value, defs: &'a Value) -> Cow<'a, Value> {
    let Some(target) = node
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix("#/$defs/"))
        .and_then(|name| defs.get(name))
    else {
        return Cow::Borrowed(node);
    };
    let mut merged = resolve(target, defs).into_owned();
    if let (Some(merged), Some(node)) = (merged.as_object_mut(), node.as_object()) {
        for (k, v) in node {
            if k != "$ref" {
                merged.insert(k.clone(), v.clone());
            }
        }
    }
    Cow::Owned(merged)
}

/// Doc comments wrap lines; a description is one paragraph.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Whether `schema` writes `type` as a list anywhere (what the published
/// form never does).
pub fn has_type_list(schema: &Value) -> bool {
    match schema {
        Value::Object(o) => o
            .iter()
            .any(|(k, v)| (k == "type" && v.is_array()) || has_type_list(v)),
        Value::Array(items) => items.iter().any(has_type_list),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(v: Value) -> JsonObject {
        v.as_object().cloned().expect("an object")
    }

    #[test]
    fn optional_parameters_drop_null_unless_it_is_an_answer() {
        let derived = object(json!({
            "type": "object",
            "$defs": {"ToArg": {"description": "to", "anyOf": [
                {"description": "one", "type": "string"},
                {"type": "array", "items": {"type": "string"}}]}},
            "properties": {
                "reply_to": {"description": "Id of\n  the parent.", "type": ["string", "null"],
                             "default": null},
                "pin_key": {"description": "Key or null.",
                            "anyOf": [{"type": "string"}, {"type": "null"}],
                            NULL_IS_AN_ANSWER: true},
                "fields": {"description": "Projection.",
                           "anyOf": [{"$ref": "#/$defs/ToArg"}, {"type": "null"}]},
                "limit": {"description": "How many.", "type": "integer", "format": "int64",
                          "default": 50},
            },
            "required": [],
        }));
        let lean = Value::Object(lean_input(&derived));
        assert_eq!(
            lean,
            json!({"type": "object", "properties": {
                "reply_to": {"description": "Id of the parent.", "type": "string"},
                "pin_key": {"description": "Key or null.",
                            "anyOf": [{"type": "string"}, {"type": "null"}]},
                "fields": {"description": "Projection.",
                           "anyOf": [{"type": "string"},
                                     {"type": "array", "items": {"type": "string"}}]},
                "limit": {"description": "How many.", "type": "integer", "default": 50},
            }, "required": []})
        );
        assert!(!has_type_list(&lean));
    }

    #[test]
    fn results_are_described_one_level_deep() {
        let derived = object(json!({
            "type": "object",
            "$defs": {"Row": {"type": "object", "properties": {
                "id": {"type": "string"}, "n": {"type": ["integer", "null"]}}}},
            "properties": {
                "result": {"type": "array", "items": {"$ref": "#/$defs/Row"}},
                "held": {"type": ["integer", "null"], "format": "int64"},
                "acks": {},
                "row": {"anyOf": [{"$ref": "#/$defs/Row"}, {"type": "null"}]},
            },
            "required": ["result"],
        }));
        assert_eq!(
            Value::Object(lean_output(&derived)),
            json!({"type": "object", "properties": {
                "result": {"type": "array"},
            }})
        );
    }
}
