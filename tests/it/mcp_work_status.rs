//! Work status over a real MCP client: the whole transition table, done and blocked_by
//! rules, ready_work, the ball as channel_status lists it, taken/untaken debts,
//! idempotency and the exact channel_status shape.

use crate::common;
use crate::common::{Client, TestChannel, counter, ids, status_items};
use serde_json::{Value, json};

const VALUES: [&str; 6] = [
    "proposed",
    "in_progress",
    "done_local",
    "needs_you",
    "done",
    "blocked",
];

/// Sends a debt (`action_required`) and returns its id.
async fn debt(from: &Client, to: &str, topic: &str) -> String {
    from.send_with(json!(to), topic, "owed", json!({"action_required": true}))
        .await
}

async fn set(c: &Client, id: &str, value: &str) -> Value {
    c.call(
        "set_work_status",
        json!({"message_id": id, "work_status": value}),
    )
    .await
    .ok()
}

async fn status(c: &Client) -> Value {
    c.call("channel_status", json!({})).await.ok()
}

/// The ids in each ball list of a status answer.
fn lists(v: &Value) -> [(String, Vec<String>); 6] {
    [
        "in_progress",
        "blocked",
        "unblocked",
        "needs_you",
        "awaiting_done",
        "resolved_for_you",
    ]
    .map(|k| (k.to_owned(), ids(status_items(v, k))))
}

/// The `open_obligations_untaken` counter of a status answer (a number, not a list).
fn untaken(v: &Value) -> u64 {
    counter(v, "open_obligations_untaken")
}

/// The mail counters of a status answer: unread, unopened, opened_unmarked.
fn mail(v: &Value) -> (u64, u64, u64) {
    let (unread, unopened) = (counter(v, "unread"), counter(v, "unopened"));
    let opened = counter(v, "opened_unmarked");
    assert_eq!(unread, unopened + opened, "{v}");
    (unread, unopened, opened)
}

/// Asserts which ball list holds `id` for `c` (or none).
async fn ball(c: &Client, id: &str, want: Option<&str>) {
    let v = status(c).await;
    let holding: Vec<String> = lists(&v)
        .into_iter()
        .filter(|(_, l)| l.contains(&id.to_owned()))
        .map(|(k, _)| k)
        .collect();
    assert_eq!(
        holding,
        want.into_iter().map(str::to_owned).collect::<Vec<_>>(),
        "{v}"
    );
}

#[tokio::test]
async fn every_transition_of_the_table() {
    let ch = TestChannel::new(&["frontend", "backend", "infra"]);
    let fe = ch.client("frontend").await;
    let be = ch.client("backend").await;
    let inf = ch.client("infra").await;
    be.send("frontend", "backend writes once", "x").await;
    inf.send("frontend", "infra writes once", "x").await;
    let froms: Vec<Option<&str>> = std::iter::once(None)
        .chain(VALUES.iter().copied().map(Some))
        .collect();

    // The other side (backend) moves a status frontend set at send time: every move is real
    // except 'done', which needs done_local.
    for from in &froms {
        for to in VALUES {
            let extra = from.map_or(json!({}), |f| json!({"work_status": f}));
            let id = fe.send_with(json!("backend"), "cell", "x", extra).await;
            let before = ch.feed_records();
            let r = be
                .call(
                    "set_work_status",
                    json!({"message_id": id, "work_status": to}),
                )
                .await;
            if to == "done" && *from != Some("done_local") {
                let msg = r.value_error("current work_status must be 'done_local'");
                assert!(
                    msg.contains(&format!("it is '{}'", from.unwrap_or("null"))),
                    "{msg}"
                );
                assert_eq!(ch.feed_records(), before);
            } else {
                let v = r.ok();
                assert_eq!(
                    v,
                    json!({"id": id, "work_status": to, "previous": from, "already_set": false}),
                    "{from:?} -> {to}"
                );
                assert_eq!(ch.feed_records(), before + 1);
            }
        }
    }

    // The setter itself: re-setting its own value is a no-op; 'done' on its own done_local is
    // refused as a permission matter, from anything else as a value matter.
    for from in &froms {
        let extra = from.map_or(json!({}), |f| json!({"work_status": f}));
        let id = fe.send_with(json!("backend"), "own", "x", extra).await;
        let before = ch.feed_records();
        let r = fe
            .call(
                "set_work_status",
                json!({"message_id": id, "work_status": "done"}),
            )
            .await;
        if *from == Some("done_local") {
            r.permission_error("'done' must be confirmed by the other side");
        } else {
            r.value_error("done_local");
        }
        if let Some(f) = from.filter(|f| *f != "done") {
            let v = set(&fe, &id, f).await;
            assert_eq!(v, json!({"id": id, "work_status": f, "already_set": true}));
        }
        assert_eq!(ch.feed_records(), before, "{from:?}: nothing written");
        // Any other value is a real move by the setter too.
        for to in VALUES
            .iter()
            .filter(|t| Some(**t) != *from && **t != "done")
        {
            let id = fe
                .send_with(
                    json!("backend"),
                    "own move",
                    "x",
                    from.map_or(json!({}), |f| json!({"work_status": f})),
                )
                .await;
            assert_eq!(
                set(&fe, &id, to).await["already_set"],
                false,
                "{from:?} -> {to}"
            );
        }
    }

    // A third role moves nothing; an unknown value is refused first.
    let id = fe.send("backend", "private", "x").await;
    let before = ch.feed_records();
    for to in VALUES {
        inf.call(
            "set_work_status",
            json!({"message_id": id, "work_status": to}),
        )
        .await
        .permission_error("not a party");
    }
    be.call("set_work_status", json!({"message_id": id, "work_status": "finished"}))
        .await
        .value_error("'work_status' must be one of [\"proposed\", \"in_progress\", \"done_local\", \"needs_you\", \"done\", \"blocked\"] (got 'finished')");
    be.call(
        "set_work_status",
        json!({"message_id": "abcdef123456", "work_status": "done"}),
    )
    .await
    .value_error("not found");
    assert_eq!(ch.feed_records(), before);
    for c in [fe, be, inf] {
        c.close().await;
    }
}

#[tokio::test]
async fn done_is_confirmed_by_the_other_side_only() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let fe = ch.client("frontend").await;
    let be = ch.client("backend").await;
    let d = debt(&fe, "backend", "task").await;
    set(&be, &d, "done_local").await;
    let msg = be
        .call(
            "set_work_status",
            json!({"message_id": d, "work_status": "done"}),
        )
        .await
        .permission_error("confirmed by the other side");
    assert!(msg.contains("backend"), "{msg}");
    let v = set(&fe, &d, "done").await;
    assert_eq!(v["previous"], "done_local");
    // done is final for 'done': done again is refused, by anyone.
    for c in [&fe, &be] {
        c.call(
            "set_work_status",
            json!({"message_id": d, "work_status": "done"}),
        )
        .await
        .value_error("it is 'done'");
    }
    // done_local declared at send time is the sender's declaration.
    let d = fe
        .send_with(
            json!("backend"),
            "sent done",
            "x",
            json!({"action_required": true, "work_status": "done_local"}),
        )
        .await;
    fe.call(
        "set_work_status",
        json!({"message_id": d, "work_status": "done"}),
    )
    .await
    .permission_error("confirmed by the other side");
    set(&be, &d, "done").await;
    // The confirmation goes to whoever did not declare: the other side re-declaring
    // done_local moves the declaration to it.
    let d = debt(&fe, "backend", "ping-pong").await;
    set(&be, &d, "done_local").await;
    set(&fe, &d, "done_local").await;
    fe.call(
        "set_work_status",
        json!({"message_id": d, "work_status": "done"}),
    )
    .await
    .permission_error("confirmed by the other side");
    set(&be, &d, "done").await;
    fe.close().await;
    be.close().await;
}

#[tokio::test]
async fn blocked_by_rules_and_unblocking() {
    let ch = TestChannel::new(&["frontend", "backend", "infra"]);
    let fe = ch.client("frontend").await;
    let be = ch.client("backend").await;
    let inf = ch.client("infra").await;
    let task = debt(&fe, "backend", "the task").await;
    let second = fe.send("backend", "a plain task", "x").await;
    let gone_task = fe.send("backend", "deleted later", "x").await;
    let blocker = debt(&be, "infra", "needs a database").await; // not involving frontend
    let plain = inf.send("backend", "not a debt", "x").await;
    let resolved = debt(&inf, "backend", "already done").await;
    be.call("resolve_message", json!({"message_id": resolved}))
        .await
        .ok();
    let deleted = fe.send("backend", "deleted", "x").await;
    fe.call("delete_message", json!({"message_id": deleted}))
        .await
        .ok();
    let before = ch.feed_records();

    let try_block = |value: &'static str, by: &str| json!({"message_id": task, "work_status": value, "blocked_by": by});
    be.call("set_work_status", try_block("in_progress", &blocker))
        .await
        .value_error("'blocked_by' is only valid with work_status='blocked'");
    be.call("set_work_status", try_block("blocked", "abcdef123456"))
        .await
        .value_error("blocked_by message abcdef123456 not found");
    be.call("set_work_status", try_block("blocked", &deleted))
        .await
        .value_error("not found");
    be.call("set_work_status", try_block("blocked", &plain))
        .await
        .value_error("is not action_required");
    be.call("set_work_status", try_block("blocked", &resolved))
        .await
        .value_error("already resolved — not a blocker");
    assert_eq!(ch.feed_records(), before, "refused blocks write nothing");

    // A blocker may be any live open debt, even one the task's parties do not share.
    for t in [&task, &second, &gone_task] {
        let v = be
            .call(
                "set_work_status",
                json!({"message_id": t, "work_status": "blocked", "blocked_by": blocker}),
            )
            .await
            .ok();
        assert_eq!(v["already_set"], false);
    }
    let v = status(&be).await;
    assert_eq!(
        v["blocked"],
        json!([
            {"id": task, "topic": "the task", "blocked_by": blocker},
            {"id": second, "topic": "a plain task", "blocked_by": blocker},
            {"id": gone_task, "topic": "deleted later", "blocked_by": blocker},
        ])
    );
    assert!(
        status(&fe).await.get("blocked").is_none(),
        "blocked belongs to its setter"
    );
    let rows = fe.all_messages().await;
    let task_row = rows.iter().find(|r| r["id"] == task).unwrap();
    assert_eq!(task_row["blocked_by"], blocker);
    // Same blocker again by the same role: nothing to do.
    let v = be
        .call(
            "set_work_status",
            json!({"message_id": task, "work_status": "blocked", "blocked_by": blocker}),
        )
        .await
        .ok();
    assert_eq!(v["already_set"], true);

    fe.call("delete_message", json!({"message_id": gone_task}))
        .await
        .ok();
    // Resolving the blocker lists the live tasks that waited on it.
    let v = inf
        .call("resolve_message", json!({"message_id": blocker}))
        .await
        .ok();
    let mut got: Vec<&str> = v["unblocked"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i.as_str().unwrap())
        .collect();
    got.sort();
    let mut want = vec![task.as_str(), second.as_str()];
    want.sort();
    assert_eq!(got, want);
    let v = status(&be).await;
    assert_eq!(
        ids(status_items(&v, "unblocked")),
        vec![task.clone(), second.clone()]
    );
    assert!(status_items(&v, "blocked").is_empty());
    assert_eq!(v["unblocked"][0]["blocked_by"], blocker);
    // Reopening the blocker blocks them again.
    be.call("reopen_message", json!({"message_id": blocker}))
        .await
        .ok();
    let v = status(&be).await;
    assert_eq!(
        ids(status_items(&v, "blocked")),
        vec![task.clone(), second.clone()]
    );
    assert!(status_items(&v, "unblocked").is_empty());

    // Leaving 'blocked' clears blocked_by; blocked without a blocker stays blocked.
    set(&be, &task, "in_progress").await;
    set(&be, &second, "blocked").await;
    let rows = fe.all_messages().await;
    for r in rows.iter().filter(|r| r["id"] == task || r["id"] == second) {
        assert_eq!(r["blocked_by"], Value::Null, "{r}");
    }
    inf.call("resolve_message", json!({"message_id": blocker}))
        .await
        .ok();
    let v = status(&be).await;
    assert_eq!(
        v["blocked"],
        json!([{"id": second, "topic": "a plain task"}]),
        "a block naming no blocker lists no blocked_by (absent means null)"
    );
    assert!(status_items(&v, "unblocked").is_empty());
    // A resolve with nothing blocked on it answers an empty list.
    let lone = debt(&fe, "backend", "lone").await;
    let v = be
        .call("resolve_message", json!({"message_id": lone}))
        .await
        .ok();
    assert_eq!(v["unblocked"], json!([]));
    for c in [fe, be, inf] {
        c.close().await;
    }
}

#[tokio::test]
async fn ready_work_is_what_can_start_now_oldest_first() {
    let ch = TestChannel::new(&["frontend", "backend", "infra"]);
    let fe = ch.client("frontend").await;
    let be = ch.client("backend").await;
    let inf = ch.client("infra").await;
    let first = debt(&fe, "backend", "first").await;
    let live_blocked = debt(&fe, "backend", "waits on a live blocker").await;
    let manual = debt(&fe, "backend", "blocked without blocker").await;
    let freed = debt(&fe, "backend", "blocker resolved").await;
    let orphan = debt(&fe, "backend", "blocker deleted").await;
    let done = debt(&inf, "backend", "resolved, drops out").await;
    let not_mine = debt(&be, "frontend", "frontend owes this").await;
    let live = debt(&fe, "infra", "live blocker").await;
    let to_resolve = debt(&fe, "infra", "resolved blocker").await;
    let to_delete = debt(&fe, "infra", "deleted blocker").await;
    for (t, b) in [
        (&live_blocked, &live),
        (&freed, &to_resolve),
        (&orphan, &to_delete),
    ] {
        be.call(
            "set_work_status",
            json!({"message_id": t, "work_status": "blocked", "blocked_by": b}),
        )
        .await
        .ok();
    }
    set(&be, &manual, "blocked").await;
    inf.call("resolve_message", json!({"message_id": to_resolve}))
        .await
        .ok();
    inf.call("resolve_message", json!({"message_id": to_delete}))
        .await
        .ok();
    fe.call("confirm_resolution", json!({"message_id": to_delete}))
        .await
        .ok();
    fe.call("delete_message", json!({"message_id": to_delete}))
        .await
        .ok();
    be.call("resolve_message", json!({"message_id": done}))
        .await
        .ok();

    let rows = be.call("ready_work", json!({})).await.rows();
    assert_eq!(
        ids(&rows),
        vec![first.clone(), freed.clone(), orphan.clone()]
    );
    for r in &rows {
        assert!(
            r["age_days"].is_number() && r["idle_days"].is_number(),
            "{r}"
        );
        assert!(r.get("body_sha256").is_none(), "lean: {r}");
    }
    assert!(
        be.call("ready_work", json!({}))
            .await
            .ok()
            .get("generated_at")
            .is_none()
    );
    // Every open debt is still owed, blocked or not, newest first.
    let owed = be.call("open_obligations", json!({})).await.rows();
    assert_eq!(
        ids(&owed),
        vec![
            orphan.clone(),
            freed.clone(),
            manual.clone(),
            live_blocked.clone(),
            first.clone()
        ]
    );
    // Per role.
    assert_eq!(
        ids(&fe.call("ready_work", json!({})).await.rows()),
        vec![not_mine.clone()]
    );
    assert_eq!(
        ids(&inf.call("ready_work", json!({})).await.rows()),
        vec![live.clone()]
    );
    // limit keeps the oldest and says more are ready.
    let v = be.call("ready_work", json!({"limit": 2})).await.ok();
    assert_eq!(
        ids(v["result"].as_array().unwrap()),
        vec![first.clone(), freed.clone()]
    );
    assert_eq!(v["truncated"]["limit"], 2);
    be.call("ready_work", json!({"limit": 0}))
        .await
        .value_error("'limit' must be between 1 and 1000");
    // Resuming and resolving: a resolved debt drops out.
    be.call("resolve_message", json!({"message_id": first}))
        .await
        .ok();
    assert_eq!(
        ids(&be.call("ready_work", json!({})).await.rows()),
        vec![freed, orphan]
    );
    for c in [fe, be, inf] {
        c.close().await;
    }
}

#[tokio::test]
async fn idle_days_restarts_with_a_move_while_age_days_stays() {
    use countersign::core::hlc::Hlc;
    use countersign::core::ids::Role;
    use countersign::core::op::{Op, Send};

    // A debt raised three days ago (seeded in bulk with past clocks).
    let local = common::local::Local::new(&["frontend", "backend"]);
    let three_days = 3 * 86_400_000;
    let start = countersign::store::now_ms() - three_days;
    {
        let mut ch = local.channel();
        let mut run = ch.bulk(&Role::new("frontend").unwrap(), start).unwrap();
        let op = Op::Send(Send {
            to: vec![Role::new("backend").unwrap()],
            topic: "old debt".into(),
            body: "owed since".into(),
            action_required: true,
            decision_requested: true,
            ..Send::default()
        });
        run.push(&op, start + 1000, Hlc::default());
        run.flush().unwrap();
    }
    let home = local.tmp.path().join("home");
    let ch = TestChannel {
        dir: local.dir.clone(),
        home,
        tmp: local.tmp,
    };
    let be = ch.client("backend").await;
    let row = |rows: Vec<Value>| rows.into_iter().next().expect("one debt");
    let r = row(be.call("ready_work", json!({})).await.rows());
    let (age, idle) = (
        r["age_days"].as_f64().unwrap(),
        r["idle_days"].as_f64().unwrap(),
    );
    assert!(
        (2.99..3.01).contains(&age) && (2.99..3.01).contains(&idle),
        "{r}"
    );
    let id = r["id"].as_str().unwrap().to_owned();
    set(&be, &id, "in_progress").await;
    for tool in ["ready_work", "open_obligations"] {
        let r = row(be.call(tool, json!({})).await.rows());
        let (age, idle) = (
            r["age_days"].as_f64().unwrap(),
            r["idle_days"].as_f64().unwrap(),
        );
        assert!((2.99..3.01).contains(&age), "{tool}: age stays: {r}");
        assert!(idle < 0.01, "{tool}: idle restarts: {r}");
    }
    be.close().await;
}

#[tokio::test]
async fn the_ball_follows_whoever_made_the_last_move() {
    let ch = TestChannel::new(&["frontend", "backend", "infra"]);
    let fe = ch.client("frontend").await;
    let be = ch.client("backend").await;
    let inf = ch.client("infra").await;
    let d = debt(&fe, "backend", "ball").await;
    // Untouched: the addressee is nagged (untaken), nobody holds a ball list.
    assert_eq!(untaken(&status(&be).await), 1);
    ball(&be, &d, None).await;
    ball(&fe, &d, None).await;

    set(&be, &d, "in_progress").await; // in_progress: the setter's, silent
    assert_eq!(untaken(&status(&be).await), 0);
    ball(&be, &d, Some("in_progress")).await;
    ball(&fe, &d, None).await;

    set(&be, &d, "needs_you").await; // needs_you: the ball moves to the author
    ball(&fe, &d, Some("needs_you")).await;
    ball(&be, &d, None).await;
    assert_eq!(
        untaken(&status(&be).await),
        0,
        "still taken: the last move was backend's"
    );

    set(&fe, &d, "needs_you").await; // and back: same value, other side, a real move
    ball(&be, &d, Some("needs_you")).await;
    ball(&fe, &d, None).await;
    assert_eq!(
        untaken(&status(&be).await),
        1,
        "the author's move pokes the debt back"
    );

    set(&be, &d, "blocked").await; // blocked: the setter's
    ball(&be, &d, Some("blocked")).await;
    ball(&fe, &d, None).await;

    set(&be, &d, "done_local").await; // awaiting_done: whoever did not declare it
    ball(&fe, &d, Some("awaiting_done")).await;
    ball(&be, &d, None).await;
    assert_eq!(untaken(&status(&be).await), 0);

    set(&fe, &d, "done").await; // done: nobody's
    ball(&fe, &d, None).await;
    ball(&be, &d, None).await;
    assert_eq!(
        untaken(&status(&be).await),
        1,
        "the author moved last: the addressee still owes the resolve"
    );
    be.call("resolve_message", json!({"message_id": d}))
        .await
        .ok();
    fe.call("confirm_resolution", json!({"message_id": d}))
        .await
        .ok();
    assert_eq!(untaken(&status(&be).await), 0);
    // A third role never sees another pair's ball.
    let v = status(&inf).await;
    assert!(lists(&v).iter().all(|(_, l)| l.is_empty()), "{v}");

    // The author sets in_progress on its own: it is the author's in_progress, and pokes.
    let p = debt(&fe, "backend", "poke").await;
    set(&be, &p, "in_progress").await;
    assert_eq!(untaken(&status(&be).await), 0);
    let before = ch.feed_records();
    let v = set(&fe, &p, "in_progress").await;
    assert_eq!(
        v["already_set"], false,
        "same value by the other role is a real move"
    );
    assert_eq!(ch.feed_records(), before + 1);
    assert_eq!(untaken(&status(&be).await), 1);
    ball(&fe, &p, Some("in_progress")).await;
    ball(&be, &p, None).await;
    let v = set(&be, &p, "in_progress").await; // re-take
    assert_eq!(
        v,
        json!({"id": p, "work_status": "in_progress", "previous": "in_progress", "already_set": false})
    );
    assert_eq!(untaken(&status(&be).await), 0);
    ball(&be, &p, Some("in_progress")).await;
    let before = ch.feed_records();
    let v = set(&be, &p, "in_progress").await;
    assert_eq!(
        v,
        json!({"id": p, "work_status": "in_progress", "already_set": true})
    );
    assert_eq!(ch.feed_records(), before, "a repeat writes nothing");

    // A reopen resets taken until the addressee moves again, even to the same value.
    be.call("resolve_message", json!({"message_id": p}))
        .await
        .ok();
    fe.call("reopen_message", json!({"message_id": p}))
        .await
        .ok();
    assert_eq!(untaken(&status(&be).await), 1);
    let v = set(&be, &p, "in_progress").await;
    assert_eq!(
        v["already_set"], false,
        "after a reopen the same value is a re-take"
    );
    assert_eq!(untaken(&status(&be).await), 0);
    assert_eq!(set(&be, &p, "in_progress").await["already_set"], true);

    // T-11: a status given at send time is the sender's move: untaken until the addressee moves.
    let s = fe
        .send_with(
            json!("backend"),
            "sent in progress",
            "x",
            json!({"action_required": true, "work_status": "in_progress"}),
        )
        .await;
    assert_eq!(untaken(&status(&be).await), 1);
    ball(&fe, &s, Some("in_progress")).await;
    ball(&be, &s, None).await;
    let v = set(&be, &s, "in_progress").await;
    assert_eq!(v["already_set"], false);
    assert_eq!(untaken(&status(&be).await), 0);
    ball(&be, &s, Some("in_progress")).await;
    for c in [fe, be, inf] {
        c.close().await;
    }
}

#[tokio::test]
async fn channel_status_has_the_exact_shape_and_counts_match_lists() {
    let ch = TestChannel::new(&["frontend", "backend", "infra"]);
    let fe = ch.client("frontend").await;
    let be = ch.client("backend").await;
    let inf = ch.client("infra").await;

    // First call: the quiet shape, lean (no zero counter, no empty list), with
    // what is new in this build; second: without.
    let v = status(&be).await;
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["role", "counts", "server"], "{v}");
    assert_eq!(v["role"], "backend");
    assert_eq!(v["counts"], json!({}), "{v}");
    assert!(
        v["server"]["contract"]
            .as_str()
            .unwrap()
            .starts_with("get_protocol()")
    );
    assert!(
        v["server"]["changes"]
            .as_str()
            .unwrap()
            .starts_with("server_build()")
    );
    assert!(
        v["server"].get("whats_new").is_some(),
        "shown on the first call"
    );
    assert!(
        status(&be).await["server"].get("whats_new").is_none(),
        "shown once per role"
    );
    assert!(
        status(&fe).await["server"].get("whats_new").is_some(),
        "per role"
    );
    assert_eq!(
        countersign::app::status::ACTIONABLE,
        [
            "unread",
            "open_obligations_untaken",
            "awaiting_ack",
            "unblocked",
            "needs_you",
            "awaiting_done",
            "resolved_for_you",
            "conflicted"
        ]
    );

    // Something behind every counter backend can have (awaiting_ack needs proposals).
    let m1 = fe.send("backend", "m1", "x").await;
    let m2 = fe.send("backend", "m2", "x").await;
    let m3 = fe.send("backend", "m3", "x").await;
    fe.send_with(
        json!("backend"),
        "no decision",
        "x",
        json!({"kind": "question", "decision_requested": false}),
    )
    .await;
    let blocker = debt(&fe, "infra", "blocker").await;
    let b1 = debt(&fe, "backend", "blocked").await;
    let b2 = debt(&fe, "backend", "unblocked").await;
    let b3 = debt(&fe, "backend", "in progress").await;
    let b4 = debt(&fe, "backend", "needs backend").await;
    let b5 = debt(&inf, "backend", "awaiting done").await;
    let w = debt(&be, "frontend", "withdrawn by frontend").await;
    let blocker2 = debt(&fe, "infra", "blocker 2").await;
    be.call(
        "set_work_status",
        json!({"message_id": b1, "work_status": "blocked", "blocked_by": blocker}),
    )
    .await
    .ok();
    be.call(
        "set_work_status",
        json!({"message_id": b2, "work_status": "blocked", "blocked_by": blocker2}),
    )
    .await
    .ok();
    inf.call("resolve_message", json!({"message_id": blocker2}))
        .await
        .ok();
    set(&be, &b3, "in_progress").await;
    set(&fe, &b4, "needs_you").await;
    set(&inf, &b5, "done_local").await;
    fe.call(
        "resolve_message",
        json!({"message_id": w, "resolution_note": "not needed"}),
    )
    .await
    .ok();

    // Nothing opened yet: all unread mail is unopened.
    let v = status(&be).await;
    let c = &v["counts"];
    let keys: Vec<&str> = c.as_object().unwrap().keys().map(String::as_str).collect();
    let order: Vec<&str> = countersign::app::status::COUNTERS
        .into_iter()
        .filter(|k| c.get(*k).is_some())
        .collect();
    assert_eq!(keys, order, "the non-zero counters, in their order");
    assert_eq!(c["unread"], 9, "{v}");
    assert_eq!(c["unopened"], 9);
    assert_eq!(counter(&v, "opened_unmarked"), 0);
    assert_eq!(c["open_obligations"], 5, "b1..b5");
    assert_eq!(
        c["open_obligations_untaken"], 2,
        "b4 (frontend moved last) and b5 (infra did)"
    );
    assert_eq!(
        counter(&v, "awaiting_ack"),
        0,
        "no proposal, and decision_requested=false never counts"
    );
    assert_eq!(v["unread"], c["unread"]);
    assert_eq!(v["open_obligations"], c["open_obligations"]);
    assert_eq!(v["awaiting_ack"], c["awaiting_ack"]);
    for (list, want) in [
        ("blocked", vec![b1.clone()]),
        ("unblocked", vec![b2.clone()]),
        ("in_progress", vec![b3.clone()]),
        ("needs_you", vec![b4.clone()]),
        ("awaiting_done", vec![b5.clone()]),
        ("resolved_for_you", vec![w.clone()]),
    ] {
        assert_eq!(ids(status_items(&v, list)), want, "{list}");
        assert_eq!(counter(&v, list), want.len() as u64, "{list}");
    }
    assert_eq!(
        v["unblocked"][0],
        json!({"id": b2, "topic": "unblocked", "blocked_by": blocker2})
    );
    assert_eq!(
        v["in_progress"][0],
        json!({"id": b3, "topic": "in progress"})
    );
    assert_eq!(
        v["needs_you"][0],
        json!({"id": b4, "topic": "needs backend"})
    );
    assert_eq!(
        v["awaiting_done"][0],
        json!({"id": b5, "topic": "awaiting done"})
    );
    let r = v["resolved_for_you"][0].as_object().unwrap();
    let mut rk: Vec<&str> = r.keys().map(String::as_str).collect();
    rk.sort();
    assert_eq!(
        rk,
        [
            "id",
            "resolution_note",
            "resolved_at",
            "resolved_by",
            "topic"
        ]
    );
    assert!(
        v.get("conflicted").is_none() && v.get("alarms").is_none(),
        "present only when non-empty"
    );

    // Unread moves from unopened to opened_unmarked on delivery, and only mark_read lowers it.
    be.call("mark_read", json!({"message_id": m1})).await.ok(); // marked without being opened
    assert_eq!(mail(&status(&be).await), (8, 8, 0));
    be.call("read_inbox", json!({})).await.ok();
    assert_eq!(mail(&status(&be).await), (8, 0, 8));
    be.call("mark_read", json!({"message_ids": [m2, m3]}))
        .await
        .ok();
    assert_eq!(mail(&status(&be).await), (6, 0, 6));
    for c in [fe, be, inf] {
        c.close().await;
    }
}
