//! The recording rules on real transcript lines of both clients
//! (tests/fixtures/recording/, see its README): what a hook keeps and what
//! it skips, the turn record's counts, ids that tell events apart; and where
//! a note came from, as the memory's lines say it, with a thread that
//! follows one session.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::common::TestChannel;
use crate::common::local::{Local, send};
use crate::recording::{channel, failed, hook_record, spooled, wait_delivered};
use countersign::app::budget::Budget;
use countersign::app::memory::{memory_search, memory_thread};
use countersign::app::note::{NoteRequest, write_note};
use countersign::core::memory::note::{self, NoteKind};
use countersign::core::memory::provenance;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/recording")
        .join(name)
}

fn lines(name: &str) -> Vec<String> {
    fs::read_to_string(fixture(name))
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The transcript `name` as it stood when the entry `upto` (a uuid) was
/// its last line, written into the test's folder.
fn transcript_upto(t: &TestChannel, name: &str, upto: Option<&str>) -> PathBuf {
    let mut kept = Vec::new();
    for l in lines(name) {
        let last = upto.is_some_and(|u| {
            serde_json::from_str::<Value>(&l).is_ok_and(|v| v["uuid"].as_str() == Some(u))
        });
        kept.push(l);
        if last {
            break;
        }
    }
    let path = t.tmp.path().join(format!("{}.{}", kept.len(), name));
    fs::write(&path, kept.join("\n") + "\n").unwrap();
    path
}

/// A hook input of a fixture, its transcript the one given.
fn with_transcript(input: &str, transcript: &Path) -> String {
    let mut v: Value = serde_json::from_str(input).unwrap();
    v["transcript_path"] = json!(transcript);
    v.to_string()
}

fn record(t: &TestChannel, input: &str) {
    let event = serde_json::from_str::<Value>(input).unwrap()["hook_event_name"]
        .as_str()
        .unwrap()
        .to_owned();
    let (code, stderr, _) = hook_record(t, &event, input, &[]);
    assert_eq!(code, 0, "{stderr}");
}

/// Waits for `n` notes, then checks nothing more comes and nothing failed.
fn settled_notes(t: &TestChannel, n: usize) -> Vec<(String, String)> {
    let notes = wait_delivered(t, n);
    assert_eq!(notes.len(), n, "{notes:#?}");
    assert!(failed(t).is_empty(), "{:?}", failed(t));
    assert!(spooled(t).is_empty());
    notes
}

/// Claude Code 2.1.332 against the model stand-in: a prompt, a turn that
/// starts a background subagent, reads, searches, lists, writes a file and
/// fails an edit; then the subagent's completion notice, which the client
/// hands the prompt hook as if it were a prompt, and the turn it starts.
#[test]
fn claude_code_a_background_subagent_and_an_exploring_turn() {
    let t = channel();
    let name = "claude-background-agent.transcript.jsonl";
    let hooks = lines("claude-background-agent.hooks.jsonl");
    assert_eq!(hooks.len(), 4);
    // The prompt.
    record(&t, &hooks[0]);
    // The first Stop, with the transcript as it was then.
    let first = transcript_upto(&t, name, Some("e66d1031-2f6c-4290-bc29-3d57eba4c5a5"));
    record(&t, &with_transcript(&hooks[1], &first));
    // The notice: not a prompt, but it carries the subagent's report.
    assert!(hooks[2].contains("<task-notification>"));
    record(&t, &hooks[2]);
    // The Stop of the turn the notice started.
    let all = transcript_upto(&t, name, None);
    record(&t, &with_transcript(&hooks[3], &all));
    let notes = settled_notes(&t, 5);
    let of = |kind: &str| -> Vec<&str> {
        notes
            .iter()
            .filter(|(k, _)| k == kind)
            .map(|(_, text)| text.as_str())
            .collect()
    };
    assert_eq!(of("prompt"), ["Survey the code and fix a.rs"], "{notes:#?}");
    assert_eq!(
        of("turn"),
        [
            "read 1 file (main.rs), 2 searches, 1 listing; files changed: src/b.rs; edits failed: \
          src/a.rs"
        ]
    );
    assert_eq!(
        of("report"),
        ["Agent \"Survey the code\" finished:\nDone: surveyed and edited."]
    );
    // Each turn's reply; the same words, two turns.
    assert_eq!(
        of("reply"),
        ["Done: surveyed and edited.", "Done: surveyed and edited."]
    );
    assert!(
        notes
            .iter()
            .all(|(_, text)| !text.contains("task-notification")),
        "{notes:#?}"
    );
}

/// A foreground subagent's report, from the tool result Claude Code writes
/// into the transcript.
#[test]
fn claude_code_a_foreground_subagents_report_is_kept() {
    let t = channel();
    let transcript = transcript_upto(&t, "claude-foreground-agent.transcript.jsonl", None);
    let stop = json!({"session_id": "3973badf-ca58-4a7d-865d-54671ddd9084",
        "transcript_path": transcript, "cwd": "/tmp/cap/project",
        "prompt_id": "f0000000-0000-4000-8000-000000000001",
        "hook_event_name": "Stop", "stop_hook_active": false, "last_assistant_message": "ok"});
    record(&t, &stop.to_string());
    let notes = settled_notes(&t, 2);
    assert!(
        notes.contains(&("report".into(), "Check the tests:\nok".into())),
        "{notes:#?}"
    );
    assert!(notes.contains(&("reply".into(), "ok".into())));
}

/// The user's answers and an approved plan, kept from the transcript once
/// whichever Stop reads them; a plan the user turned down is not.
#[test]
fn claude_code_answers_and_an_approved_plan_are_kept_once() {
    let t = channel();
    let transcript = transcript_upto(&t, "claude-questions-and-plan.transcript.jsonl", None);
    let stop = |prompt_id: &str| {
        json!({"session_id": "3973badf-ca58-4a7d-865d-54671ddd9084",
            "transcript_path": transcript, "cwd": "/tmp/cap/project", "prompt_id": prompt_id,
            "hook_event_name": "Stop", "stop_hook_active": false,
            "last_assistant_message": "Done: planned."})
        .to_string()
    };
    record(&t, &stop("p1"));
    let notes = settled_notes(&t, 3);
    assert!(
        notes.contains(&(
            "answer".into(),
            "Which database should the cache use? → SQLite".into()
        )),
        "{notes:#?}"
    );
    assert!(notes.contains(&(
        "plan".into(),
        "1. Add a cache table.\n2. Read through it in get_user.".into()
    )));
    assert!(notes.iter().all(|(_, text)| !text.contains("turned down")));
    // A Stop of another prompt reading the same entries again (a Stop hook
    // that let the turn go on): its reply is new, the answer and plan are not.
    record(&t, &stop("p2"));
    let again = settled_notes(&t, 4);
    assert_eq!(again.iter().filter(|(k, _)| k == "answer").count(), 1);
    assert_eq!(again.iter().filter(|(k, _)| k == "plan").count(), 1);
    assert_eq!(again.iter().filter(|(k, _)| k == "reply").count(), 2);
}

/// Another session's message is kept, with its sender; a local command's
/// caveat is the client's own and is not a prompt (nor a failure).
#[test]
fn claude_code_a_peers_message_is_kept_and_a_caveat_skipped() {
    let t = channel();
    let hooks = lines("claude-peer-and-caveat.hooks.jsonl");
    record(&t, &hooks[1]);
    record(&t, &hooks[0]);
    let notes = settled_notes(&t, 1);
    assert_eq!(
        notes,
        [(
            "peer".to_owned(),
            "from review@desk:\nThe API is ready: use /v2/users.".to_owned()
        )]
    );
    // A long one is cut at 4,000 characters, saying so.
    let long = format!(
        "<cross-session-message from=\"a\">{}</cross-session-message>",
        "x".repeat(5000)
    );
    let input = json!({"session_id": "s", "cwd": "/tmp", "prompt_id": "p9",
        "hook_event_name": "UserPromptSubmit", "prompt": long});
    record(&t, &input.to_string());
    let notes = settled_notes(&t, 2);
    let cut = &notes[1].1;
    assert!(
        cut.starts_with("from a:\n") && cut.ends_with("[… 1008 more characters not recorded]"),
        "{}",
        &cut[cut.len() - 60..]
    );
}

/// Codex 0.171 against the model stand-in: a turn that reads a file, and
/// one whose command fails.
#[test]
fn codex_turns_count_what_they_read_and_name_what_failed() {
    let t = channel();
    for (name, want) in [
        ("codex-explore.rollout.jsonl", "read 1 file (main.rs)"),
        (
            "codex-failed-command.rollout.jsonl",
            "commands failed: `cargo test --quiet` (exit 127)",
        ),
    ] {
        let transcript = transcript_upto(&t, name, None);
        let turn_id = lines(name)
            .iter()
            .find_map(|l| {
                let v: Value = serde_json::from_str(l).ok()?;
                v["payload"]["turn_id"].as_str().map(str::to_owned)
            })
            .unwrap();
        let stop = json!({"session_id": "codex-session", "turn_id": turn_id,
            "transcript_path": transcript, "cwd": "/tmp/cap/cx/project",
            "hook_event_name": "Stop", "stop_hook_active": false,
            "last_assistant_message": "ok"});
        record(&t, &stop.to_string());
        let notes = wait_delivered(&t, 0);
        assert!(
            notes.contains(&("turn".to_owned(), want.to_owned())),
            "{name}: {notes:#?}"
        );
    }
}

/// A Codex prompt from a thread that keeps no rollout file (the app's task
/// suggestions run in such threads) is not recorded; a prompt of a thread
/// with its rollout is, whatever its words.
#[test]
fn codex_prompts_of_threads_without_a_transcript_are_not_recorded() {
    let t = channel();
    let transcript = fixture("codex-explore.rollout.jsonl");
    let prompt = |turn: &str, transcript: Value, text: &str| {
        json!({"session_id": format!("codex-{turn}"), "turn_id": turn,
            "transcript_path": transcript, "cwd": "/tmp/cap/cx/project", "model": "m",
            "permission_mode": "default", "hook_event_name": "UserPromptSubmit",
            "prompt": text})
        .to_string()
    };
    record(
        &t,
        &prompt("t1", Value::Null, "Suggest three tasks for this repository"),
    );
    record(&t, &prompt("t2", json!(""), "Suggest more tasks"));
    record(
        &t,
        &prompt(
            "t3",
            json!(transcript),
            "Suggest three tasks for this repository",
        ),
    );
    let notes = settled_notes(&t, 1);
    assert_eq!(
        notes,
        [(
            "prompt".to_owned(),
            "Suggest three tasks for this repository".to_owned()
        )]
    );
}

/// Two prompts with the same words while the transcript did not change are
/// two events when the client tells them apart; one prompt delivered twice
/// is one.
#[test]
fn event_ids_come_from_the_clients_own_ids() {
    let t = channel();
    let prompt = |id: &str| {
        json!({"session_id": "s-1", "transcript_path": null, "cwd": "/tmp",
            "prompt_id": id, "hook_event_name": "UserPromptSubmit", "prompt": "again"})
        .to_string()
    };
    record(&t, &prompt("a"));
    record(&t, &prompt("b"));
    record(&t, &prompt("b"));
    let notes = settled_notes(&t, 2);
    assert_eq!(notes.iter().filter(|(k, _)| k == "prompt").count(), 2);
}

/// A recorded note's lines say where it came from; a message's its role.
/// The thread of a note follows its session, skipping other sessions'
/// notes and messages between them; the thread of a message follows the
/// channel. A notice recorded by an earlier version is found by neither.
#[test]
fn lines_carry_provenance_and_a_thread_follows_one_session() {
    let l = Local::new(&["web", "api"]);
    let mut s = l.session("web");
    let recorded = |text: &str, session: &str, folder: &str| NoteRequest {
        kind: NoteKind::Prompt,
        text: text.into(),
        event: Some(note::event_id(&[text, session])),
        agent: Some("claude".into()),
        session: Some(note::session_hash(session)),
        folder: Some(folder.into()),
        folder_hash: Some(provenance::folder_hash(&format!("/home/me/p/{folder}"))),
    };
    let first = write_note(&mut s, recorded("quince one", "s1", "src/cli")).unwrap();
    let msg = send(&mut s, "api", "Quince", "quince message between");
    write_note(&mut s, recorded("quince other session", "s2", ".")).unwrap();
    write_note(
        &mut s,
        recorded("<task-notification>\nquince notice", "s1", "."),
    )
    .unwrap();
    let second = write_note(&mut s, recorded("quince two", "s1", ".")).unwrap();
    let by_hand = write_note(
        &mut s,
        NoteRequest {
            kind: NoteKind::Note,
            text: "quince by hand".into(),
            event: None,
            agent: None,
            session: None,
            folder: None,
            folder_hash: None,
        },
    )
    .unwrap();
    let device = l.home.device().unwrap().id;
    let h1 = note::session_hash("s1");
    let cli_hash = provenance::folder_hash("/home/me/p/src/cli");
    let root_hash = provenance::folder_hash("/home/me/p/.");

    let cancelled = || false;
    let mut budget = Budget::search(&cancelled);
    let found = memory_search(&mut s, "quince", 20, &mut budget)
        .unwrap()
        .lines;
    let line_of = |id: &str| {
        found
            .iter()
            .find(|l| l.starts_with(&id[..12]))
            .unwrap_or_else(|| panic!("{id} not in {found:#?}"))
            .clone()
    };
    let one = line_of(&first.id);
    let who = one.split_once('|').unwrap().1.split_once(' ').unwrap().0;
    assert_eq!(
        who,
        format!("prompt@web/src/cli~{cli_hash}/claude@{device}#{}", &h1[..6])
    );
    let two = line_of(&second.id);
    assert!(
        two.contains(&format!(
            "|prompt@web~{root_hash}/claude@{device}#{} ",
            &h1[..6]
        )),
        "{two}"
    );
    assert!(line_of(&by_hand.id).contains(&format!("|note@web@{device} ")));
    assert!(line_of(&msg).contains("|msg@web "), "{found:#?}");
    assert!(
        found.iter().all(|l| !l.contains("notice")),
        "a notice is skipped: {found:#?}"
    );

    // The thread of a note: its session's next notes only.
    let thread = memory_thread(&mut s, &first.id, 5).unwrap();
    assert_eq!(thread.lines.len(), 1, "{:#?}", thread.lines);
    assert!(thread.lines[0].starts_with(&second.id[..12]));
    // The thread of a message: the channel's order (no notice among them).
    let after_msg = memory_thread(&mut s, &msg, 5).unwrap();
    assert_eq!(after_msg.lines.len(), 3, "{:#?}", after_msg.lines);
    assert!(after_msg.lines[0].contains("quince other session"));
    assert!(after_msg.lines[1].starts_with(&second.id[..12]));
    assert!(after_msg.lines[2].starts_with(&by_hand.id[..12]));

    // The view shows the same provenance in the item's own line.
    let view = countersign::app::memory::memory_view(&mut s, None).unwrap();
    assert!(
        view.lines.iter().any(|l| l.shown.ends_with(&format!(
            "prompt@web/src/cli~{cli_hash}/claude@{device}#{}: quince one",
            &h1[..6]
        ))),
        "{:#?}",
        view.lines
    );
}
