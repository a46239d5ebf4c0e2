//! The FTS5 internals that search reads behind SQLite's back, checked once per
//! process against the SQLite linked into this build.
//!
//! For a query of one phrase, search ranks and cuts snippets itself
//! (`core::bm25`, `core::snippet`, `core::trigram`) instead of asking FTS5's
//! `bm25()` and `snippet()`. That is exact only while three things hold of the
//! linked SQLite, none of them a public interface:
//!
//! * the averages record, row 1 of the `<table>_data` shadow table, is the row
//!   count then each column's total token count, as SQLite varints
//!   ([`averages`] reads it, for `Index::fts_totals`);
//! * FTS5 counts a column's tokens as `core::trigram` does (its `_docsize`
//!   rows: one varint per column);
//! * `bm25()` and `snippet()` compute what `core::bm25` and `core::snippet`
//!   compute, which follow SQLite [`CHECKED_SQLITE`].
//!
//! [`check`] builds a small table like the index's in a database in memory,
//! reads it those ways and compares with FTS5's own answers. The index calls
//! it when it opens and refuses to open on a mismatch
//! ([`StoreError::FtsLayout`]) rather than return wrong ranks; an index file
//! notes the [`stamp`] of the build that passed it, and that build skips the
//! check on the file from then on. This module reads no file but the
//! metadata of the running executable, and must not touch the index's own
//! tables.

use std::sync::OnceLock;

use rusqlite::{Connection, OptionalExtension as _};

use crate::core::bm25::Bm25;
use crate::core::snippet::{SnippetStyle, snippet};
use crate::core::trigram::TrigramText;
use crate::store::error::{StoreError, StoreResult};

/// The SQLite release whose FTS5 the decoders and `core::bm25` /
/// `core::snippet` were written against (the one rusqlite bundles as
/// Cargo.lock pins it).
pub const CHECKED_SQLITE: &str = "3.54";

/// The self-test's rows (topic, body): several sentences, repeats of the
/// phrase (overlapping ones too), text beyond ASCII, a row without the phrase
/// (it counts for the IDF), and more than 127 tokens in all, so the averages
/// record holds a varint of two bytes.
const ROWS: [(&str, &str); 4] = [
    ("Greeting", "Hello world. Hello again: hello!"),
    (
        "release notes",
        "Ship it on Friday. Then say hello to the team at the école in Zürich; naïve café.",
    ),
    ("nothing here", "no match in this one"),
    (
        "hello hello",
        "Lorem ipsum dolor sit amet. Lorem ipsum dolor sit amet. Lorem ipsum dolor sit amet. \
         Lorem ipsum dolor sit amet. hellohello and more words after it, to fill the window.",
    ),
];

/// The self-test's query: one phrase, as search sends it to FTS5.
const PHRASE: &str = "hello";

/// Search's snippet style (`snippet(t, -1, '[', ']', '…', 12)`).
const STYLE: SnippetStyle<'static> = SnippetStyle {
    open: "[",
    close: "]",
    ellipsis: "…",
    tokens: 12,
};

/// Checks, once per process, that the linked SQLite's FTS5 stores and
/// computes what search reads the way it reads it.
///
/// # Errors
///
/// [`StoreError::FtsLayout`], naming the linked SQLite's version and what
/// differs, on a mismatch (every call of the process then fails the same way).
pub fn check() -> StoreResult<()> {
    static OUTCOME: OnceLock<Result<(), String>> = OnceLock::new();
    OUTCOME
        .get_or_init(|| match observe() {
            Ok(seen) => judge(&seen),
            Err(e) => Err(format!("the self-test table could not be read ({e})")),
        })
        .clone()
        .map_err(mismatch)
}

/// What identifies the outcome of [`check`]: the linked SQLite, the release
/// the code was checked against, and this very executable (its length and
/// modification time: a rebuild may change the ranking code without a new
/// version). `None` when the executable cannot be looked at: then every open
/// checks.
pub fn stamp() -> Option<&'static str> {
    static STAMP: OnceLock<Option<String>> = OnceLock::new();
    STAMP
        .get_or_init(|| {
            let exe = std::env::current_exe().and_then(std::fs::metadata).ok()?;
            let modified = exe
                .modified()
                .ok()?
                .duration_since(std::time::UNIX_EPOCH)
                .ok()?;
            Some(format!(
                "sqlite {} (checked against {CHECKED_SQLITE}), executable of {} bytes modified at \
                 {}.{:09}",
                rusqlite::version(),
                exe.len(),
                modified.as_secs(),
                modified.subsec_nanos()
            ))
        })
        .as_deref()
}

/// The error for a mismatch described by `what`.
fn mismatch(what: String) -> StoreError {
    StoreError::FtsLayout {
        sqlite: rusqlite::version().to_owned(),
        checked: CHECKED_SQLITE,
        what,
    }
}

/// Decodes the averages record of a two-column FTS5 table: the row count and
/// the total token count over both columns. `None` when it does not hold
/// exactly three varints, or no rows.
pub fn averages(block: &[u8]) -> Option<(i64, i64)> {
    match varints(block)?[..] {
        [rows, topic, body] if rows > 0 => Some((rows, topic.checked_add(body)?)),
        _ => None,
    }
}

/// Decodes a record that is nothing but SQLite varints (as FTS5's averages
/// and `_docsize` records are). `None` if one is cut short or too large.
fn varints(mut bytes: &[u8]) -> Option<Vec<i64>> {
    let mut out = Vec::new();
    while !bytes.is_empty() {
        let (v, n) = sqlite_varint(bytes)?;
        out.push(i64::try_from(v).ok()?);
        bytes = &bytes[n..];
    }
    Some(out)
}

/// Decodes one SQLite varint (big-endian groups of 7 bits with a
/// continuation bit; the 9th byte gives all 8): the value and its length.
fn sqlite_varint(bytes: &[u8]) -> Option<(u64, usize)> {
    let mut v: u64 = 0;
    for (i, &b) in bytes.iter().take(9).enumerate() {
        if i == 8 {
            return Some(((v << 8) | u64::from(b), 9));
        }
        v = (v << 7) | u64::from(b & 0x7f);
        if b & 0x80 == 0 {
            return Some((v, i + 1));
        }
    }
    None
}

/// The self-test table as read the ways search reads it, and what FTS5 says
/// of the phrase.
#[derive(Clone, Debug)]
struct Observed {
    /// Row 1 of `t_data`.
    averages: Option<Vec<u8>>,
    /// `t_docsize.sz` of each row, in rowid order (rowid `i + 1` is `ROWS[i]`).
    sizes: Vec<Vec<u8>>,
    /// (rowid, `bm25(t)`, `snippet(t, …)`) of each row matching the phrase.
    hits: Vec<(i64, f64, String)>,
}

/// Builds the self-test table in memory, as the index's `bodies_fts` is made
/// (external content, trigram tokenizer), and reads it.
fn observe() -> rusqlite::Result<Observed> {
    let c = Connection::open_in_memory()?;
    c.execute_batch(
        "CREATE TABLE bodies(rowid INTEGER PRIMARY KEY, topic TEXT NOT NULL, body TEXT NOT NULL);
         CREATE VIRTUAL TABLE t USING fts5(
             topic, body, content='bodies', content_rowid='rowid', tokenize='trigram');",
    )?;
    for (i, (topic, body)) in ROWS.iter().enumerate() {
        c.execute(
            "INSERT INTO bodies(rowid, topic, body) VALUES (?1, ?2, ?3)",
            rusqlite::params![i as i64 + 1, topic, body],
        )?;
    }
    c.execute_batch("INSERT INTO t(rowid, topic, body) SELECT rowid, topic, body FROM bodies")?;
    let averages = c
        .query_row("SELECT block FROM t_data WHERE id = 1", [], |r| r.get(0))
        .optional()?;
    let sizes = c
        .prepare("SELECT sz FROM t_docsize ORDER BY id")?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let hits = c
        .prepare(
            "SELECT rowid, bm25(t), snippet(t, -1, '[', ']', '…', 12) FROM t \
             WHERE t MATCH ?1 ORDER BY rowid",
        )?
        .query_map([format!("\"{PHRASE}\"")], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })?
        .collect::<rusqlite::Result<_>>()?;
    Ok(Observed {
        averages,
        sizes,
        hits,
    })
}

/// Compares what was read with what search computes from the same text;
/// `Err` says what differs.
fn judge(seen: &Observed) -> Result<(), String> {
    let cols: Vec<[TrigramText<'_>; 2]> = ROWS
        .iter()
        .map(|(topic, body)| [TrigramText::new(topic), TrigramText::new(body)])
        .collect();
    let tokens: Vec<[i64; 2]> = cols
        .iter()
        .map(|c| c.each_ref().map(|t| t.tokens() as i64))
        .collect();
    let rows = ROWS.len() as i64;
    let total: i64 = tokens.iter().flatten().sum();
    let read = seen.averages.as_deref().and_then(averages);
    if read != Some((rows, total)) {
        return Err(format!(
            "the averages record (row 1 of the _data table) reads as {read:?}, not \
             Some(({rows}, {total}))"
        ));
    }
    let sizes: Vec<Option<Vec<i64>>> = seen.sizes.iter().map(|s| varints(s)).collect();
    let expected: Vec<Option<Vec<i64>>> = tokens.iter().map(|t| Some(t.to_vec())).collect();
    if sizes != expected {
        return Err(format!(
            "the _docsize records read as {sizes:?}, while the trigram tokens are {expected:?}"
        ));
    }
    let needle: Vec<char> = PHRASE.chars().collect();
    let matching: Vec<i64> = (1..=rows)
        .filter(|&id| {
            cols[id as usize - 1]
                .iter()
                .any(|c| !c.occurrences(&needle).is_empty())
        })
        .collect();
    let found: Vec<i64> = seen.hits.iter().map(|h| h.0).collect();
    if found != matching {
        return Err(format!("rows {found:?} match {PHRASE:?}, not {matching:?}"));
    }
    let bm25 = Bm25::new(rows, total, matching.len() as i64);
    for (rowid, rank, snip) in &seen.hits {
        let row = &cols[*rowid as usize - 1];
        let freq = row.iter().map(|c| c.occurrences(&needle).len()).sum();
        let size = row.iter().map(TrigramText::tokens).sum();
        let ours = bm25.score(freq, size);
        if ours.to_bits() != rank.to_bits() {
            return Err(format!(
                "bm25() of row {rowid} is {rank:?}, computed {ours:?}"
            ));
        }
        let ours = snippet(row, &needle, &STYLE);
        if ours != *snip {
            return Err(format!(
                "snippet() of row {rowid} is {snip:?}, computed {ours:?}"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A varint as SQLite writes it (values below 2^56).
    fn varint(mut v: u64) -> Vec<u8> {
        let mut groups = vec![(v & 0x7f) as u8];
        v >>= 7;
        while v > 0 {
            groups.push((v & 0x7f) as u8 | 0x80);
            v >>= 7;
        }
        groups.reverse();
        groups
    }

    fn real() -> Observed {
        observe().expect("the self-test table reads")
    }

    #[test]
    fn the_linked_sqlite_passes() {
        assert_eq!(judge(&real()), Ok(()));
        check().unwrap();
        check().unwrap();
        assert!(
            rusqlite::version().starts_with(&format!("{CHECKED_SQLITE}.")),
            "the bundled SQLite is {}: check the FTS5 code against it and update CHECKED_SQLITE",
            rusqlite::version()
        );
    }

    #[test]
    fn the_self_test_reaches_what_search_reads() {
        let seen = real();
        // A two-byte varint in the averages record, and several hits, one
        // with a repeated phrase.
        let block = seen.averages.as_deref().unwrap();
        assert!(block.len() > 3, "{block:?}");
        assert_eq!(seen.hits.len(), 3);
        assert!(
            seen.hits
                .iter()
                .any(|h| h.2.contains("[hello]") && h.2.contains('…'))
        );
    }

    #[test]
    fn varints_decode_as_sqlite_writes_them() {
        for v in [0, 1, 127, 128, 300, 16_383, 16_384, 1 << 40, (1 << 56) - 1] {
            assert_eq!(sqlite_varint(&varint(v)), Some((v, varint(v).len())), "{v}");
        }
        assert_eq!(sqlite_varint(&[0xff; 9]), Some((u64::MAX, 9)));
        assert_eq!(sqlite_varint(&[0x81]), None);
        assert_eq!(
            averages(&[varint(3), varint(200), varint(1)].concat()),
            Some((3, 201))
        );
        assert_eq!(averages(&[0, 5, 5]), None, "no rows");
    }

    #[test]
    fn an_averages_record_of_another_layout_is_refused() {
        let good = real();
        let (rows, total) = averages(good.averages.as_deref().unwrap()).unwrap();
        let layouts = [
            // Fixed-width integers instead of varints.
            [rows.to_be_bytes(), total.to_be_bytes()].concat(),
            // A leading version field.
            [
                varint(1),
                varint(rows as u64),
                varint(100),
                varint(total as u64 - 100),
            ]
            .concat(),
            // One total for the whole row instead of one per column.
            [varint(rows as u64), varint(total as u64)].concat(),
            // The columns first, then the row count.
            [varint(100), varint(total as u64 - 100), varint(rows as u64)].concat(),
        ];
        for block in layouts {
            let mut seen = good.clone();
            seen.averages = Some(block.clone());
            let e = judge(&seen).unwrap_err();
            assert!(e.contains("averages record"), "{block:?}: {e}");
        }
        let mut seen = good;
        seen.averages = None;
        assert!(judge(&seen).unwrap_err().contains("averages record"));
    }

    #[test]
    fn other_token_counts_ranks_or_snippets_are_refused() {
        let good = real();
        let mut seen = good.clone();
        seen.sizes[1] = [seen.sizes[1].clone(), vec![0]].concat();
        assert!(judge(&seen).unwrap_err().contains("_docsize"));
        let mut seen = good.clone();
        seen.hits[0].1 = f64::from_bits(seen.hits[0].1.to_bits() + 1);
        assert!(judge(&seen).unwrap_err().contains("bm25()"));
        let mut seen = good.clone();
        seen.hits[2].2.push('…');
        assert!(judge(&seen).unwrap_err().contains("snippet()"));
        let mut seen = good;
        seen.hits.remove(0);
        assert!(judge(&seen).unwrap_err().contains("match"));
    }

    #[test]
    fn the_refusal_names_the_sqlite_and_what_to_do() {
        let e = mismatch("the averages record reads as None".into()).to_string();
        assert!(
            e.contains(&format!("SQLite {}", rusqlite::version())),
            "{e}"
        );
        assert!(e.contains(CHECKED_SQLITE), "{e}");
        assert!(e.contains("the averages record reads as None"), "{e}");
        assert!(e.contains("cargo install --locked"), "{e}");
    }
}
