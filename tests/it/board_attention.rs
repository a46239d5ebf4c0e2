//! What needs attention, and a page per message: the attention fold on the
//! board's fixture (real files, a real index), the strip and the pages
//! below the board over real HTTP, the activity paged back through history,
//! and the CLI's `status --text` and `pin show` through the real binary.

use std::process::{Command, Output};

use countersign::app::attention::{AttentionItem, AttentionKind, RoundState, Subject, Who};
use countersign::app::lifecycle::resolve_message;
use countersign::app::send::{SendRequest, ToArg, send_message};
use countersign::app::timeline;
use countersign::app::vote::acknowledge;
use countersign::board_page as page;

use crate::board::{CONFLICT_COPY, HOSTILE_TOPIC, PERSON_NOTE, Scene, board_of, scene};
use crate::board_http::{BoardServer, get};
use crate::common::bin;
use crate::common::local::{Local, send};

/// The one item about message `name` of the scene.
fn item<'a>(items: &'a [AttentionItem], sc: &Scene, name: &str) -> &'a AttentionItem {
    let id = &sc.ids[name];
    let found: Vec<_> = items
        .iter()
        .filter(|i| i.subject == Subject::Message(id.clone()))
        .collect();
    assert_eq!(found.len(), 1, "{name}: {items:#?}");
    found[0]
}

fn roles(r: &[&str]) -> Who {
    Who::Roles(r.iter().map(|s| (*s).to_owned()).collect())
}

#[test]
fn the_attention_fold_names_what_is_stuck_and_who_must_act() {
    let sc = scene();
    let b = board_of(&sc.local);
    let a = &b.attention;

    let licence = item(&a.items, &sc, "licence");
    assert_eq!(licence.kind, AttentionKind::BlockedOnPerson);
    assert_eq!(licence.who, Who::Person);
    assert_eq!(licence.held_by.as_deref(), Some("beta"));
    assert_eq!(licence.note.as_deref(), Some(PERSON_NOTE));

    let contested = item(&a.items, &sc, "contested");
    assert_eq!(contested.kind, AttentionKind::Contested);
    assert_eq!(contested.who, roles(&["alpha"]));
    assert_eq!(
        contested.note.as_deref(),
        Some("beta: reject — the names are too long")
    );

    let old = item(&a.items, &sc, "old");
    assert_eq!(old.kind, AttentionKind::Unconfirmed);
    assert_eq!(old.who, roles(&["delta"]));
    assert!(b.generated_ms - old.since_ms > 86_400_000, "{old:?}");
    // The fresh resolution waits less than a day: not stuck yet.
    assert!(
        !a.items
            .iter()
            .any(|i| i.subject == Subject::Message(sc.ids["docs"].clone()))
    );

    let changelog = item(&a.items, &sc, "changelog");
    assert_eq!(changelog.kind, AttentionKind::DoneButOpen);
    assert_eq!(changelog.who, roles(&["beta"]));

    let idle = item(&a.items, &sc, "idle");
    assert_eq!(idle.kind, AttentionKind::Idle);
    assert_eq!(idle.who, roles(&["epsilon"]));

    // The planted symlink is an alarm, the conflict copy only what verify
    // reports; both are the folder keeper's.
    let alarm = a
        .items
        .iter()
        .find(|i| i.kind == AttentionKind::Alarm)
        .unwrap_or_else(|| panic!("no alarm: {a:#?}"));
    assert_eq!(
        (alarm.who.clone(), alarm.subject.clone()),
        (Who::Keeper, Subject::Alarms)
    );
    assert!(alarm.topic.contains("wrong type"), "{alarm:?}");
    assert_eq!(a.alarms, 1);
    let verify = a
        .items
        .iter()
        .find(|i| i.kind == AttentionKind::Verify)
        .unwrap_or_else(|| panic!("no verify item: {a:#?}"));
    assert!(verify.topic.contains("stray"), "{verify:?}");
    assert!(verify.note.as_deref().unwrap().contains(CONFLICT_COPY));
    assert_eq!(a.quiet_problems, 1);

    // Alarms come first; a task blocked on another debt is not stuck on a
    // person.
    assert_eq!(a.items[0].kind, AttentionKind::Alarm);
    assert!(
        !a.items
            .iter()
            .any(|i| i.subject == Subject::Message(sc.ids["deploy"].clone())
                && i.kind == AttentionKind::BlockedOnPerson)
    );

    // Every live round has a state: the contested one is listed although
    // nobody is awaited on it.
    let state = |name: &str| {
        b.proposals
            .items
            .iter()
            .find(|p| p.id == sc.ids[name])
            .unwrap_or_else(|| panic!("{name} is not listed: {:#?}", b.proposals))
            .state
            .clone()
    };
    assert_eq!(
        state("contested"),
        RoundState::Contested {
            by: "beta".into(),
            decision: "reject".into(),
            note: Some("the names are too long".into()),
        }
    );
    assert!(
        matches!(state("open"), RoundState::Waiting { n: 3 }),
        "{:?}",
        state("open")
    );
    // A round a pin write carried out is settled and gone.
    assert!(b.proposals.items.iter().all(|p| p.id != sc.ids["approved"]));
}

#[test]
fn a_round_every_voter_agreed_to_is_ready_to_pin() {
    let local = Local::new(&["alpha", "beta", "gamma"]);
    let mut a = local.session("alpha");
    let mut req = SendRequest::new("*", "proposal for tabs", "tabs, not spaces");
    req.kind = Some("proc".into());
    req.pin_key = Some(Some("tabs".into()));
    req.about_message_id = Some(None);
    req.voters = Some(Some(ToArg::One("*".into())));
    let id = send_message(&mut a, req).unwrap().id;
    for role in ["beta", "gamma"] {
        acknowledge(&mut local.session(role), &id, "agree", None, None).unwrap();
    }
    let b = board_of(&local);
    let p = b.proposals.items.iter().find(|p| p.id == id).unwrap();
    assert_eq!(p.state, RoundState::Ready);
    let ready = b
        .attention
        .items
        .iter()
        .find(|i| i.kind == AttentionKind::ReadyToPin)
        .unwrap();
    assert_eq!(
        (ready.who.clone(), ready.subject.clone()),
        (roles(&["alpha"]), Subject::Message(id))
    );
}

#[test]
fn the_board_opens_with_the_strip_and_a_red_alarm_count() {
    let sc = scene();
    let html = page::render(&board_of(&sc.local));
    let strip_at = html.find("id=\"attention\"").expect("the strip is drawn");
    let main_at = html.find("<main ").unwrap();
    let roles_at = html.find("id=\"roles\"").unwrap();
    assert!(
        main_at < strip_at && strip_at < roles_at,
        "the strip comes first"
    );
    assert!(html.contains(">1 alarm</a>"), "the header counts the alarm");
    // Each item links to its message, says who acts and why.
    for name in ["licence", "contested", "old", "changelog", "idle"] {
        let href = format!("href=\"local/m/{}\"", sc.ids[name]);
        assert!(html[strip_at..].contains(&href), "{name}: {href}");
    }
    assert!(html.contains(PERSON_NOTE));
    assert!(html.contains("<b>a person</b>"));
    assert!(html.contains("contested: <bdi>beta</bdi> reject"));
    // The board never says nothing is wrong while verify would exit 1.
    assert!(!html.contains("nothing wrong found"));
    assert!(html.contains("id=\"verify-note\""));
    // A blocker on the page links to its message.
    assert!(html.contains(&format!(
        "<a class=\"id blocker\" href=\"local/m/{}\">",
        sc.ids["ship"]
    )));
    // Recent activity has more than sends: votes, moves, resolutions.
    for needle in [
        "voted reject",
        "work status → blocked",
        "work status → done:",
    ] {
        assert!(html.contains(needle), "{needle} missing from the activity");
    }
    // Still only the page's own script.
    assert_eq!(html.matches("<script").count(), 1);
    assert!(!html.contains(HOSTILE_TOPIC));
}

#[test]
fn the_pages_below_the_board_show_a_message_and_a_pin_whole() {
    let sc = scene();
    let server = BoardServer::start(&sc.local);
    let cookie = server.cookie(&server.link());
    let page = |path: &str| get(&format!("{}/{path}", server.page()), &[("Cookie", &cookie)]);

    // A blocked task: its text, its timeline, its blocker as a link.
    let deploy = page(&format!("m/{}", sc.ids["deploy"]));
    deploy.assert_html(200, "about deploy the parser");
    for needle in [
        "sent a debt to gamma",
        "work status → blocked",
        &format!("<a class=\"id blocker\" href=\"../m/{}\">", sc.ids["ship"]),
        "<pre class=\"body\" dir=\"auto\">about deploy the parser</pre>",
        "href=\"../../local\"",
    ] {
        assert!(
            deploy.body.contains(needle),
            "{needle} not in {}",
            deploy.body
        );
    }
    // The blocker's page says what it blocks.
    let ship = page(&format!("m/{}", sc.ids["ship"]));
    ship.assert_html(200, "blocks");
    assert!(
        ship.body
            .contains(&format!("href=\"../m/{}\"", sc.ids["deploy"]))
    );

    // A contested round: every vote with its note, each in the timeline.
    let round = page(&format!("m/{}", sc.ids["contested"]));
    round.assert_html(200, "the names are too long");
    assert_eq!(round.body.matches("voted agree").count(), 3);
    assert!(round.body.contains("voted reject"));
    assert!(round.body.contains("href=\"../pin/naming\""));

    // A resolution and its confirmation wait; the other side's deliveries show.
    let docs = page(&format!("m/{}", sc.ids["docs"]));
    docs.assert_html(200, "resolved");
    assert!(docs.body.contains("not confirmed yet"));
    let changelog = page(&format!("m/{}", sc.ids["changelog"]));
    for needle in ["work status → done_local:", "work status → done:"] {
        assert!(changelog.body.contains(needle), "{needle}");
    }

    // Peer text stays text; an id names one message or none.
    let hostile = page(&format!("m/{}", sc.ids["hostile"]));
    hostile.assert_html(200, "&lt;script&gt;alert(1)&lt;/script&gt;");
    assert!(!hostile.body.contains(HOSTILE_TOPIC));
    assert!(!hostile.body.contains("<script"));
    page("m/abcdef012345").assert_html(404, "No message");
    page("m/zz").assert_html(400, "6 to 64 hex characters");

    // The proposal a pin write carried out shows it in its timeline.
    let approved = page(&format!("m/{}", sc.ids["approved"]));
    approved.assert_html(200, "pinned style version v1");
    assert!(approved.body.contains("href=\"../pin/style\""));

    // A pin, readable in full, with its version and sha256.
    let pin = page("pin/style");
    pin.assert_html(200, "short sentences");
    let b = board_of(&sc.local);
    let sha = &b.pins.items[0].sha256;
    assert!(pin.body.contains(sha.as_str()), "the whole sha256");
    assert!(
        pin.body
            .contains(&format!("href=\"../m/{}\"", sc.ids["approved"]))
    );
    page("pin/nothing-here").assert_html(200, "nothing is pinned under this key");

    // Without the cookie, nothing below the board opens.
    let bare = get(&format!("{}/m/{}", server.page(), sc.ids["ship"]), &[]);
    assert_eq!(bare.status, 401);
    assert!(!bare.body.contains("ship the parser"));
}

#[test]
fn the_activity_pages_back_through_all_of_history() {
    let local = Local::new(&["alpha", "beta"]);
    let (mut a, mut b) = (local.session("alpha"), local.session("beta"));
    let mut debts = Vec::new();
    for i in 0..30 {
        let mut req = SendRequest::new("beta", format!("debt {i}"), "owed");
        req.action_required = true;
        debts.push(send_message(&mut a, req).unwrap().id);
    }
    for id in &debts {
        resolve_message(&mut b, id, Some("done".into())).unwrap();
    }
    send(&mut a, "beta", "last", "the newest");

    // Through the app: 61 moves, pages of 40 and 21, newest first, none twice.
    let mut s = local.session("alpha");
    let first = timeline::activity(&mut s, None).unwrap();
    assert_eq!(first.entries.len(), timeline::ACTIVITY_PAGE);
    assert_eq!(first.entries[0].subject_topic.as_deref(), Some("last"));
    let cursor = first.next.clone().expect("an older page");
    let second = timeline::activity(&mut s, Some(&cursor)).unwrap();
    assert_eq!(second.entries.len(), 21);
    assert!(second.next.is_none());
    let all: Vec<_> = first.entries.iter().chain(&second.entries).collect();
    let mut records: Vec<_> = all.iter().map(|e| e.record.clone()).collect();
    records.dedup();
    assert_eq!(records.len(), 61);
    assert!(all.windows(2).all(|w| w[0].ms >= w[1].ms));
    assert_eq!(all.iter().filter(|e| e.what == "resolved").count(), 30);
    assert_eq!(all.last().unwrap().subject_topic.as_deref(), Some("debt 0"));
    assert!(timeline::activity(&mut s, Some("not-a-cursor")).is_err());

    // Over HTTP: the board's "older" link leads to the rest.
    let server = BoardServer::start(&local);
    let cookie = server.cookie(&server.link());
    let board = get(&server.page(), &[("Cookie", &cookie)]);
    board.assert_html(200, "rel=\"next\"");
    let href = board
        .body
        .split("<a rel=\"next\" href=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap()
        .replace("&amp;", "&");
    assert!(href.starts_with("local/activity?before="), "{href}");
    let older = get(
        &format!("{}/board/{href}", server.base),
        &[("Cookie", &cookie)],
    );
    older.assert_html(200, "debt 0");
    assert_eq!(older.body.matches("<tr class=\"move\">").count(), 21);
    assert!(!older.body.contains("rel=\"next\""));
    get(
        &format!("{}/activity?before=x", server.page()),
        &[("Cookie", &cookie)],
    )
    .assert_html(400, "before");
}

fn cli(local: &Local, args: &[&str]) -> Output {
    Command::new(bin())
        .env("COUNTERSIGN_HOME", local.home_root())
        .env_remove("COUNTERSIGN_ROLE")
        .env_remove("AI_AGENT_CHANNEL_ROLE")
        .env_remove("COUNTERSIGN_CHANNEL")
        .env_remove("COUNTERSIGN_URL")
        .arg("--channel")
        .arg(&local.dir)
        .args(args)
        .output()
        .expect("the binary runs")
}

#[test]
fn status_text_opens_with_what_needs_attention() {
    let sc = scene();
    let out = cli(&sc.local, &["status", "--text", "--role", "alpha"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("needs attention ("), "{text}");
    let block: Vec<&str> = text.split("\n\n").next().unwrap().lines().collect();
    let line = |name: &str| {
        block
            .iter()
            .find(|l| l.contains(&format!("#{}", sc.ids[name])))
            .unwrap_or_else(|| panic!("{name} missing: {text}"))
            .to_owned()
    };
    let licence = line("licence");
    assert!(
        licence.contains("blocked on a person")
            && licence.contains("→ a person")
            && licence.contains("held by beta")
            && licence.contains(PERSON_NOTE),
        "{licence}"
    );
    assert!(line("contested").contains("→ alpha"));
    assert!(line("contested").contains("the names are too long"));
    assert!(line("old").contains("→ delta, for 2 d"), "{}", line("old"));
    assert!(line("changelog").contains("→ beta"));
    assert!(
        line("idle").contains("→ epsilon, for 3 d"),
        "{}",
        line("idle")
    );
    assert!(
        block
            .iter()
            .any(|l| l.contains("alarm") && l.contains("whoever keeps the folder"))
    );
    assert!(
        block
            .iter()
            .any(|l| l.contains("verify") && l.contains("stray"))
    );
    // The role's own status follows the block.
    assert!(
        text.split_once("\n\n")
            .is_some_and(|(_, rest)| rest.contains("alpha")),
        "{text}"
    );
    // Peer text is inert there too.
    assert!(!text.contains('\u{1b}'));
}

#[test]
fn pin_show_prints_a_pinned_text_with_its_version_and_sha256() {
    let sc = scene();
    let b = board_of(&sc.local);
    let out = cli(&sc.local, &["pin", "show", "style"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "pin style — House style");
    assert!(lines[1].starts_with("version v1 of 1 · sha256 "), "{text}");
    assert!(lines[1].contains(&b.pins.items[0].sha256));
    assert!(
        lines[2].contains(&format!("approved by #{}", sc.ids["approved"])),
        "{text}"
    );
    assert_eq!(&lines[3..], ["", "short sentences"]);

    let missing = cli(&sc.local, &["pin", "show", "nothing-here"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(missing.stdout.is_empty());
    assert!(
        String::from_utf8_lossy(&missing.stderr).contains("status pins"),
        "the refusal says where the keys are listed"
    );
    let version = cli(&sc.local, &["pin", "show", "style", "--version", "v9"]);
    assert_eq!(version.status.code(), Some(1));
}
