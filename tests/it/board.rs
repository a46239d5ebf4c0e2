//! The board's view and page, read from a real channel built through the
//! library's own use cases (real files, a real SQLite index).

use std::collections::BTreeMap;

use countersign::app::Session;
use countersign::app::board::{self, Board, SyncHealth};
use countersign::app::lifecycle::{resolve_message, set_work_status};
use countersign::app::pin::{PinRequest, pin_set};
use countersign::app::send::{SendRequest, ToArg, send_message};
use countersign::app::sync::{WhenBusy, set_remote, sync_now};
use countersign::app::vote::acknowledge;
use countersign::board_page as page;
use countersign::store::Remote;
use countersign::store::now_ms;

use crate::common::local::{Local, send};

/// The topic a peer could write to try to run script on the board.
pub const HOSTILE_TOPIC: &str = "<script>alert(1)</script>";
/// The name of a symlink planted in the folder (a `wrong_type` alarm).
pub const HOSTILE_FILE: &str = "<img src=x onerror=alert(2)>";

/// The note of the task in [`scene`] blocked on a person.
pub const PERSON_NOTE: &str = "waiting for the human product owner";
/// A file a sync tool could leave in a feed folder: no feed uses its name.
pub const CONFLICT_COPY: &str = "00000001 (conflicted copy).jsonl";

/// What [`scene`] made, by name.
pub struct Scene {
    pub local: Local,
    /// Short ids: `ship` (alpha → beta, open), `hostile` (alpha → gamma,
    /// open), `docs` (beta → alpha, resolved by alpha), `ask` (gamma →
    /// beta, needs_you back to gamma), `approved` and `open` (proposals);
    /// and what needs attention: `old` (delta → epsilon, resolved two days
    /// ago, unconfirmed), `idle` (delta → epsilon, untouched for three
    /// days), `licence` (gamma → beta, blocked on a person), `deploy`
    /// (alpha → gamma, blocked on `ship`), `changelog` (alpha → beta, done
    /// on both sides, open), `contested` (a round on `naming`: three agree,
    /// beta rejects).
    pub ids: BTreeMap<&'static str, String>,
}

fn debt(s: &mut Session, to: &str, topic: &str) -> String {
    let mut req = SendRequest::new(to, topic, format!("about {topic}"));
    req.action_required = true;
    send_message(s, req).unwrap().id
}

fn proposal(s: &mut Session, key: &str, voters: ToArg, topic: &str) -> String {
    let mut req = SendRequest::new("*", topic, "let us agree on this");
    req.kind = Some("proc".into());
    req.pin_key = Some(Some(key.into()));
    req.about_message_id = Some(None);
    req.voters = Some(Some(voters));
    send_message(s, req).unwrap().id
}

/// A history three days old, written first (a feed's clock only moves
/// forward): delta's two debts to epsilon, one resolved by epsilon two days
/// ago and never confirmed, one nobody touched since.
fn past(local: &Local, ids: &mut BTreeMap<&'static str, String>) {
    use countersign::core::hlc::Hlc;
    use countersign::core::ids::Role;
    use countersign::core::op::{Note, Op, Send};
    let day = 86_400_000;
    let start = now_ms() - 3 * day;
    let mut ch = local.channel();
    let debt = |topic: &str| {
        Op::Send(Send {
            to: vec![Role::new("epsilon").unwrap()],
            topic: topic.into(),
            body: format!("about {topic}"),
            action_required: true,
            ..Send::default()
        })
    };
    let mut delta = ch.bulk(&Role::new("delta").unwrap(), start).unwrap();
    let idle = delta.push(&debt("stale question"), start, Hlc::default());
    let (idle_id, idle_hlc) = (idle.id, idle.header.hlc);
    let old = delta.push(&debt("rotate the keys"), start + 1000, idle_hlc);
    let (old_id, seen) = (old.id, old.header.hlc);
    delta.flush().unwrap();
    drop(delta);
    let mut epsilon = ch.bulk(&Role::new("epsilon").unwrap(), start).unwrap();
    let resolve = Op::Resolve(Note {
        id: old_id,
        note: Some("rotated".into()),
    });
    epsilon.push(&resolve, start + day, seen);
    epsilon.flush().unwrap();
    drop(epsilon);
    ch.catch_up().unwrap();
    ids.insert("old", old_id.short());
    ids.insert("idle", idle_id.short());
}

/// A channel of five roles with a little of everything the board shows:
/// open debts in different courts, resolutions waiting for confirmation
/// (one for two days), an approved pin, an open proposal with a vote and a
/// contested round, a task blocked on a person and one on another debt,
/// work done on both sides of an open debt, traffic, an alarm and a file
/// only `verify` reports.
pub fn scene() -> Scene {
    let local = Local::new(&["alpha", "beta", "gamma", "delta", "epsilon"]);
    let mut ids = BTreeMap::new();
    past(&local, &mut ids);
    let (mut a, mut b, mut g) = (
        local.session("alpha"),
        local.session("beta"),
        local.session("gamma"),
    );
    ids.insert("ship", debt(&mut a, "beta", "ship the parser"));
    ids.insert("hostile", debt(&mut a, "gamma", HOSTILE_TOPIC));
    ids.insert("docs", debt(&mut b, "alpha", "review the docs"));
    resolve_message(&mut a, &ids["docs"], Some("done".into())).unwrap();
    ids.insert("ask", debt(&mut g, "beta", "which port?"));
    set_work_status(&mut b, &ids["ask"], "needs_you", None, None).unwrap();
    send(&mut g, "alpha", "hello", "just saying hi");

    ids.insert("licence", debt(&mut g, "beta", "pick a licence"));
    set_work_status(
        &mut b,
        &ids["licence"],
        "blocked",
        Some(PERSON_NOTE.into()),
        None,
    )
    .unwrap();
    ids.insert("deploy", debt(&mut a, "gamma", "deploy the parser"));
    set_work_status(&mut g, &ids["deploy"], "blocked", None, Some(&ids["ship"])).unwrap();
    ids.insert("changelog", debt(&mut a, "beta", "write the changelog"));
    set_work_status(&mut b, &ids["changelog"], "done_local", None, None).unwrap();
    set_work_status(&mut a, &ids["changelog"], "done", None, None).unwrap();
    let voters = ["beta", "gamma", "delta", "epsilon"]
        .map(String::from)
        .to_vec();
    let contested = proposal(&mut a, "naming", ToArg::Many(voters), "proposal for naming");
    for role in ["gamma", "delta", "epsilon"] {
        acknowledge(&mut local.session(role), &contested, "agree", None, None).unwrap();
    }
    acknowledge(
        &mut b,
        &contested,
        "reject",
        Some("the names are too long".into()),
        None,
    )
    .unwrap();
    ids.insert("contested", contested);

    let approved = proposal(
        &mut a,
        "style",
        ToArg::Many(vec!["beta".into()]),
        "proposal for style",
    );
    acknowledge(&mut b, &approved, "agree", None, None).unwrap();
    pin_set(
        &mut a,
        PinRequest {
            key: "style".into(),
            title: "House style".into(),
            version: "v1".into(),
            body: "short sentences\n".into(),
            body_ref: None,
            approved_by: Some(approved.clone()),
            dry_run: false,
        },
    )
    .unwrap();
    ids.insert("approved", approved);
    let open = proposal(
        &mut a,
        "ports",
        ToArg::One("*".into()),
        "proposal for ports",
    );
    acknowledge(&mut g, &open, "agree", None, None).unwrap();
    ids.insert("open", open);

    std::os::unix::fs::symlink("/etc/hostname", local.dir.join("feeds").join(HOSTILE_FILE))
        .unwrap();
    std::fs::write(local.feed_dir("alpha").join(CONFLICT_COPY), "").unwrap();
    Scene { local, ids }
}

/// The board of `local`, read by a session with no role (a person).
pub fn board_of(local: &Local) -> Board {
    let mut s = Session::new(local.channel(), None).unwrap();
    board::board(&mut s, now_ms()).unwrap()
}

#[test]
fn each_role_card_counts_what_waits_for_it() {
    let sc = scene();
    let b = board_of(&sc.local);
    let card = |r: &str| b.roles.iter().find(|c| c.role == r).unwrap().clone();
    assert_eq!(
        b.roles.iter().map(|c| c.role.as_str()).collect::<Vec<_>>(),
        ["alpha", "beta", "delta", "epsilon", "gamma"]
    );
    let beta = card("beta");
    assert_eq!((beta.owed, beta.to_confirm), (4, 1), "{beta:?}");
    assert!(beta.votes_awaited >= 1, "{beta:?}");
    assert!(beta.unread >= 3, "{beta:?}");
    let alpha = card("alpha");
    assert_eq!((alpha.owed, alpha.to_confirm), (0, 0), "{alpha:?}");
    assert_eq!(card("gamma").owed, 2);
    assert_eq!((card("epsilon").owed, card("delta").to_confirm), (1, 1));
}

#[test]
fn each_debt_says_whose_move_it_is() {
    let sc = scene();
    let b = board_of(&sc.local);
    let find = |name: &str| {
        b.open_debts
            .items
            .iter()
            .chain(&b.unconfirmed.items)
            .find(|d| d.id == sc.ids[name])
            .unwrap_or_else(|| panic!("{name} missing: {b:#?}"))
            .clone()
    };
    let ship = find("ship");
    assert_eq!(
        (ship.state.as_str(), ship.court.clone()),
        ("open", vec!["beta".to_owned()])
    );
    // needs_you from the addressee hands the ball back to the author.
    let ask = find("ask");
    assert_eq!(
        (ask.state.as_str(), ask.court.clone()),
        ("needs_you", vec!["gamma".to_owned()])
    );
    assert!(ask.since_ms >= ask.sent_ms);
    // A resolution waits on the other party.
    let docs = find("docs");
    assert_eq!(docs.state, "resolved");
    assert_eq!(docs.resolved_by.as_deref(), Some("alpha"));
    assert_eq!(docs.court, ["beta"]);
    let unconfirmed: Vec<&str> = b.unconfirmed.items.iter().map(|d| d.id.as_str()).collect();
    assert_eq!(unconfirmed, [&sc.ids["old"], &sc.ids["docs"]]);
    assert_eq!(b.open_debts.items.len(), 7);
    // Work done on both sides reads done, and it is the addressee's to resolve.
    let changelog = find("changelog");
    assert_eq!(
        (changelog.state.as_str(), changelog.court.clone()),
        ("done", vec!["beta".to_owned()])
    );
    assert_eq!(
        find("deploy").blocked_by.as_deref(),
        Some(sc.ids["ship"].as_str())
    );
    assert!(!b.open_debts.more);
}

#[test]
fn proposals_pins_devices_alarms_and_traffic_are_all_there() {
    let sc = scene();
    let b = board_of(&sc.local);

    let open = b
        .proposals
        .items
        .iter()
        .find(|p| p.id == sc.ids["open"])
        .expect("the open proposal is listed");
    assert_eq!(open.pin_key.as_deref(), Some("ports"));
    assert_eq!(open.votes.len(), 1);
    assert_eq!(
        (open.votes[0].role.as_str(), open.votes[0].decision.as_str()),
        ("gamma", "agree")
    );
    assert!(open.awaiting.contains(&"beta".to_owned()), "{open:?}");
    assert!(!open.awaiting.contains(&"gamma".to_owned()), "{open:?}");

    let pin = &b.pins.items[0];
    assert_eq!((pin.key.as_str(), pin.version.as_str()), ("style", "v1"));
    assert_eq!(
        pin.approved_by.as_deref(),
        Some(sc.ids["approved"].as_str())
    );
    assert_eq!(pin.approved_topic.as_deref(), Some("proposal for style"));
    assert_eq!(pin.sha256.len(), 64);

    assert_eq!(b.devices.len(), 5, "{:?}", b.devices);
    assert!(
        b.devices
            .iter()
            .all(|d| d.this_device && d.records > 0 && d.last_heard_ms.is_some())
    );
    // No remote: this machine's channel is not synced.
    assert!(b.devices.iter().all(|d| d.sync == SyncHealth::NotSynced));

    let alarm = b
        .alarms
        .items
        .iter()
        .find(|a| a.kind == "wrong_type")
        .unwrap_or_else(|| panic!("no wrong_type alarm: {:?}", b.alarms));
    assert!(alarm.r#where.contains(HOSTILE_FILE), "{alarm:?}");

    assert_eq!(b.traffic[0].topic, "proposal for ports");
    assert!(b.traffic.windows(2).all(|w| w[0].ms >= w[1].ms));
    let hello = b.traffic.iter().find(|t| t.topic == "hello").unwrap();
    assert_eq!(hello.excerpt, "just saying hi");
    assert_eq!(b.channel, "local");
}

#[test]
fn this_machine_shows_how_its_last_sync_ended() {
    let local = Local::new(&["alpha", "beta"]);
    send(&mut local.session("alpha"), "beta", "hello", "hi");
    let own = |b: &Board| {
        b.devices
            .iter()
            .find(|d| d.this_device)
            .map(|d| d.sync.clone())
            .unwrap()
    };
    assert_eq!(own(&board_of(&local)), SyncHealth::NotSynced);

    let remote = local.tmp.path().join("remote");
    let mut channel = local.channel();
    set_remote(&channel, Remote::Rclone(remote.display().to_string())).unwrap();
    assert_eq!(own(&board_of(&local)), SyncHealth::Unknown);
    let before = now_ms();
    sync_now(&mut channel, WhenBusy::Wait).unwrap();
    match own(&board_of(&local)) {
        SyncHealth::Synced { at_ms } => assert!(at_ms >= before),
        other => panic!("after a sync: {other:?}"),
    }

    // A remote that cannot be reached: the failure and its reason show.
    set_remote(&channel, Remote::Rclone("no-such-remote:channel".into())).unwrap();
    assert!(sync_now(&mut channel, WhenBusy::Wait).is_err());
    let b = board_of(&local);
    match own(&b) {
        SyncHealth::Failed { error, .. } => assert!(error.contains("no-such-remote"), "{error}"),
        other => panic!("after a failed sync: {other:?}"),
    }
    let html = page::render(&b);
    assert!(html.contains("last sync failed"), "the page shows it");
}

#[test]
fn the_chart_counts_open_debts_per_role_for_fourteen_days() {
    let sc = scene();
    let b = board_of(&sc.local);
    assert_eq!(b.chart.days.len(), board::CHART_DAYS);
    assert!(b.chart.days.windows(2).all(|w| w[1] - w[0] == 86_400_000));
    let series: BTreeMap<_, _> = b.chart.series.iter().cloned().collect();
    // Today: beta owes four, gamma two, alpha none (its debt is resolved).
    assert_eq!(series["beta"].last(), Some(&4));
    assert_eq!(series["gamma"].last(), Some(&2));
    assert_eq!(series["alpha"].last(), Some(&0));
    // Nothing was open before the channel existed.
    assert_eq!(series["beta"][0], 0);
}

#[test]
fn the_traffic_is_the_newest_forty_and_excerpts_are_short() {
    let local = Local::new(&["alpha", "beta"]);
    let mut a = local.session("alpha");
    for i in 0..45 {
        send(&mut a, "beta", &format!("m{i}"), &"x".repeat(400));
    }
    let b = board_of(&local);
    assert_eq!(b.traffic.len(), board::TRAFFIC_LIMIT);
    assert_eq!(b.traffic[0].topic, "m44");
    assert_eq!(b.traffic[39].topic, "m5");
    assert_eq!(b.traffic[0].excerpt.chars().count(), board::EXCERPT_CHARS);
}

#[test]
fn the_page_shows_peer_text_as_text_only() {
    let sc = scene();
    let html = page::render(&board_of(&sc.local));
    assert!(html.starts_with("<!DOCTYPE html>"));
    // The topic and the planted file's name are shown, escaped.
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(html.contains("&lt;img src=x onerror=alert(2)&gt;"));
    assert!(!html.contains(HOSTILE_TOPIC));
    assert!(!html.contains("<img"));
    // The page's own script is its only one, and nothing is loaded.
    assert_eq!(html.matches("<script").count(), 1);
    for external in ["src=\"http", "href=\"http", "@import", "url("] {
        assert!(!html.contains(external), "{external}");
    }
    // The sections are all there, with what is in them.
    for needle in [
        "ship the parser",
        "House style",
        "proposal for ports",
        "wrong type",
        "<svg class=\"chart\"",
        "<noscript><meta http-equiv=\"refresh\"",
    ] {
        assert!(html.contains(needle), "{needle} missing");
    }
}
