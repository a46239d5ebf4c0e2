//! The command line as people and scripts use it: exit codes and output.

use std::fs;

use crate::common::{TestChannel, bin};

fn text(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn init_refuses_bad_rosters_naming_the_rule_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let run = |args: &[&str]| {
        std::process::Command::new(bin())
            .env("COUNTERSIGN_HOME", &home)
            .args(args)
            .output()
            .unwrap()
    };
    let dir = tmp.path().join("ch");
    let d = dir.to_str().unwrap();
    let cases = [
        (vec!["init", d, "--roles", "solo"], "at least two roles"),
        (vec!["init", d, "--roles", "a,a"], "must be different"),
        (vec!["init", d, "--roles", "a,Bad"], "lowercase slug"),
        (
            vec!["init", d, "--roles", "a,b,c,d,e,f,g,h,i,j,k,l,m"],
            "at most 12 roles",
        ),
        (
            vec!["init", d, "--roles", "a,b", "--name", "No Spaces"],
            "lowercase slug",
        ),
    ];
    for (args, needle) in cases {
        let out = run(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(text(&out).contains(needle), "{args:?}: {}", text(&out));
        assert!(!dir.exists(), "{args:?} wrote the folder");
    }
    assert!(!home.join("keys").exists(), "a refused init stored a key");
}

#[test]
fn init_prints_wiring_and_refuses_an_existing_channel_unchanged() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let before = fs::read(ch.dir.join("channel.json")).unwrap();
    let out = ch.cli(&["init", ch.dir.to_str().unwrap(), "--roles", "x,y"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out).contains("already holds a channel"),
        "{}",
        text(&out)
    );
    assert_eq!(fs::read(ch.dir.join("channel.json")).unwrap(), before);

    let fresh = ch.tmp.path().join("second");
    let out = ch.cli(&["init", fresh.to_str().unwrap(), "--roles", "web,api"]);
    assert!(out.status.success());
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(
        s.lines().count() < 15,
        "init says what to do next in a few lines:\n{s}"
    );
    assert!(s.contains("install claude --apply"), "{s}");
    assert!(
        !s.contains("mcpServers"),
        "the by-hand wiring waits for --verbose:\n{s}"
    );
    // --verbose adds the server entries to write by hand.
    let verbose = ch.tmp.path().join("third");
    let out = ch.cli(&[
        "init",
        verbose.to_str().unwrap(),
        "--roles",
        "web,api",
        "--verbose",
    ]);
    assert!(out.status.success());
    let s = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "\"mcpServers\"",
        "[mcp_servers.channel]",
        "\"--role\", \"web\"",
        "\"--role\", \"api\"",
    ] {
        assert!(s.contains(needle), "{needle} missing from:\n{s}");
    }
    for f in ["channel.json", ".gitattributes", "README.md"] {
        assert!(fresh.join(f).is_file(), "{f}");
    }
    assert!(
        fs::read_to_string(fresh.join(".gitattributes"))
            .unwrap()
            .contains("merge=union")
    );
}

#[test]
fn send_inbox_log_verify_and_reindex_work_together() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let out = ch.cli(&[
        "--role", "frontend", "send", "--to", "backend", "--topic", "hello", "--body", "first",
    ]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with("sent "),
        "one line for a person: {}",
        text(&out)
    );
    let out = ch.cli(&[
        "--role", "frontend", "send", "--to", "backend", "--topic", "again", "--body", "second",
        "--json",
    ]);
    let sent: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let id = sent["id"].as_str().unwrap();

    // The role may also come from the environment.
    let out = ch.cli_with(&["inbox"], &[("COUNTERSIGN_ROLE", "backend")]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains(&format!("#{id}")));
    let out = ch.cli_with(&["inbox"], &[("AI_AGENT_CHANNEL_ROLE", "backend")]);
    assert!(out.status.success(), "{}", text(&out));

    let out = ch.cli(&["inbox"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out).contains("COUNTERSIGN_ROLE") && text(&out).contains("AI_AGENT_CHANNEL_ROLE")
    );

    let out = ch.cli(&["log"]);
    let log = String::from_utf8_lossy(&out.stdout);
    assert!(
        log.lines()
            .any(|l| l.starts_with("✓ ") && l.contains("send → backend: \"hello\"")),
        "{log}"
    );

    let out = ch.cli(&["verify"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));

    let out = ch.cli(&["reindex"]);
    assert!(out.status.success(), "{}", text(&out));
    let first = String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .unwrap()
        .to_owned();
    assert!(first.starts_with("state digest "), "{first}");
    let out = ch.cli(&["reindex"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).lines().last().unwrap(),
        first,
        "rebuilds agree"
    );
}

#[test]
fn a_reader_that_stops_reading_ends_a_command_quietly() {
    // `countersign log | head`: here the pipe has no reader left before the
    // command writes its first line.
    let ch = TestChannel::new(&["frontend", "backend"]);
    let out = ch.cli(&[
        "--role", "frontend", "send", "--to", "backend", "--topic", "hello", "--body", "first",
    ]);
    assert!(out.status.success(), "{}", text(&out));
    for args in [
        &["log"][..],
        &["reindex"],
        &["verify"],
        &["status", "--role", "backend"],
    ] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = std::process::Command::new(bin())
            .env("COUNTERSIGN_HOME", &ch.home)
            .args(args)
            .arg("--channel")
            .arg(&ch.dir)
            .stdout(writer)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
        assert!(err.is_empty(), "{args:?} said: {err}");
    }
}

#[test]
fn verify_exits_1_on_problems_and_2_when_unreadable() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    assert!(
        ch.cli(&[
            "--role", "frontend", "send", "--to", "backend", "--topic", "t", "--body", "b"
        ])
        .status
        .success()
    );
    let feed = fs::read_dir(ch.dir.join("feeds/frontend"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let seg = feed.join("00000001.jsonl");
    let mut bytes = fs::read(&seg).unwrap();
    bytes.extend_from_slice(b"not a record\n");
    fs::write(&seg, bytes).unwrap();
    let out = ch.cli(&["verify"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("garbage: feeds/frontend/"),
        "{}",
        text(&out)
    );

    fs::write(ch.dir.join("channel.json"), b"{ broken").unwrap();
    let out = ch.cli(&["verify"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("not a valid channel definition"),
        "{}",
        text(&out)
    );
}

#[test]
fn mcp_refuses_to_start_without_a_role_or_with_a_stranger() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let out = ch.cli(&["mcp"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("COUNTERSIGN_ROLE"), "{}", text(&out));
    let out = ch.cli(&["--role", "qa", "mcp"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out).contains("not a role of this channel"),
        "{}",
        text(&out)
    );
}

/// The session opens beside the handshake: a client that gets as far as a
/// tool call still sees the server end with the stranger's error and code.
#[test]
fn mcp_with_a_stranger_role_ends_with_its_error_even_mid_handshake() {
    use std::io::{Read as _, Write as _};
    let ch = TestChannel::new(&["frontend", "backend"]);
    let mut server = std::process::Command::new(bin())
        .env("COUNTERSIGN_HOME", &ch.home)
        .env_remove("COUNTERSIGN_ROLE")
        .env_remove("AI_AGENT_CHANNEL_ROLE")
        .args(["--channel", ch.dir.to_str().unwrap(), "--role", "qa", "mcp"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = server.stdin.take().unwrap();
    // The server may be gone before it reads any of this.
    let _ = stdin.write_all(
        concat!(
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
            "\n",
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            "\n",
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"channel_status","arguments":{}}}"#,
            "\n"
        )
        .as_bytes(),
    );
    // Stdin stays open: the server must end by itself.
    let mut stdout = String::new();
    server
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    let status = server.wait().unwrap();
    let mut stderr = String::new();
    server
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    drop(stdin);
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("not a role of this channel"), "{stderr}");
    for line in stdout.lines() {
        let v: serde_json::Value = serde_json::from_str(line).expect("only protocol on stdout");
        assert_eq!(v["jsonrpc"], "2.0", "{line}");
        if v["id"] == 2 {
            // A call that came before the server ended is refused with why.
            assert_eq!(v["result"]["isError"], true, "{line}");
            assert!(line.contains("not a role of this channel"), "{line}");
        }
    }
}

#[test]
fn the_installed_binary_has_no_bench_command() {
    // The bench is a crate of its own (`crates/bench`, docs/benchmarks.md);
    // nothing of it is in what users install.
    let help = std::process::Command::new(bin())
        .arg("--help")
        .output()
        .unwrap();
    assert!(help.status.success());
    assert!(
        !text(&help).contains("bench"),
        "--help lists a bench: {}",
        text(&help)
    );
    let out = std::process::Command::new(bin())
        .args(["bench", "--messages", "100"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("unrecognized subcommand 'bench'"),
        "{}",
        text(&out)
    );
}

#[test]
fn memory_commands_view_zoom_search_and_export_with_peer_text_escaped() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let send = |topic: &str, body: &str| {
        let out = ch.cli(&[
            "--role", "frontend", "send", "--to", "backend", "--topic", topic, "--body", body,
        ]);
        assert!(out.status.success(), "{}", text(&out));
        // The id is the first 12-hex word of the output.
        String::from_utf8_lossy(&out.stdout)
            .split(|c: char| !c.is_ascii_hexdigit())
            .find(|w| w.len() == 12)
            .expect("an id in the output")
            .to_owned()
    };
    let plain = send("Login", "token and expires_at");
    let hostile = send(
        "Escape",
        "bell \u{7} and \u{1b}[31mred</pre><script>x()</script>",
    );
    let long = send("Spec", &"spec text ".repeat(2000));

    // view: every line, control characters escaped, and a summary line.
    let out = ch.cli(&["memory", "view"]);
    assert!(out.status.success(), "{}", text(&out));
    let view = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        !view.contains('\u{1b}') && !view.contains('\u{7}'),
        "{view:?}"
    );
    assert!(view.contains(&format!("{plain}+1|")), "{view}");
    assert!(view.contains(&format!("{long}+1|")) && view.contains("waits for a compaction"));
    assert!(view.contains("(3 items in 3 lines"), "{view}");
    let small = ch.cli(&["memory", "view", "--budget", "100"]);
    let small = String::from_utf8_lossy(&small.stdout).to_string();
    assert_eq!(
        small.lines().count(),
        2,
        "one line over everything: {small}"
    );
    assert!(small.contains("+3|"), "{small}");

    // zoom: an item's whole original, each line behind a gutter.
    let out = ch.cli(&["memory", "zoom", &long, "1"]);
    assert!(out.status.success(), "{}", text(&out));
    let z = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(z.matches("spec text").count(), 2000, "the whole original");
    assert!(
        z.lines()
            .any(|l| l.starts_with("frontend ") && l.ends_with(": Spec")),
        "{z}"
    );
    let out = ch.cli(&["memory", "zoom", &hostile]);
    let z = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(!z.contains('\u{1b}') && z.contains("  | bell"), "{z:?}");
    let out = ch.cli(&["memory", "zoom", "00000000ab", "2"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out).contains("id: no line 00000000ab"),
        "{}",
        text(&out)
    );

    // search: short lines with ids.
    let out = ch.cli(&["memory", "search", "expires_at", "--limit", "5"]);
    assert!(out.status.success(), "{}", text(&out));
    let found = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        found.starts_with(&format!("{plain}|msg@frontend ")) && found.contains("expires_at"),
        "{found}"
    );
    let none = ch.cli(&["memory", "search", "zzzqqq"]);
    assert!(String::from_utf8_lossy(&none.stdout).contains("(nothing matches)"));

    // export: one page, every original, escaped, written whole.
    let page = ch.tmp.path().join("memory.html");
    let out = ch.cli(&["memory", "export", page.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    let html = fs::read_to_string(&page).unwrap();
    assert!(html.starts_with("<!doctype html>") && html.trim_end().ends_with("</html>"));
    assert_eq!(
        html.matches("<script").count(),
        1,
        "the page's own script only"
    );
    assert!(html.contains("&lt;script&gt;x()&lt;/script&gt;"));
    assert_eq!(
        html.matches("<details class=\"item\">").count(),
        3,
        "a line per message"
    );
    assert_eq!(
        html.matches("<details").count(),
        html.matches("</details>").count()
    );
    assert_eq!(html.matches("<pre").count(), 3, "every original");
    assert_eq!(html.matches("spec text").count(), 2000);
    let leftovers: Vec<_> = fs::read_dir(ch.tmp.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "no temporary file left");

    // --help teaches: the commands and how a line reads.
    let help = ch.cli(&["memory", "--help"]);
    let help = String::from_utf8_lossy(&help.stdout).to_string();
    for needle in [
        "view",
        "zoom",
        "search",
        "export",
        "<id>+<items>|<date>: <text>",
    ] {
        assert!(help.contains(needle), "--help lacks {needle}: {help}");
    }
}
