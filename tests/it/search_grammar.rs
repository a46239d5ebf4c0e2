//! Cross-checks the search grammar (`core::query`) against SQLite's FTS5 trigram index.
//!
//! The scan stands in for the index when a term is too short for trigrams, so on queries
//! whose terms are all 3+ characters it must return exactly the rows FTS5 returns. These
//! tests build a small in-memory index and compare, on random queries from the grammar:
//! FTS5 on the raw text, FTS5 on `fts_match()`, and `matches()`. They also check that the
//! parser accepts exactly what FTS5 accepts, that any input either parses or is refused
//! without panicking, and that the scan folds case exactly as the trigram tokenizer does.

use std::collections::BTreeSet;

use countersign::core::query::{QueryError, SearchQuery, fold};
use proptest::prelude::*;
use proptest::test_runner::Config;
use rusqlite::Connection;

/// Rows of (topic, body): mixed case, punctuation, quotes, non-ASCII, a NUL.
const ROWS: &[(&str, &str)] = &[
    (
        "Deploy notes",
        "Rotate the API keys before Friday's deploy.",
    ),
    ("deploy", "rotation schedule: weekly; see RUNBOOK.md"),
    (
        "Key rotation",
        "The rotating key is stored in vault/keys (rotated 2026-01-03).",
    ),
    ("RE: key rotation", "Agreed — rotate keys on Monday."),
    (
        "C++ build",
        "Compile with -O2; the C++ toolchain needs gcc 14.",
    ),
    ("c++ BUILD failed", "error: expected ';' before '}' token"),
    ("École d'été", "Réunion à l'ÉCOLE: déjà vu, naïve café."),
    ("Straße", "STRASSE und Straße; ẞ is the capital sharp s."),
    ("Σίσυφος", "ΣΊΣΥΦΟΣ rolls the stone; σίσυφος again."),
    ("Жизнь", "ЖИЗНЬ и жизнь — Москва, МОСКВА."),
    ("emoji 🎉", "party 🎉🎉 time, PARTY time"),
    ("quotes", "He said \"hello world\" and left."),
    (
        "\"quoted\" topic",
        "body with 'single' and \"double\" quotes",
    ),
    ("AND OR NOT", "keywords as text: and or not, AND OR NOT"),
    ("near", "NEAR the river, near the sea"),
    ("topic body", "topic: body: columns named in text"),
    (
        "underscore_names",
        "snake_case and camelCase and kebab-case",
    ),
    ("numbers", "port 5432, port 8080, 127.0.0.1:8080"),
    ("paths", "/usr/local/bin and C:\\Program Files\\app"),
    ("json", "{\"msg\": \"hi\", \"n\": [1, 2, 3]}"),
    ("mixed CASE words", "MiXeD CaSe TeXt with ROTATION inside"),
    ("short", "go rs js a b c"),
    ("", "empty topic but body mentions deploy and rotate"),
    ("only topic mentions rotate", ""),
    ("tabs\tand\nnewlines", "line one\nline two\tTabbed"),
    ("Kelvin \u{212a}", "temperature 300 \u{212a} (kelvin sign)"),
    ("İstanbul", "ISTANBUL istanbul İSTANBUL"),
    ("nul inside", "ab\0cd efg\0hij"),
    ("repeated", "abcabcabc abab bcbc"),
    ("prefix words", "rotational rotor rotund rot"),
    ("caret start", "start of body; the start again"),
    ("overlap", "abcdef bcdefg cdefgh"),
    ("hyphen-ated", "re-deploy pre-rotation post-mortem"),
    ("Fullwidth ＡＢＣ", "ｆｕｌｌｗｉｄｔｈ ＡＢＣ ａｂｃ"),
    (
        "whitespace\u{a0}nbsp",
        "non\u{a0}breaking\u{3000}ideographic",
    ),
    ("trailing space ", " leading space"),
    (
        "Deseret \u{10400}\u{10401}\u{10402}",
        "\u{10428}\u{10429}\u{1042a} lower",
    ),
    ("Ǆ digraph ǅ ǆ", "Ǉ ǈ ǉ letters"),
    ("vault keys", "VAULT KEYS ROTATE DEPLOY"),
    ("done", "nothing to see here"),
];

/// Words found in many rows, so that ANDed terms still match something.
const COMMON: &[&str] = &[
    "rot", "the", "key", "deploy", "ion", "and", "ate", "on ", "e s", "ROT", "Ke",
];

/// Words to search for: substrings of the rows (hits) plus a few misses.
const MISSES: &[&str] = &["zzz", "qqqq", "xyzzy", "notthere", "ÿÿÿ", "квв"];

thread_local! {
    static DB: Connection = build_db();
}

fn build_db() -> Connection {
    let db = Connection::open_in_memory().expect("in-memory SQLite");
    db.execute_batch("CREATE VIRTUAL TABLE t USING fts5(topic, body, tokenize='trigram');")
        .expect("FTS5 with trigram");
    for (i, (topic, body)) in ROWS.iter().enumerate() {
        let id = i64::try_from(i).expect("row id") + 1;
        db.execute(
            "INSERT INTO t(rowid, topic, body) VALUES (?1, ?2, ?3)",
            (id, topic, body),
        )
        .expect("insert row");
    }
    db
}

/// Row ids FTS5 matches, or its error text.
fn fts(expr: &str) -> Result<BTreeSet<i64>, String> {
    DB.with(|db| {
        let mut stmt = db
            .prepare("SELECT rowid FROM t WHERE t MATCH ?1")
            .map_err(|e| e.to_string())?;
        let rows = stmt
            .query_map([expr], |r| r.get(0))
            .map_err(|e| e.to_string())?;
        rows.collect::<Result<BTreeSet<i64>, _>>()
            .map_err(|e| e.to_string())
    })
}

/// Row ids the scan matches.
fn scan(query: &SearchQuery) -> BTreeSet<i64> {
    (1..)
        .zip(ROWS)
        .filter(|(_, (topic, body))| query.matches(topic, body))
        .map(|(id, _)| id)
        .collect()
}

fn parse(text: &str) -> SearchQuery {
    match SearchQuery::parse(text) {
        Ok(query) => query,
        Err(e) => panic!("{text:?} refused: {e}"),
    }
}

// ---------------------------------------------------------------------------------------
// Query generators

/// A substring (3..=6 characters) of some row, a common word, or a miss; randomly re-cased.
fn word() -> impl Strategy<Value = String> {
    let hit = (
        0..ROWS.len(),
        any::<bool>(),
        any::<prop::sample::Index>(),
        3usize..=6,
    )
        .prop_map(|(row, use_body, start, len)| {
            let (topic, body) = ROWS[row];
            let text = if use_body { body } else { topic };
            // NULs are not characters to the index; drop them before measuring.
            let text: Vec<char> = text.chars().filter(|&c| c != '\0').collect();
            let text = if text.len() < 3 {
                "deploy".chars().collect()
            } else {
                text
            };
            let len = len.min(text.len());
            let start = start.index(text.len() - len + 1);
            text[start..start + len].iter().collect::<String>()
        });
    let common = prop::sample::select(COMMON).prop_map(|w| {
        if w.len() < 3 {
            format!("{w}y")
        } else {
            w.to_owned()
        }
    });
    let miss = prop::sample::select(MISSES).prop_map(str::to_owned);
    (
        prop_oneof![4 => hit, 4 => common, 1 => miss],
        prop::collection::vec(0u8..3, 8),
    )
        .prop_map(|(word, cases)| {
            // Re-case some characters: the index folds case, and so must the scan.
            word.chars()
                .zip(cases.into_iter().cycle())
                .map(|(c, how)| match how {
                    0 => c.to_string(),
                    1 => single(c.to_uppercase()).unwrap_or(c).to_string(),
                    _ => single(c.to_lowercase()).unwrap_or(c).to_string(),
                })
                .collect()
        })
}

/// Blank as the module defines it (Python's `str.isspace`, NULs ignored).
fn is_blank(text: &str) -> bool {
    text.chars()
        .all(|c| c == '\0' || c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c))
}

fn single(mut it: impl Iterator<Item = char>) -> Option<char> {
    let first = it.next()?;
    it.next().is_none().then_some(first)
}

/// A term rendered bare when FTS5 would read it back as the same term, else quoted.
fn render_term(text: &str, bare: bool, prefix: bool) -> String {
    let bareword = text
        .bytes()
        .all(|b| b >= 0x80 || b.is_ascii_alphanumeric() || b == b'_');
    let keyword = matches!(text, "AND" | "OR" | "NOT" | "NEAR");
    let mut out = if bare && bareword && !keyword {
        text.to_owned()
    } else {
        format!("\"{}\"", text.replace('"', "\"\""))
    };
    if prefix {
        out.push('*');
    }
    out
}

const SIMPLE_COLUMNS: &[&str] = &[
    "topic:",
    "body:",
    "TOPIC:",
    "Body :",
    "\"body\":",
    "topic : ",
];
const EXTENDED_COLUMNS: &[&str] = &[
    "topic:",
    "body:",
    "-topic:",
    "- body:",
    "{topic}:",
    "{body topic}:",
    "-{body}:",
    "-{topic body}:",
    "{ topic topic }:",
];

/// One term with an optional column filter (scannable syntax only).
fn simple_leaf() -> impl Strategy<Value = String> {
    (
        word(),
        any::<bool>(),
        prop::bool::weighted(0.2),
        prop::option::weighted(0.3, prop::sample::select(SIMPLE_COLUMNS)),
    )
        .prop_map(|(w, bare, prefix, col)| {
            format!("{}{}", col.unwrap_or(""), render_term(&w, bare, prefix))
        })
}

/// One term using any FTS5 leaf syntax: caret, `+` parts, column sets, NEAR.
fn extended_leaf() -> impl Strategy<Value = String> {
    let phrase = (
        prop::collection::vec((word(), any::<bool>(), prop::bool::weighted(0.2)), 1..=3),
        any::<bool>(),
    )
        .prop_map(|(parts, overlap)| {
            // Half the time make `+` parts overlap by two characters, as trigram adjacency
            // needs for a match (`abc + bcd`).
            let mut rendered = Vec::new();
            let mut prev: Option<String> = None;
            for (w, bare, prefix) in parts {
                let w = match (&prev, overlap) {
                    (Some(p), true) => {
                        let tail: String = p
                            .chars()
                            .skip(p.chars().count().saturating_sub(2))
                            .collect();
                        format!("{tail}{w}")
                    }
                    _ => w,
                };
                rendered.push(render_term(&w, bare, prefix));
                prev = Some(w);
            }
            rendered.join(" + ")
        })
        .boxed();
    let caret_phrase = (prop::bool::weighted(0.25), phrase.clone())
        .prop_map(|(caret, p)| if caret { format!("^{p}") } else { p });
    let near = (
        prop::collection::vec(phrase, 1..=3),
        prop::option::of(0u32..6),
    )
        .prop_map(|(ps, d)| match d {
            Some(d) => format!("NEAR({}, {d})", ps.join(" ")),
            None => format!("NEAR({})", ps.join(" ")),
        });
    let nearset = prop_oneof![5 => caret_phrase, 1 => near];
    (
        prop::option::weighted(0.4, prop::sample::select(EXTENDED_COLUMNS)),
        nearset,
    )
        .prop_map(|(col, n)| format!("{}{n}", col.unwrap_or("")))
}

/// Expressions over `leaf`: juxtaposed lists, AND/OR/NOT with optional parentheses (so
/// precedence is exercised), and, when `groups` is set, column filters on groups.
fn expr(leaf: BoxedStrategy<String>, groups: bool) -> impl Strategy<Value = String> {
    let list = prop::collection::vec(leaf, 1..=2).prop_map(|ls| ls.join(" "));
    list.prop_recursive(4, 24, 3, move |inner| {
        // OR-heavy, so that random queries still match some rows.
        let op = prop::sample::select(&["AND", "OR", "OR", "NOT"][..]);
        let binary = (
            inner.clone(),
            op,
            inner.clone(),
            any::<bool>(),
            any::<bool>(),
        )
            .prop_map(|(l, op, r, pl, pr)| {
                let wrap = |s: String, p: bool| if p { format!("({s})") } else { s };
                format!("{} {op} {}", wrap(l, pl), wrap(r, pr))
            });
        let group_cols: &'static [&'static str] =
            if groups { EXTENDED_COLUMNS } else { &["", " "] };
        let group =
            (prop::sample::select(group_cols), inner).prop_map(|(col, e)| format!("{col}({e})"));
        prop_oneof![3 => binary, 1 => group]
    })
}

fn scannable_query() -> impl Strategy<Value = String> {
    expr(simple_leaf().boxed(), false)
}

fn extended_query() -> impl Strategy<Value = String> {
    expr(
        prop_oneof![1 => simple_leaf(), 2 => extended_leaf()].boxed(),
        true,
    )
}

/// Token soup for the acceptance check: valid and invalid sequences alike.
fn soup() -> impl Strategy<Value = String> {
    const TOKENS: &[&str] = &[
        "abc",
        "DEF",
        "rot",
        "deploy",
        "topic",
        "body",
        "Topic",
        "NEAR",
        "AND",
        "OR",
        "NOT",
        "(",
        ")",
        "{",
        "}",
        ":",
        ",",
        "+",
        "*",
        "-",
        "^",
        "\"key rot\"",
        "\"q\"\"x\"",
        "\"",
        "5",
        "é",
        ".",
        "foo",
        "\"topic\"",
        "\u{1a}",
    ];
    prop::collection::vec(
        (prop::sample::select(TOKENS), prop::bool::weighted(0.8)),
        1..10,
    )
    .prop_map(|toks| {
        toks.into_iter()
            .map(|(t, space)| if space { format!("{t} ") } else { t.to_owned() })
            .collect()
    })
}

// ---------------------------------------------------------------------------------------
// Properties

fn config(cases: u32) -> Config {
    Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    }
}

proptest! {
    #![proptest_config(config(300))]

    /// The scan returns what the index returns, for the syntax the scan supports.
    #[test]
    fn scan_equals_index(text in scannable_query()) {
        let raw = fts(&text);
        prop_assert!(raw.is_ok(), "generator made invalid FTS5: {text:?}: {raw:?}");
        let query = parse(&text);
        prop_assert!(!query.is_literal(), "{text:?} fell back to literal");
        prop_assert!(!query.needs_scan(), "{text:?}");
        prop_assert_eq!(query.check_scannable(), Ok(()));
        let emitted = query.fts_match();
        prop_assert_eq!(&fts(&emitted), &raw, "fts_match {:?} of {:?}", emitted, text);
        prop_assert_eq!(Ok(scan(&query)), raw, "scan of {:?}", text);
    }
}

proptest! {
    #![proptest_config(config(200))]

    /// The rarer FTS5 syntax round-trips through `fts_match`, and the scan evaluates it
    /// exactly too (except NEAR), although `check_scannable` refuses it.
    #[test]
    fn extended_syntax_round_trips(text in extended_query()) {
        let raw = fts(&text);
        prop_assert!(raw.is_ok(), "generator made invalid FTS5: {text:?}: {raw:?}");
        let query = parse(&text);
        prop_assert!(!query.is_literal(), "{text:?} fell back to literal");
        let emitted = query.fts_match();
        prop_assert_eq!(&fts(&emitted), &raw, "fts_match {:?} of {:?}", emitted, text);
        if !query.needs_scan() && !text.contains("NEAR") {
            prop_assert_eq!(Ok(scan(&query)), raw, "scan of {:?}", text);
        }
    }

    /// The parser accepts exactly what FTS5 accepts; everything else is read literally.
    #[test]
    fn acceptance_equals_fts5(text in soup()) {
        let raw = fts(&text);
        let Ok(query) = SearchQuery::parse(&text) else {
            // Only a blank soup may be refused.
            prop_assert!(text.trim().is_empty());
            return Ok(());
        };
        prop_assert_eq!(!query.is_literal(), raw.is_ok(), "{:?}: FTS5 says {:?}", text, raw);
        let emitted = query.fts_match();
        let via_emitted = fts(&emitted);
        prop_assert!(via_emitted.is_ok(), "{:?} -> {:?}: {:?}", text, emitted, via_emitted);
        if !query.needs_scan() {
            if let Ok(raw) = &raw {
                prop_assert_eq!(via_emitted.as_ref().ok(), Some(raw), "{:?} -> {:?}", text, emitted);
                if !text.contains("NEAR") {
                    prop_assert_eq!(&scan(&query), raw, "scan of {:?}", text);
                }
            } else {
                // Literal reading: the index and the scan still agree.
                prop_assert_eq!(via_emitted.ok(), Some(scan(&query)), "literal {:?}", text);
            }
        }
    }

    /// Any input parses or is refused with a limit; a parsed query's MATCH text is valid.
    #[test]
    fn any_string_parses_or_is_refused(text in prop_oneof![
        any::<String>(),
        "[a-zA-Zé0-9 ()\"{}:,+*^._\\-]{0,40}",
        "[\"() a-c:*^+\\-]{0,24}",
    ]) {
        match SearchQuery::parse(&text) {
            Ok(query) => {
                let emitted = query.fts_match();
                let result = fts(&emitted);
                prop_assert!(result.is_ok(), "{:?} -> {:?}: {:?}", text, emitted, result);
                let scanned = scan(&query);
                if !query.needs_scan() && query.check_scannable().is_ok() {
                    prop_assert_eq!(result.ok(), Some(scanned), "{:?}", text);
                }
            }
            Err(QueryError::Required) => prop_assert!(is_blank(&text), "{:?}", text),
            Err(e) => prop_assert!(
                !matches!(e, QueryError::Unscannable { .. }),
                "parse never refuses for the scan: {e}"
            ),
        }
    }

    /// Deeply nested queries: when the index can take them they parse and agree with the
    /// scan; otherwise `needs_scan()` says so and the scan answers.
    #[test]
    fn deep_nesting(ops in prop::collection::vec((0u8..3, any::<bool>(), 0..ROWS.len()), 1..120)) {
        let mut text = String::from("deploy");
        for (op, left, row) in ops {
            let term = render_term(&ROWS[row].0.chars().take(4).collect::<String>(), false, false);
            let term = if term.chars().count() < 5 { "\"rotat\"".to_owned() } else { term };
            let op = ["AND", "OR", "NOT"][usize::from(op)];
            text = if left { format!("{term} {op} ({text})") } else { format!("({text}) {op} {term}") };
        }
        let query = parse(&text);
        prop_assert!(!query.is_literal());
        let scanned = scan(&query);
        if !query.needs_scan() {
            let emitted = query.fts_match();
            prop_assert_eq!(fts(&emitted), Ok(scanned), "{:?}", emitted);
        }
    }
}

// ---------------------------------------------------------------------------------------
// Fixed cases

#[test]
fn documented_examples() {
    // Substring, case-insensitive, either column.
    assert_eq!(
        fts(&parse("rotat").fts_match()),
        Ok(BTreeSet::from([1, 2, 3, 4, 21, 23, 24, 30, 33, 39]))
    );
    for text in [
        "rotat",
        "ROTAT*",
        "topic:deploy",
        "deploy AND rotate",
        "deploy OR vault NOT keys",
    ] {
        let query = parse(text);
        assert_eq!(fts(&query.fts_match()), Ok(scan(&query)), "{text:?}");
    }
    // Literal fallback for punctuation.
    let query = parse("C++");
    assert!(query.is_literal());
    assert_eq!(fts(&query.fts_match()), Ok(BTreeSet::from([5, 6])));
    let query = parse("RE: key");
    assert!(query.is_literal());
    assert_eq!(fts(&query.fts_match()), Ok(BTreeSet::from([4])));
    // A doubled quote inside a phrase is a literal quote.
    let query = parse(r#""said ""hello""#);
    assert_eq!(fts(&query.fts_match()), Ok(BTreeSet::from([12])));
    assert_eq!(scan(&query), BTreeSet::from([12]));
    // An unterminated phrase is read literally, quote included.
    let query = parse(r#""hello world"#);
    assert!(query.is_literal());
    assert_eq!(fts(&query.fts_match()), Ok(BTreeSet::from([12])));
    // Short terms: the index finds nothing, the scan finds the substring.
    let query = parse("go rs");
    assert!(query.needs_scan());
    assert_eq!(fts(&query.fts_match()), Ok(BTreeSet::new()));
    assert_eq!(scan(&query), BTreeSet::from([22]));
}

#[test]
fn precedence_table_is_identical() {
    for text in [
        "deploy OR vault AND keys",
        "deploy AND vault OR keys",
        "deploy NOT rotate AND keys",
        "deploy OR rotate NOT keys",
        "rotate keys NOT vault",
        "rotate NOT keys vault",
        "deploy NOT rotate NOT notes",
        "(deploy OR rotate) AND (keys OR vault)",
        "deploy OR rotate AND keys OR vault NOT stored",
        "topic:deploy OR body:deploy NOT topic:notes",
        "topic:(deploy OR rotat) AND body:keys",
    ] {
        let query = parse(text);
        let raw = fts(text);
        assert!(raw.is_ok(), "{text:?}: {raw:?}");
        assert_eq!(fts(&query.fts_match()), raw, "{text:?}");
        assert_eq!(Ok(scan(&query)), raw, "{text:?}");
    }
}

#[test]
fn prefix_and_case_under_trigram() {
    // A trailing `*` on a 3+ character term is a plain substring under trigram.
    for (with, without) in [
        ("rot*", "rot"),
        ("ROTA*", "rota"),
        ("\"key r\"*", "\"key r\""),
        ("stra*", "STRA"),
    ] {
        assert_eq!(fts(with), fts(without), "{with:?}");
        assert_eq!(scan(&parse(with)), scan(&parse(without)), "{with:?}");
        assert_eq!(Ok(scan(&parse(with))), fts(with), "{with:?}");
    }
    // Case folds beyond ASCII, as SQLite's table folds it (terms of 3+ characters, so the
    // index answers too).
    for text in [
        "ÉCOLE",
        "école",
        "STRASSE",
        "\"ẞ is\"",
        "ΣΊΣΥΦΟΣ",
        "жизнь",
        "\"0 \u{212a}\"",
        "İSTANBUL",
        "\"ǅ Ǆ\"",
        "\u{10400}\u{10401}\u{10402}",
    ] {
        let query = parse(text);
        assert!(!query.needs_scan(), "{text:?}");
        let found = fts(&query.fts_match());
        assert!(
            found.as_ref().is_ok_and(|rows| !rows.is_empty()),
            "{text:?}: {found:?}"
        );
        assert_eq!(Ok(scan(&query)), found, "{text:?}");
    }
}

#[test]
fn limits_answered() {
    let words: Vec<String> = (0..256).map(|i| format!("w{i:03}")).collect();
    for text in [
        words.join(" "),
        words.join(" OR "),
        format!("{}deploy{}", "(".repeat(256), ")".repeat(256)),
        format!("{}deploy{}", "(deploy OR ".repeat(128), ")".repeat(128)),
        "é".repeat(4096),
    ] {
        let query = parse(&text);
        assert!(!query.is_literal());
        assert!(!query.needs_scan(), "{}", &text[..40]);
        assert!(fts(&query.fts_match()).is_ok(), "{}", &text[..40]);
    }
    // Alternating AND/OR nests without limit in parentheses; the index takes a deep one.
    let mut text = String::from("deploy");
    for i in 0..40 {
        let op = if i % 2 == 0 { "AND" } else { "OR" };
        text = format!("rotat {op} ({text})");
    }
    let query = parse(&text);
    assert!(!query.needs_scan());
    assert_eq!(fts(&query.fts_match()), Ok(scan(&query)));
}

/// The scan's case folding equals the trigram tokenizer's for every character it can meet:
/// the index's own trigrams (read back through fts5vocab) are compared with `fold`.
#[test]
fn fold_matches_trigram_tokenizer_for_every_character() {
    let db = Connection::open_in_memory().expect("in-memory SQLite");
    db.execute_batch(
        "CREATE VIRTUAL TABLE f USING fts5(t, tokenize='trigram');
         CREATE VIRTUAL TABLE fv USING fts5vocab(f, 'instance');",
    )
    .expect("fts5vocab");
    let chars: Vec<char> = (1..=0xFFFF_u32)
        .chain(0x1_0000..0x1_0500)
        .chain([0x1_F389, 0x2_0000, 0x10_FFFF])
        .filter_map(char::from_u32)
        .collect();
    {
        let tx = db.unchecked_transaction().expect("transaction");
        let mut insert = tx
            .prepare("INSERT INTO f(rowid, t) VALUES (?1, ?2)")
            .expect("prepare");
        for &c in &chars {
            insert
                .execute((i64::from(u32::from(c)), format!("xy{c}")))
                .expect("insert");
        }
        drop(insert);
        tx.commit().expect("commit");
    }
    let mut stmt = db.prepare("SELECT doc, term FROM fv").expect("vocab");
    let rows = stmt
        .query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))
        .expect("query")
        .collect::<Result<Vec<_>, _>>()
        .expect("rows");
    assert_eq!(rows.len(), chars.len());
    let mut wrong = Vec::new();
    for (doc, term) in rows {
        let c = u32::try_from(doc)
            .ok()
            .and_then(char::from_u32)
            .expect("codepoint rowid");
        if fold(&format!("xy{c}")) != term {
            wrong.push(format!(
                "U+{:04X}: sqlite {term:?}, fold {:?}",
                u32::from(c),
                fold(&c.to_string())
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} characters fold differently: {:?}",
        wrong.len(),
        &wrong[..wrong.len().min(20)]
    );
}
