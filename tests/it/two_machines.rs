//! Two machines deciding before either saw the other: both fold the same records to the
//! same state, exactly one of two conflicting transitions wins, and the loser is listed in
//! its author's channel_status `conflicted` without changing anything.
//!
//! Each machine is a home plus its own copy of the channel folder (real files, real
//! SQLite). Machine A is the owner's and acts as frontend; machine B is another device that
//! acts as backend with its own key and feed. B's feed is admitted by the owner key while it
//! is briefly present on B (what an invitation does), then the owner key leaves B. Syncing is
//! copying a machine's own feed folders into the other's copy.

use std::fs;
use std::path::PathBuf;
use std::thread::sleep;
use std::time::Duration;

use crate::common::local::{self, Local};
use crate::common::{copy_dir, counter, status_items};
use countersign::app::send::{SendRequest, ToArg, send_message};
use countersign::app::session::find;
use countersign::app::{Session, delete, lifecycle, status};
use countersign::core::ids::Role;
use countersign::core::message::Message;
use countersign::store::load_message;
use countersign::store::{ChannelDir, Home};
use serde_json::Value;

struct Machine {
    dir: PathBuf,
    home: Home,
    device: String,
}

impl Machine {
    fn session(&self, role: &str) -> Session {
        Session::new(
            local::open(&self.dir, &self.home),
            Some(Role::new(role).unwrap()),
        )
        .unwrap()
    }

    /// Catches up and answers the state digest.
    fn digest(&self) -> String {
        let mut ch = local::open(&self.dir, &self.home);
        ch.catch_up().unwrap();
        ch.index().digest().unwrap()
    }

    /// The digest of a rebuild from scratch.
    fn rebuilt_digest(&self) -> String {
        let mut ch = local::open(&self.dir, &self.home);
        ch.reindex(None).unwrap();
        ch.index().digest().unwrap()
    }

    fn status(&self, role: &str) -> Value {
        serde_json::to_value(status::channel_status(&mut self.session(role)).unwrap()).unwrap()
    }

    /// The folded state of a message (tombstones included).
    fn message(&self, id: &str) -> Message {
        let mut s = self.session("frontend");
        s.catch_up().unwrap();
        let full = find(s.index(), "message_id", id).unwrap().id;
        load_message(s.index(), &s.roster(), &full)
            .unwrap()
            .unwrap()
    }
}

/// Copies every feed `from` writes (`feeds/<role>/<its device>/`) into `to`'s folder.
fn push(from: &Machine, to: &Machine) {
    for role in fs::read_dir(from.dir.join("feeds")).unwrap().flatten() {
        let src = role.path().join(&from.device);
        if src.is_dir() {
            copy_dir(
                &src,
                &to.dir
                    .join("feeds")
                    .join(role.file_name())
                    .join(&from.device),
            );
        }
    }
}

/// Both directions, `a_first` deciding which goes first; the receiving machine ingests
/// in between, so one side folds the other's records before its own travel back.
fn exchange(a: &Machine, b: &Machine, a_first: bool) -> String {
    if a_first {
        push(a, b);
        b.digest();
        push(b, a);
    } else {
        push(b, a);
        a.digest();
        push(a, b);
    }
    let (da, db) = (a.digest(), b.digest());
    assert_eq!(da, db, "both machines fold the same state");
    da
}

fn debt(s: &mut Session, to: &str, topic: &str) -> String {
    let req = SendRequest {
        action_required: true,
        ..SendRequest::new(to, topic, "owed")
    };
    send_message(s, req).unwrap().id
}

/// A: the owner's machine, acting as frontend. B: another device acting as backend.
/// Both have written once and hold the same folder.
fn pair() -> (Local, Machine, Machine) {
    let l = Local::new(&["frontend", "backend"]);
    let ch = ChannelDir::open(&l.dir).unwrap().id().to_owned();
    let a = Machine {
        dir: l.dir.clone(),
        home: l.home.clone(),
        device: l.home.device().unwrap().id,
    };
    let home_b = Home::at(l.tmp.path().join("home-b"));
    let device_b = home_b.device().unwrap().id;
    assert_ne!(device_b, a.device, "B is another device");
    let owner_on_b = home_b.keys_dir(&ch).join("owner.key");
    fs::create_dir_all(home_b.keys_dir(&ch)).unwrap();
    fs::copy(l.home.keys_dir(&ch).join("owner.key"), &owner_on_b).unwrap();
    local::send(
        &mut Session::new(
            local::open(&l.dir, &home_b),
            Some(Role::new("backend").unwrap()),
        )
        .unwrap(),
        "frontend",
        "hello from B",
        "x",
    );
    fs::remove_file(&owner_on_b).unwrap();
    local::send(&mut a.session("frontend"), "backend", "hello from A", "x");
    let dir_b = l.tmp.path().join("channel-b");
    copy_dir(&l.dir, &dir_b);
    let b = Machine {
        dir: dir_b,
        home: home_b,
        device: device_b,
    };
    // B holds only its own role's key: it cannot write as frontend.
    let e = countersign::app::send::send_message(
        &mut b.session("frontend"),
        SendRequest::new("backend", "t", "b"),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("holds no key for role 'frontend'"), "{e}");
    assert_eq!(a.digest(), b.digest());
    (l, a, b)
}

/// The `conflicted` entries of `role`'s channel_status on machine `m`.
fn conflicted(m: &Machine, role: &str) -> Vec<Value> {
    m.status(role)
        .get("conflicted")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

fn short(id: &countersign::core::ids::RecordId) -> String {
    id.short()
}

/// Asserts that on both machines `loser_role`'s record on `target` is the only conflict,
/// listed with its op, reason and winner, and that the other role sees none.
fn assert_lost(
    a: &Machine,
    b: &Machine,
    target: &str,
    loser_role: &str,
    op: &str,
    reason: &str,
    winner: &str,
) {
    let other = if loser_role == "frontend" {
        "backend"
    } else {
        "frontend"
    };
    for m in [a, b] {
        let msg = m.message(target);
        assert_eq!(msg.conflicts.len(), 1, "{:?}", msg.conflicts);
        let c = &msg.conflicts[0];
        assert_eq!((c.role.as_str(), c.op), (loser_role, op));
        assert_eq!(c.winner.as_ref().map(short).as_deref(), Some(winner));
        let listed = conflicted(m, loser_role);
        assert_eq!(listed.len(), 1, "{listed:?}");
        let l = &listed[0];
        assert_eq!(l["record"], short(&c.record.id));
        assert_eq!(l["op"], op);
        assert_eq!(l["target"], target);
        assert_eq!(l["winner"], winner);
        assert!(l["reason"].as_str().unwrap().contains(reason), "{l}");
        assert!(conflicted(m, other).is_empty());
        // A lost decision calls for its author's attention: it is counted and actionable.
        assert_eq!(m.status(loser_role)["counts"]["conflicted"], 1);
        assert!(m.status(other)["counts"].get("conflicted").is_none());
    }
}

/// The `(event, role)` of a message's history.
fn events(m: &Message) -> Vec<(String, String)> {
    m.events
        .iter()
        .map(|e| (e.event.clone(), e.role.to_string()))
        .collect()
}

fn ev(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(e, r)| ((*e).to_owned(), (*r).to_owned()))
        .collect()
}

/// Lets the wall clock move on, so the next decision sorts after the last one.
fn tick() {
    sleep(Duration::from_millis(3));
}

#[test]
fn a_confirm_and_a_concurrent_reopen() {
    for (reopen_first, a_first) in [(true, true), (true, false), (false, true), (false, false)] {
        let (_l, a, b) = pair();
        let d = debt(&mut a.session("frontend"), "backend", "race");
        exchange(&a, &b, true);
        lifecycle::resolve_message(&mut b.session("backend"), &d, Some("done".into())).unwrap();
        exchange(&a, &b, true);

        // Diverged: A confirms, B reopens, neither seeing the other.
        let confirm =
            || lifecycle::confirm_resolution(&mut a.session("frontend"), &d, None).unwrap();
        let reopen = || {
            lifecycle::reopen_message(&mut b.session("backend"), &d, Some("flaky".into())).unwrap()
        };
        if reopen_first {
            assert!(!reopen().already_open);
            tick();
            assert!(!confirm().already_confirmed);
        } else {
            confirm();
            tick();
            reopen();
        }
        let digest = exchange(&a, &b, a_first);
        assert_eq!(a.rebuilt_digest(), digest, "a rebuild folds the same");
        let msg = a.message(&d);
        assert_eq!(
            msg.debt.as_ref().unwrap().status.as_str(),
            "open",
            "either way the debt is open again"
        );
        if reopen_first {
            // The confirm came after the reopen in the order: it confirms nothing.
            let reopen_id = msg.last_reopen.unwrap().id.short();
            assert_lost(
                &a,
                &b,
                &d,
                "frontend",
                "confirm",
                "is not resolved",
                &reopen_id,
            );
            assert_eq!(
                events(&msg),
                ev(&[("resolve", "backend"), ("reopen", "backend")])
            );
            assert!(!msg.debt.as_ref().unwrap().confirmed);
        } else {
            // Confirm, then reopen: a legal sequence (a reopen is allowed after a
            // confirmation), so both stand and nothing conflicts.
            assert!(msg.conflicts.is_empty());
            assert_eq!(
                events(&msg),
                ev(&[
                    ("resolve", "backend"),
                    ("resolution_confirmed", "frontend"),
                    ("reopen", "backend")
                ])
            );
            assert!(conflicted(&a, "frontend").is_empty() && conflicted(&b, "backend").is_empty());
        }
        // The debt is the addressee's again on both machines.
        for m in [&a, &b] {
            assert_eq!(counter(&m.status("backend"), "open_obligations"), 1);
            assert!(status_items(&m.status("frontend"), "resolved_for_you").is_empty());
        }
    }
}

#[test]
fn two_different_work_status_moves() {
    for (a_moves_first, a_first) in [(true, true), (true, false), (false, true), (false, false)] {
        let (_l, a, b) = pair();
        let d = debt(&mut a.session("frontend"), "backend", "status race");
        exchange(&a, &b, true);
        lifecycle::set_work_status(&mut b.session("backend"), &d, "in_progress", None, None)
            .unwrap();
        exchange(&a, &b, false);

        let on_a = || {
            lifecycle::set_work_status(&mut a.session("frontend"), &d, "needs_you", None, None)
                .unwrap()
        };
        let on_b = || {
            lifecycle::set_work_status(&mut b.session("backend"), &d, "done_local", None, None)
                .unwrap()
        };
        if a_moves_first {
            on_a();
            tick();
            on_b();
        } else {
            on_b();
            tick();
            on_a();
        }
        let digest = exchange(&a, &b, a_first);
        assert_eq!(b.rebuilt_digest(), digest);
        let msg = b.message(&d);
        let (winner_role, winner_value, loser_role, loser_machine) = if a_moves_first {
            ("frontend", "needs_you", "backend", &b)
        } else {
            ("backend", "done_local", "frontend", &a)
        };
        let win = msg.ws_last.clone().unwrap();
        assert_eq!(win.role.as_str(), winner_role);
        assert_eq!(msg.work_status.unwrap().as_str(), winner_value);
        assert_lost(
            &a,
            &b,
            &d,
            loser_role,
            "work_status",
            "since this move was decided",
            &win.key.id.short(),
        );
        assert_eq!(
            events(&msg),
            ev(&[
                ("work_status:in_progress", "backend"),
                (&format!("work_status:{winner_value}"), winner_role)
            ])
        );
        // The ball follows the winner only.
        for m in [&a, &b] {
            let (fe, be) = (m.status("frontend"), m.status("backend"));
            let holds =
                |v: &Value, list: &str| status_items(v, list).iter().any(|i| i["id"] == d.as_str());
            if winner_value == "needs_you" {
                assert!(holds(&be, "needs_you") && !holds(&fe, "needs_you"), "{be}");
                assert!(!holds(&fe, "awaiting_done"));
            } else {
                assert!(
                    holds(&fe, "awaiting_done") && !holds(&be, "awaiting_done"),
                    "{fe}"
                );
                assert!(!holds(&be, "needs_you"));
            }
        }

        // A read receipt does not settle the conflict; a new decision on the target does.
        if loser_role == "backend" {
            countersign::app::inbox::mark_read(&mut b.session("backend"), Some(&d), None).unwrap();
        }
        assert_eq!(
            conflicted(loser_machine, loser_role).len(),
            1,
            "still listed after a read"
        );
        let mut s = loser_machine.session(loser_role);
        let v = lifecycle::set_work_status(
            &mut s,
            &d,
            "in_progress",
            Some("after the conflict".into()),
            None,
        )
        .unwrap();
        assert!(!v.already_set);
        assert!(
            conflicted(loser_machine, loser_role).is_empty(),
            "the author wrote again on it"
        );
        exchange(&a, &b, !a_first);
    }
}

#[test]
fn a_reopen_racing_a_delete() {
    for (reopen_first, a_first) in [(true, true), (true, false), (false, true), (false, false)] {
        let (_l, a, b) = pair();
        let d = debt(&mut a.session("frontend"), "backend", "settled");
        exchange(&a, &b, true);
        lifecycle::resolve_message(&mut b.session("backend"), &d, None).unwrap();
        exchange(&a, &b, true);
        lifecycle::confirm_resolution(&mut a.session("frontend"), &d, None).unwrap();
        exchange(&a, &b, true);

        let delete = || delete::delete_message(&mut a.session("frontend"), &d).unwrap();
        let reopen = || lifecycle::reopen_message(&mut b.session("backend"), &d, None).unwrap();
        if reopen_first {
            reopen();
            tick();
            delete();
        } else {
            delete();
            tick();
            reopen();
        }
        let digest = exchange(&a, &b, a_first);
        assert_eq!(a.rebuilt_digest(), digest);
        let msg = a.message(&d);
        if reopen_first {
            let reopen_id = msg.last_reopen.unwrap().id.short();
            assert_lost(
                &a,
                &b,
                &d,
                "frontend",
                "delete",
                "open obligation",
                &reopen_id,
            );
            assert!(msg.deleted.is_none(), "the delete changed nothing");
            assert_eq!(msg.debt.as_ref().unwrap().status.as_str(), "open");
            for m in [&a, &b] {
                assert_eq!(m.status("backend")["counts"]["open_obligations"], 1);
            }
        } else {
            let deleted = msg.deleted.unwrap().id.short();
            assert_lost(&a, &b, &d, "backend", "reopen", "was deleted", &deleted);
            assert!(msg.last_reopen.is_none(), "the reopen changed nothing");
            let debt = msg.debt.as_ref().unwrap();
            assert_eq!((debt.status.as_str(), debt.confirmed), ("resolved", true));
            for m in [&a, &b] {
                assert_eq!(counter(&m.status("backend"), "open_obligations"), 0);
            }
        }
        assert_eq!(
            events(&msg),
            if reopen_first {
                ev(&[
                    ("resolve", "backend"),
                    ("resolution_confirmed", "frontend"),
                    ("reopen", "backend"),
                ])
            } else {
                ev(&[("resolve", "backend"), ("resolution_confirmed", "frontend")])
            }
        );
    }
}

#[test]
fn two_concurrent_resolves_are_a_repeat_not_a_conflict() {
    for (a_resolves_first, a_first) in [(true, false), (false, true)] {
        let (_l, a, b) = pair();
        let d = debt(&mut a.session("frontend"), "backend", "both close it");
        exchange(&a, &b, true);
        let on_a = || {
            lifecycle::resolve_message(&mut a.session("frontend"), &d, Some("withdrawn".into()))
                .unwrap()
        };
        let on_b = || {
            lifecycle::resolve_message(&mut b.session("backend"), &d, Some("done".into())).unwrap()
        };
        if a_resolves_first {
            on_a();
            tick();
            on_b();
        } else {
            on_b();
            tick();
            on_a();
        }
        let digest = exchange(&a, &b, a_first);
        assert_eq!(b.rebuilt_digest(), digest);
        let msg = a.message(&d);
        assert!(
            msg.conflicts.is_empty(),
            "already_resolved is a silent no-op: {:?}",
            msg.conflicts
        );
        let (by, note, confirmer) = if a_resolves_first {
            ("frontend", "withdrawn", "backend")
        } else {
            ("backend", "done", "frontend")
        };
        let res = msg.debt.as_ref().unwrap().resolved.clone().unwrap();
        assert_eq!(
            (res.by.as_str(), res.note.as_deref()),
            (by, Some(note)),
            "the first resolution stands"
        );
        assert_eq!(events(&msg), ev(&[("resolve", by)]));
        for m in [&a, &b] {
            assert!(conflicted(m, "frontend").is_empty() && conflicted(m, "backend").is_empty());
            let v = m.status(confirmer);
            assert_eq!(v["resolved_for_you"][0]["id"], d.as_str(), "{v}");
            assert!(status_items(&m.status(by), "resolved_for_you").is_empty());
        }
    }
}

#[test]
fn setup_sanity_the_two_machines_write_distinct_feeds() {
    let (_l, a, b) = pair();
    let listed = |m: &Machine| {
        let mut v: Vec<String> = fs::read_dir(m.dir.join("feeds"))
            .unwrap()
            .flatten()
            .flat_map(|r| {
                let role = r.file_name().to_string_lossy().into_owned();
                fs::read_dir(r.path())
                    .unwrap()
                    .flatten()
                    .map(move |d| format!("{role}/{}", d.file_name().to_string_lossy()))
            })
            .collect();
        v.sort();
        v
    };
    let mut want = vec![
        format!("_owner/{}", a.device),
        format!("_owner/{}", b.device),
        format!("frontend/{}", a.device),
        format!("backend/{}", b.device),
    ];
    want.sort();
    assert_eq!(listed(&a), want);
    assert_eq!(listed(&b), want);
    assert!(
        a.status("frontend").get("alarms").is_none(),
        "{}",
        a.status("frontend")
    );
    assert!(b.status("backend").get("alarms").is_none());
}

// ---------------------------------------------------------------------------------------
// Consent decided on two machines.

use countersign::app::pin::{self, PinRequest};
use countersign::app::revise::{self, ReviseRequest};
use countersign::app::vote;

/// A pin round on `key` to every other role, with `voters`.
fn proposal(s: &mut Session, key: &str, body: &str) -> String {
    let req = SendRequest {
        kind: Some("proc".into()),
        pin_key: Some(Some(key.into())),
        about_message_id: Some(None),
        voters: Some(Some(ToArg::One("*".into()))),
        ..SendRequest::new("*", format!("proposal for {key}"), body)
    };
    send_message(s, req).unwrap().id
}

fn pin_req(key: &str, version: &str, approved_by: &str) -> PinRequest {
    PinRequest {
        key: key.into(),
        title: "t".into(),
        version: version.into(),
        body: format!("{key} {version}"),
        approved_by: Some(approved_by.into()),
        dry_run: false,
        body_ref: None,
    }
}

/// The versions of `key` on machine `m`.
fn versions(m: &Machine, key: &str) -> Vec<Value> {
    let mut s = m.session("frontend");
    let history = pin::pin_history(&mut s, key, None).unwrap();
    serde_json::to_value(history).unwrap()["result"]
        .as_array()
        .unwrap()
        .clone()
}

#[test]
fn two_pin_writes_spending_one_approval() {
    for (a_writes_first, a_first) in [(true, true), (true, false), (false, true), (false, false)] {
        let (_l, a, b) = pair();
        let p = proposal(&mut a.session("frontend"), "contract-version", "v2");
        exchange(&a, &b, true);
        vote::acknowledge(&mut b.session("backend"), &p, "agree", None, None).unwrap();
        exchange(&a, &b, true);
        // Both machines see an approvable proposal and write a version with it.
        let on_a = || {
            pin::pin_set(
                &mut a.session("frontend"),
                pin_req("contract-version", "A", &p),
            )
        };
        let on_b = || {
            pin::pin_set(
                &mut b.session("backend"),
                pin_req("contract-version", "B", &p),
            )
        };
        if a_writes_first {
            on_a().unwrap();
            tick();
            on_b().unwrap();
        } else {
            on_b().unwrap();
            tick();
            on_a().unwrap();
        }
        let digest = exchange(&a, &b, a_first);
        assert_eq!(a.rebuilt_digest(), digest);
        let (winner, loser_role) = if a_writes_first {
            ("A", "backend")
        } else {
            ("B", "frontend")
        };
        for m in [&a, &b] {
            let v = versions(m, "contract-version");
            assert_eq!(v.len(), 1, "one approval, one version: {v:?}");
            assert_eq!(v[0]["version"], winner);
            let lost = conflicted(m, loser_role);
            assert_eq!(lost.len(), 1, "{lost:?}");
            assert_eq!(lost[0]["op"], "pin_set");
            assert_eq!(lost[0]["target"], "contract-version");
            assert_eq!(lost[0]["winner"], v[0]["id"]);
            assert!(
                lost[0]["reason"]
                    .as_str()
                    .unwrap()
                    .contains("already approved a pin update"),
                "{lost:?}"
            );
            let other = if loser_role == "frontend" {
                "backend"
            } else {
                "frontend"
            };
            assert!(conflicted(m, other).is_empty());
        }
    }
}

#[test]
fn two_rounds_opened_on_one_key() {
    for (a_opens_first, a_first) in [(true, true), (false, false), (true, false)] {
        let (_l, a, b) = pair();
        let (pa, pb) = if a_opens_first {
            let pa = proposal(&mut a.session("frontend"), "glossary", "from A");
            tick();
            (
                pa,
                proposal(&mut b.session("backend"), "glossary", "from B"),
            )
        } else {
            let pb = proposal(&mut b.session("backend"), "glossary", "from B");
            tick();
            (
                proposal(&mut a.session("frontend"), "glossary", "from A"),
                pb,
            )
        };
        let digest = exchange(&a, &b, a_first);
        assert_eq!(b.rebuilt_digest(), digest);
        let (winner, loser, loser_role) = if a_opens_first {
            (&pa, &pb, "backend")
        } else {
            (&pb, &pa, "frontend")
        };
        for m in [&a, &b] {
            let w = m.message(winner);
            let l = m.message(loser);
            assert!(w.retired.is_none() && w.round_conflict.is_none());
            assert_eq!(
                l.round_conflict.map(|r| r.short()).as_deref(),
                Some(winner.as_str())
            );
            assert!(l.retired.is_some(), "the second round counts as superseded");
            let lost = conflicted(m, loser_role);
            assert_eq!(lost.len(), 1, "{lost:?}");
            assert_eq!(lost[0]["target"], loser.as_str());
            assert_eq!(lost[0]["winner"], winner.as_str());
            let thread =
                countersign::app::thread::get_thread(&mut m.session("frontend"), loser, None)
                    .unwrap();
            let thread = serde_json::to_value(thread).unwrap();
            let row = &thread["result"][0];
            assert_eq!(row["round_conflict"]["winner"], winner.as_str(), "{row}");
            assert!(row["superseded_at"].is_string());
        }
    }
}

#[test]
fn a_vote_on_a_text_revised_concurrently() {
    for revise_first in [true, false] {
        let (_l, a, b) = pair();
        let p = proposal(&mut a.session("frontend"), "k", "draft one");
        exchange(&a, &b, true);
        let revise = || {
            revise::revise_message(
                &mut a.session("frontend"),
                ReviseRequest {
                    message_id: p.clone(),
                    body: "draft two".into(),
                    ..ReviseRequest::default()
                },
            )
            .unwrap()
        };
        let agree =
            || vote::acknowledge(&mut b.session("backend"), &p, "agree", None, None).unwrap();
        if revise_first {
            revise();
            tick();
            agree();
        } else {
            agree();
            tick();
            revise();
        }
        let digest = exchange(&a, &b, !revise_first);
        assert_eq!(a.rebuilt_digest(), digest);
        for m in [&a, &b] {
            let msg = m.message(&p);
            // Either way the agree does not count for the text as it now stands.
            assert!(msg.tally().agreed.is_empty(), "{:?}", msg.tally());
            if revise_first {
                // The vote was cast on bytes that were already replaced: it lost.
                assert_eq!(msg.conflicts.len(), 1, "{:?}", msg.conflicts);
                assert_eq!(msg.conflicts[0].op, "ack");
                assert_eq!(msg.conflicts[0].winner, msg.revised.map(|k| k.id));
                assert_eq!(conflicted(m, "backend").len(), 1);
            } else {
                // The vote came first; the revision quenched it, as on one machine.
                assert!(msg.conflicts.is_empty());
                assert_eq!(msg.tally().stale.len(), 1);
            }
        }
    }
}

#[test]
fn a_pin_write_racing_a_change_of_vote() {
    for pin_first in [true, false] {
        let (_l, a, b) = pair();
        let p = proposal(&mut a.session("frontend"), "glossary", "words");
        exchange(&a, &b, true);
        vote::acknowledge(&mut b.session("backend"), &p, "agree", None, None).unwrap();
        exchange(&a, &b, true);
        let write =
            || pin::pin_set(&mut a.session("frontend"), pin_req("glossary", "1", &p)).unwrap();
        let reject =
            || vote::acknowledge(&mut b.session("backend"), &p, "reject", None, None).unwrap();
        if pin_first {
            write();
            tick();
            reject();
        } else {
            reject();
            tick();
            write();
        }
        let digest = exchange(&a, &b, pin_first);
        assert_eq!(b.rebuilt_digest(), digest);
        for m in [&a, &b] {
            let v = versions(m, "glossary");
            if pin_first {
                assert_eq!(v.len(), 1, "the write came first and stands");
                assert!(conflicted(m, "frontend").is_empty());
            } else {
                assert!(
                    v.is_empty(),
                    "the agree was withdrawn before the write: {v:?}"
                );
                let lost = conflicted(m, "frontend");
                assert_eq!(lost.len(), 1, "{lost:?}");
                assert_eq!(lost[0]["op"], "pin_set");
                assert!(
                    lost[0]["reason"]
                        .as_str()
                        .unwrap()
                        .contains("has no 'agree'"),
                    "{lost:?}"
                );
            }
        }
    }
}
