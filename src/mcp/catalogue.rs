//! Every tool of the session server as tools/list publishes it, made ahead
//! of time and compiled into the binary.
//!
//! Deriving 47 tools' input and output schemas with schemars and rewriting
//! them into their published form (`schema`) took about 5 ms of CPU, most
//! of a server's start, and its result depends on the source alone. So it is
//! made once, kept in `catalogue.jsonl` beside this file (one tool a line,
//! as the wire carries it), and a server never derives it. A stdio server
//! does not even parse it for tools/list: it writes the lines of the tools
//! it serves into the answer as they are ([`listed`]; `structured::line`).
//! The test `tests::the_catalogue_is_what_the_tools_derive` derives it again
//! and fails on any difference; `UPDATE_GOLDEN=1` rewrites the file (after
//! changing a tool, its parameters, its result type or a doc comment they
//! carry).
//!
//! The router a server calls tools through is built at its first call,
//! with empty output schemas: only the derivation here makes them.
//!
//! Owns that file and its reading; must not decide what a tool accepts
//! (arguments are checked against the derived schema, from the router) nor
//! which tools a server serves (`toolset`).

use std::cell::Cell;

use rmcp::model::Tool;

/// The published tools, in the protocol's order: one a line, each as
/// serde_json writes it.
const CATALOGUE: &str = include_str!("catalogue.jsonl");

/// How each line of the catalogue begins: a tool's name is its first field.
const NAME_AT: &str = r#"{"name":""#;

/// Every tool, as published, in the protocol's order, parsed anew: the
/// caller keeps what it serves (`mcp::listing`, once per set of toolsets),
/// so no second copy of every tool stays behind. Should the text not parse
/// (it cannot: the test below parses it), the tools are derived as the file
/// was made.
pub fn tools() -> Vec<Tool> {
    CATALOGUE
        .lines()
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| {
            tracing::error!("the built-in tool catalogue does not parse ({e}); deriving it");
            derived()
        })
}

/// The JSON array of the tools `serves` takes, in order, as the catalogue
/// holds them: the very text [`tools`] would serialize to, made without
/// parsing any of it (a test compares the two).
pub fn listed(serves: impl Fn(&str) -> bool) -> String {
    let mut out = String::with_capacity(CATALOGUE.len() + 2);
    out.push('[');
    for line in CATALOGUE.lines() {
        let name = line
            .strip_prefix(NAME_AT)
            .and_then(|rest| rest.split_once('"'))
            .map(|(name, _)| name);
        if name.is_some_and(&serves) {
            if out.len() > 1 {
                out.push(',');
            }
            out.push_str(line);
        }
    }
    out.push(']');
    out
}

thread_local! {
    /// Set while [`derived`] builds its router: only then does a tool's
    /// router entry carry its output schema (`mcp::catalogued_output`).
    static DERIVING: Cell<bool> = const { Cell::new(false) };
}

/// Whether this thread is deriving the catalogue.
pub fn deriving() -> bool {
    DERIVING.get()
}

/// Every tool as a new router derives it (output schemas included), in the
/// published form: what `catalogue.jsonl` holds.
fn derived() -> Vec<Tool> {
    DERIVING.set(true);
    let tools = super::routes().list_all();
    DERIVING.set(false);
    super::published::Published::lean(tools, super::TOOL_ORDER)
        .tools()
        .to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_catalogue_is_what_the_tools_derive() {
        let tools = derived();
        let mut made = String::new();
        for t in &tools {
            made.push_str(&serde_json::to_string(t).expect("published tools serialize"));
            made.push('\n');
        }
        if std::env::var_os("UPDATE_GOLDEN").is_some() {
            let path = concat!(env!("CARGO_MANIFEST_DIR"), "/src/mcp/catalogue.jsonl");
            std::fs::write(path, &made).expect("writing the catalogue");
            return;
        }
        assert!(
            made == CATALOGUE,
            "src/mcp/catalogue.jsonl is not what the tools derive: a tool, its parameters, its \
             result or their doc comments changed. Rewrite it with \
             `UPDATE_GOLDEN=1 cargo test -p countersign --lib catalogue` and review the diff"
        );
        // And what a server parses from it publishes the same bytes.
        let parsed = super::tools();
        assert_eq!(
            serde_json::to_string(&parsed).unwrap(),
            serde_json::to_string(&tools).unwrap()
        );
    }

    #[test]
    fn a_listing_is_the_text_its_tools_serialize_to() {
        let all = super::tools();
        assert!(all.len() > 40, "{}", all.len());
        let sets: [&dyn Fn(&str) -> bool; 4] = [
            &|_| true,
            &|_| false,
            &|n| n.starts_with("memory_") || n == "send_message",
            &|n| n.len() % 2 == 0,
        ];
        for serves in sets {
            let picked: Vec<&Tool> = all.iter().filter(|t| serves(&t.name)).collect();
            assert_eq!(listed(serves), serde_json::to_string(&picked).unwrap());
        }
    }
}
