//! Cross-checks the one-phrase search path against SQLite's FTS5.
//!
//! For a query of one phrase, `search_messages` finds the rows with FTS5 but
//! computes their bm25 (`core::bm25`) and snippet (`core::snippet`) itself from
//! the text (`core::trigram`). Both must be exactly FTS5's: the same doubles
//! (so the same order) and byte-identical snippets. These tests build a
//! trigram table like the index's over generated texts (sentences, `.` and `:`
//! breaks, overlapping repeats, mixed case, non-ASCII, NULs, U+FFFF, short and
//! long columns) and compare every matching row for many phrases.

use countersign::core::bm25::Bm25;
use countersign::core::query::{SearchQuery, fold};
use countersign::core::snippet::{SnippetStyle, snippet};
use countersign::core::trigram::{TrigramText, phrase_count};
use countersign::store::Index;
use rusqlite::Connection;

/// A connection of the test's own to the index file: the index keeps its
/// connection to `store`, so tests that look at tables open one beside it.
fn db(ix: &Index) -> rusqlite::Connection {
    rusqlite::Connection::open(ix.path()).unwrap()
}

const STYLE: SnippetStyle<'static> = SnippetStyle {
    open: "[",
    close: "]",
    ellipsis: "…",
    tokens: 12,
};

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len())]
    }
}

const WORDS: &[&str] = &[
    "idempotency",
    "Idempotent",
    "retry",
    "RETRY",
    "key",
    "keys",
    "aaa",
    "aaaa",
    "abab",
    "ababab",
    "the",
    "then",
    "deploy",
    "Deploy",
    "école",
    "ÉCOLE",
    "straße",
    "STRASSE",
    "σίσυφος",
    "ΣΊΣΥΦΟΣ",
    "жизнь",
    "🎉",
    "x",
    "ab",
    "migration",
    "src/store/index.rs",
    "TKT-1234",
    "fn_name()",
    "a\u{0}b",
    "\u{FFFF}",
    "\u{FFFE}x",
    "naïve",
    "café",
];
const GAPS: &[&str] = &[
    " ", " ", " ", "  ", ". ", ": ", ".\n", ":\t", ", ", "-", "", "\n\n", ".", ":",
];

fn text(rng: &mut Rng, words: usize) -> String {
    let mut t = String::new();
    for _ in 0..words {
        t.push_str(rng.pick(WORDS));
        t.push_str(rng.pick(GAPS));
    }
    t
}

/// A table shaped as the index's: external content, `topic, body`, trigram.
fn table(rows: &[(String, String)]) -> Connection {
    let c = Connection::open_in_memory().unwrap();
    c.execute_batch(
        "CREATE TABLE bodies(rowid INTEGER PRIMARY KEY, topic TEXT NOT NULL, body TEXT NOT NULL);
         CREATE VIRTUAL TABLE t USING fts5(topic, body, content='bodies', content_rowid='rowid',
             tokenize='trigram');",
    )
    .unwrap();
    for (i, (topic, body)) in rows.iter().enumerate() {
        c.execute(
            "INSERT INTO bodies(rowid, topic, body) VALUES (?1, ?2, ?3)",
            rusqlite::params![i as i64 + 1, topic, body],
        )
        .unwrap();
    }
    c.execute_batch("INSERT INTO t(rowid, topic, body) SELECT rowid, topic, body FROM bodies")
        .unwrap();
    c
}

fn rows(seed: u64, n: usize) -> Vec<(String, String)> {
    let mut rng = Rng(seed);
    (0..n)
        .map(|_| {
            let topic_words = rng.below(4);
            let body_words = [0, 1, 3, 8, 20, 60][rng.below(6)];
            (text(&mut rng, topic_words), text(&mut rng, body_words))
        })
        .collect()
}

/// Phrases: pieces of the texts (so most match), case-flipped, and words.
fn phrases(seed: u64, rows: &[(String, String)], n: usize) -> Vec<String> {
    let mut rng = Rng(seed);
    let mut out: Vec<String> = WORDS.iter().map(|w| (*w).to_owned()).collect();
    while out.len() < n {
        let (topic, body) = &rows[rng.below(rows.len())];
        let chars: Vec<char> = if rng.below(4) == 0 { topic } else { body }
            .chars()
            .collect();
        if chars.len() < 3 {
            continue;
        }
        let len = 3 + rng.below(10.min(chars.len() - 2));
        let start = rng.below(chars.len() - len + 1);
        let mut p: String = chars[start..start + len].iter().collect();
        if rng.below(3) == 0 {
            p = p.to_uppercase();
        }
        out.push(p);
    }
    out
}

fn check(seed: u64, n_rows: usize, n_phrases: usize) -> usize {
    let rows = rows(seed, n_rows);
    let c = table(&rows);
    let total_rows = rows.len() as i64;
    let total_tokens: i64 = rows
        .iter()
        .map(|(t, b)| (TrigramText::new(t).tokens() + TrigramText::new(b).tokens()) as i64)
        .sum();
    let mut compared = 0;
    let mut scratch = Vec::new();
    for p in phrases(seed ^ 0x5EED, &rows, n_phrases) {
        let Ok(q) = SearchQuery::parse(&format!("\"{}\"", p.replace('"', "\"\""))) else {
            continue;
        };
        let Some(needle) = q.single_phrase() else {
            continue;
        };
        let needle: Vec<char> = needle.chars().collect();
        let mut st = c
            .prepare(
                "SELECT rowid, bm25(t), snippet(t, -1, '[', ']', '…', 12) FROM t \
                 WHERE t MATCH ?1 ORDER BY rowid",
            )
            .unwrap();
        let fts: Vec<(i64, f64, String)> = st
            .query_map([q.fts_match()], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        // The same rows match.
        let ours: Vec<i64> = rows
            .iter()
            .enumerate()
            .filter(|(_, (t, b))| {
                !TrigramText::new(t).occurrences(&needle).is_empty()
                    || !TrigramText::new(b).occurrences(&needle).is_empty()
            })
            .map(|(i, _)| i as i64 + 1)
            .collect();
        let theirs: Vec<i64> = fts.iter().map(|r| r.0).collect();
        assert_eq!(ours, theirs, "rows matching {p:?}");
        let bm25 = Bm25::new(total_rows, total_tokens, fts.len() as i64);
        for (rowid, rank, snip) in &fts {
            let (topic, body) = &rows[*rowid as usize - 1];
            let cols = [TrigramText::new(topic), TrigramText::new(body)];
            let freq: usize = cols.iter().map(|c| c.occurrences(&needle).len()).sum();
            let size: usize = cols.iter().map(TrigramText::tokens).sum();
            // The search ranks with the shortcut; it must count the same.
            let (tf, ts) = phrase_count(topic, q.single_phrase().unwrap(), &mut scratch);
            let (bf, bs) = phrase_count(body, q.single_phrase().unwrap(), &mut scratch);
            assert_eq!(
                (tf + bf, ts + bs),
                (freq, size),
                "counts in row {rowid} for {p:?}"
            );
            assert_eq!(
                bm25.score(freq, size).to_bits(),
                rank.to_bits(),
                "bm25 of row {rowid} for {p:?}: topic {topic:?} body {body:?}"
            );
            assert_eq!(
                &snippet(&cols, &needle, &STYLE),
                snip,
                "snippet of row {rowid} for {p:?}: topic {topic:?} body {body:?}"
            );
            compared += 1;
        }
    }
    compared
}

#[test]
fn snippet_and_bm25_match_fts5() {
    let mut compared = 0;
    for seed in 1..=6u64 {
        compared += check(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15), 300, 150);
    }
    assert!(compared > 10_000, "only {compared} rows compared");
}

#[test]
fn phrase_fold_is_the_tokenizers() {
    // The needle is the folded query text; the texts fold the same way.
    let q = SearchQuery::parse("ÉCOLE").unwrap();
    assert_eq!(q.single_phrase(), Some(fold("ÉCOLE").as_str()));
}

#[test]
fn only_plain_phrases_take_the_path() {
    for (query, one) in [
        ("idempotency", true),
        ("\"connection pool\"", true),
        ("\"C++ build\"", true),
        ("idempotency retry", false),
        ("idem*", false),
        ("topic:idempotency", false),
        ("^idempotency", false),
        ("ab", false),
        ("idempotency OR retry", false),
        ("NEAR(idempotency retry)", false),
    ] {
        let q = SearchQuery::parse(query).unwrap();
        assert_eq!(q.single_phrase().is_some(), one, "{query}");
    }
}

#[test]
fn index_totals_are_fts5s() {
    let dir = std::env::temp_dir().join(format!("countersign-totals-{}", std::process::id()));
    let ix = Index::open(&dir.join("index.sqlite3"), "c").unwrap();
    let rows = rows(7, 200);
    for (i, (topic, body)) in rows.iter().enumerate() {
        db(&ix)
            .execute(
                "INSERT INTO bodies(rowid, message_id, topic, body) VALUES (?1, 'm', ?2, ?3)",
                rusqlite::params![i as i64 + 1, topic, body],
            )
            .unwrap();
    }
    ix.write(|tx| tx.index_new_bodies()).unwrap();
    let tokens: usize = rows
        .iter()
        .map(|(t, b)| TrigramText::new(t).tokens() + TrigramText::new(b).tokens())
        .sum();
    assert_eq!(ix.fts_totals().unwrap(), Some((200, tokens as i64)));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Texts where FTS5's snippet costs the square of the text (a run of one
/// character, a long run of spaces, a phrase repeated through the whole
/// body, sentence after sentence), kept short enough for FTS5 to answer:
/// the linear computation must still cut exactly FTS5's snippet and count
/// exactly its instances.
#[test]
fn runs_and_repeats_match_fts5() {
    let mut rows = Vec::new();
    for n in [3, 14, 15, 40, 700, 2000] {
        rows.push(("t".to_owned(), "x".repeat(n)));
        rows.push(("xxxx".to_owned(), format!("a{}b. c", " ".repeat(n))));
        rows.push(("Go".to_owned(), "abc ".repeat(n / 4 + 1)));
        rows.push(("t".to_owned(), "Go. ".repeat(n / 4 + 1)));
        rows.push((
            "ab".to_owned(),
            format!("{}. {}", "ab".repeat(n / 2), "ba ".repeat(n / 3)),
        ));
        rows.push((
            "x".repeat(n % 50),
            format!("{}:\n\n{}", "xX".repeat(n / 2), "x".repeat(n)),
        ));
    }
    let c = table(&rows);
    let total_tokens: i64 = rows
        .iter()
        .map(|(t, b)| (TrigramText::new(t).tokens() + TrigramText::new(b).tokens()) as i64)
        .sum();
    let mut scratch = Vec::new();
    let mut compared = 0;
    for p in [
        "xxx",
        "xxxx",
        "xxxxxxxxxxxxxxx",
        "b. ",
        ". c",
        "abc",
        "c a",
        "go.",
        ". go",
        "aba",
        "bab",
        "ba ",
        "xxx:",
        ":\n\nx",
        "xXx",
    ] {
        let q = SearchQuery::parse(&format!("\"{p}\"")).unwrap();
        let needle = q.single_phrase().unwrap();
        let chars: Vec<char> = needle.chars().collect();
        let mut st = c
            .prepare(
                "SELECT rowid, bm25(t), snippet(t, -1, '[', ']', '…', 12) FROM t \
                 WHERE t MATCH ?1 ORDER BY rowid",
            )
            .unwrap();
        let fts: Vec<(i64, f64, String)> = st
            .query_map([q.fts_match()], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let bm25 = Bm25::new(rows.len() as i64, total_tokens, fts.len() as i64);
        for (rowid, rank, snip) in &fts {
            let (topic, body) = &rows[*rowid as usize - 1];
            let cols = [TrigramText::new(topic), TrigramText::new(body)];
            let (tf, ts) = phrase_count(topic, needle, &mut scratch);
            let (bf, bs) = phrase_count(body, needle, &mut scratch);
            assert_eq!(
                bm25.score(tf + bf, ts + bs).to_bits(),
                rank.to_bits(),
                "bm25 of row {rowid} for {p:?}"
            );
            assert_eq!(
                &snippet(&cols, &chars, &STYLE),
                snip,
                "snippet of row {rowid} for {p:?}: topic {topic:?} body {body:?}"
            );
            compared += 1;
        }
    }
    assert!(compared > 60, "only {compared} rows compared");
}

/// A session of role `a` on a new channel of roles `a` and `b` under `tmp`.
fn session(tmp: &std::path::Path, name: &str) -> countersign::app::Session {
    use countersign::app::init::create_channel;
    use countersign::core::ids::Role;
    use countersign::store::{Channel, ChannelDir, Home};
    let dir = tmp.join("channel");
    let home = Home::at(tmp.join("home"));
    create_channel(&dir, &["a", "b"], name, &home).unwrap();
    let channel = Channel::open(ChannelDir::open(&dir).unwrap(), home).unwrap();
    countersign::app::Session::new(channel, Some(Role::new("a").unwrap())).unwrap()
}

/// `search_messages`' answer to `query`: each hit's id and snippet, in order.
fn our_hits(s: &mut countersign::app::Session, query: &str, limit: i64) -> Vec<(String, String)> {
    use countersign::app::budget::Budget;
    use countersign::app::search::{SearchFilter, search_messages};
    let never = || false;
    let mut budget = Budget::search(&never);
    let fields = countersign::app::rows::FieldsArg::Many(vec!["id".into(), "snippet".into()]);
    let answer = search_messages(
        s,
        query,
        &SearchFilter::default(),
        limit,
        Some(&fields),
        &mut budget,
    )
    .unwrap();
    let answer = serde_json::to_value(answer).unwrap();
    answer["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            let f = |k: &str| h[k].as_str().unwrap().to_owned();
            (f("id"), f("snippet"))
        })
        .collect()
}

/// FTS5's own answer to `query`: its ranking query with the snippet in it,
/// over the live messages' current bodies.
fn fts5_hits(s: &countersign::app::Session, query: &str, limit: i64) -> Vec<(String, String)> {
    let q = SearchQuery::parse(query).unwrap();
    let conn = db(s.index());
    let mut st = conn
        .prepare(
            "SELECT substr(m.id, 1, 12), snippet(bodies_fts, -1, '[', ']', '…', 12) \
             FROM bodies_fts JOIN bodies b ON b.rowid = bodies_fts.rowid \
             JOIN messages m ON m.id = b.message_id WHERE bodies_fts MATCH ?1 \
             AND b.rowid = m.body_row AND m.deleted_ms IS NULL \
             ORDER BY bm25(bodies_fts), m.ms DESC, m.c DESC, m.id DESC LIMIT ?2",
        )
        .unwrap();
    st.query_map(rusqlite::params![q.fts_match(), limit], |r| {
        Ok((r.get(0)?, r.get(1)?))
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

/// Queries of several phrases are ranked by FTS5 and the returned rows'
/// snippets asked of it in a second statement (no longer in the ranking
/// query, where it cut one for every match): for ordinary text the answer
/// must be what the ranking query with the snippet in it gives, rows, order
/// and bytes.
#[test]
fn ranked_answers_are_fts5s_for_ordinary_text() {
    use countersign::app::send::{SendRequest, send_message};

    let tmp = tempfile::tempdir().unwrap();
    let mut s = session(tmp.path(), "snippets");
    let mut rng = Rng(0xC0FFEE);
    for i in 0..120 {
        let words = [1, 3, 8, 20, 60, 200][rng.below(6)];
        let body = text(&mut rng, words);
        send_message(&mut s, SendRequest::new("b", format!("note {i}"), body)).unwrap();
    }
    let mut compared = 0;
    for query in [
        "retry OR deploy",
        "key NOT retry",
        "idempot* OR keys",
        "topic:note retry",
        "NEAR(retry key)",
        "deploy the",
        "\"the key\" OR école",
        "migration AND (retry OR keys)",
        "body:aaaa OR ababab",
    ] {
        // Ours first: a search brings the full-text index up to date.
        let ours = our_hits(&mut s, query, 50);
        let theirs = fts5_hits(&s, query, 50);
        assert!(!theirs.is_empty(), "{query} matches nothing");
        assert_eq!(ours, theirs, "{query}");
        compared += theirs.len();
    }
    assert!(compared > 100, "only {compared} rows compared");
}

/// A one-phrase query is matched by one of its rarer trigrams and the rows
/// that trigram finds are checked against their text: the answer must still
/// be FTS5's for the phrase, rows, order and snippets, with rows that only
/// share the trigram ("import", "component" share `mpo` with "idempotency")
/// left out, and a revised message's old body and a deleted message
/// counted for the phrase but never returned.
#[test]
fn a_phrase_found_through_one_trigram_is_fts5s_answer() {
    use countersign::app::delete::delete_message;
    use countersign::app::revise::{ReviseRequest, revise_message};
    use countersign::app::send::{SendRequest, send_message};

    let tmp = tempfile::tempdir().unwrap();
    let mut s = session(tmp.path(), "one-trigram");
    let mut rng = Rng(0x7E1A);
    let send = |s: &mut countersign::app::Session, topic: String, body: String| {
        send_message(s, SendRequest::new("b", topic, body))
            .unwrap()
            .id
    };
    let mut ids = Vec::new();
    for i in 0..60 {
        let filler = text(&mut rng, [2, 6, 30][i % 3]);
        let body = match i % 4 {
            0 => format!("{filler} idempotency {}", "keys ".repeat(i % 5)),
            1 => format!("import the component, {filler}"),
            2 => format!("{filler} Idempotency and IDEMPOTENCY. idempotency"),
            _ => filler,
        };
        ids.push(send(&mut s, format!("note {i}"), body));
    }
    let revised = send(&mut s, "revised".into(), "idempotency, before".into());
    revise_message(
        &mut s,
        ReviseRequest {
            message_id: revised,
            body: "an import, after".into(),
            body_ref: None,
            topic: None,
            note: None,
        },
    )
    .unwrap();
    delete_message(&mut s, &ids[4]).unwrap();
    let mut compared = 0;
    for (query, limit) in [
        ("idempotency", 50),
        ("idempotency", 7),
        ("\"component, \"", 50),
    ] {
        assert!(
            SearchQuery::parse(query).unwrap().single_phrase().is_some(),
            "{query} is one phrase"
        );
        let ours = our_hits(&mut s, query, limit);
        let theirs = fts5_hits(&s, query, limit);
        assert!(theirs.len() >= 7, "{query} matches too few");
        assert_eq!(ours, theirs, "{query}, limit {limit}");
        compared += theirs.len();
    }
    assert!(compared > 30, "only {compared} rows compared");
}
