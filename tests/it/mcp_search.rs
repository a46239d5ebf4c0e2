//! search_messages through the real server: FTS ranking and snippets, the scan for short
//! terms (same answers where both can answer), the grammar, the literal fallback, limits,
//! filters, and deleted messages never found.

use std::collections::BTreeSet;

use crate::common::{Client, TestChannel, ids};
use serde_json::{Value, json};

async fn search(c: &Client, query: &str) -> Vec<Value> {
    c.call("search_messages", json!({"query": query}))
        .await
        .rows()
}

async fn hit_set(c: &Client, query: &str) -> BTreeSet<String> {
    ids(&search(c, query).await).into_iter().collect()
}

/// A small corpus; returns the ids by name.
async fn corpus(c: &Client) -> std::collections::BTreeMap<&'static str, String> {
    let mut m = std::collections::BTreeMap::new();
    for (name, topic, body) in [
        (
            "rotation",
            "Key rotation",
            "Rotate the API keys before the deploy on Friday.",
        ),
        (
            "rotated",
            "vault",
            "The signing key was rotated yesterday; see vault/keys.",
        ),
        (
            "deploy",
            "Deploy notes",
            "deploy deploy deploy: the pipeline is green",
        ),
        (
            "deploylong",
            "misc",
            "Many unrelated words here, about lunch, coffee, meetings, and also one deploy mention at the end of a long rambling body text.",
        ),
        (
            "cpp",
            "C++ build",
            "Compile with gcc 14; the C++ toolchain is pinned.",
        ),
        ("phrase", "quotes", "He said \"hello world\" and left."),
        ("reversed", "reversed", "the world said hello back"),
        ("ui", "UI polish", "The ui needs an OK button."),
        (
            "merchant",
            "ids",
            "use merchant_id everywhere, not merchantId",
        ),
    ] {
        m.insert(name, c.send("backend", topic, body).await);
    }
    m
}

#[tokio::test]
async fn fts_ranks_by_relevance_with_snippets_and_substring_matching() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let fe = ch.client("frontend").await;
    let ids_by = corpus(&fe).await;

    let rows = search(&fe, "deploy").await;
    let got = ids(&rows);
    assert_eq!(got.len(), 3, "{rows:?}");
    assert_eq!(
        got[0], ids_by["deploy"],
        "the dense, short match ranks first"
    );
    assert_eq!(
        *got.last().unwrap(),
        ids_by["deploylong"],
        "the long, sparse match ranks last"
    );
    for r in &rows {
        assert_eq!(r["match"], "fts");
        let snip = r["snippet"].as_str().unwrap();
        assert!(
            snip.to_lowercase().contains("[deploy]"),
            "snippet marks the match: {snip}"
        );
        assert!(
            r["body"].is_string() && r.get("body_sha256").is_none(),
            "lean rows: the body, no digest of a plain message"
        );
    }
    let long = rows
        .iter()
        .find(|r| r["id"] == ids_by["deploylong"])
        .unwrap();
    assert!(
        long["snippet"].as_str().unwrap().contains('…'),
        "a long body is cut with …: {long}"
    );

    // Substring, case-insensitive: rotat finds rotation, Rotate and rotated.
    assert_eq!(
        hit_set(&fe, "ROTAT").await,
        BTreeSet::from([ids_by["rotation"].clone(), ids_by["rotated"].clone()])
    );
    assert_eq!(
        hit_set(&fe, "merchant_id").await,
        BTreeSet::from([ids_by["merchant"].clone()])
    );
    assert!(search(&fe, "kubernetes").await.is_empty());

    // Equal relevance: the newer message first.
    let older = fe.send("backend", "twin", "zebra crossing").await;
    let newer = fe.send("backend", "twin", "zebra crossing").await;
    assert_eq!(ids(&search(&fe, "zebra").await), vec![newer, older]);
    fe.close().await;
}

#[tokio::test]
async fn short_terms_are_scanned_with_the_same_meaning() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let fe = ch.client("frontend").await;
    let ids_by = corpus(&fe).await;

    let rows = search(&fe, "ok").await;
    assert_eq!(ids(&rows), vec![ids_by["ui"].clone()]);
    assert_eq!(rows[0]["match"], "substring");
    assert_eq!(
        rows[0]["snippet"], "The ui needs an OK button.",
        "the snippet is the body's start"
    );

    // The scan gives the FTS answer on a query both can answer: the short negated term
    // excludes nothing here but forces the scan.
    for (fts, scan) in [
        ("rotat", "rotat NOT zq"),
        ("deploy", "deploy NOT qz"),
        ("\"hello world\"", "\"hello world\" NOT qz"),
    ] {
        let a = search(&fe, fts).await;
        let b = search(&fe, scan).await;
        assert!(a.iter().all(|r| r["match"] == "fts"), "{fts}");
        assert!(b.iter().all(|r| r["match"] == "substring"), "{scan}");
        let (sa, sb): (BTreeSet<String>, BTreeSet<String>) =
            (ids(&a).into_iter().collect(), ids(&b).into_iter().collect());
        assert!(!sa.is_empty());
        assert_eq!(sa, sb, "{fts} vs {scan}");
    }
    // The scan's snippet is the first 200 characters of the body.
    let long_body = format!("ok {}", "ü".repeat(300));
    let long = fe.send("backend", "long", &long_body).await;
    let rows = search(&fe, "ok").await;
    let hit = rows.iter().find(|r| r["id"] == long).unwrap();
    assert_eq!(
        hit["snippet"].as_str().unwrap(),
        long_body.chars().take(200).collect::<String>()
    );

    // Scan order is newest first.
    let rows = search(&fe, "e OR ok").await;
    let all = fe.all_messages().await;
    let expected: Vec<String> = ids(&all)
        .into_iter()
        .filter(|id| rows.iter().any(|r| &r["id"] == id))
        .collect();
    assert_eq!(ids(&rows), expected);
    assert!(rows.len() > 3);

    // Syntax the scan cannot mimic is refused only together with a short term.
    for q in [
        "NEAR(ok button)",
        "topic:(ok OR polish)",
        "ok + polish",
        "ok ^polish",
    ] {
        fe.call("search_messages", json!({"query": q}))
            .await
            .value_error("cannot be combined with a term shorter than 3 characters");
    }
    fe.call("search_messages", json!({"query": "NEAR(button polish)"}))
        .await
        .ok();
    fe.close().await;
}

#[tokio::test]
async fn the_grammar_and_or_not_phrase_prefix_and_columns() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let fe = ch.client("frontend").await;
    let i = corpus(&fe).await;
    let set = |names: &[&str]| {
        names
            .iter()
            .map(|n| i[n].clone())
            .collect::<BTreeSet<String>>()
    };

    assert_eq!(
        hit_set(&fe, "before keys").await,
        set(&["rotation"]),
        "bare words AND"
    );
    assert_eq!(hit_set(&fe, "before AND keys").await, set(&["rotation"]));
    assert_eq!(hit_set(&fe, "gcc OR vault").await, set(&["cpp", "rotated"]));
    assert_eq!(hit_set(&fe, "rotat NOT vault").await, set(&["rotation"]));
    assert_eq!(
        hit_set(&fe, "\"hello world\"").await,
        set(&["phrase"]),
        "a phrase keeps its order"
    );
    assert_eq!(
        hit_set(&fe, "hello world").await,
        set(&["phrase", "reversed"])
    );
    assert_eq!(
        hit_set(&fe, "rota*").await,
        set(&["rotation", "rotated"]),
        "prefix"
    );
    assert_eq!(
        hit_set(&fe, "topic:deploy").await,
        set(&["deploy"]),
        "column filter"
    );
    assert_eq!(
        hit_set(&fe, "body:deploy").await,
        set(&["deploy", "deploylong", "rotation"])
    );
    assert_eq!(hit_set(&fe, "topic:vault").await, set(&["rotated"]));
    // Precedence: adjacent terms bind tightest, then NOT, AND, OR.
    assert_eq!(
        hit_set(&fe, "gcc OR before keys").await,
        set(&["cpp", "rotation"])
    );
    assert_eq!(
        hit_set(&fe, "(gcc OR before) AND keys").await,
        set(&["rotation"])
    );
    assert_eq!(hit_set(&fe, "hello NOT back world").await, set(&["phrase"]));
    // A doubled quote inside a phrase is a literal quote.
    assert_eq!(hit_set(&fe, "\"said \"\"hello\"").await, set(&["phrase"]));
    fe.close().await;
}

#[tokio::test]
async fn unparseable_queries_are_searched_literally() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let fe = ch.client("frontend").await;
    let i = corpus(&fe).await;
    let re = fe
        .send("backend", "re: budget", "answering the budget")
        .await;
    let andnot = fe
        .send("backend", "logic", "we want a AND NOT b here")
        .await;

    let rows = search(&fe, "C++").await;
    assert_eq!(ids(&rows), vec![i["cpp"].clone()], "C++ searched literally");
    assert_eq!(
        hit_set(&fe, "c++ toolchain").await,
        BTreeSet::from([i["cpp"].clone()])
    );
    assert_eq!(hit_set(&fe, "re:").await, BTreeSet::from([re]));
    assert_eq!(hit_set(&fe, "a AND NOT b").await, BTreeSet::from([andnot]));
    assert_eq!(
        hit_set(&fe, "\"hello world").await,
        BTreeSet::from([i["phrase"].clone()]),
        "unterminated phrase"
    );
    fe.close().await;
}

#[tokio::test]
async fn query_limits_are_refused_on_every_path() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let fe = ch.client("frontend").await;
    fe.send("backend", "t", "b").await;
    for blank in ["", "   "] {
        fe.call("search_messages", json!({"query": blank}))
            .await
            .value_error("'query' is required");
    }
    // Long: FTS words, short words (scan), and unparseable text (literal).
    for unit in ["abc ", "ab ", "c++ "] {
        let q = unit.repeat(4097 / unit.len() + 1);
        fe.call("search_messages", json!({"query": q}))
            .await
            .value_error("at most 4096 characters");
    }
    for unit in ["abc ", "ab ", "c++ "] {
        let q = unit.repeat(257);
        fe.call("search_messages", json!({"query": q}))
            .await
            .value_error("at most 256 terms");
        let q = unit.repeat(256);
        fe.call("search_messages", json!({"query": q})).await.ok();
    }
    for term in ["abc", "ab"] {
        let q = format!("{}{term}{}", "(".repeat(257), ")".repeat(257));
        fe.call("search_messages", json!({"query": q}))
            .await
            .value_error("nest parentheses at most 256 deep");
        let q = format!("{}{term}{}", "(".repeat(256), ")".repeat(256));
        fe.call("search_messages", json!({"query": q})).await.ok();
    }
    fe.close().await;
}

#[tokio::test]
async fn filters_and_deleted_messages() {
    let ch = TestChannel::new(&["alpha", "beta", "gamma"]);
    let a = ch.client("alpha").await;
    let b = ch.client("beta").await;
    let to_beta = a
        .send_with(
            json!("beta"),
            "deploy",
            "deploy now",
            json!({"kind": "feat"}),
        )
        .await;
    let debt = a
        .send_with(
            json!("gamma"),
            "deploy fix",
            "deploy is broken",
            json!({"action_required": true, "kind": "bug"}),
        )
        .await;
    let bcast = a
        .send_with(
            json!("*"),
            "deploy status",
            "deploy went fine",
            json!({"kind": "status"}),
        )
        .await;
    let from_b = b.send("alpha", "re deploy", "deploy thanks").await;

    let q = |extra: Value| {
        let mut args = json!({"query": "deploy"});
        args.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        a.call("search_messages", args)
    };
    let set = |v: &[&String]| v.iter().map(|s| (*s).clone()).collect::<BTreeSet<String>>();
    let got = |rows: Vec<Value>| ids(&rows).into_iter().collect::<BTreeSet<String>>();
    assert_eq!(
        got(q(json!({"from_role": "beta"})).await.rows()),
        set(&[&from_b])
    );
    assert_eq!(
        got(q(json!({"to_role": "gamma"})).await.rows()),
        set(&[&debt, &bcast]),
        "to_role finds broadcasts"
    );
    assert_eq!(
        got(q(json!({"to_role": "beta"})).await.rows()),
        set(&[&to_beta, &bcast])
    );
    assert_eq!(got(q(json!({"kind": "bug"})).await.rows()), set(&[&debt]));
    assert_eq!(
        got(q(json!({"status": "open"})).await.rows()),
        set(&[&debt])
    );
    assert!(q(json!({"status": "resolved"})).await.rows().is_empty());
    q(json!({"kind": "nope"}))
        .await
        .value_error("'kind' must be one of");
    q(json!({"status": "nope"}))
        .await
        .value_error("'status' must be one of");
    // The same filters on the scan path.
    let scan = a
        .call(
            "search_messages",
            json!({"query": "deploy NOT zq", "to_role": "gamma"}),
        )
        .await
        .rows();
    assert_eq!(got(scan), set(&[&debt, &bcast]));

    // Deleted messages are never found, by the index or by the scan.
    a.call("delete_message", json!({"message_id": to_beta}))
        .await
        .ok();
    assert!(!hit_set(&a, "deploy").await.contains(&to_beta));
    assert!(!hit_set(&a, "deploy NOT zq").await.contains(&to_beta));
    assert!(!hit_set(&a, "now").await.contains(&to_beta));
    assert_eq!(hit_set(&a, "deploy").await.len(), 3);
    a.close().await;
    b.close().await;
}
