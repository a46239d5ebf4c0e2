//! What tools/list costs and says, through the real stdio server: the byte
//! budget of the whole list and of the `mail` toolset, schemas a
//! single-`type` dialect can take, and `--tools` limiting what is listed and
//! what may be called.

use std::io::{BufRead as _, BufReader, Write as _};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::common::{Client, TestChannel, bin};

/// The most tools/list may take for every tool, in bytes on the wire
/// (32,000 before board_link, which hands a person the board from any
/// session, and the memory tools' descriptions, which say what each is for
/// and when).
const ALL_BUDGET: usize = 33_500;
/// The most tools/list may take for the `mail` toolset.
const MAIL_BUDGET: usize = 12_000;

/// The `tools/list` answer line exactly as `countersign mcp` writes it on
/// stdout, with `extra` arguments to `mcp`.
fn tools_list_line(ch: &TestChannel, extra: &[&str]) -> String {
    let mut child = Command::new(bin())
        .arg("mcp")
        .args(extra)
        .args(["--role", "frontend", "--channel"])
        .arg(&ch.dir)
        .env("COUNTERSIGN_HOME", &ch.home)
        .env_remove("COUNTERSIGN_ROLE")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the server starts");
    let mut stdin = child.stdin.take().unwrap();
    let requests = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "budget", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    ];
    for r in requests {
        writeln!(stdin, "{r}").unwrap();
    }
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    let found = loop {
        line.clear();
        assert!(
            out.read_line(&mut line).unwrap() > 0,
            "no tools/list answer"
        );
        let v: Value = serde_json::from_str(&line).unwrap();
        if v["id"] == json!(2) {
            break line.trim_end().to_owned();
        }
    };
    drop(stdin);
    let _ = child.wait();
    found
}

/// Whether a schema writes `type` as a list anywhere.
fn type_lists(schema: &Value, at: &str, found: &mut Vec<String>) {
    match schema {
        Value::Object(o) => {
            for (k, v) in o {
                if k == "type" && v.is_array() {
                    found.push(format!("{at}.type = {v}"));
                }
                type_lists(v, &format!("{at}.{k}"), found);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                type_lists(v, &format!("{at}[{i}]"), found);
            }
        }
        _ => {}
    }
}

#[test]
fn tools_list_fits_its_budget_and_writes_no_type_list() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let all = tools_list_line(&ch, &[]);
    let mail = tools_list_line(&ch, &["--tools", "mail"]);
    // The answer line holds the JSON-RPC envelope too: the budget covers it.
    assert!(
        all.len() <= ALL_BUDGET,
        "tools/list takes {} bytes, over {ALL_BUDGET}",
        all.len()
    );
    assert!(
        mail.len() <= MAIL_BUDGET,
        "tools/list of --tools mail takes {} bytes, over {MAIL_BUDGET}",
        mail.len()
    );
    let all: Value = serde_json::from_str(&all).unwrap();
    let tools = all["result"]["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 40);
    let mut found = Vec::new();
    for t in tools {
        let name = t["name"].as_str().unwrap();
        for key in ["inputSchema", "outputSchema"] {
            type_lists(&t[key], &format!("{name}.{key}"), &mut found);
            assert!(
                !t[key].to_string().contains("$ref"),
                "{name}.{key} refers to $defs"
            );
        }
    }
    assert!(found.is_empty(), "type lists: {found:#?}");
    // A refusal's structuredContent ({error, message}) must pass the tool's
    // outputSchema too, for clients that check it (MCP Inspector 2.12 shows
    // a validation error instead of the refusal otherwise).
    for t in tools {
        let out = &t["outputSchema"];
        let text = out.to_string();
        assert!(!text.contains("\"required\""), "{}: {text}", t["name"]);
        for field in ["error", "message"] {
            let declared = &out["properties"][field];
            assert!(
                declared.is_null() || declared == &json!({"type": "string"}),
                "{}: {field} is {declared}",
                t["name"]
            );
        }
    }
    // A parameter whose null is an answer says so portably.
    let send = tools.iter().find(|t| t["name"] == "send_message").unwrap();
    assert_eq!(
        send["inputSchema"]["properties"]["pin_key"]["anyOf"],
        json!([{"type": "string"}, {"type": "null"}])
    );
}

/// The tools a server lists.
async fn listed(c: &Client) -> Vec<String> {
    let tools = c.inner.list_all_tools().await.unwrap();
    tools.iter().map(|t| t.name.to_string()).collect()
}

#[tokio::test]
async fn a_toolset_limits_what_is_listed_and_what_may_be_called() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let c = Client::spawn_with(&ch.home, &ch.dir, "frontend", &["--tools", "mail"]).await;
    let names = listed(&c).await;
    for tool in [
        "send_message",
        "read_inbox",
        "mark_read",
        "list_messages",
        "search_messages",
        "get_thread",
        "channel_status",
        "wait_for_mail",
        "list_roles",
        "server_build",
    ] {
        assert!(names.contains(&tool.to_owned()), "mail lacks {tool}");
    }
    assert!(!names.contains(&"resolve_message".to_owned()));
    assert!(!names.contains(&"pin_set".to_owned()));
    // Out of the set: refused as a tool result naming the set that has it.
    let id = c.send("backend", "hello", "body").await;
    let msg = c
        .call("resolve_message", json!({"message_id": id}))
        .await
        .value_error("resolve_message is not served here");
    assert!(
        msg.contains("toolset debts") && msg.contains("--tools mail,debts"),
        "{msg}"
    );
    let build = c.call("server_build", json!({})).await.ok();
    assert_eq!(build["toolsets"], json!(["mail"]));
    c.close().await;

    let c = Client::spawn_with(&ch.home, &ch.dir, "frontend", &["--tools", "debts,uploads"]).await;
    let names = listed(&c).await;
    assert!(names.contains(&"resolve_message".to_owned()));
    assert!(names.contains(&"upload_content".to_owned()));
    assert!(!names.contains(&"send_message".to_owned()));
    let build = c.call("server_build", json!({})).await.ok();
    assert_eq!(build["toolsets"], json!(["debts", "uploads"]));
    c.close().await;

    // The default is every tool.
    let c = ch.client("frontend").await;
    assert_eq!(listed(&c).await.len(), 40);
    assert_eq!(
        c.call("server_build", json!({})).await.ok()["toolsets"],
        json!(["all"])
    );
    c.close().await;
}

#[test]
fn an_unknown_toolset_is_refused_at_startup_with_the_known_ones() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let out = ch.cli(&["mcp", "--role", "frontend", "--tools", "mail,votes"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("unknown toolset 'votes'")
            && err.contains("mail, debts, consent, uploads, memory, jobs, all"),
        "{err}"
    );
    // --help says what each set holds.
    let help = ch.cli(&["mcp", "--help"]);
    let help = String::from_utf8_lossy(&help.stdout);
    for set in ["mail:", "debts:", "consent:", "uploads:", "memory:", "all:"] {
        assert!(help.contains(set), "--help does not describe {set}\n{help}");
    }
}
