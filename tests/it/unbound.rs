//! A folder no channel is bound to, as the per-user entries of a client
//! (Codex's one hooks.json and one `[mcp_servers.channel]`) meet it in every
//! other project: the hooks say nothing and never hold a stop, the server
//! serves one `channel_status` that says how to bind the folder, and
//! whatever is named explicitly (--role, --channel) still fails loudly.

use std::fs;
use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

use crate::common::{TestChannel, bin};

/// A channel (somewhere else) and an unrelated git project beside it.
fn unrelated() -> (TestChannel, PathBuf) {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let project = ch.tmp.path().join("elsewhere");
    fs::create_dir_all(project.join("src")).unwrap();
    let git = Command::new("git")
        .args(["init", "-q"])
        .current_dir(&project)
        .output()
        .unwrap();
    assert!(git.status.success());
    (ch, project)
}

/// The binary run the way a client runs a per-user entry: in `cwd`, with
/// the home only, `stdin` on standard input and no role or channel but `args`.
fn run_in(
    ch: &TestChannel,
    cwd: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    stdin: &str,
) -> Output {
    let mut c = Command::new(bin());
    c.env("COUNTERSIGN_HOME", &ch.home)
        .env_remove("COUNTERSIGN_ROLE")
        .env_remove("AI_AGENT_CHANNEL_ROLE")
        .env_remove("COUNTERSIGN_CHANNEL")
        .env_remove("CODEX_HOME")
        .current_dir(cwd)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        c.env(k, v);
    }
    let mut child = c.spawn().expect("the binary runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The hook input a client gives for a session in `cwd`.
fn input(cwd: &Path, retry: bool) -> String {
    json!({"session_id": "s", "cwd": cwd, "stop_hook_active": retry, "hook_event_name": "Stop"})
        .to_string()
}

#[test]
fn the_hooks_say_nothing_in_a_folder_no_channel_is_bound_to() {
    let (ch, project) = unrelated();
    // A debt waits for backend: a bound session would be held.
    let sent = ch.cli(&[
        "--role",
        "frontend",
        "send",
        "--to",
        "backend",
        "--topic",
        "t",
        "--body",
        "b",
        "--action-required",
    ]);
    assert!(sent.status.success(), "{}", text(&sent.stderr));
    let deep = project.join("src");
    // Started in the home folder (as Codex does) with the session's folder on stdin, or
    // started in it; with a role variable set for the whole shell, or none.
    for (cwd, env) in [
        (ch.tmp.path(), &[][..]),
        (deep.as_path(), &[][..]),
        (deep.as_path(), &[("COUNTERSIGN_ROLE", "backend")][..]),
    ] {
        for hook in ["session-start", "stop"] {
            for retry in [false, true] {
                let out = run_in(&ch, cwd, &["hook", hook], env, &input(&deep, retry));
                assert_eq!(out.status.code(), Some(0));
                assert_eq!(
                    (text(&out.stdout).as_str(), text(&out.stderr).as_str()),
                    ("", ""),
                    "hook {hook} in an unbound folder ({env:?}) spoke"
                );
            }
        }
        let out = run_in(
            &ch,
            cwd,
            &["hook", "record", "Stop"],
            env,
            &input(&deep, false),
        );
        assert_eq!(out.status.code(), Some(0));
        assert_eq!(text(&out.stderr), "", "hook record spoke");
    }
    assert!(
        !ch.home.join("spool/failed").exists()
            || fs::read_dir(ch.home.join("spool/failed"))
                .unwrap()
                .next()
                .is_none(),
        "hook record kept an input it had nothing to do with"
    );

    // Named explicitly, a channel that is not there is still reported and the stop held.
    let out = run_in(
        &ch,
        &deep,
        &["--role", "backend", "hook", "stop"],
        &[],
        &input(&deep, false),
    );
    assert!(
        text(&out.stdout).contains("\"block\""),
        "{}",
        text(&out.stdout)
    );
    assert!(
        text(&out.stderr).contains("no channel found"),
        "{}",
        text(&out.stderr)
    );

    // Bound (what `install` writes), the same folder hears of the channel and is held.
    fs::write(
        project.join(".countersign.local.json"),
        json!({"role": "backend", "channel": ch.dir}).to_string(),
    )
    .unwrap();
    let out = run_in(
        &ch,
        ch.tmp.path(),
        &["hook", "session-start"],
        &[],
        &input(&deep, false),
    );
    assert!(
        text(&out.stdout).contains("You act as the role 'backend'"),
        "{}",
        text(&out.stdout)
    );
    let out = run_in(
        &ch,
        ch.tmp.path(),
        &["hook", "stop"],
        &[],
        &input(&deep, false),
    );
    assert!(
        text(&out.stdout).contains("channel has pending items for 'backend'"),
        "{}",
        text(&out.stdout)
    );
}

/// Speaks MCP to `countersign mcp ARGS` started in `cwd`: initialize, tools/list,
/// then each of `calls`; returns the answers by request id (1 initialize, 2 tools/list,
/// 3… the calls) and the exit code once stdin closes.
fn mcp_session(
    ch: &TestChannel,
    cwd: &Path,
    args: &[&str],
    calls: &[Value],
) -> (Vec<Value>, Option<i32>, String) {
    let mut child = Command::new(bin())
        .arg("mcp")
        .args(args)
        .env("COUNTERSIGN_HOME", &ch.home)
        .env_remove("COUNTERSIGN_ROLE")
        .env_remove("AI_AGENT_CHANNEL_ROLE")
        .env_remove("COUNTERSIGN_CHANNEL")
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the server starts");
    let mut stdin = child.stdin.take().unwrap();
    let mut requests = vec![
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "unbound", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    ];
    for (i, call) in calls.iter().enumerate() {
        requests.push(
            json!({"jsonrpc": "2.0", "id": 3 + i, "method": "tools/call",
                             "params": call}),
        );
    }
    // A server that exits at once closes stdin: what it wrote is all there is.
    for r in &requests {
        let _ = writeln!(stdin, "{r}");
    }
    let wanted = 2 + calls.len();
    let mut answers = Vec::new();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    while answers.len() < wanted {
        line.clear();
        if out.read_line(&mut line).unwrap_or(0) == 0 {
            break;
        }
        if let Ok(v) = serde_json::from_str::<Value>(&line)
            && v.get("id").is_some()
        {
            answers.push(v);
        }
    }
    drop(stdin);
    let done = child.wait_with_output().unwrap();
    (answers, done.status.code(), text(&done.stderr))
}

/// Whether the call of an [`mcp_session`] (id 3), if answered at all, was
/// refused.
fn no_call_answered(answers: &[Value]) -> bool {
    answers
        .iter()
        .all(|a| a["id"] != 3 || a["result"]["isError"] == true)
}

#[test]
fn the_server_in_an_unbound_folder_serves_one_tool_that_says_how_to_bind_it() {
    let (ch, project) = unrelated();
    let call = json!({"name": "channel_status", "arguments": {}});
    let (answers, code, stderr) = mcp_session(&ch, &project, &[], std::slice::from_ref(&call));
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(answers.len(), 3, "{answers:?}\n{stderr}");
    let instructions = answers[0]["result"]["instructions"].as_str().unwrap_or("");
    assert!(instructions.contains("not bound"), "{instructions}");
    let tools: Vec<&str> = answers[1]["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(tools, ["channel_status"]);
    let result = &answers[2]["result"];
    assert_ne!(result["isError"], json!(true), "{result}");
    let said = result["structuredContent"]["message"].as_str().unwrap();
    assert!(
        said.contains("is not bound to a countersign channel")
            && said.contains(".countersign.local.json")
            && said.contains("install codex --apply"),
        "{said}"
    );
    assert_eq!(result["structuredContent"]["bound"], json!(false));
    // With --tools, the same.
    let (answers, code, _) = mcp_session(&ch, &project, &["--tools", "mail,debts"], &[]);
    assert_eq!(code, Some(0));
    assert_eq!(answers[1]["result"]["tools"].as_array().unwrap().len(), 1);

    // A project holding a channel this user has no role in: named in the answer.
    let owned = TestChannel::new(&["a", "b"]);
    let inner = owned.tmp.path().join("proj");
    fs::create_dir_all(&inner).unwrap();
    fs::rename(&owned.dir, inner.join(".countersign")).unwrap();
    let (answers, code, _) = mcp_session(&ch, &inner, &[], std::slice::from_ref(&call));
    assert_eq!(code, Some(0));
    let said = answers[2]["result"]["structuredContent"]["message"]
        .as_str()
        .unwrap();
    assert!(said.contains("has no countersign role"), "{said}");

    // Named explicitly, what is wrong still ends the server with a reason.
    // What the folder alone shows ends it before it answers anything; a
    // role the channel lacks, found while the session opens beside the
    // handshake (`mcp::opening`), may let the handshake be answered first,
    // never a call.
    for (args, before_any_answer) in [
        (&["--role", "backend"][..], true),
        (&["--channel", "/nowhere"][..], true),
        (
            &["--role", "nobody", "--channel", ch.dir.to_str().unwrap()][..],
            false,
        ),
    ] {
        let (answers, code, stderr) = mcp_session(&ch, &project, args, std::slice::from_ref(&call));
        assert_eq!(code, Some(2), "mcp {args:?} did not fail: {answers:?}");
        if before_any_answer {
            assert!(answers.is_empty(), "{answers:?}");
        }
        assert!(
            no_call_answered(&answers),
            "a call answered without a session: {answers:?}"
        );
        assert!(stderr.starts_with("countersign: "), "{stderr}");
    }
    // And bound, the folder gets the channel's tools.
    fs::write(
        project.join(".countersign.local.json"),
        json!({"role": "backend", "channel": ch.dir}).to_string(),
    )
    .unwrap();
    let (answers, code, stderr) = mcp_session(&ch, &project, &[], &[]);
    assert_eq!(code, Some(0), "{stderr}");
    let listed = answers[1]["result"]["tools"].as_array().unwrap();
    assert!(listed.len() > 20, "{listed:?}");

    // A binding that git tracks came with a checkout: git is asked while the
    // session opens, so the handshake may be answered, a call never, and the
    // server ends saying why.
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .arg("-C")
            .arg(&project)
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {}", text(&out.stderr));
    };
    git(&["init", "-q"]);
    git(&["add", ".countersign.local.json"]);
    let (answers, code, stderr) = mcp_session(&ch, &project, &[], std::slice::from_ref(&call));
    assert_eq!(
        code,
        Some(2),
        "a tracked binding served ({} answers): {stderr}",
        answers.len()
    );
    assert!(
        no_call_answered(&answers),
        "a call answered through a tracked binding: {answers:?}"
    );
    assert!(stderr.contains("committed to git"), "{stderr}");
}
