//! The check of a tool call's arguments against the tool's own input schema,
//! before the tool runs.
//!
//! Owns the refusals that teach: an unknown parameter is named with the
//! closest known one ("did you mean `action_required`?"), a value of the
//! wrong type with its field, what was given and what is expected, a missing
//! required parameter by name. Fields inside objects and lists are refused
//! alike, by their path (compact_submit: "unknown field `lines[0].txt`; did
//! you mean `lines[0].text`?"), rather than in the decoder's raw words. One check for every tool, from the schema the
//! parameter type derives (so it cannot drift from what the tool accepts);
//! it runs before dispatch, so a refused call writes nothing. It checks
//! shapes only: the rules on values (a known role, a short enough topic) stay
//! with the use cases.

use rmcp::model::JsonObject;
use serde_json::Value;

/// Why the arguments of a call are refused, as a sentence for the caller.
pub fn refusal(tool: &str, schema: &JsonObject, arguments: Option<&JsonObject>) -> Option<String> {
    let empty = JsonObject::new();
    let arguments = arguments.unwrap_or(&empty);
    // Borrowed, not cloned: every call passes here.
    let defs = schema.get("$defs").unwrap_or(&Value::Null);
    let props = match schema.get("properties") {
        Some(Value::Object(p)) => p,
        _ => &empty,
    };
    let known: Vec<&str> = props.keys().map(String::as_str).collect();
    for name in arguments.keys() {
        if !props.contains_key(name) {
            return Some(unknown(tool, name, &known));
        }
    }
    for name in schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if !arguments.contains_key(name) {
            return Some(format!(
                "{tool}: the parameter `{name}` is required; pass `{name}` too"
            ));
        }
    }
    arguments
        .iter()
        .find_map(|(name, value)| mismatch(value, &props[name], defs, name))
        .map(|why| format!("{tool}: {why}"))
}

/// How `value`, given at `path` (`lines[0].text`), does not fit `schema`,
/// down to the innermost field that is wrong: a value of the wrong type, an
/// unknown field (with the closest known one), a missing required one.
fn mismatch(value: &Value, schema: &Value, defs: &Value, path: &str) -> Option<String> {
    let schema = target(schema, defs);
    let s = schema.as_object()?;
    let what = if path.contains(['.', '[']) {
        "the field"
    } else {
        "the parameter"
    };
    let wrong = || {
        Some(format!(
            "{what} `{path}` must be {}; got {}",
            describe(schema, defs),
            given(value)
        ))
    };
    if let Some(Value::Array(branches)) = s.get("anyOf").or_else(|| s.get("oneOf")) {
        if branches
            .iter()
            .any(|b| mismatch(value, b, defs, path).is_none())
        {
            return None;
        }
        // One alternative of the value's own type (a list of objects, not
        // null): what is wrong is inside it.
        let mut same_type = branches.iter().filter(|b| admits_type(b, value, defs));
        return match (same_type.next(), same_type.next()) {
            (Some(only), None) => mismatch(value, only, defs, path).or_else(wrong),
            _ => wrong(),
        };
    }
    if !admits_type(schema, value, defs) {
        return wrong();
    }
    // A number past a bound of its schema (a negative offset) would not
    // decode, and the decoder's own words name no way out.
    if let Value::Number(n) = value
        && let Some(v) = n.as_f64()
    {
        let (min, max) = (
            s.get("minimum").and_then(Value::as_f64),
            s.get("maximum").and_then(Value::as_f64),
        );
        let range = match (min, max) {
            (Some(a), Some(b)) if v < a || v > b => Some(format!("from {a} to {b}")),
            (Some(a), None) if v < a => Some(format!("{a} or more")),
            (None, Some(b)) if v > b => Some(format!("{b} or less")),
            _ => None,
        };
        if let Some(range) = range {
            return Some(format!(
                "{what} `{path}` must be {range}; got {}",
                given(value)
            ));
        }
    }
    match value {
        Value::Array(items) => {
            let item = s.get("items")?;
            items
                .iter()
                .enumerate()
                .find_map(|(i, v)| mismatch(v, item, defs, &format!("{path}[{i}]")))
        }
        Value::Object(map) => {
            if let Some(Value::Object(props)) = s.get("properties") {
                let known: Vec<&str> = props.keys().map(String::as_str).collect();
                if let Some(name) = map.keys().find(|k| !props.contains_key(*k)) {
                    return Some(unknown_field(path, name, &known));
                }
                let required = s.get("required").and_then(Value::as_array);
                if let Some(name) = required
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .find(|n| !map.contains_key(*n))
                {
                    return Some(format!(
                        "the field `{path}.{name}` is required; `{path}` takes {}",
                        quoted(&known)
                    ));
                }
                return map
                    .iter()
                    .find_map(|(k, v)| mismatch(v, &props[k], defs, &format!("{path}.{k}")));
            }
            match s.get("additionalProperties") {
                Some(extra @ Value::Object(_)) => map
                    .iter()
                    .find_map(|(k, v)| mismatch(v, extra, defs, &format!("{path}.{k}"))),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Whether `schema` (one alternative) takes values of `value`'s JSON type,
/// whatever their content.
fn admits_type(schema: &Value, value: &Value, defs: &Value) -> bool {
    let schema = target(schema, defs);
    if let Some(Value::Array(branches)) = schema.get("anyOf").or_else(|| schema.get("oneOf")) {
        return branches.iter().any(|b| admits_type(b, value, defs));
    }
    match schema.get("type") {
        Some(Value::String(t)) => has_type(value, t),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .any(|t| has_type(value, t)),
        _ => true,
    }
}

/// The refusal of the unknown field `name` of the object at `path`.
fn unknown_field(path: &str, name: &str, known: &[&str]) -> String {
    if known.is_empty() {
        return format!("unknown field `{path}.{name}`; `{path}` takes no fields");
    }
    match closest(name, known) {
        Some(near) => format!("unknown field `{path}.{name}`; did you mean `{path}.{near}`?"),
        None => format!(
            "unknown field `{path}.{name}`; `{path}` takes {}",
            quoted(known)
        ),
    }
}

/// `` `a`, `b` ``.
fn quoted(names: &[&str]) -> String {
    names
        .iter()
        .map(|k| format!("`{k}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The refusal of the unknown parameter `name`.
fn unknown(tool: &str, name: &str, known: &[&str]) -> String {
    if known.is_empty() {
        return format!("{tool}: unknown parameter `{name}`; {tool} takes no parameters");
    }
    match closest(name, known) {
        Some(near) => format!("{tool}: unknown parameter `{name}`; did you mean `{near}`?"),
        None => format!(
            "{tool}: unknown parameter `{name}`; the parameters are {}",
            quoted(known)
        ),
    }
}

/// The known name `name` most likely stands for: the same letters once case
/// and separators are ignored (`actionRequired`), one that starts with it or
/// that it starts with (`from` for `from_role`), or one a few edits away
/// (`recipient` is not close to anything; `reply_too` is).
pub fn closest<'a>(name: &str, known: &[&'a str]) -> Option<&'a str> {
    let bare = |s: &str| -> String {
        s.chars()
            .filter(|c| c.is_alphanumeric())
            .flat_map(char::to_lowercase)
            .collect()
    };
    let wanted = bare(name);
    if wanted.is_empty() {
        return None;
    }
    if let Some(k) = known.iter().find(|k| bare(k) == wanted) {
        return Some(k);
    }
    let mut prefixed = known
        .iter()
        .filter(|k| {
            let k = bare(k);
            (wanted.len() >= 3 && k.starts_with(&wanted))
                || (k.len() >= 3 && wanted.starts_with(&k))
        })
        .collect::<Vec<_>>();
    if prefixed.len() == 1 {
        return prefixed.pop().copied();
    }
    let best = known
        .iter()
        .map(|k| (edits(&wanted, &bare(k)), *k))
        .min_by_key(|(d, _)| *d)?;
    // At most a third of the name may differ, and never more than three edits.
    (best.0 <= (wanted.chars().count() / 3).clamp(1, 3)).then_some(best.1)
}

/// The Levenshtein distance between `a` and `b`.
fn edits(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let here = row[j + 1];
            row[j + 1] = if ca == *cb {
                prev
            } else {
                1 + prev.min(row[j]).min(here)
            };
            prev = here;
        }
    }
    row[b.len()]
}

/// `schema` with a `#/$defs/…` reference followed.
fn target<'a>(schema: &'a Value, defs: &'a Value) -> &'a Value {
    match schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix("#/$defs/"))
        .and_then(|name| defs.get(name))
    {
        Some(t) => target(t, defs),
        None => schema,
    }
}

/// Whether `value` is of the JSON Schema type `t`.
fn has_type(value: &Value, t: &str) -> bool {
    match t {
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        "null" => value.is_null(),
        _ => true,
    }
}

/// What `schema` admits, in words ("a boolean", "a string or a list of
/// strings").
fn describe(schema: &Value, defs: &Value) -> String {
    let schema = target(schema, defs);
    let mut options: Vec<String> = Vec::new();
    let mut add = |o: String| {
        if !options.contains(&o) {
            options.push(o);
        }
    };
    if let Some(Value::Array(branches)) = schema.get("anyOf").or_else(|| schema.get("oneOf")) {
        for b in branches {
            add(describe(b, defs));
        }
    }
    let types: Vec<&str> = match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    for t in types {
        add(match t {
            "array" => match schema.get("items") {
                Some(items) => format!("a list of {}", plural(&describe(items, defs))),
                None => "a list".into(),
            },
            "object" => match schema.get("additionalProperties") {
                Some(extra @ Value::Object(_)) => {
                    format!(
                        "an object whose values are {}",
                        plural(&describe(extra, defs))
                    )
                }
                _ => "an object".into(),
            },
            "string" => "a string".into(),
            "boolean" => "a boolean (true or false)".into(),
            "integer" => "an integer".into(),
            "number" => "a number".into(),
            "null" => "null".into(),
            other => other.into(),
        });
    }
    if options.is_empty() {
        return "a value".into();
    }
    options.join(" or ")
}

/// "a string" → "strings" (for "a list of …").
fn plural(one: &str) -> String {
    one.split(" or ")
        .map(|o| {
            let o = o
                .strip_prefix("a ")
                .or_else(|| o.strip_prefix("an "))
                .unwrap_or(o);
            match o.split_once(' ') {
                Some((noun, rest)) => format!("{noun}s {rest}"),
                None => format!("{o}s"),
            }
        })
        .collect::<Vec<_>>()
        .join(" or ")
}

/// What was given, in words, with the value itself when short.
fn given(value: &Value) -> String {
    let what = match value {
        Value::Null => return "null".into(),
        Value::Bool(_) => "the boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "the integer",
        Value::Number(_) => "the number",
        Value::String(_) => "the string",
        Value::Array(_) => "the list",
        Value::Object(_) => "the object",
    };
    let mut text = value.to_string();
    if text.chars().count() > 60 {
        text = text.chars().take(57).collect::<String>() + "...";
    }
    format!("{what} {text}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(v: Value) -> JsonObject {
        v.as_object().cloned().expect("an object")
    }

    #[test]
    fn the_closest_name_is_found_and_far_names_are_not_guessed() {
        let known = [
            "to",
            "topic",
            "body",
            "action_required",
            "reply_to",
            "from_role",
        ];
        assert_eq!(closest("actionRequired", &known), Some("action_required"));
        assert_eq!(closest("action-required", &known), Some("action_required"));
        assert_eq!(closest("actionrequierd", &known), Some("action_required"));
        assert_eq!(closest("from", &known), Some("from_role"));
        assert_eq!(closest("reply", &known), Some("reply_to"));
        assert_eq!(closest("recipient", &known), None);
        assert_eq!(closest("", &known), None);
    }

    #[test]
    fn fields_inside_lists_and_objects_are_refused_by_their_path() {
        let schema = object(json!({
            "type": "object",
            "$defs": {
                "Line": {"type": "object",
                         "properties": {"line": {"type": "string"}, "text": {"type": "string"}},
                         "required": ["line", "text"]},
                "Remote": {"type": "object",
                           "properties": {"kind": {"type": "string"}, "target": {"type": "string"}},
                           "required": ["kind", "target"]},
            },
            "properties": {
                "lines": {"type": "array", "items": {"$ref": "#/$defs/Line"}},
                "remote": {"anyOf": [{"$ref": "#/$defs/Remote"}, {"type": "null"}]},
            },
        }));
        let why = |v: Value| refusal("t", &schema, Some(&object(v)));
        let good = json!({"line": "ab12", "text": "a summary"});
        assert_eq!(why(json!({"lines": [good], "remote": null})), None);
        assert_eq!(
            why(json!({"lines": [good, {"line": "cd34", "txt": "x"}]})).unwrap(),
            "t: unknown field `lines[1].txt`; did you mean `lines[1].text`?"
        );
        assert_eq!(
            why(json!({"lines": [{"line": "cd34"}]})).unwrap(),
            "t: the field `lines[0].text` is required; `lines[0]` takes `line`, `text`"
        );
        assert_eq!(
            why(json!({"lines": [{"line": 7, "text": "x"}]})).unwrap(),
            "t: the field `lines[0].line` must be a string; got the integer 7"
        );
        assert_eq!(
            why(json!({"remote": {"kind": "git", "url": "u"}})).unwrap(),
            "t: unknown field `remote.url`; `remote` takes `kind`, `target`"
        );
        assert_eq!(
            why(json!({"remote": "git"})).unwrap(),
            "t: the parameter `remote` must be an object or null; got the string \"git\""
        );
    }

    #[test]
    fn a_number_past_its_bound_is_refused_before_it_reaches_the_decoder() {
        let schema = object(json!({
            "type": "object",
            "properties": {
                "offset": {"type": "integer", "format": "uint64", "minimum": 0},
                "n": {"type": "integer", "minimum": 1, "maximum": 30},
            },
        }));
        let why = |v: Value| refusal("t", &schema, Some(&object(v)));
        assert_eq!(why(json!({"offset": 0, "n": 30})), None);
        assert_eq!(
            why(json!({"offset": -1})).unwrap(),
            "t: the parameter `offset` must be 0 or more; got the integer -1"
        );
        assert_eq!(
            why(json!({"n": 31})).unwrap(),
            "t: the parameter `n` must be from 1 to 30; got the integer 31"
        );
    }

    #[test]
    fn shapes_are_checked_and_described() {
        let schema = object(json!({
            "type": "object",
            "$defs": {"ToArg": {"anyOf": [{"type": "string"},
                                           {"type": "array", "items": {"type": "string"}}]}},
            "properties": {
                "to": {"$ref": "#/$defs/ToArg"},
                "flag": {"type": "boolean"},
                "limit": {"type": "integer"},
                "key": {"type": ["string", "null"]},
                "addenda": {"type": ["object", "null"], "additionalProperties": {"type": "string"}},
            },
            "required": ["to"],
        }));
        let args = |v: Value| object(v);
        assert_eq!(
            refusal("t", &schema, Some(&args(json!({"to": "b", "key": null})))),
            None
        );
        assert_eq!(
            refusal("t", &schema, Some(&args(json!({"to": "b", "flag": "yes"})))).unwrap(),
            "t: the parameter `flag` must be a boolean (true or false); got the string \"yes\""
        );
        assert_eq!(
            refusal("t", &schema, Some(&args(json!({"to": [1]})))).unwrap(),
            "t: the field `to[0]` must be a string; got the integer 1"
        );
        assert_eq!(
            refusal("t", &schema, Some(&args(json!({"to": 1})))).unwrap(),
            "t: the parameter `to` must be a string or a list of strings; got the integer 1"
        );
        assert_eq!(
            refusal("t", &schema, Some(&args(json!({"to": "b", "limit": 2.5})))).unwrap(),
            "t: the parameter `limit` must be an integer; got the number 2.5"
        );
        assert!(
            refusal(
                "t",
                &schema,
                Some(&args(json!({"to": "b", "addenda": {"x": 1}})))
            )
            .unwrap()
            .contains("the field `addenda.x` must be a string; got the integer 1")
        );
        assert_eq!(
            refusal("t", &schema, None).unwrap(),
            "t: the parameter `to` is required; pass `to` too"
        );
        assert_eq!(
            refusal("t", &schema, Some(&args(json!({"to": "b", "flg": true})))).unwrap(),
            "t: unknown parameter `flg`; did you mean `flag`?"
        );
    }
}
