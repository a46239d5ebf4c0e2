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

#[test]
fn the_installed_binary_has_no_bench_command() {
    // The bench is its own binary behind the `bench` feature
    // (docs/benchmarks.md); nothing of it is in what users install.
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
