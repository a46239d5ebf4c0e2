//! No import circles: within each crate, no two modules use each other.
//!
//! Reads the `use` items of every module file of the workspace's crates
//! (test modules left out), resolves each `crate::`, `super::` and `self::`
//! path to the module that holds it, and lifts each dependency to the two
//! sibling modules where the paths part (`core::op` using
//! `core::memory::note` is `op` using `memory`). A module and its own parent
//! or child are one unit (the parent declares the child), so only siblings
//! can form a circle. Any circle among siblings, of two modules or more
//! (`a` uses `b`, `b` uses `c`, `c` uses `a`), fails the test, named with the
//! `use` lines that make it.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use crate::common::rust_files;

/// A module path inside its crate (`["store", "index"]`); empty for the root.
type ModPath = Vec<String>;

/// Every module file under `src`, by module path. `main.rs` is left out
/// beside a `lib.rs`: it is another crate (the binary) using the library.
fn modules(src: &Path) -> BTreeMap<ModPath, PathBuf> {
    let mut out = BTreeMap::new();
    for path in rust_files(src) {
        let rel = path.strip_prefix(src).unwrap().with_extension("");
        let mut parts: ModPath = rel
            .components()
            .map(|c| c.as_os_str().to_str().unwrap().to_owned())
            .collect();
        if parts == ["main"] && src.join("lib.rs").exists() {
            continue;
        }
        if parts == ["lib"] || parts == ["main"] || parts.last().is_some_and(|p| p == "mod") {
            parts.pop();
        }
        out.insert(parts, path);
    }
    out
}

/// What a module file's own code names of other modules: each `use` item
/// (as one line, comments removed) with the paths it imports, and each line
/// of code naming a path in place (`super::memory::Cache`). Items under
/// `#[cfg(test)]` (a test module, a test-only `use`) are left out: a test may
/// reach anywhere.
fn references(text: &str) -> Vec<(String, Vec<Vec<String>>)> {
    let mut out = Vec::new();
    let mut lines = text.lines();
    let mut test_only = false;
    while let Some(line) = lines.next() {
        let code = line.split("//").next().unwrap().trim();
        if code.starts_with("#[cfg(test)]") {
            test_only = true;
            continue;
        }
        if code.starts_with("#[") || code.is_empty() {
            continue;
        }
        let skip = std::mem::take(&mut test_only);
        let is_use =
            code.starts_with("use ") || (code.starts_with("pub") && code.contains(" use "));
        if is_use {
            let mut item = code.to_owned();
            while !item.ends_with(';') {
                let Some(next) = lines.next() else { break };
                item.push(' ');
                item.push_str(next.split("//").next().unwrap().trim());
            }
            if !skip {
                let paths = use_paths(&item);
                out.push((item, paths));
            }
        } else if skip && code.ends_with('{') {
            // Skip the test item's body, braces counted outside literals.
            let mut depth = braces(code);
            for next in lines.by_ref() {
                depth += braces(next);
                if depth <= 0 {
                    break;
                }
            }
        } else if !skip {
            let paths = paths_in_code(code);
            if !paths.is_empty() {
                out.push((code.to_owned(), paths));
            }
        }
    }
    out
}

/// The `crate::`, `super::` and `self::` paths a line of code names in
/// place, outside string literals.
fn paths_in_code(code: &str) -> Vec<Vec<String>> {
    let mut bare = String::new();
    let mut in_str = false;
    let mut chars = code.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' if in_str => {
                chars.next();
            }
            '"' => {
                in_str = !in_str;
                bare.push(' ');
            }
            _ if in_str => {}
            _ => bare.push(c),
        }
    }
    let ident = |c: char| c == '_' || c.is_alphanumeric();
    let mut out = Vec::new();
    for (at, _) in bare.match_indices("::") {
        let head_start = bare[..at].rfind(|c: char| !ident(c)).map_or(0, |i| i + 1);
        let head = &bare[head_start..at];
        let before = bare[..head_start].chars().next_back();
        if !matches!(head, "crate" | "super" | "self") || before == Some(':') {
            continue;
        }
        let mut path = vec![head.to_owned()];
        let mut rest = &bare[at..];
        while let Some(tail) = rest.strip_prefix("::") {
            let end = tail.find(|c: char| !ident(c)).unwrap_or(tail.len());
            if end == 0 {
                break;
            }
            path.push(tail[..end].to_owned());
            rest = &tail[end..];
        }
        out.push(path);
    }
    out
}

/// Opening minus closing braces of a line of code, outside string and
/// character literals and comments.
fn braces(line: &str) -> i64 {
    let mut depth = 0;
    let mut chars = line.chars().peekable();
    let mut in_str = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' if in_str => {
                chars.next();
            }
            '"' => in_str = !in_str,
            '/' if !in_str && chars.peek() == Some(&'/') => break,
            '\'' if !in_str => {
                // A char literal ('{', '\'') or a lifetime ('a).
                let rest: String = chars.clone().take(3).collect();
                if rest.starts_with('\\') {
                    chars.nth(2);
                } else if rest.chars().nth(1) == Some('\'') {
                    chars.nth(1);
                }
            }
            '{' if !in_str => depth += 1,
            '}' if !in_str => depth -= 1,
            _ => {}
        }
    }
    depth
}

/// The paths a `use` item names, each as its segments
/// (`use super::{a, b::C as D};` gives `super::a` and `super::b::C`).
fn use_paths(item: &str) -> Vec<Vec<String>> {
    let body = item
        .split_once("use ")
        .map(|(_, rest)| rest)
        .unwrap_or_default();
    let body = body.trim_end_matches(';');
    // Drop renames, then every space.
    let words: Vec<&str> = body.split_whitespace().collect();
    let mut kept = String::new();
    let mut i = 0;
    while i < words.len() {
        if words[i] == "as" {
            // The new name goes; what follows it (`,` or `}`) stays.
            let name = words.get(i + 1).copied().unwrap_or_default();
            kept.push_str(name.trim_start_matches(|c: char| c == '_' || c.is_alphanumeric()));
            i += 2;
            continue;
        }
        kept.push_str(words[i]);
        i += 1;
    }
    let mut out = Vec::new();
    expand(&kept, &mut Vec::new(), &mut out);
    out
}

/// Expands one use tree (no spaces) under `prefix` into its leaf paths.
fn expand(tree: &str, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    for part in split_top(tree) {
        let depth = prefix.len();
        let mut rest = part;
        loop {
            if let Some(group) = rest.strip_prefix('{') {
                expand(group.strip_suffix('}').unwrap_or(group), prefix, out);
                break;
            }
            match rest.split_once("::") {
                Some((seg, tail)) => {
                    prefix.push(seg.to_owned());
                    rest = tail;
                }
                None => {
                    if !rest.is_empty() && rest != "self" {
                        prefix.push(rest.to_owned());
                    }
                    out.push(prefix.clone());
                    break;
                }
            }
        }
        prefix.truncate(depth);
    }
}

/// Splits a use tree at its top-level commas.
fn split_top(tree: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in tree.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&tree[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&tree[start..]);
    parts.into_iter().filter(|p| !p.is_empty()).collect()
}

/// The module of this crate a path from module `from` lands in (the longest
/// known prefix); `None` for a path outside the crate.
fn target(from: &[String], path: &[String], known: &BTreeMap<ModPath, PathBuf>) -> Option<ModPath> {
    let mut abs: ModPath = match path.first().map(String::as_str) {
        Some("crate") => Vec::new(),
        Some("super" | "self") => from.to_vec(),
        _ => return None,
    };
    let mut rest = &path[1..];
    if path[0] == "super" {
        abs.pop()?;
        while rest.first().is_some_and(|s| s == "super") {
            abs.pop()?;
            rest = &rest[1..];
        }
    }
    abs.extend(rest.iter().cloned());
    while !known.contains_key(&abs) {
        abs.pop()?;
    }
    Some(abs)
}

/// The circles among sibling modules of the crate whose sources are `src`,
/// each described with the `use` items that make it.
fn circles(src: &Path) -> Vec<String> {
    let known = modules(src);
    // Lifted edge (a, b) between siblings → the items behind it.
    let mut edges: BTreeMap<(ModPath, ModPath), BTreeSet<String>> = BTreeMap::new();
    for (from, file) in &known {
        let text = fs::read_to_string(file).unwrap();
        for (item, paths) in references(&text) {
            for path in paths {
                let Some(to) = target(from, &path, &known) else {
                    continue;
                };
                let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
                if common == from.len() || common == to.len() {
                    continue; // the same module, its parent or its child
                }
                let file = file.strip_prefix(src).unwrap().display();
                edges
                    .entry((from[..=common].to_vec(), to[..=common].to_vec()))
                    .or_default()
                    .insert(format!("{file}: {item}"));
            }
        }
    }
    let mut found = Vec::new();
    for circle in circles_among(edges.keys()) {
        let why: Vec<&String> = edges
            .iter()
            .filter(|((a, b), _)| circle.contains(a) && circle.contains(b))
            .flat_map(|(_, why)| why)
            .collect();
        let names: Vec<String> = circle.iter().map(|m| m.join("::")).collect();
        found.push(format!(
            "{}\n    {}",
            names.join(" <-> "),
            why.iter()
                .map(|w| w.as_str())
                .collect::<Vec<_>>()
                .join("\n    "),
        ));
    }
    found
}

/// The circles of a graph given by its edges: each set of two or more
/// nodes that all reach one another (a strongly connected component),
/// in order. Reachability from every node: a crate has a few hundred
/// modules, so no cleverer walk is needed.
fn circles_among<'e>(
    edges: impl IntoIterator<Item = &'e (ModPath, ModPath)>,
) -> Vec<BTreeSet<ModPath>> {
    let mut next: BTreeMap<&ModPath, Vec<&ModPath>> = BTreeMap::new();
    for (a, b) in edges {
        next.entry(a).or_default().push(b);
        next.entry(b).or_default();
    }
    let reach = |from: &ModPath| {
        let mut seen: BTreeSet<&ModPath> = BTreeSet::new();
        let mut todo = vec![from];
        while let Some(m) = todo.pop() {
            for &n in next.get(m).into_iter().flatten() {
                if seen.insert(n) {
                    todo.push(n);
                }
            }
        }
        seen
    };
    let reached: BTreeMap<&ModPath, BTreeSet<&ModPath>> =
        next.keys().map(|&m| (m, reach(m))).collect();
    let mut out: Vec<BTreeSet<ModPath>> = Vec::new();
    for (&a, from_a) in &reached {
        let circle: BTreeSet<ModPath> = from_a
            .iter()
            .filter(|b| reached[**b].contains(a))
            .map(|&b| b.clone())
            .collect();
        if circle.len() >= 2 && !out.contains(&circle) {
            out.push(circle);
        }
    }
    out
}

#[test]
fn a_circle_of_three_is_found_and_a_path_into_it_is_not_part_of_it() {
    let m = |s: &str| vec![s.to_owned()];
    let edges = [
        (m("a"), m("b")),
        (m("b"), m("c")),
        (m("c"), m("a")),
        (m("d"), m("a")),
        (m("e"), m("f")),
    ];
    let found = circles_among(edges.iter());
    assert_eq!(found, vec![[m("a"), m("b"), m("c")].into_iter().collect()]);
}

/// Circles known and not yet broken, as `(crate sources, a <-> b)`; a
/// circle leaves this list when it is broken, and none joins it.
const ALLOWED: &[(&str, &str)] = &[];

#[test]
fn no_module_of_any_crate_imports_one_that_imports_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = Vec::new();
    for src in [
        "crates/core/src",
        "crates/lib/src",
        "src",
        "crates/bench/src",
    ] {
        for c in circles(&root.join(src)) {
            let pair = c.lines().next().unwrap_or_default();
            if !ALLOWED.contains(&(src, pair)) {
                found.push(format!("{src}: {c}"));
            }
        }
    }
    assert!(
        found.is_empty(),
        "import circles (move the shared item to the module that owns it):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_reader_sees_paths_groups_renames_code_and_test_modules() {
    let text = "use std::fmt;\n\
        use super::{a, b::{C as D, self}};\n\
        pub(crate) use crate::x::y::Z; // why\n\
        use crate::p::{\n    q, // the q\n    r::S,\n};\n\
        #[cfg(test)]\nuse crate::only::Test;\n\
        fn f() -> super::super::k::L { let s = \"crate::quoted\"; Self::new() }\n\
        #[cfg(test)]\nmod tests {\n    use crate::hidden::H;\n    fn g() { '{'; }\n}\n\
        use crate::after::A;\n";
    let paths: Vec<String> = references(text)
        .into_iter()
        .flat_map(|(_, paths)| paths)
        .map(|p| p.join("::"))
        .collect();
    assert_eq!(
        paths,
        [
            "std::fmt",
            "super::a",
            "super::b::C",
            "super::b",
            "crate::x::y::Z",
            "crate::p::q",
            "crate::p::r::S",
            "super::super::k::L",
            "crate::after::A",
        ]
    );
    let known: BTreeMap<ModPath, PathBuf> =
        [vec![], vec!["x".into()], vec!["m".into(), "n".into()]]
            .into_iter()
            .map(|m| (m, PathBuf::new()))
            .collect();
    let from = ["m".to_owned(), "n".to_owned()];
    let at = |p: &str| {
        let path: Vec<String> = p.split("::").map(str::to_owned).collect();
        target(&from, &path, &known)
    };
    assert_eq!(at("crate::x::y::Z"), Some(vec!["x".to_owned()]));
    assert_eq!(at("super::super::x::W"), Some(vec!["x".to_owned()]));
    assert_eq!(at("self::Q"), Some(from.to_vec()));
    assert_eq!(at("std::fmt"), None);
}

/// One module-file convention: a module with children is a folder with its
/// own `mod.rs`, never a `name.rs` beside a `name/` folder.
#[test]
fn a_module_with_children_is_a_folder_with_mod_rs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut both = Vec::new();
    let mut dirs: Vec<PathBuf> = [
        "crates/core/src",
        "crates/lib/src",
        "crates/bench/src",
        "src",
    ]
    .iter()
    .map(|d| root.join(d))
    .collect();
    while let Some(dir) = dirs.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                if path.with_extension("rs").is_file() {
                    both.push(path.with_extension("rs"));
                }
                dirs.push(path);
            }
        }
    }
    assert!(both.is_empty(), "move each to <folder>/mod.rs: {both:#?}");
}
