//! Recording on real files, a real SQLite index and the real binary: notes
//! as items of the memory and of its full-text table (never of the message
//! search), one recorded event written once, a peer's bad note quarantined,
//! `countersign note`, the recording hooks' spool (an event left by a crash
//! delivered by the next run, a second delivery adding nothing, an input
//! that makes no event kept in spool/failed/), the turn record read from a
//! transcript, and `install --record`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::local::{self, Local, send};
use crate::common::{TestChannel, bin};
use countersign::app::AppError;
use countersign::app::memory::Memory;
use countersign::app::note::{NoteRequest, write_note};
use countersign::core::memory::note::{MAX_NOTE_BYTES, NoteKind};
use countersign::core::memory::tree::DEFAULT_BUDGET;
use countersign::core::op::{MemoryNote, Op};
use countersign::core::record;
use countersign::store::Home;
use countersign::store::survey::list_segments;

fn note(kind: NoteKind, text: &str, event: Option<&str>) -> NoteRequest {
    NoteRequest {
        kind,
        text: text.into(),
        event: event.map(str::to_owned),
        agent: event.map(|_| "claude".to_owned()),
        session: None,
        folder: None,
        folder_hash: None,
    }
}

/// The notes of `role`'s feeds in the folder `dir` (every device): (kind, text).
pub(crate) fn feed_notes(dir: &Path, role: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let Ok(devices) = fs::read_dir(dir.join("feeds").join(role)) else {
        return out;
    };
    for d in devices.flatten() {
        for seg in list_segments(&d.path()).unwrap() {
            for line in fs::read_to_string(&seg.path).unwrap().lines() {
                let rec = record::decode(line.as_bytes()).unwrap();
                if let Some(Op::Note(n)) = rec.op {
                    out.push((n.kind.as_str().to_owned(), n.text));
                }
            }
        }
    }
    out
}

#[test]
fn notes_are_items_of_the_memory_sorted_among_messages() {
    let l = Local::new(&["a", "b"]);
    let mut s = l.session("a");
    send(
        &mut s,
        "b",
        "Login",
        "Which fields does POST /login return?",
    );
    s.catch_up().unwrap();
    let before = s.index().digest().unwrap();
    let noted = write_note(
        &mut s,
        note(
            NoteKind::Prompt,
            "make the login\nform show errors",
            Some("ev1"),
        ),
    )
    .unwrap();
    assert!(noted.written);
    s.catch_up().unwrap();
    assert_ne!(
        s.index().digest().unwrap(),
        before,
        "a note is in the state digest"
    );
    send(&mut s, "b", "Later", "after the note");
    let m = Memory::load_at(&s, None).unwrap();
    let shown: Vec<String> = m
        .view(DEFAULT_BUDGET)
        .lines
        .into_iter()
        .map(|l| l.shown)
        .collect();
    assert_eq!(shown.len(), 3, "{shown:?}");
    assert!(shown[0].ends_with("msg@a: Login — Which fields does POST /login return?"));
    // A note says where it came from: its kind, role, agent and device.
    assert!(
        shown[1].contains("|2026-")
            && shown[1].contains(": prompt@a/claude@")
            && shown[1].ends_with(": make the login form show errors"),
        "{shown:?}"
    );
    assert!(shown[1].starts_with(&noted.id[..12]), "{shown:?}");
    assert!(shown[2].ends_with("msg@a: Later — after the note"));

    // The notes' full-text table finds it, by words of its text.
    let hits = s.index().search_notes("\"the login\"", 10).unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].key.id.hex(), noted.id);
    assert_eq!(hits[0].role, "a");
    assert_eq!(hits[0].kind, NoteKind::Prompt);
    assert!(
        s.index()
            .search_notes("\"fields does\"", 10)
            .unwrap()
            .is_empty()
    );

    // Another machine reading the folder holds the same items and digest.
    let mut other = countersign::app::Session::new(
        local::open(&l.dir, &Home::at(l.tmp.path().join("home-2"))),
        None,
    )
    .unwrap();
    other.catch_up().unwrap();
    s.catch_up().unwrap();
    assert_eq!(other.index().digest().unwrap(), s.index().digest().unwrap());
    let there: Vec<String> = Memory::load_at(&other, None)
        .unwrap()
        .view(DEFAULT_BUDGET)
        .lines
        .into_iter()
        .map(|l| l.shown)
        .collect();
    assert_eq!(there, shown);
    assert_eq!(
        other
            .index()
            .search_notes("\"the login\"", 10)
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn one_recorded_event_is_written_once_and_bad_notes_write_nothing() {
    let l = Local::new(&["a", "b"]);
    let mut s = l.session("a");
    let first = write_note(&mut s, note(NoteKind::Reply, "done", Some("ev-1"))).unwrap();
    let again = write_note(&mut s, note(NoteKind::Reply, "done", Some("ev-1"))).unwrap();
    assert!(first.written && !again.written);
    assert_eq!(
        again.id, first.id,
        "the second delivery answers the note that stands"
    );
    assert_eq!(again.created_at, first.created_at);
    // The event is per role: b's feed may record an event of the same id.
    let mut b = l.session("b");
    assert!(
        write_note(&mut b, note(NoteKind::Reply, "done", Some("ev-1")))
            .unwrap()
            .written
    );
    // A note without an event is never a duplicate.
    assert!(
        write_note(&mut s, note(NoteKind::Note, "x", None))
            .unwrap()
            .written
    );
    assert!(
        write_note(&mut s, note(NoteKind::Note, "x", None))
            .unwrap()
            .written
    );
    assert_eq!(feed_notes(&l.dir, "a").len(), 3);

    for (req, needle) in [
        (note(NoteKind::Note, "  \n ", None), "empty"),
        (
            note(NoteKind::Note, &"x".repeat(MAX_NOTE_BYTES + 1), None),
            "bytes",
        ),
        (note(NoteKind::Note, "bell\u{7}", None), "control character"),
        (note(NoteKind::Note, "x", Some("not an id")), "event id"),
    ] {
        match write_note(&mut s, req) {
            Err(AppError::Value(m)) => {
                assert!(
                    m.contains(needle) && m.contains("Nothing was written"),
                    "{m}"
                )
            }
            other => panic!("expected a ValueError with {needle}, got {other:?}"),
        }
    }
    assert_eq!(feed_notes(&l.dir, "a").len(), 3);
}

#[test]
fn a_peers_note_that_breaks_the_rules_is_quarantined_at_ingest() {
    let base = || MemoryNote {
        kind: NoteKind::Note,
        text: "fine".into(),
        event: None,
        agent: None,
        session: None,
        folder: None,
        folder_hash: None,
    };
    let shapes: Vec<(&str, MemoryNote)> = vec![
        (
            "bytes (at most",
            MemoryNote {
                text: "x".repeat(100_000),
                ..base()
            },
        ),
        (
            "control character",
            MemoryNote {
                text: "a\u{1b}[2Jb".into(),
                ..base()
            },
        ),
        (
            "empty",
            MemoryNote {
                text: String::new(),
                ..base()
            },
        ),
        (
            "event id",
            MemoryNote {
                event: Some("../../etc".into()),
                ..base()
            },
        ),
        (
            "session",
            MemoryNote {
                session: Some("the raw session id".into()),
                ..base()
            },
        ),
        (
            "folder must be",
            MemoryNote {
                folder: Some("/home/me/secret".into()),
                ..base()
            },
        ),
        (
            "folder must be",
            MemoryNote {
                folder: Some("src@evil#1 msg@b:".into()),
                ..base()
            },
        ),
        (
            "folder_hash",
            MemoryNote {
                folder_hash: Some("3f9a2c".into()),
                ..base()
            },
        ),
    ];
    for (why, shape) in shapes {
        let l = Local::new(&["a", "b"]);
        let mut s = l.session("a");
        send(&mut s, "b", "Hello", "one message");
        // The peer writes the note by hand, signed with the feed's real key.
        l.forge("a", &Op::Note(shape));

        let mut reader = local::open(&l.dir, &Home::at(l.tmp.path().join("reader")));
        reader.catch_up().unwrap();
        let quarantined = local::quarantined(&reader);
        assert_eq!(quarantined.len(), 1, "{why}: {quarantined:?}");
        assert!(
            quarantined[0].starts_with("note refused"),
            "{quarantined:?}"
        );
        assert!(quarantined[0].contains(why), "{why}: {quarantined:?}");
        assert!(reader.index().notes().unwrap().is_empty(), "{why}");
        let session = countersign::app::Session::new(reader, None).unwrap();
        let m = Memory::load_at(&session, None).unwrap();
        assert_eq!(m.view(DEFAULT_BUDGET).items, 1, "{why}: only the message");
    }
}

// ---------------------------------------------------------------------------------------
// The CLI: `note`, `hook record`, `hook deliver`, `install --record`

/// A channel of `frontend` and `backend` with its home, driven by the binary.
pub(crate) fn channel() -> TestChannel {
    TestChannel::new(&["frontend", "backend"])
}

fn spool(t: &TestChannel) -> PathBuf {
    t.home.join("spool")
}

/// The events waiting in the spool.
pub(crate) fn spooled(t: &TestChannel) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = fs::read_dir(spool(t))
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "json"))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

pub(crate) fn failed(t: &TestChannel) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(spool(t).join("failed"))
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Runs `hook record EVENT` as `frontend` with `input` on stdin (extra
/// environment `env`); returns the exit code, stderr and how long it took.
pub(crate) fn hook_record(
    t: &TestChannel,
    event: &str,
    input: &str,
    env: &[(&str, &str)],
) -> (i32, String, Duration) {
    let mut c = Command::new(bin());
    c.env("COUNTERSIGN_HOME", &t.home)
        .env_remove("COUNTERSIGN_ROLE")
        .env_remove("COUNTERSIGN_SPOOL_ONLY")
        .args(["--role", "frontend", "--channel"])
        .arg(&t.dir)
        .args(["hook", "record", event])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        c.env(k, v);
    }
    let started = Instant::now();
    let mut child = c.spawn().unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), input.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        started.elapsed(),
    )
}

/// Waits (at most 20 s) until `frontend`'s feed holds `n` notes and the spool is empty.
pub(crate) fn wait_delivered(t: &TestChannel, n: usize) -> Vec<(String, String)> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let notes = feed_notes(&t.dir, "frontend");
        if notes.len() >= n && spooled(t).is_empty() {
            return notes;
        }
        assert!(
            Instant::now() < deadline,
            "not delivered: {notes:?}, spool {:?}, log {:?}",
            spooled(t),
            fs::read_to_string(spool(t).join("record.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn prompt_input(prompt: &str) -> String {
    json!({"session_id": "s-1", "transcript_path": null, "cwd": "/nowhere",
           "hook_event_name": "UserPromptSubmit", "prompt": prompt})
    .to_string()
}

#[test]
fn note_by_hand_says_who_reads_it_and_refuses_bad_text() {
    let t = channel();
    let help = t.cli(&["note", "--help"]);
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(
        help.contains("everyone who can read the channel folder")
            && help.contains("cannot be taken back"),
        "{help}"
    );
    let out = t.cli(&[
        "--role",
        "frontend",
        "note",
        "staging is down until Monday",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["written"], true);
    assert_eq!(v["id"].as_str().unwrap().len(), 64);
    let bad = t.cli(&["--role", "frontend", "note", " "]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("empty"));
    assert_eq!(
        feed_notes(&t.dir, "frontend"),
        [("note".to_owned(), "staging is down until Monday".to_owned())]
    );
    // `log` names it.
    let log = t.cli(&["log"]);
    assert!(String::from_utf8_lossy(&log.stdout).contains("note note (28 bytes)"));
}

#[test]
fn an_event_spooled_before_a_crash_is_delivered_by_the_next_run() {
    let t = channel();
    // Spooled, then no delivery: what a crash right after spooling leaves.
    let (code, _, _) = hook_record(
        &t,
        "UserPromptSubmit",
        &prompt_input("first prompt"),
        &[("COUNTERSIGN_SPOOL_ONLY", "1")],
    );
    assert_eq!(code, 0);
    assert_eq!(spooled(&t).len(), 1);
    assert!(feed_notes(&t.dir, "frontend").is_empty());
    // The spooled event is a whole file, readable only by its owner.
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &fs::metadata(&spooled(&t)[0]).unwrap().permissions(),
    );
    assert_eq!(mode & 0o077, 0, "{mode:o}");

    // The next hook run delivers both, in the order they were recorded.
    let stop = json!({"session_id": "s-1", "cwd": "/nowhere", "hook_event_name": "Stop",
                      "stop_hook_active": false, "last_assistant_message": "Done, both."});
    let (code, _, took) = hook_record(&t, "Stop", &stop.to_string(), &[]);
    assert_eq!(code, 0);
    assert!(took < Duration::from_secs(5), "the hook took {took:?}");
    let notes = wait_delivered(&t, 2);
    assert_eq!(
        notes,
        [
            ("prompt".to_owned(), "first prompt".to_owned()),
            ("reply".to_owned(), "Done, both.".to_owned())
        ]
    );
}

#[test]
fn a_second_delivery_of_one_event_adds_nothing() {
    let t = channel();
    let input = prompt_input("only once");
    hook_record(
        &t,
        "UserPromptSubmit",
        &input,
        &[("COUNTERSIGN_SPOOL_ONLY", "1")],
    );
    let file = spooled(&t).pop().unwrap();
    let kept = fs::read(&file).unwrap();
    // Delivered (by `countersign note`, which drains the spool first) …
    assert!(
        t.cli(&["--role", "frontend", "note", "by hand"])
            .status
            .success()
    );
    assert!(spooled(&t).is_empty());
    // … then found again, as after a crash between the write and the removal.
    fs::write(&file, &kept).unwrap();
    let out = t.cli(&["hook", "deliver"]);
    assert!(out.status.success());
    assert!(spooled(&t).is_empty(), "the duplicate left the spool");
    // The same hook input twice (a client calling the hook again) is one event too.
    hook_record(
        &t,
        "UserPromptSubmit",
        &input,
        &[("COUNTERSIGN_SPOOL_ONLY", "1")],
    );
    hook_record(&t, "UserPromptSubmit", &input, &[]);
    wait_delivered(&t, 2);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        feed_notes(&t.dir, "frontend"),
        [
            ("prompt".to_owned(), "only once".to_owned()),
            ("note".to_owned(), "by hand".to_owned())
        ]
    );
    assert!(failed(&t).is_empty(), "{:?}", failed(&t));
}

#[test]
fn an_input_that_makes_no_event_is_kept_in_failed_and_the_hook_exits_0() {
    let t = channel();
    for (event, input, why) in [
        ("Stop", "not json at all", "not JSON"),
        (
            "UserPromptSubmit",
            r#"{"session_id":"s"}"#,
            "without a prompt",
        ),
        (
            "PreToolUse",
            r#"{"session_id":"s"}"#,
            "no event that records",
        ),
    ] {
        let (code, stderr, _) = hook_record(&t, event, input, &[]);
        assert_eq!(code, 0, "{stderr}");
        assert!(stderr.contains(why), "{stderr}");
    }
    let kept = failed(&t);
    assert_eq!(kept.len(), 6, "an input and its reason each: {kept:?}");
    let reasons: Vec<String> = kept
        .iter()
        .filter(|n| n.ends_with(".reason"))
        .map(|n| fs::read_to_string(spool(&t).join("failed").join(n)).unwrap())
        .collect();
    assert!(
        reasons.iter().any(|r| r.contains("not JSON")),
        "{reasons:?}"
    );
    let inputs: Vec<Vec<u8>> = kept
        .iter()
        .filter(|n| n.ends_with(".input"))
        .map(|n| fs::read(spool(&t).join("failed").join(n)).unwrap())
        .collect();
    assert!(inputs.iter().any(|i| i == b"not json at all"));

    // An event whose delivery is refused (a role the channel does not have)
    // leaves the spool for failed/, with why.
    let mut c = Command::new(bin());
    let out = c
        .env("COUNTERSIGN_HOME", &t.home)
        .env("COUNTERSIGN_SPOOL_ONLY", "1")
        .args(["--role", "nobody", "--channel"])
        .arg(&t.dir)
        .args(["hook", "record", "UserPromptSubmit"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .and_then(|mut ch| {
            std::io::Write::write_all(
                &mut ch.stdin.take().unwrap(),
                prompt_input("for nobody").as_bytes(),
            )?;
            ch.wait()
        })
        .unwrap();
    assert!(out.success());
    assert_eq!(spooled(&t).len(), 1);
    assert!(t.cli(&["hook", "deliver"]).status.success());
    assert!(spooled(&t).is_empty());
    let kept = failed(&t);
    assert_eq!(kept.len(), 8, "{kept:?}");
    assert!(feed_notes(&t.dir, "nobody").is_empty());
}

#[test]
fn a_stop_records_the_reply_and_the_turns_tool_calls_from_the_transcript() {
    let t = channel();
    let transcript = t.tmp.path().join("transcript.jsonl");
    let lines = [
        json!({"type": "user", "message": {"role": "user", "content": "fix the login"}}),
        json!({"type": "assistant", "message": {"content": [
            {"type": "tool_use", "id": "t1", "name": "Edit",
             "input": {"file_path": "/work/p/src/login.rs"}},
            {"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": "cargo test"}}]}}),
        json!({"type": "user", "message": {"content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "updated"},
            {"type": "tool_result", "tool_use_id": "t2", "is_error": true, "content": "failed"}]}}),
        json!({"type": "assistant", "message": {"content": [
            {"type": "text", "text": "The login is fixed; one test still fails."}]}}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    fs::write(&transcript, text).unwrap();
    // No last_assistant_message: the reply comes from the transcript.
    let stop = json!({"session_id": "s-9", "cwd": "/work/p", "hook_event_name": "Stop",
                      "transcript_path": transcript, "stop_hook_active": false});
    let (code, stderr, _) = hook_record(&t, "Stop", &stop.to_string(), &[]);
    assert_eq!(code, 0, "{stderr}");
    let notes = wait_delivered(&t, 2);
    assert_eq!(
        notes,
        [
            (
                "reply".to_owned(),
                "The login is fixed; one test still fails.".to_owned()
            ),
            (
                "turn".to_owned(),
                "files changed: src/login.rs; commands failed: `cargo test`".to_owned()
            )
        ]
    );
    // The session is named by a short hash, never by its id.
    let raw = fs::read_dir(t.dir.join("feeds/frontend"))
        .unwrap()
        .flatten()
        .flat_map(|d| list_segments(&d.path()).unwrap())
        .map(|s| fs::read_to_string(s.path).unwrap())
        .collect::<String>();
    assert!(
        !raw.contains("s-9") && raw.contains(r#""agent":"claude""#),
        "{raw}"
    );
}

/// `install claude --record` in a throwaway project and HOME.
fn install(project: &Path, home: &Path, args: &[&str]) -> String {
    let out = Command::new(bin())
        .current_dir(project)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn record_hooks(settings: &Path) -> Vec<String> {
    let v: Value =
        serde_json::from_str(&fs::read_to_string(settings).unwrap_or("{}".into())).unwrap();
    let mut out = Vec::new();
    for (event, groups) in v["hooks"].as_object().into_iter().flatten() {
        for g in groups.as_array().into_iter().flatten() {
            for h in g["hooks"].as_array().into_iter().flatten() {
                let c = h["command"].as_str().unwrap_or_default();
                if c.contains(" hook record") {
                    out.push(format!("{event}: {c}"));
                }
            }
        }
    }
    out.sort();
    out
}

#[test]
fn install_record_adds_the_hooks_says_who_reads_and_can_be_taken_out() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, project) = (tmp.path().join("home"), tmp.path().join("project"));
    fs::create_dir_all(&home).unwrap();
    fs::create_dir_all(&project).unwrap();
    assert!(
        Command::new("git")
            .args(["init", "-q"])
            .current_dir(&project)
            .status()
            .unwrap()
            .success()
    );
    install(
        &project,
        &home,
        &["init", "--roles", "frontend,backend", "--name", "r"],
    );
    let settings = project.join(".claude/settings.local.json");

    let plain = install(
        &project,
        &home,
        &["--role", "frontend", "install", "claude", "--apply"],
    );
    assert!(record_hooks(&settings).is_empty());
    assert!(!plain.contains("Recording is on"), "{plain}");

    let out = install(
        &project,
        &home,
        &[
            "--role", "frontend", "install", "claude", "--record", "--apply",
        ],
    );
    assert!(
        out.contains("Everyone who can read the channel folder can read them")
            && out.contains("permanent"),
        "{out}"
    );
    let hooks = record_hooks(&settings);
    assert_eq!(hooks.len(), 2, "{hooks:?}");
    assert!(hooks[0].starts_with("Stop: ") && hooks[0].contains("hook record Stop --agent claude"));
    assert!(hooks[1].starts_with("UserPromptSubmit: ") && hooks[1].contains("--role frontend"));
    // The debts' Stop hook stays as it was, beside the recording one.
    let text = fs::read_to_string(&settings).unwrap();
    assert!(text.contains(" hook stop --role frontend"), "{text}");

    // Without --record again: the recording hooks go, the others stay.
    let again = install(
        &project,
        &home,
        &["--role", "frontend", "install", "claude", "--apply"],
    );
    assert!(
        again.contains("nothing is recorded without --record"),
        "{again}"
    );
    assert!(record_hooks(&settings).is_empty());
    assert!(
        fs::read_to_string(&settings)
            .unwrap()
            .contains(" hook stop ")
    );

    // uninstall takes them out with the rest.
    install(
        &project,
        &home,
        &[
            "--role", "frontend", "install", "claude", "--record", "--apply",
        ],
    );
    install(&project, &home, &["uninstall", "--apply"]);
    assert!(record_hooks(&settings).is_empty());

    // Codex: the same hooks in its user file, no role in them.
    let out = install(
        &project,
        &home,
        &[
            "--role", "frontend", "install", "codex", "--record", "--apply",
        ],
    );
    assert!(out.contains("Recording is on"), "{out}");
    let hooks = record_hooks(&home.join(".codex/hooks.json"));
    assert_eq!(hooks.len(), 2, "{hooks:?}");
    assert!(
        hooks
            .iter()
            .all(|h| h.contains("--agent codex") && !h.contains("--role"))
    );
}

#[tokio::test]
async fn the_message_search_never_returns_a_note() {
    let t = channel();
    let out = t.cli(&[
        "--role",
        "frontend",
        "note",
        "the quokka migration is paused",
    ]);
    assert!(out.status.success());
    let c = t.client("frontend").await;
    c.send("backend", "Quokka", "the quokka migration starts Monday")
        .await;
    let hits = c
        .call("search_messages", json!({"query": "quokka migration"}))
        .await
        .ok();
    let rows = hits["result"].as_array().cloned().unwrap_or_default();
    assert_eq!(rows.len(), 1, "{hits}");
    assert_eq!(rows[0]["topic"], "Quokka");
    // A scan (a query trigrams cannot serve) does not see notes either.
    let scan = c
        .call("search_messages", json!({"query": "is paused"}))
        .await
        .ok();
    assert_eq!(scan["result"].as_array().map_or(0, Vec::len), 0, "{scan}");
    c.close().await;
}

#[test]
fn a_hook_returns_at_once_while_the_delivery_waits() {
    let t = channel();
    // Another delivery holds the spool (as a slow channel would hold it).
    let spool = countersign::store::spool::Spool::of(&Home::at(t.home.clone()));
    let held = spool.lock().unwrap();
    let (code, stderr, took) = hook_record(&t, "UserPromptSubmit", &prompt_input("quick"), &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(took < Duration::from_secs(3), "the hook waited {took:?}");
    std::thread::sleep(Duration::from_millis(300));
    assert!(feed_notes(&t.dir, "frontend").is_empty());
    assert_eq!(spooled(&t).len(), 1, "spooled before any delivery");
    // Once the other delivery is done, the detached one delivers it.
    drop(held);
    let notes = wait_delivered(&t, 1);
    assert_eq!(notes, [("prompt".to_owned(), "quick".to_owned())]);
}
