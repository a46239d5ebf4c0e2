//! Proposals, votes, revisions and pins over a real MCP client: the explicit
//! answers a proposal needs, the electorate and its tally, awaiting_ack, the
//! approval rule of pin_set (each refusal also through dry_run, with the same
//! problem), one open round per key, retirement of proposals and nudges.

use crate::common;
use crate::common::{Client, TestChannel, ids};
use serde_json::{Value, json};

const ROLES: &[&str] = &["alpha", "beta", "gamma"];

/// A proposal for `key` to every other role with `voters`; returns its id.
async fn round(c: &Client, key: &str, voters: Value, body: &str) -> String {
    c.send_with(
        json!("*"),
        &format!("proposal for {key}"),
        body,
        json!({"kind": "proc", "pin_key": key, "about_message_id": null, "voters": voters}),
    )
    .await
}

async fn ack(c: &Client, id: &str, decision: &str) -> Value {
    c.call(
        "acknowledge",
        json!({"message_id": id, "decision": decision}),
    )
    .await
    .ok()
}

async fn tally(c: &Client, id: &str) -> Value {
    c.call(
        "get_acknowledgements",
        json!({"message_id": id, "fields": "headers"}),
    )
    .await
    .ok()
}

async fn awaiting(c: &Client) -> Vec<String> {
    ids(&c.call("awaiting_ack", json!({})).await.rows())
}

fn pin(key: &str, version: &str, body: &str, approved_by: Option<&str>) -> Value {
    json!({"key": key, "title": format!("{key} rules"), "version": version, "body": body,
           "approved_by": approved_by})
}

/// pin_set refused with `needle`, and dry_run gives the same problem and writes nothing.
async fn pin_refused(ch: &TestChannel, c: &Client, args: Value, needle: &str) -> Value {
    let before = ch.feed_records();
    let msg = c.call("pin_set", args.clone()).await.value_error(needle);
    let mut dry = args;
    dry["dry_run"] = json!(true);
    let d = c.call("pin_set", dry).await.ok();
    assert_eq!(d["ok"], false, "{d}");
    assert_eq!(d["written"], false);
    assert_eq!(
        d["problem"], msg,
        "dry_run and the real call name the same problem"
    );
    assert_eq!(
        ch.feed_records(),
        before,
        "a refused pin_set writes nothing"
    );
    d
}

#[tokio::test]
async fn a_proposal_needs_its_explicit_answers_and_a_round_its_voters() {
    let ch = TestChannel::new(ROLES);
    let a = ch.client("alpha").await;
    a.send("beta", "hello", "first write sets up the feed")
        .await;
    let before = ch.feed_records();
    let send = |extra: Value| {
        let mut args = json!({"to": "*", "topic": "p", "body": "b", "kind": "proc"});
        args.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        a.call("send_message", args)
    };
    send(json!({"about_message_id": null}))
        .await
        .value_error("explicit 'pin_key'");
    send(json!({"pin_key": null}))
        .await
        .value_error("explicit 'about_message_id'");
    send(json!({"pin_key": null, "about_message_id": null, "voters": "*"}))
        .await
        .value_error("only means something together with 'pin_key'");
    send(json!({"pin_key": "api", "about_message_id": null}))
        .await
        .value_error("must declare 'voters'");
    send(json!({"pin_key": "api", "about_message_id": null, "voters": ["zeta"]}))
        .await
        .value_error("names 'zeta', which is not a role");
    send(json!({"pin_key": "api", "about_message_id": null, "voters": ["alpha", " "]}))
        .await
        .value_error("'voters' cannot be empty");
    a.call(
        "send_message",
        json!({"to": "beta", "topic": "p", "body": "b", "kind": "proc", "pin_key": "api",
               "about_message_id": null, "voters": "*"}),
    )
    .await
    .value_error("['gamma'] are missing");
    a.call(
        "send_message",
        json!({"to": "beta", "topic": "p", "body": "b", "kind": "proc", "about_message_id": "abcdef"}),
    )
    .await
    .value_error("explicit 'pin_key'");
    assert_eq!(ch.feed_records(), before, "refusals wrote nothing");

    // Null answers are answers; other kinds keep the fields optional.
    let free = a
        .send_with(
            json!("beta"),
            "idea",
            "b",
            json!({"kind": "proc", "pin_key": null, "about_message_id": null}),
        )
        .await;
    a.send_with(json!("beta"), "bug", "b", json!({"kind": "bug"}))
        .await;
    let v = a
        .call(
            "send_message",
            json!({"to": "*", "topic": "p", "body": "b", "kind": "proc", "pin_key": "api",
                   "about_message_id": null, "voters": ["beta", "alpha"]}),
        )
        .await
        .ok();
    assert_eq!(
        v["voters"],
        json!(["beta"]),
        "own role dropped, stored sorted"
    );
    let rows = a.all_messages().await;
    let r = rows.iter().find(|r| r["id"] == v["id"]).unwrap();
    assert_eq!(r["pin_key"], "api");
    assert_eq!(r["voters"], json!(["beta"]));
    assert_eq!(
        r["acks"],
        json!({"agreed": 0, "needed": 1, "missing": ["beta"]})
    );
    let f = rows.iter().find(|r| r["id"] == free.as_str()).unwrap();
    assert_eq!(f["pin_key"], Value::Null);
    let plain = rows.iter().find(|r| r["kind"] == "bug").unwrap();
    assert!(plain.get("acks").is_none(), "only proposals carry acks");
}

#[tokio::test]
async fn votes_tally_the_electorate_and_clear_awaiting_ack() {
    let ch = TestChannel::new(ROLES);
    let (a, b, g) = (
        ch.client("alpha").await,
        ch.client("beta").await,
        ch.client("gamma").await,
    );
    let p = a
        .send_with(
            json!("beta"),
            "use tabs",
            "tabs everywhere",
            json!({"kind": "proc", "pin_key": null, "about_message_id": null}),
        )
        .await;
    let quiet = a
        .send_with(
            json!("beta"),
            "read only",
            "tell me what is wrong",
            json!({"kind": "proc", "pin_key": null, "about_message_id": null,
                   "decision_requested": false}),
        )
        .await;
    assert_eq!(awaiting(&b).await, vec![p.clone()]);
    let st = b.call("channel_status", json!({})).await.ok();
    assert_eq!(st["counts"]["awaiting_ack"], 1);
    assert_eq!(
        b.call("awaiting_ack", json!({"from_role": "gamma"}))
            .await
            .rows()
            .len(),
        0
    );
    a.call("acknowledge", json!({"message_id": p, "decision": "agree"}))
        .await
        .value_error("your own message");
    b.call("acknowledge", json!({"message_id": p, "decision": "maybe"}))
        .await
        .value_error("'decision' must be one of");

    let v = ack(&b, &p, "agree").await;
    assert_eq!(v["role"], "beta");
    assert_eq!(v["decision"], "agree");
    ack(&g, &p, "reject").await;
    assert!(awaiting(&b).await.is_empty(), "any decision answers");
    let t = tally(&a, &p).await;
    assert_eq!(t["agreed"], 1);
    assert_eq!(t["needed"], 1);
    assert_eq!(t["missing"], json!([]));
    assert_eq!(t["voters"], json!(["beta"]));
    assert_eq!(t["from_non_recipients"], json!({"gamma": "reject"}));
    assert!(
        t.get("acknowledgements").is_none(),
        "headers drop the notes"
    );

    // Changing one's mind replaces the vote.
    ack(&b, &p, "needs_changes").await;
    let t = tally(&a, &p).await;
    assert_eq!(t["agreed"], 0);
    assert_eq!(t["missing"], json!(["beta"]));
    let full = a
        .call("get_acknowledgements", json!({"message_id": p}))
        .await
        .ok();
    assert_eq!(full["acknowledgements"].as_array().unwrap().len(), 2);

    // decision_requested=false is never owed, yet may be voted on.
    assert!(!awaiting(&b).await.contains(&quiet));
    ack(&b, &quiet, "agree").await;

    // Deleting a proposal is its author's; the votes go with it.
    b.call("delete_message", json!({"message_id": p}))
        .await
        .permission_error("only its author");
    a.call("delete_message", json!({"message_id": p}))
        .await
        .ok();
    a.call("get_acknowledgements", json!({"message_id": p}))
        .await
        .value_error("not found");
}

#[tokio::test]
async fn a_revision_quenches_the_votes_cast_on_the_old_text() {
    let ch = TestChannel::new(ROLES);
    let (a, b) = (ch.client("alpha").await, ch.client("beta").await);
    let p = round(&a, "style", json!(["beta"]), "first draft").await;
    ack(&b, &p, "agree").await;
    let read = b
        .call("get_acknowledgements", json!({"message_id": p}))
        .await
        .ok();
    let old_sha = read["body_sha256"].as_str().unwrap().to_owned();
    b.call(
        "revise_message",
        json!({"message_id": p, "body": "mine now"}),
    )
    .await
    .permission_error("only the author");
    let same = a
        .call(
            "revise_message",
            json!({"message_id": p, "body": "first draft"}),
        )
        .await
        .ok();
    assert_eq!(same["unchanged"], true);
    let v = a
        .call(
            "revise_message",
            json!({"message_id": p, "body": "second draft", "note": "tightened"}),
        )
        .await
        .ok();
    assert_eq!(v["unchanged"], false);
    assert_eq!(v["previous_body_sha256"], old_sha.as_str());
    assert_eq!(v["quenched_votes"], json!(["beta"]));
    assert_ne!(v["body_sha256"], old_sha.as_str());
    let t = tally(&a, &p).await;
    assert_eq!(t["agreed"], 0);
    assert_eq!(t["quenched_by_revision"], json!({"beta": "agree"}));
    assert_eq!(awaiting(&b).await, vec![p.clone()], "back in awaiting_ack");
    let hist = a
        .call("message_history", json!({"message_id": p}))
        .await
        .rows();
    let rev = hist.iter().find(|e| e["event"] == "revision").unwrap();
    let note = rev["note"].as_str().unwrap();
    assert!(note.contains(&old_sha) && note.contains(v["body_sha256"].as_str().unwrap()));
    assert!(note.contains("tightened"), "{note}");

    // A vote bound to the old text is refused; the fresh digest is accepted.
    b.call(
        "acknowledge",
        json!({"message_id": p, "decision": "agree", "expect_body_sha256": old_sha}),
    )
    .await
    .value_error("re-issued after you read it");
    b.call(
        "acknowledge",
        json!({"message_id": p, "decision": "agree", "expect_body_sha256": v["body_sha256"]}),
    )
    .await
    .ok();
    // The listing shows the new body, and search finds it.
    let row = a
        .all_messages()
        .await
        .into_iter()
        .find(|r| r["id"] == p.as_str())
        .unwrap();
    assert_eq!(row["body"], "second draft");
    assert!(row["revised_at"].is_string());
    let hits = ids(&a
        .call("search_messages", json!({"query": "second draft"}))
        .await
        .rows());
    assert_eq!(hits, vec![p.clone()]);
    let old = a
        .call("search_messages", json!({"query": "first draft"}))
        .await
        .rows();
    assert!(old.is_empty(), "an old revision is not found: {old:?}");

    // Once it approved a version it is kept as it is.
    a.call("pin_set", pin("style", "v1", "second draft", Some(&p)))
        .await
        .ok();
    a.call("revise_message", json!({"message_id": p, "body": "third"}))
        .await
        .value_error("approval record");
    a.call("delete_message", json!({"message_id": p}))
        .await
        .value_error("approval record");
}

#[tokio::test]
async fn pin_set_follows_the_approval_rule_in_order() {
    let ch = TestChannel::new(ROLES);
    let (a, b, g) = (
        ch.client("alpha").await,
        ch.client("beta").await,
        ch.client("gamma").await,
    );
    // Free keys need nothing; reserved ones need approval from the start.
    let v = a
        .call("pin_set", pin("notes", "1", "free text\n", None))
        .await
        .ok();
    assert_eq!(v["updated_by"], "alpha");
    assert_eq!(v["body_length_bytes"], 10);
    pin_refused(
        &ch,
        &a,
        pin("team-charter", "1", "rules", None),
        "key 'team-charter' is protected",
    )
    .await;
    pin_refused(
        &ch,
        &a,
        pin("glossary", "1", "words", Some("abcdef123456")),
        "approved_by message abcdef123456 not found",
    )
    .await;
    let bug = a.send("beta", "a bug", "not a proposal").await;
    pin_refused(
        &ch,
        &a,
        pin("glossary", "1", "words", Some(&bug)),
        "is not a proposal (kind=null)",
    )
    .await;
    let other = round(&a, "contract-version", json!("*"), "v2 of the contract").await;
    pin_refused(
        &ch,
        &a,
        pin("glossary", "1", "words", Some(&other)),
        "is a proposal for pin 'contract-version', not 'glossary'",
    )
    .await;
    let unrelated = a
        .send_with(
            json!("beta"),
            "tabs",
            "use tabs",
            json!({"kind": "proc", "pin_key": null, "about_message_id": null}),
        )
        .await;
    pin_refused(
        &ch,
        &a,
        pin("glossary", "1", "words", Some(&unrelated)),
        "does not name 'glossary'",
    )
    .await;

    let p = round(&a, "glossary", json!("*"), "the words we use").await;
    let d = pin_refused(
        &ch,
        &a,
        pin("glossary", "1", "words", Some(&p)),
        "has no 'agree' acknowledgement",
    )
    .await;
    assert_eq!(d["missing_agrees"], json!(["beta", "gamma"]));
    ack(&b, &p, "agree").await;
    let d = pin_refused(
        &ch,
        &a,
        pin("glossary", "1", "words", Some(&p)),
        "still lacks 'agree' from ['gamma']",
    )
    .await;
    assert_eq!(d["missing_agrees"], json!(["gamma"]));
    ack(&g, &p, "agree").await;
    let dry = a
        .call(
            "pin_set",
            json!({"key": "glossary", "title": "g", "version": "1", "body": "words",
                   "approved_by": p, "dry_run": true}),
        )
        .await
        .ok();
    assert_eq!(dry["ok"], true);
    assert_eq!(dry["would_write"]["body_length_chars"], 5);
    // The dry run spent nothing: the real write still goes through, by any role.
    let v = g
        .call("pin_set", pin("glossary", "1", "words", Some(&p)))
        .await
        .ok();
    assert_eq!(v["approved_by"], p.as_str());
    assert_eq!(v["superseded"], json!([p.clone()]), "the round is settled");
    pin_refused(
        &ch,
        &a,
        pin("glossary", "2", "more words", Some(&p)),
        "already approved a pin update",
    )
    .await;

    // Consent given before the newest version is stale.
    let p2 = round(&a, "glossary", json!(["beta"]), "v2").await;
    ack(&b, &p2, "agree").await;
    // A second proposal cannot open while p2 holds the key.
    g.call(
        "send_message",
        json!({"to": "*", "topic": "again", "body": "x", "kind": "proc",
               "pin_key": "glossary", "about_message_id": null, "voters": "*"}),
    )
    .await
    .value_error(&format!("#{p2}"));
    a.call("pin_set", pin("glossary", "2", "v2", Some(&p2)))
        .await
        .ok();
    let hist = a
        .call(
            "pin_history",
            json!({"key": "glossary", "fields": "headers"}),
        )
        .await
        .rows();
    assert_eq!(hist.len(), 2);
    assert_eq!(hist[0]["version"], "2", "newest first");
    assert!(hist[0].get("body").is_none());
    let got = b.call("pin_get", json!({"key": "glossary"})).await.ok();
    assert_eq!(got["body"], "v2");
    assert_eq!(
        b.call("pin_get", json!({"key": "nothing"})).await.ok(),
        json!({"result": null}),
        "a key never written is null"
    );
    let list = b.call("pin_list", json!({})).await.rows();
    let keys: Vec<&str> = list.iter().map(|r| r["key"].as_str().unwrap()).collect();
    assert_eq!(keys, vec!["glossary", "notes"]);
    assert!(list.iter().all(|r| r.get("body").is_none()));
    let st = b.call("channel_status", json!({})).await.ok();
    assert_eq!(st["pins"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn stale_consent_after_a_newer_version_is_refused() {
    let ch = TestChannel::new(ROLES);
    let (a, b, g) = (
        ch.client("alpha").await,
        ch.client("beta").await,
        ch.client("gamma").await,
    );
    // Undeclared voters on a mention-only proposal: every other role must agree.
    let mention = a
        .send_with(
            json!("beta"),
            "the api key",
            "api should be versioned",
            json!({"kind": "proc", "pin_key": null, "about_message_id": null}),
        )
        .await;
    ack(&b, &mention, "agree").await;
    pin_refused(
        &ch,
        &a,
        pin("api", "1", "versioned", Some(&mention)),
        "ALL roles: proposal",
    )
    .await;
    ack(&g, &mention, "agree").await;
    // Meanwhile a structural round opens on the key: the mention can no longer approve.
    let r = round(&g, "api", json!(["beta"]), "api v1").await;
    pin_refused(
        &ch,
        &a,
        pin("api", "1", "versioned", Some(&mention)),
        &format!("has an open round (#{r})"),
    )
    .await;
    ack(&b, &r, "agree").await;
    g.call("pin_set", pin("api", "1", "api v1", Some(&r)))
        .await
        .ok();
    // The mention was retired by the write (it named the key), so it is settled too.
    let row = a
        .all_messages()
        .await
        .into_iter()
        .find(|m| m["id"] == mention.as_str())
        .unwrap();
    assert!(row["superseded_at"].is_string(), "{row}");

    // An agree cast while one version stood is stale once another lands (a free key
    // moves without approval; the write also retires the round, which may still be named).
    let r2 = round(&a, "notes", json!(["beta"]), "notes v1").await;
    ack(&b, &r2, "agree").await;
    a.call("pin_set", pin("notes", "free", "a free write", None))
        .await
        .ok();
    let d = pin_refused(
        &ch,
        &a,
        pin("notes", "2", "notes v1", Some(&r2)),
        "predates the current 'notes' version (free)",
    )
    .await;
    assert_eq!(d["missing_agrees"], json!(["beta"]));
    // Voting again binds the agree to the current version.
    ack(&b, &r2, "agree").await;
    a.call("pin_set", pin("notes", "2", "notes v1", Some(&r2)))
        .await
        .ok();
}

#[tokio::test]
async fn rounds_free_their_key_by_deletion_or_a_voters_void() {
    let ch = TestChannel::new(ROLES);
    let (a, b, g) = (
        ch.client("alpha").await,
        ch.client("beta").await,
        ch.client("gamma").await,
    );
    let first = round(&a, "k", json!(["beta"]), "one").await;
    async fn second(c: &Client) -> common::Reply {
        c.call(
            "send_message",
            json!({"to": "*", "topic": "two", "body": "two", "kind": "proc", "pin_key": "k",
                   "about_message_id": null, "voters": "*"}),
        )
        .await
    }
    second(&g).await.value_error(&format!("#{first}"));
    a.call("delete_message", json!({"message_id": first}))
        .await
        .ok();
    let v = second(&g).await.ok();
    let r = v["id"].as_str().unwrap().to_owned();

    // A void from outside the electorate closes nothing.
    let r3 = round(&b, "k2", json!(["gamma"]), "k2").await;
    ack(&a, &r3, "void").await;
    second(&a).await.value_error("already has an open round");
    let t = tally(&b, &r3).await;
    assert!(t.get("declared_dead_by").is_none());

    // A voter's void ends the round: out of awaiting_ack, the key is free, no approval.
    ack(&a, &r, "void").await;
    let t = tally(&g, &r).await;
    assert_eq!(t["declared_dead_by"], json!(["alpha"]));
    let hist = g
        .call("message_history", json!({"message_id": r}))
        .await
        .rows();
    assert!(hist.iter().any(|e| e["event"] == "declared_dead"));
    ack(&b, &r, "agree").await;
    pin_refused(
        &ch,
        &g,
        pin("k", "1", "two", Some(&r)),
        "was declared void by ['alpha']",
    )
    .await;
    round(&b, "k", json!("*"), "three").await;
}

#[tokio::test]
async fn nudges_owe_nothing_and_retire_with_their_target() {
    let ch = TestChannel::new(ROLES);
    let (a, b, g) = (
        ch.client("alpha").await,
        ch.client("beta").await,
        ch.client("gamma").await,
    );
    let p = round(&a, "k", json!("*"), "the rule").await;
    let nudge = |c: Client, to: &'static str, about: String| async move {
        let id = c
            .send_with(
                json!(to),
                "still need your vote",
                "please",
                json!({"kind": "proc", "pin_key": null, "about_message_id": about}),
            )
            .await;
        (c, id)
    };
    let (a, n_beta) = nudge(a, "beta", p.clone()).await;
    let (a, n_gamma) = nudge(a, "gamma", p.clone()).await;
    a.call(
        "send_message",
        json!({"to": "beta", "topic": "x", "body": "x", "kind": "status",
               "about_message_id": "ffffffffffff"}),
    )
    .await
    .value_error("about_message_id ffffffffffff not found");
    assert_eq!(
        awaiting(&b).await,
        vec![p.clone()],
        "a nudge owes no decision"
    );
    // beta's vote retires beta's nudge only.
    let v = ack(&b, &p, "agree").await;
    assert_eq!(v["superseded"], json!([n_beta.clone()]));
    let live: Vec<String> = ids(&a.all_messages().await);
    assert!(live.contains(&n_gamma));
    // A nudge about the nudge, then the pin write settles the round and, transitively, both.
    let (a, n2) = nudge(a, "gamma", n_gamma.clone()).await;
    ack(&g, &p, "agree").await;
    let rows = a.all_messages().await;
    let sup = |id: &str| {
        rows.iter()
            .find(|r| r["id"] == id)
            .map(|r| r["superseded_at"].is_string())
            .unwrap()
    };
    assert!(sup(&n_gamma) && sup(&n2), "gamma's vote retired its nudges");
    // Deleting a target retires the nudges about it.
    let plain = a.send("beta", "plain", "a question").await;
    let (a, n3) = nudge(a, "beta", plain.clone()).await;
    let d = a
        .call("delete_message", json!({"message_id": plain}))
        .await
        .ok();
    assert_eq!(d["superseded"], json!([n3]));
    let hist = a
        .call("message_history", json!({"message_id": n3}))
        .await
        .rows();
    assert!(hist.iter().any(|e| e["event"] == "superseded"), "{hist:?}");
}

#[tokio::test]
async fn a_cleanup_pass_is_previewed_guarded_applied_and_undone() {
    let ch = TestChannel::new(ROLES);
    let (a, b, g) = (
        ch.client("alpha").await,
        ch.client("beta").await,
        ch.client("gamma").await,
    );
    let x = a.send("beta", "draft", "an early draft").await;
    let proc = json!({"kind": "proc", "pin_key": null, "about_message_id": null});
    let p1 = a
        .send_with(
            json!("beta"),
            "follow-up",
            &format!("about #{x}"),
            proc.clone(),
        )
        .await;
    let p2 = b
        .send_with(
            json!("alpha"),
            "on that",
            &format!("see #{p1}"),
            proc.clone(),
        )
        .await;
    let nudge = b
        .send_with(
            json!("alpha"),
            "vote?",
            "please",
            json!({"kind": "status", "about_message_id": p1}),
        )
        .await;
    a.call("pin_set", pin("notes", "1", "owned by alpha", None))
        .await
        .ok();
    let word = a.send("beta", "go ahead", "clean up #p1").await;
    let stranger_word = b.send("alpha", "me too", "fine").await;
    a.call("delete_message", json!({"message_id": x}))
        .await
        .ok();

    g.send("alpha", "hello", "sets up gamma's feed").await;
    // Preview: the citation of a dead message is a target row; the reference waits.
    let before = ch.feed_records();
    let v = g.call("backfill_superseded", json!({})).await.ok();
    assert_eq!(v["dry_run"], true);
    assert_eq!(v["count"], 1);
    assert_eq!(v["total_candidates"], 2);
    assert_eq!(v["excluded"]["by_reference"], 1);
    let row = &v["would_retire"][0];
    assert_eq!(row["id"], p1.as_str());
    assert_eq!(row["match_kind"], "target");
    assert_eq!(row["settled_by"][0]["matched_by"], "target_text");
    assert_eq!(row["settled_by"][0]["reason"], "deleted");
    assert_eq!(v["would_cascade"], json!([nudge.clone()]));
    assert!(v["generated_at"].as_str().unwrap().ends_with('Z'));
    let v = g
        .call(
            "backfill_superseded",
            json!({"include_by_reference": true, "ids": [p2, "ffffffffffff"], "fields": "headers"}),
        )
        .await
        .ok();
    assert_eq!(ids(v["would_retire"].as_array().unwrap()), vec![p2.clone()]);
    assert_eq!(v["not_candidates"], json!(["ffffffffffff"]));
    assert!(v["would_retire"][0].get("settled_by").is_none());
    assert_eq!(ch.feed_records(), before, "a preview writes nothing");

    // Every guard refuses on its own, retiring nothing.
    let apply = |extra: Value| {
        let mut args = json!({"dry_run": false, "ids": [p1], "expect_count": 1,
                              "key": "notes", "word_message_id": word});
        args.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        g.call("backfill_superseded", args)
    };
    apply(json!({"ids": null}))
        .await
        .value_error("'ids' is required");
    apply(json!({"expect_count": null}))
        .await
        .value_error("'expect_count' is required");
    apply(json!({"expect_count": 2}))
        .await
        .value_error("'expect_count' is 2 but 'ids' names 1");
    apply(json!({"key": null}))
        .await
        .value_error("one word per key");
    apply(json!({"word_message_id": stranger_word}))
        .await
        .value_error("owned by 'alpha'");
    apply(json!({"ids": [p2]}))
        .await
        .value_error("include_by_reference=true");
    apply(json!({"ids": [word]}))
        .await
        .value_error("never were candidates");
    assert_eq!(ch.feed_records(), before);

    let done = apply(json!({})).await.ok();
    assert_eq!(done["retired"], json!([p1.clone()]));
    assert_eq!(done["cascaded"], json!([nudge.clone()]));
    assert_eq!(done["keys"], json!(["notes"]));
    let hist = a
        .call("message_history", json!({"message_id": p1}))
        .await
        .rows();
    let e = hist
        .iter()
        .find(|e| e["event"] == "superseded_backfill")
        .unwrap();
    let note = e["note"].as_str().unwrap();
    assert!(
        note.contains("key notes") && note.contains(&format!("word: #{word}")),
        "{note}"
    );

    // Undo: only the pass's author or the key's owner; live-rule retirements stay.
    b.call("undo_backfill", json!({"ids": [p1]}))
        .await
        .permission_error("may undo it");
    let r = a
        .call("undo_backfill", json!({"ids": [p1], "reason": "too early"}))
        .await
        .ok();
    assert_eq!(r["restored"], json!([p1.clone()]));
    let hist = a
        .call("message_history", json!({"message_id": p1}))
        .await
        .rows();
    assert_eq!(hist.last().unwrap()["event"], "superseded_undone");
    assert_eq!(awaiting(&b).await, vec![p1.clone()], "live again");
    let round = round(&a, "notes", json!("*"), "v2").await;
    ack(&b, &round, "agree").await;
    ack(&g, &round, "agree").await;
    a.call("pin_set", pin("notes", "2", "v2", Some(&round)))
        .await
        .ok();
    g.call("undo_backfill", json!({"ids": [round]}))
        .await
        .value_error("retired by the live rule");
    // An approval record is never a candidate.
    g.call(
        "backfill_superseded",
        json!({"dry_run": false, "ids": [round], "expect_count": 1, "key": "notes",
               "word_message_id": word}),
    )
    .await
    .value_error("(approval record of pin 'notes')");
}

#[tokio::test]
async fn pin_digests_are_exact_and_the_status_command_lists_pins() {
    let ch = TestChannel::new(ROLES);
    let a = ch.client("alpha").await;
    // Bytes and characters differ; a trailing newline or one space changes the digest.
    let v = a
        .call("pin_set", pin("style", "1", "héllo wörld\n", None))
        .await
        .ok();
    assert_eq!(v["body_length_bytes"], 14);
    assert_eq!(v["body_length_chars"], 12);
    assert_eq!(v["body_sha256"], common::sha256_hex("héllo wörld\n"));
    let w = a
        .call("pin_set", pin("style", "2", "héllo wörld", None))
        .await
        .ok();
    let x = a
        .call("pin_set", pin("style", "3", "héllo  wörld", None))
        .await
        .ok();
    assert_ne!(v["body_sha256"], w["body_sha256"]);
    assert_ne!(w["body_sha256"], x["body_sha256"]);
    for args in [
        pin(" ", "1", "b", None),
        pin("k", " ", "b", None),
        pin("k", "1", "", None),
        pin(&"k".repeat(81), "1", "b", None),
    ] {
        a.call("pin_set", args).await.refused();
    }
    a.call(
        "pin_set",
        json!({"key": "k", "title": "t".repeat(201), "version": "1", "body": "b"}),
    )
    .await
    .value_error("'title' must be <= 200 characters");
    a.call(
        "pin_set",
        json!({"key": "k", "title": "t", "version": "v".repeat(81), "body": "b"}),
    )
    .await
    .value_error("'version' must be <= 80 characters");
    a.call("pin_set", pin("api", "1", "x", None)).await.ok();

    let out = ch.cli(&["--role", "beta", "status", "pins"]);
    assert!(out.status.success());
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let keys: Vec<&str> = rows.iter().map(|r| r["key"].as_str().unwrap()).collect();
    assert_eq!(keys, vec!["api", "style"]);
    assert_eq!(rows[1]["version"], "3");
    assert_eq!(rows[1]["body_sha256"], x["body_sha256"]);
    assert!(rows.iter().all(|r| r.get("body").is_none()));
    let out = ch.cli(&["--role", "beta", "status", "pins", "--text"]);
    let text = String::from_utf8(out.stdout).unwrap();
    let line = text.lines().nth(1).unwrap();
    let cells: Vec<&str> = line.split('\t').collect();
    assert_eq!(cells[0], "style");
    assert_eq!(cells[1], "3");
    assert_eq!(cells[3], "alpha");
    assert_eq!(cells[5], x["body_sha256"].as_str().unwrap());
}

#[tokio::test]
async fn a_message_claimed_by_two_keys_needs_both_owners_words() {
    let ch = TestChannel::new(ROLES);
    let (a, b, g) = (
        ch.client("alpha").await,
        ch.client("beta").await,
        ch.client("gamma").await,
    );
    let proc = json!({"kind": "proc", "pin_key": null, "about_message_id": null});
    let x = a.send("beta", "old", "old").await;
    let p = a
        .send_with(
            json!("beta"),
            "api and style",
            &format!("api, style, see #{x}"),
            proc,
        )
        .await;
    a.call("delete_message", json!({"message_id": x}))
        .await
        .ok();
    a.call("pin_set", pin("notes", "1", "n", None)).await.ok();
    let word_a = a.send("beta", "ok", "go").await;
    let base = json!({"dry_run": false, "key": "notes", "word_message_id": word_a});
    let mut args = base.clone();
    args["ids"] = json!([p]);
    args["expect_count"] = json!(1);
    g.call("backfill_superseded", args).await.ok();
    // While it is retired, both keys move on (written by different owners); then it is
    // restored and is a live proposal older than the current version of both keys.
    a.call("pin_set", pin("api", "1", "a", None)).await.ok();
    b.call("pin_set", pin("style", "1", "s", None)).await.ok();
    a.call("undo_backfill", json!({"ids": [p]})).await.ok();
    let v = g.call("backfill_superseded", json!({})).await.ok();
    assert_eq!(v["multi_claimed"], json!([p.clone()]));
    let row = &v["would_retire"][0];
    assert_eq!(row["claimed_by"], json!(["api", "style"]));
    assert_eq!(row["claim_count"], 2);
    assert_eq!(row["match_kind"], "key");
    let by: Vec<&str> = row["settled_by"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["matched_by"].as_str())
        .collect();
    assert_eq!(by, vec!["text", "text", "target_text"], "key claims first");
    let filtered = g
        .call("backfill_superseded", json!({"key": "notes"}))
        .await
        .ok();
    assert_eq!(filtered["count"], 0);
    assert_eq!(filtered["excluded"]["other_keys"], 1);
    assert_eq!(filtered["filtered_by_key"], json!(["notes"]));

    let word_b = b.send("alpha", "ok", "go").await;
    g.call(
        "backfill_superseded",
        json!({"dry_run": false, "ids": [p], "expect_count": 1, "key": "api",
               "word_message_id": word_a}),
    )
    .await
    .value_error("Missing: [\"style\"]");
    g.call(
        "backfill_superseded",
        json!({"dry_run": false, "ids": [p], "expect_count": 1, "key": ["api", "style"],
               "word_message_id": [word_a, word_a]}),
    )
    .await
    .value_error("owned by 'beta'");
    let done = g
        .call(
            "backfill_superseded",
            json!({"dry_run": false, "ids": [p], "expect_count": 1, "key": ["api", "style"],
                   "word_message_id": [word_a, word_b]}),
        )
        .await
        .ok();
    assert_eq!(done["retired"], json!([p.clone()]));
    assert_eq!(done["keys"], json!(["api", "style"]));
}
