//! The recording hooks against events that look alike: two different
//! prompts while the transcript did not grow, two prompts the client tells
//! apart by its own ids, and a second Stop of one turn. Each is an event of
//! its own and must be recorded; only the same event twice is one.

use std::fs;

use serde_json::json;

use crate::recording::{channel, failed, feed_notes, hook_record, wait_delivered};

#[test]
fn two_prompts_while_the_transcript_stands_still_are_both_recorded() {
    let t = channel();
    // A transcript that does not grow between the two prompts (the client
    // writes it later, or not at all).
    let transcript = t.tmp.path().join("session.jsonl");
    fs::write(&transcript, "{\"type\":\"summary\"}\n").unwrap();
    let prompt = |text: &str| {
        json!({"session_id": "s-1", "transcript_path": transcript, "cwd": "/nowhere",
               "hook_event_name": "UserPromptSubmit", "prompt": text})
        .to_string()
    };
    let only = [("COUNTERSIGN_SPOOL_ONLY", "1")];
    hook_record(&t, "UserPromptSubmit", &prompt("deploy to staging"), &only);
    hook_record(&t, "UserPromptSubmit", &prompt("no, roll it back"), &only);
    // The same input again is the same event.
    hook_record(&t, "UserPromptSubmit", &prompt("no, roll it back"), &[]);
    wait_delivered(&t, 2);
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(
        feed_notes(&t.dir, "frontend"),
        [
            ("prompt".to_owned(), "deploy to staging".to_owned()),
            ("prompt".to_owned(), "no, roll it back".to_owned())
        ]
    );
    assert!(failed(&t).is_empty(), "{:?}", failed(&t));
}

#[test]
fn the_clients_own_ids_tell_events_apart() {
    let t = channel();
    let only = [("COUNTERSIGN_SPOOL_ONLY", "1")];
    // Claude Code names each prompt: the same words typed twice are two
    // prompts.
    for id in ["p-1", "p-2"] {
        let input = json!({"session_id": "s-1", "prompt_id": id, "cwd": "/nowhere",
                           "hook_event_name": "UserPromptSubmit", "prompt": "continue"});
        hook_record(&t, "UserPromptSubmit", &input.to_string(), &only);
    }
    // A Stop hook that sent a Codex turn on makes a second Stop of that turn,
    // with another reply.
    for reply in ["Tests fail: 2 of 40.", "Fixed: 40 of 40 pass."] {
        let input = json!({"session_id": "s-2", "turn_id": "t-1", "cwd": "/nowhere",
                           "transcript_path": "/nowhere/rollout.jsonl",
                           "hook_event_name": "Stop", "last_assistant_message": reply});
        hook_record(&t, "Stop", &input.to_string(), &only);
    }
    hook_record(
        &t,
        "UserPromptSubmit",
        &json!({"session_id": "s-1", "prompt_id": "p-2", "cwd": "/nowhere",
                "hook_event_name": "UserPromptSubmit", "prompt": "continue"})
        .to_string(),
        &[],
    );
    wait_delivered(&t, 4);
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(
        feed_notes(&t.dir, "frontend"),
        [
            ("prompt".to_owned(), "continue".to_owned()),
            ("prompt".to_owned(), "continue".to_owned()),
            ("reply".to_owned(), "Tests fail: 2 of 40.".to_owned()),
            ("reply".to_owned(), "Fixed: 40 of 40 pass.".to_owned())
        ]
    );
}
