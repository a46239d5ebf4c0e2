//! The text of a JSON file, edited in place: given the value a file held
//! and the value it is to hold, only the members and items that differ are
//! cut out, added or rewritten; every other byte (the layout another
//! program or a person gave the file, its spacing, its number forms) stays
//! as it was. Install and uninstall go through here, so an uninstall takes
//! out exactly what install put in, whatever happened to the rest of the
//! file in between. It must not decide what changes: the callers do.

use std::ops::Range;

use serde_json::{Map, Value};

/// A JSON value's place in the text.
enum Node {
    Object {
        span: Range<usize>,
        members: Vec<(String, Node)>,
        /// Where each member's key starts.
        keys: Vec<usize>,
    },
    Array {
        span: Range<usize>,
        items: Vec<Node>,
    },
    Scalar(Range<usize>),
}

impl Node {
    fn span(&self) -> Range<usize> {
        match self {
            Self::Object { span, .. } | Self::Array { span, .. } | Self::Scalar(span) => {
                span.clone()
            }
        }
    }
}

/// Parses the valid JSON `text` into where its values are; `None` if it is
/// not valid after all.
fn parse(text: &str) -> Option<Node> {
    let mut p = Parser {
        b: text.as_bytes(),
        at: 0,
        text,
    };
    let node = p.value()?;
    p.ws();
    (p.at == p.b.len()).then_some(node)
}

struct Parser<'t> {
    b: &'t [u8],
    at: usize,
    text: &'t str,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.at < self.b.len() && matches!(self.b[self.at], b' ' | b'\t' | b'\n' | b'\r') {
            self.at += 1;
        }
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        self.ws();
        (self.b.get(self.at) == Some(&c)).then(|| self.at += 1)
    }

    fn string(&mut self) -> Option<Range<usize>> {
        self.ws();
        let start = self.at;
        if self.b.get(self.at) != Some(&b'"') {
            return None;
        }
        self.at += 1;
        while let Some(&c) = self.b.get(self.at) {
            self.at += 1;
            match c {
                b'\\' => self.at += 1,
                b'"' => return Some(start..self.at),
                _ => {}
            }
        }
        None
    }

    fn value(&mut self) -> Option<Node> {
        self.ws();
        let start = self.at;
        match *self.b.get(self.at)? {
            b'{' => {
                self.at += 1;
                let (mut members, mut keys) = (Vec::new(), Vec::new());
                if self.eat(b'}').is_none() {
                    loop {
                        let k = self.string()?;
                        let key: String = serde_json::from_str(&self.text[k.clone()]).ok()?;
                        self.eat(b':')?;
                        keys.push(k.start);
                        members.push((key, self.value()?));
                        if self.eat(b',').is_none() {
                            self.eat(b'}')?;
                            break;
                        }
                    }
                }
                Some(Node::Object {
                    span: start..self.at,
                    members,
                    keys,
                })
            }
            b'[' => {
                self.at += 1;
                let mut items = Vec::new();
                if self.eat(b']').is_none() {
                    loop {
                        items.push(self.value()?);
                        if self.eat(b',').is_none() {
                            self.eat(b']')?;
                            break;
                        }
                    }
                }
                Some(Node::Array {
                    span: start..self.at,
                    items,
                })
            }
            b'"' => self.string().map(Node::Scalar),
            _ => {
                while self.at < self.b.len()
                    && !matches!(
                        self.b[self.at],
                        b',' | b']' | b'}' | b' ' | b'\t' | b'\n' | b'\r'
                    )
                {
                    self.at += 1;
                }
                (self.at > start).then_some(Node::Scalar(start..self.at))
            }
        }
    }
}

/// `text`, which holds `old`, changed to hold `new`, keeping every byte of
/// what did not change; `unit` is one level of the file's indentation.
/// `None` when the text cannot be followed (the caller then writes the value
/// anew).
pub(super) fn rewrite(text: &str, old: &Value, new: &Value, unit: &str) -> Option<String> {
    let node = parse(text)?;
    let mut edits = Vec::new();
    let cx = Cx { text, unit };
    cx.diff(&node, old, new, &mut edits);
    edits.sort_by_key(|(r, _): &(Range<usize>, String)| std::cmp::Reverse((r.start, r.end)));
    let mut out = text.to_owned();
    for (r, with) in edits {
        out.replace_range(r, &with);
    }
    // A check that what was written holds exactly `new`.
    let back: Value = serde_json::from_str(&out).ok()?;
    (back == *new).then_some(out)
}

struct Cx<'t> {
    text: &'t str,
    unit: &'t str,
}

type Edits = Vec<(Range<usize>, String)>;

impl Cx<'_> {
    fn diff(&self, node: &Node, old: &Value, new: &Value, edits: &mut Edits) {
        if old == new {
            return;
        }
        match (node, old, new) {
            (Node::Object { members, keys, .. }, Value::Object(o), Value::Object(n)) => {
                let kept: Vec<bool> = members.iter().map(|(k, _)| n.contains_key(k)).collect();
                let nodes: Vec<&Node> = members.iter().map(|(_, v)| v).collect();
                if !kept.iter().any(|k| *k) {
                    return self.replace(node, new, edits);
                }
                self.cut(&nodes, keys, &kept, edits);
                for (key, child) in members {
                    if let (Some(ov), Some(nv)) = (o.get(key), n.get(key)) {
                        self.diff(child, ov, nv, edits);
                    }
                }
                let added: Vec<String> = n
                    .iter()
                    .filter(|(k, _)| !o.contains_key(*k))
                    .map(|(k, v)| {
                        let key = serde_json::to_string(k).expect("strings serialize");
                        format!("{key}: {}", self.format_at(v, node, keys))
                    })
                    .collect();
                self.append(node, &nodes, keys, &added, edits);
            }
            (Node::Array { items, .. }, Value::Array(o), Value::Array(n)) => {
                let pairs = align(o, n);
                let mut kept = vec![false; o.len()];
                let mut last = 0;
                for &(i, j) in &pairs {
                    kept[i] = true;
                    last = j + 1;
                    self.diff(&items[i], &o[i], &n[j], edits);
                }
                if pairs.is_empty() {
                    return self.replace(node, new, edits);
                }
                let nodes: Vec<&Node> = items.iter().collect();
                let starts: Vec<usize> = items.iter().map(|i| i.span().start).collect();
                self.cut(&nodes, &starts, &kept, edits);
                let added: Vec<String> = n[last..]
                    .iter()
                    .map(|v| self.format_at(v, node, &starts))
                    .collect();
                self.append(node, &nodes, &starts, &added, edits);
            }
            _ => self.replace(node, new, edits),
        }
    }

    /// Cuts out the entries not `kept`, each with the comma before it (or,
    /// for those before the first kept one, the comma after it).
    fn cut(&self, nodes: &[&Node], starts: &[usize], kept: &[bool], edits: &mut Edits) {
        let first = kept.iter().position(|k| *k).expect("one entry is kept");
        if first > 0 {
            edits.push((starts[0]..starts[first], String::new()));
        }
        for i in first + 1..nodes.len() {
            if !kept[i] {
                edits.push((nodes[i - 1].span().end..nodes[i].span().end, String::new()));
            }
        }
    }

    /// Adds `entries` (ready text) after the container's last entry, on
    /// lines of their own when the container spans lines.
    fn append(
        &self,
        node: &Node,
        nodes: &[&Node],
        starts: &[usize],
        entries: &[String],
        edits: &mut Edits,
    ) {
        let Some(last) = nodes.last() else {
            return;
        };
        if entries.is_empty() {
            return;
        }
        let at = last.span().end;
        let text = if self.spans_lines(node) {
            let ind = self.entry_indent(node, starts);
            entries.iter().map(|e| format!(",\n{ind}{e}")).collect()
        } else {
            entries.iter().map(|e| format!(", {e}")).collect()
        };
        edits.push((at..at, text));
    }

    /// Replaces the whole value at `node` with `new`, indented where it stands.
    fn replace(&self, node: &Node, new: &Value, edits: &mut Edits) {
        let span = node.span();
        let base = line_indent(self.text, span.start);
        let text = match node {
            Node::Scalar(_) => compact(new),
            _ if !self.spans_lines(node) && !is_empty_container(node) => compact(new),
            _ => indented(new, &base, self.unit),
        };
        edits.push((span, text));
    }

    /// A value to go in `container`: on lines of its own, indented one level
    /// in, when the container spans lines, else on one line.
    fn format_at(&self, v: &Value, container: &Node, starts: &[usize]) -> String {
        if self.spans_lines(container) {
            indented(v, &self.entry_indent(container, starts), self.unit)
        } else {
            compact(v)
        }
    }

    fn spans_lines(&self, node: &Node) -> bool {
        self.text[node.span()].contains('\n')
    }

    /// The indentation of the container's entries: its last entry's line
    /// when that entry starts the line, else the container's line one level in.
    fn entry_indent(&self, node: &Node, starts: &[usize]) -> String {
        if let Some(&s) = starts.last() {
            let line = self.text[..s].rfind('\n').map_or(0, |i| i + 1);
            if self.text[line..s].chars().all(|c| c == ' ' || c == '\t') {
                return self.text[line..s].to_owned();
            }
        }
        format!("{}{}", line_indent(self.text, node.span().start), self.unit)
    }
}

fn is_empty_container(node: &Node) -> bool {
    match node {
        Node::Object { members, .. } => members.is_empty(),
        Node::Array { items, .. } => items.is_empty(),
        Node::Scalar(_) => false,
    }
}

/// Pairs of equal (or changed in place) items of `old` and `new`, in order:
/// the items of `old` in no pair are taken out, those of `new` after the
/// last pair are added at the end (an item put in the middle is taken out
/// with those after it and added again: right, if not as short).
fn align(old: &[Value], new: &[Value]) -> Vec<(usize, usize)> {
    let mut pairs = Vec::new();
    let mut j = 0;
    for (i, o) in old.iter().enumerate() {
        let Some(n) = new.get(j) else { break };
        let same_kind = matches!(
            (o, n),
            (Value::Object(_), Value::Object(_)) | (Value::Array(_), Value::Array(_))
        );
        if o == n || (same_kind && !old[i + 1..].contains(n) && !new[j + 1..].contains(o)) {
            pairs.push((i, j));
            j += 1;
        }
    }
    pairs
}

/// The leading whitespace of the line `at` is on.
fn line_indent(text: &str, at: usize) -> String {
    let line = text[..at].rfind('\n').map_or(0, |i| i + 1);
    text[line..]
        .chars()
        .take_while(|c| *c == ' ' || *c == '\t')
        .collect()
}

/// `v` on lines of its own, `unit` per level, the lines after the first
/// starting at `base`.
fn indented(v: &Value, base: &str, unit: &str) -> String {
    use serde::Serialize as _;
    let mut out = Vec::new();
    let fmt = serde_json::ser::PrettyFormatter::with_indent(unit.as_bytes());
    let mut ser = serde_json::Serializer::with_formatter(&mut out, fmt);
    v.serialize(&mut ser).expect("JSON serializes");
    let text = String::from_utf8(out).expect("JSON is UTF-8");
    text.replace('\n', &format!("\n{base}"))
}

/// `v` on one line, spaced as people write it: `{"a": 1, "b": [2, 3]}`.
fn compact(v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let parts: Vec<String> = Map::iter(m)
                .map(|(k, v)| {
                    format!(
                        "{}: {}",
                        serde_json::to_string(k).expect("strings serialize"),
                        compact(v)
                    )
                })
                .collect();
            format!("{{{}}}", parts.join(", "))
        }
        Value::Array(a) => {
            let parts: Vec<String> = a.iter().map(compact).collect();
            format!("[{}]", parts.join(", "))
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// `text` changed to `new` and back gives `text` again, byte for byte.
    fn round_trip(text: &str, change: impl Fn(&mut Value)) -> String {
        let old: Value = serde_json::from_str(text).unwrap();
        let mut new = old.clone();
        change(&mut new);
        let there = rewrite(text, &old, &new, "  ").unwrap();
        let back = rewrite(&there, &new, &old, "  ").unwrap();
        assert_eq!(back, text, "via:\n{there}");
        there
    }

    #[test]
    fn members_added_and_taken_out_leave_every_other_byte() {
        let text = "{\n\t\"numStartups\" : 3,\n\t\"projects\": { \"/elsewhere\": {\"mcpServers\": {}} },\n  \"z\": [1,2,  3] ,\"n\": 1.50\n}";
        let there = round_trip(text, |v| {
            v["projects"]["/p"] = json!({"mcpServers": {"channel": {"command": "c"}}});
            v["hooks"] = json!({"Stop": [{"hooks": []}]});
        });
        assert!(
            there.contains("{ \"/elsewhere\": {\"mcpServers\": {}}, \"/p\": {\"mcpServers\": {\"channel\": {\"command\": \"c\"}}} }"),
            "{there}"
        );
        assert!(there.contains("1.50,\n  \"hooks\": {\n"), "{there}");
        // Entries taken out at the start, in the middle and at the end.
        let text = "{\"a\": 1, \"b\": 2, \"c\": [1, {\"d\": 3}],\n \"e\": 4 }";
        let old: Value = serde_json::from_str(text).unwrap();
        let new = json!({"b": 2});
        assert_eq!(rewrite(text, &old, &new, "  ").unwrap(), "{\"b\": 2 }");
        let new = json!({"a": 1, "e": 4});
        assert_eq!(
            rewrite(text, &old, &new, "  ").unwrap(),
            "{\"a\": 1,\n \"e\": 4 }"
        );
        round_trip("{\"a\": {}}", |v| v["a"]["x"] = json!([1]));
        round_trip("{\n  \"a\": []\n}", |v| v["a"] = json!([{"k": 1}]));
    }

    #[test]
    fn array_items_are_taken_out_changed_in_place_or_added_at_the_end() {
        let text = "{\"Stop\": [ {\"hooks\": [{\"command\": \"mine\"}, {\"command\": \"countersign hook stop\"}]},\n   {\"hooks\": [{\"command\": \"other\"}]} ]}";
        let old: Value = serde_json::from_str(text).unwrap();
        let mut new = old.clone();
        new["Stop"][0]["hooks"].as_array_mut().unwrap().remove(1);
        new["Stop"]
            .as_array_mut()
            .unwrap()
            .push(json!({"hooks": [{"command": "new"}]}));
        let out = rewrite(text, &old, &new, "  ").unwrap();
        assert_eq!(
            out,
            "{\"Stop\": [ {\"hooks\": [{\"command\": \"mine\"}]},\n   {\"hooks\": [{\"command\": \"other\"}]},\n   {\n     \"hooks\": [\n       {\n         \"command\": \"new\"\n       }\n     ]\n   } ]}"
        );
        // An item put in the middle: what follows it is written anew, still right.
        let mut mid = old.clone();
        mid["Stop"]
            .as_array_mut()
            .unwrap()
            .insert(1, json!({"x": 1}));
        let out = rewrite(text, &old, &mid, "  ").unwrap();
        assert_eq!(serde_json::from_str::<Value>(&out).unwrap(), mid);
    }

    #[test]
    fn the_last_member_taken_out_leaves_an_empty_object() {
        let text = "{\"keep\": 1, \"o\": {\n    \"mcpServers\": {\"channel\": {}}\n}}";
        let old: Value = serde_json::from_str(text).unwrap();
        let new = json!({"keep": 1, "o": {}});
        assert_eq!(
            rewrite(text, &old, &new, "  ").unwrap(),
            "{\"keep\": 1, \"o\": {}}"
        );
    }
}
