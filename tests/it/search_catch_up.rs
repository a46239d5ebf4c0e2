//! Search while the full-text index catches up after a rebuild.
//!
//! A rebuild commits the rows first and fills the full-text index after them
//! (`Channel::reindex_rows`, then `Channel::complete_search_index`). These
//! tests stop a rebuild between the two, through the store's own API as a
//! process that dies there would, and check what the next process sees:
//! every other tool answers, search refuses with how far the index got
//! until it has caught up, and then answers exactly as after a whole rebuild.

use std::time::Duration;

use countersign::app::Session;
use countersign::app::budget::Budget;
use countersign::app::listing::{ListFilter, list_messages};
use countersign::app::refusal::AppResult;
use countersign::app::search::{SearchFilter, search_messages};
use countersign::app::session::SEARCH_CATCH_UP;

use crate::common::local::{Local, send};

/// The whole answer of a search, as JSON (rows in order, snippets, match
/// kinds, truncation).
fn search(s: &mut Session, query: &str) -> AppResult<serde_json::Value> {
    let never = || false;
    let mut budget = Budget::search(&never);
    let answer = search_messages(s, query, &SearchFilter::default(), 50, None, &mut budget)?;
    Ok(serde_json::to_value(answer).unwrap())
}

/// Queries that take each path of search: one phrase, a ranked query of
/// several, a query FTS5 cannot see (answered by the scan).
const QUERIES: [&str; 4] = ["idempotency", "retry OR key", "key NOT retry", "ab"];

/// A channel of 40 messages whose search answers differ by rank.
fn channel() -> Local {
    let local = Local::new(&["a", "b"]);
    let mut s = local.session("a");
    for i in 0..40 {
        let body = format!(
            "body {i}: the idempotency key {} ab",
            "retry ".repeat(i % 7)
        );
        send(&mut s, "b", &format!("note {i}"), &body);
    }
    local
}

#[test]
fn a_rebuild_stopped_after_its_rows_searches_as_a_whole_one_once_caught_up() {
    let local = channel();
    let mut s = local.session("a");
    s.channel_mut().reindex(None).unwrap();
    let whole: Vec<_> = QUERIES.iter().map(|q| search(&mut s, q).unwrap()).collect();
    assert_eq!(whole[0]["result"].as_array().unwrap().len(), 40);
    drop(s);

    // The rows of a rebuild, and the process stops there.
    local.channel().reindex_rows(None).unwrap();

    let mut s = local.session("a");
    s.channel_mut().set_search_batch(16);
    s.set_search_catch_up(Duration::ZERO);
    // Every other tool answers from the rebuilt rows at once.
    let listed = list_messages(&mut s, &ListFilter::default(), 100, None).unwrap();
    assert_eq!(listed.result.len(), 40);
    // Search says it is catching up, and how far it got; each search moves
    // the index on by one step.
    for indexed in [16, 32] {
        let e = search(&mut s, "idempotency").unwrap_err();
        assert_eq!(e.kind(), Some("ValueError"), "{e}");
        let text = e.to_string();
        assert!(text.starts_with("index catching up"), "{text}");
        assert!(
            text.contains(&format!("holds {indexed} of 40 message texts")),
            "{text}"
        );
        assert!(text.contains("Try again in a few seconds"), "{text}");
    }
    // With the ordinary budget the next search finishes the index and
    // answers exactly as after a whole rebuild, on every path.
    s.set_search_catch_up(SEARCH_CATCH_UP);
    let caught_up: Vec<_> = QUERIES.iter().map(|q| search(&mut s, q).unwrap()).collect();
    assert_eq!(caught_up, whole);
    assert_eq!(s.index().search_backlog().unwrap(), None);
}

#[test]
fn a_search_finishes_a_small_backlog_within_its_budget() {
    // A rebuild stopped after its rows on a channel smaller than one step:
    // the first search fills the whole index and answers, never refuses.
    let local = channel();
    let mut s = local.session("a");
    s.channel_mut().reindex(None).unwrap();
    let whole = search(&mut s, "retry OR key").unwrap();
    drop(s);
    local.channel().reindex_rows(None).unwrap();
    let mut s = local.session("a");
    s.set_search_catch_up(Duration::ZERO);
    assert_eq!(search(&mut s, "retry OR key").unwrap(), whole);
}
