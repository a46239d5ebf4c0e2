//! Search over bodies a peer wrote has a bounded cost: a run of one
//! character, a phrase repeated through a whole body, a long phrase over such
//! a run, or more text than a search may examine are answered promptly (cut
//! short and marked when needed), and the other calls keep being answered.

use std::cell::Cell;
use std::future::Future;
use std::time::{Duration, Instant};

use countersign::app::budget::Budget;
use countersign::app::search::{SearchFilter, search_messages};
use serde_json::{Value, json};

use crate::common::local::{Local, send};
use crate::common::{Client, Reply, TestChannel};

/// How long a call may take here: generous for a debug build on a loaded
/// machine. Before the search was bounded these calls took minutes.
const BOUND: Duration = Duration::from_secs(20);

/// The largest body sent inline.
const MAX_BODY: usize = 256 * 1024;

/// Awaits `call`, failing the test if it takes longer than [`BOUND`].
async fn within<T>(what: &str, call: impl Future<Output = T>) -> (T, Duration) {
    let started = Instant::now();
    match tokio::time::timeout(BOUND, call).await {
        Ok(v) => (v, started.elapsed()),
        Err(_) => panic!("{what} did not answer within {BOUND:?}"),
    }
}

/// The hits of a search answer.
fn hits(v: &Value) -> &Vec<Value> {
    v["result"].as_array().expect("a result list")
}

async fn search(c: &Client, query: &str) -> Value {
    let args = json!({"query": query, "fields": ["id", "snippet", "match"]});
    within(query, c.call("search_messages", args)).await.0.ok()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_of_one_character_is_searched_while_other_calls_are_answered() {
    let ch = TestChannel::new(&["a", "b"]);
    let a = ch.client("a").await;
    let b = ch.client("b").await;
    let run = "x".repeat(MAX_BODY);
    let id = a.send("b", "run", &run).await;
    b.send("a", "hello", "an ordinary message").await;

    // The search on one session, another call on a second session at the same time.
    let args = json!({"query": "xxx", "fields": ["id", "snippet", "match"]});
    let (found, (inbox, inbox_took)) = tokio::join!(
        within("search 'xxx'", a.call("search_messages", args)),
        within(
            "read_inbox on the other session",
            b.call("read_inbox", json!({}))
        ),
    );
    let (found, took) = found;
    let found = found.ok();
    assert!(
        inbox.ok()["result"].is_array(),
        "the other session answered in {inbox_took:?}"
    );
    assert_eq!(hits(&found).len(), 1, "{found}");
    let hit = &hits(&found)[0];
    assert_eq!(hit["id"], id);
    assert_eq!(hit["match"], "fts");
    // FTS5's own snippet of this row, byte for byte.
    assert_eq!(hit["snippet"], "[xxxxxxxxxxxxxx]…");
    assert!(found.get("truncated").is_none(), "{found}");
    eprintln!("search 'xxx' over {MAX_BODY} bytes of x: {took:?}");

    // A query of several phrases leaves ranking to FTS5; the snippet of a row
    // that would cost FTS5 the square of its instances is cut here. Meanwhile
    // the same session answers a second call as soon as the search is done.
    let (either, roles) = tokio::join!(
        search(&a, "xxx OR yyyy"),
        within(
            "list_roles on the same session",
            a.call("list_roles", json!({}))
        ),
    );
    roles.0.ok();
    assert_eq!(hits(&either).len(), 1, "{either}");
    assert_eq!(hits(&either)[0]["snippet"], "[xxxxxxxxxxxxxx]…");
    assert_eq!(hits(&either)[0]["match"], "fts");

    // A phrase of 4000 x makes FTS5 compare 4000 tokens at every position of
    // the run (34 s for this body, a minute with bm25): it is answered by the
    // scan, with the same meaning.
    let long = search(&a, &format!("\"{}\"", "x".repeat(4000))).await;
    assert_eq!(hits(&long).len(), 1, "{long}");
    assert_eq!(hits(&long)[0]["id"], id);
    assert_eq!(hits(&long)[0]["match"], "substring");
    assert!(long.get("truncated").is_none(), "{long}");
    // And one that no body holds finds nothing, just as fast.
    let none = search(&a, &format!("\"{}y\"", "x".repeat(4000))).await;
    assert!(hits(&none).is_empty(), "{none}");
    a.close().await;
    b.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn thousands_of_matches_in_one_row() {
    let ch = TestChannel::new(&["a", "b"]);
    let a = ch.client("a").await;
    let words = "abc ".repeat(60_000);
    let many = a.send("b", "words", &words).await;
    let once = a.send("b", "once", "abc appears once here").await;

    for query in ["abc", "abc OR zzzz", "abc NOT zzzz"] {
        let found = search(&a, query).await;
        let ids: Vec<&Value> = hits(&found).iter().map(|h| &h["id"]).collect();
        assert_eq!(ids, [&json!(many), &json!(once)], "{query}: {found}");
        // 60,000 instances: FTS5's snippet would recount them all at each one.
        assert_eq!(
            hits(&found)[0]["snippet"],
            "[abc] [abc] [abc] ab…",
            "{query}"
        );
        assert_eq!(hits(&found)[1]["snippet"], "[abc] appears on…", "{query}");
        assert!(found.get("truncated").is_none(), "{query}: {found}");
    }
    a.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn more_text_than_a_search_may_examine_is_cut_short_and_marked() {
    let ch = TestChannel::new(&["a", "b"]);
    let a = ch.client("a").await;
    let run = "x".repeat(MAX_BODY);
    let mut ids = Vec::new();
    for i in 0..3 {
        ids.push(a.send("b", &format!("run {i}"), &run).await);
    }
    // 200 terms under 3 characters: a scan, with a pass over each body per
    // term. One body costs 201 passes of 256 KiB, 52 Mi of the 64 Mi steps a
    // search may take: the second does not fit.
    let mut query = "xx".to_owned();
    for i in 0..199 {
        query.push_str(&format!(" OR q{}", i % 10));
    }
    let (found, took) = within(
        "the scan",
        a.call("search_messages", json!({"query": query, "fields": ["id"]})),
    )
    .await;
    let found = found.ok();
    assert_eq!(
        hits(&found),
        &vec![json!({"id": ids[2]})],
        "the newest, found before the cap: {found}"
    );
    let truncated = &found["truncated"];
    assert_eq!(truncated["reason"], "work", "{found}");
    assert_eq!(truncated["returned"], 1);
    assert!(
        truncated["note"]
            .as_str()
            .is_some_and(|n| n.contains("stopped early")),
        "{found}"
    );
    eprintln!("scan cut short after {took:?}");
    // A search within the budget is whole and unmarked.
    let one = search(&a, "xx").await;
    assert_eq!(hits(&one).len(), 3, "{one}");
    assert!(one.get("truncated").is_none(), "{one}");
    a.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cancelled_search_frees_the_session() {
    let ch = TestChannel::new(&["a", "b"]);
    let a = ch.client("a").await;
    a.send("b", "run", &"x".repeat(MAX_BODY)).await;
    // The client gives up on the search: dropping the call sends
    // notifications/cancelled for it.
    let args = json!({"query": "xxx"}).as_object().unwrap().clone();
    let params = rmcp::model::CallToolRequestParams::new("search_messages").with_arguments(args);
    let gave_up = tokio::time::timeout(Duration::from_millis(20), a.inner.call_tool(params)).await;
    assert!(
        gave_up.is_err(),
        "the search answered before the client gave up"
    );
    // The session is free for the next call.
    let (roles, _) = within(
        "a call after a cancelled search",
        a.call("list_roles", json!({})),
    )
    .await;
    assert!(matches!(roles, Reply::Ok(_)), "{roles:?}");
    a.close().await;
}

/// Texts for the in-process searches.
fn session_with_messages(n: usize, body: &str) -> (Local, countersign::app::Session) {
    let local = Local::new(&["a", "b"]);
    let mut s = local.session("a");
    for i in 0..n {
        send(&mut s, "b", &format!("note {i}"), body);
    }
    (local, s)
}

#[test]
fn every_path_stops_at_the_budget_with_what_it_found() {
    let body = "the needle is here. ".repeat(50);
    let (_local, mut s) = session_with_messages(6, &body);
    let never = || false;
    let filter = SearchFilter::default();
    // One phrase (ranked here), several phrases (ranked by FTS5), a short term (the scan).
    let ids = |v: &Value| -> Vec<Value> { hits(v).iter().map(|h| h["id"].clone()).collect() };
    // Budgets, in bodies' lengths, that hold some of the rows only: the
    // one-phrase path reads every match then cuts snippets (8 steps a
    // byte); FTS5's snippet of these rows is weighed at about 12; the scan
    // makes one pass per phrase, plus one.
    for (query, bodies) in [("needle", 24), ("needle OR zzzz", 30), ("ne", 7)] {
        let mut whole = Budget::search(&never);
        let all = search_messages(&mut s, query, &filter, 50, None, &mut whole).unwrap();
        let all = serde_json::to_value(all).unwrap();
        assert_eq!(hits(&all).len(), 6, "{query}: {all}");
        assert!(all.get("truncated").is_none(), "{query}");
        let mut small = Budget::new(body.len() as u64 * bodies, &never);
        let some = search_messages(&mut s, query, &filter, 50, None, &mut small).unwrap();
        let some = serde_json::to_value(some).unwrap();
        let n = hits(&some).len();
        assert!((1..6).contains(&n), "{query}: {n} hits");
        assert_eq!(some["truncated"]["reason"], "work", "{query}");
        assert_eq!(some["truncated"]["returned"], n);
        // What was found is the start of the whole answer.
        assert_eq!(ids(&some)[..], ids(&all)[..n], "{query}");
    }
}

#[test]
fn a_cancelled_search_ends_at_its_next_step() {
    let (_local, mut s) = session_with_messages(3, "the needle is here");
    let filter = SearchFilter::default();
    for query in ["needle", "needle OR zzzz", "ne"] {
        let steps = Cell::new(0);
        // The client gives up after the search started.
        let cancelled = || {
            steps.set(steps.get() + 1);
            steps.get() > 1
        };
        let mut budget = Budget::search(&cancelled);
        let err = search_messages(&mut s, query, &filter, 50, None, &mut budget).unwrap_err();
        assert!(err.to_string().contains("cancelled"), "{query}: {err}");
        assert_eq!(steps.get(), 2, "{query}: it stopped at the step after");
    }
}
