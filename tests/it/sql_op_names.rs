//! Every op name the store's SQL compares the `op` column with is an
//! `OpKind`: a misspelt or retired name in a statement would match no record
//! and fail silently, so it fails here.
//!
//! Reads the sources of `countersign-lib` and finds each comparison of an
//! `op` column (`op = 'send'`, `r.op IN ('read', 'opened')`, `op NOT IN …`,
//! `op <> …`) with quoted names.

use std::fs;
use std::path::Path;

use countersign::core::op::OpKind;

use crate::common::rust_files;

/// Each quoted name compared with an `op` column in `text`, with its line.
fn op_names_in_sql(text: &str) -> Vec<(usize, String)> {
    let ident = |c: char| c == '_' || c.is_ascii_alphanumeric();
    let mut out = Vec::new();
    for (at, _) in text.match_indices("op") {
        let before = text[..at].chars().next_back();
        let after = &text[at + 2..];
        if before.is_some_and(ident) || after.starts_with(ident) {
            continue;
        }
        let line = text[..at].matches('\n').count() + 1;
        let rest = after.trim_start();
        let upper = rest.to_ascii_uppercase();
        let rest = if let Some(r) = ["!=", "<>", "="]
            .into_iter()
            .find_map(|o| rest.strip_prefix(o).filter(|r| !r.starts_with('=')))
        {
            r.trim_start()
        } else if let Some(n) = ["NOT IN", "IN"]
            .into_iter()
            .find_map(|o| upper.starts_with(o).then_some(o.len()))
        {
            match rest[n..].trim_start().strip_prefix('(') {
                Some(r) => r,
                None => continue,
            }
        } else {
            continue;
        };
        // One quoted name, or a list of them up to its `)`; a `?` parameter
        // or a subquery names none.
        let mut rest = rest;
        loop {
            rest = rest.trim_start_matches(|c: char| c.is_whitespace() || c == '\\' || c == ',');
            let Some(quoted) = rest.strip_prefix('\'') else {
                break;
            };
            let Some(end) = quoted.find('\'') else { break };
            out.push((line, quoted[..end].to_owned()));
            rest = &quoted[end + 1..];
        }
    }
    out
}

#[test]
fn every_op_name_in_the_stores_sql_is_an_op_kind() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/lib/src");
    let (mut seen, mut unknown) = (Vec::new(), Vec::new());
    for path in rust_files(&src) {
        let text = fs::read_to_string(&path).unwrap();
        for (line, name) in op_names_in_sql(&text) {
            let at = format!("{}:{line}", path.strip_prefix(&src).unwrap().display());
            if OpKind::parse(&name).is_none() {
                unknown.push(format!("{at}: '{name}'"));
            }
            seen.push(name);
        }
    }
    assert!(
        unknown.is_empty(),
        "op names in SQL that are no OpKind (a typo, or an op this version lacks): {unknown:?}"
    );
    // The scan finds what is there (the ingest's and the index's statements
    // compare with these), so an empty pass is not mistaken for a clean one.
    for name in ["send", "admit", "pin_set", "opened"] {
        assert!(
            seen.iter().any(|s| s == name),
            "'{name}' not found in {seen:?}"
        );
    }
}

#[test]
fn the_scan_reads_each_form_of_comparison_and_nothing_else() {
    let text = "\"SELECT 1 FROM records WHERE op = 'send' AND r.op IN ('read', 'opend') \\\n\
        AND op NOT IN ('ack',\n 'seal') AND op <> 'admit' AND op != 'teleport' AND op = ?1 \
        AND op IN (SELECT value FROM json_each(?2))\";\n\
        if op == \"summary\" {} let top = 'x'; stop = 'y';";
    let found = op_names_in_sql(text);
    let names: Vec<&str> = found.iter().map(|(_, n)| n.as_str()).collect();
    assert_eq!(
        names,
        ["send", "read", "opend", "ack", "seal", "admit", "teleport"]
    );
    assert_eq!(found[3].0, 2, "lines are counted");
    let unknown: Vec<&str> = names
        .into_iter()
        .filter(|n| OpKind::parse(n).is_none())
        .collect();
    assert_eq!(unknown, ["opend", "teleport"]);
}
