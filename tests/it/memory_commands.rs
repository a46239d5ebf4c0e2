//! The memory's commands beside reading it: `memory import`, `backup`,
//! `install service` (and its removal by `uninstall`), and the
//! `memory_status` tool, each through the real binary on a real channel.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::{Client, TestChannel, bin};
use serde_json::{Value, json};

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "failed: {}{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn json_out(out: &Output) -> Value {
    serde_json::from_str(ok(out).trim()).expect("JSON")
}

#[test]
fn memory_import_adds_each_note_once_and_refuses_a_bad_file_whole() {
    let t = TestChannel::new(&["a", "b"]);
    let txt = t.tmp.path().join("old-notes.txt");
    std::fs::write(
        &txt,
        "The staging database moved to port 5433.\nAsk ops before touching it.\n\n\nWe chose argon2 for passwords.\n",
    )
    .unwrap();
    let v = json_out(&t.cli(&["--role", "a", "memory", "import", txt.to_str().unwrap()]));
    assert_eq!(
        (v["written"].as_u64(), v["already"].as_u64()),
        (Some(2), Some(0)),
        "{v}"
    );
    // Again: nothing new.
    let v = json_out(&t.cli(&["--role", "a", "memory", "import", txt.to_str().unwrap()]));
    assert_eq!(
        (v["written"].as_u64(), v["already"].as_u64()),
        (Some(0), Some(2)),
        "{v}"
    );
    let found = ok(&t.cli(&["memory", "search", "argon2"]));
    assert!(found.contains("note@a"), "{found}");
    assert!(found.contains("We chose argon2 for passwords."), "{found}");

    let jsonl = t.tmp.path().join("old.jsonl");
    std::fs::write(
        &jsonl,
        concat!(
            r#"{"kind":"prompt","text":"move the login to /v2","date":"2025-03-01","origin":"laptop"}"#,
            "\n",
            r#"{"kind":"shout","text":"no such kind"}"#,
            "\n",
            r#"{"kind":"reply","text":"done"}"#,
            "\n",
            "not json at all\n",
        ),
    )
    .unwrap();
    let before = t.feed_records();
    let out = t.cli(&["--role", "a", "memory", "import", jsonl.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("old.jsonl:2: kind 'shout'"), "{err}");
    assert!(err.contains("old.jsonl:4: not a JSON object"), "{err}");
    assert!(err.contains("Nothing was imported"), "{err}");
    assert_eq!(t.feed_records(), before, "nothing half imported");
    // Fixed, it goes in whole; its date and origin open the note.
    let fixed = std::fs::read_to_string(&jsonl)
        .unwrap()
        .lines()
        .filter(|l| !l.contains("shout") && !l.contains("not json"))
        .collect::<Vec<_>>()
        .join("\n");
    std::fs::write(&jsonl, fixed).unwrap();
    let v = json_out(&t.cli(&["--role", "a", "memory", "import", jsonl.to_str().unwrap()]));
    assert_eq!(v["written"].as_u64(), Some(2), "{v}");
    assert_eq!(t.feed_records(), before + 2);
    let found = ok(&t.cli(&["memory", "search", "login"]));
    assert!(
        found.contains("[2025-03-01, laptop] move the login"),
        "{found}"
    );
    // A name that says no format is refused with the ones that work.
    let other = t.tmp.path().join("notes.csv");
    std::fs::write(&other, "x").unwrap();
    let out = t.cli(&["--role", "a", "memory", "import", other.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains(".jsonl"));
}

/// The names `tar -tzf` lists in an archive.
fn listed(archive: &Path) -> Vec<String> {
    let out = Command::new("tar")
        .arg("-tzf")
        .arg(archive)
        .output()
        .unwrap();
    ok(&out).lines().map(str::to_owned).collect()
}

#[test]
fn backup_writes_a_verified_archive_without_keys_unless_asked() {
    let t = TestChannel::new(&["a", "b"]);
    ok(&t.cli(&[
        "--role",
        "a",
        "send",
        "--to",
        "b",
        "--topic",
        "kept",
        "--body",
        "in the backup",
    ]));
    // A link planted in the folder to this device's keys is never followed.
    let keys = std::fs::read_dir(t.home.join("keys"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    std::os::unix::fs::symlink(&keys, t.dir.join("feeds").join("planted")).unwrap();
    let file = t.tmp.path().join("backup.tar.gz");
    let out = ok(&t.cli(&["backup", file.to_str().unwrap()]));
    assert!(out.contains("verified before"), "{out}");
    assert!(
        out.contains("left out: channel/feeds/planted: a symbolic link"),
        "{out}"
    );
    assert!(out.contains("no keys are in it"), "{out}");
    let names = listed(&file);
    assert!(
        names.iter().any(|n| n == "channel/channel.json"),
        "{names:?}"
    );
    assert!(
        names
            .iter()
            .all(|n| !n.contains("keys") && !n.contains("planted")),
        "{names:?}"
    );
    use std::os::unix::fs::PermissionsExt as _;
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o600
    );
    // A real tar unpacks it into a channel that verifies, with the message.
    let back = t.tmp.path().join("restored");
    std::fs::create_dir(&back).unwrap();
    ok(&Command::new("tar")
        .arg("-xzf")
        .arg(&file)
        .arg("-C")
        .arg(&back)
        .output()
        .unwrap());
    let restored = back.join("channel");
    let out = ok(&Command::new(bin())
        .env("COUNTERSIGN_HOME", &t.home)
        .args(["verify", "--channel"])
        .arg(&restored)
        .output()
        .unwrap());
    assert!(out.contains("clean"), "{out}");
    // Never over an existing file, and nothing left beside it.
    let again = t.cli(&["backup", file.to_str().unwrap()]);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("exists already"));
    // With --with-keys: the keys and the device, and what that means.
    let with = t.tmp.path().join("with-keys.tar.gz");
    let out = ok(&t.cli(&["backup", with.to_str().unwrap(), "--with-keys"]));
    assert!(
        out.contains("whoever has the file can act as this device"),
        "{out}"
    );
    let names = listed(&with);
    assert!(
        names.iter().any(|n| n.starts_with("home/keys/")),
        "{names:?}"
    );
    assert!(names.iter().any(|n| n == "home/device.json"), "{names:?}");
    let stray: Vec<_> = std::fs::read_dir(t.tmp.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".partial"))
        .collect();
    assert!(stray.is_empty());
}

/// The words of a systemd command line (double quotes kept together).
fn unit_words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    for c in line.chars() {
        match c {
            '"' => quoted = !quoted,
            ' ' if !quoted => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

#[test]
fn install_service_writes_a_unit_whose_command_runs_the_channel_and_uninstall_removes_it() {
    let t = TestChannel::new(&["a", "b"]);
    ok(&t.cli(&[
        "--role", "a", "send", "--to", "b", "--topic", "beat", "--body", "x",
    ]));
    let user = t.tmp.path().join("user");
    let project = t.tmp.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    let run = |args: &[&str]| {
        Command::new(bin())
            .current_dir(&project)
            .env("COUNTERSIGN_HOME", &t.home)
            .env("HOME", &user)
            .env("XDG_CONFIG_HOME", user.join(".config"))
            .env("CODEX_HOME", user.join(".codex"))
            // No service manager answers here: the unit is written, not enabled.
            .env("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent/bus")
            .env("XDG_RUNTIME_DIR", "/nonexistent/run")
            .env_remove("COUNTERSIGN_ROLE")
            .env_remove("COUNTERSIGN_CHANNEL")
            .arg("--channel")
            .arg(&t.dir)
            .args(args)
            .output()
            .unwrap()
    };
    let units = user.join(".config/systemd/user");
    let plan = ok(&run(&["install", "service"]));
    assert!(plan.contains("Dry run"), "{plan}");
    assert!(!units.exists());
    let out = ok(&run(&["install", "service", "--apply"]));
    assert!(
        out.contains("systemctl --user enable --now countersign-"),
        "{out}"
    );
    let unit: PathBuf = std::fs::read_dir(&units)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let text = std::fs::read_to_string(&unit).unwrap();
    let dir = t.dir.canonicalize().unwrap();
    let home = t.home.canonicalize().unwrap();
    assert!(text.contains("WantedBy=default.target"), "{text}");
    let exec = text
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart="))
        .expect("ExecStart");
    let words = unit_words(exec);
    assert_eq!(
        words[0],
        PathBuf::from(bin())
            .canonicalize()
            .unwrap()
            .to_str()
            .unwrap()
    );
    assert_eq!(words[1..4], ["serve", "--channel", dir.to_str().unwrap()]);
    let env = text
        .lines()
        .find_map(|l| l.strip_prefix("Environment="))
        .expect("Environment");
    assert_eq!(env, format!("COUNTERSIGN_HOME={}", home.display()));

    // Its command, run for a moment as the manager would: it serves the
    // channel and beats for this device (the head gains `as_of`).
    let (k, v) = env.split_once('=').unwrap();
    let mut child = Command::new(&words[0])
        .args(&words[1..])
        .env_clear()
        .env(k, v)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let head = std::fs::read_dir(t.dir.join("feeds/a"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path()
        .join("head.json");
    let started = Instant::now();
    let mut beat = false;
    while started.elapsed() < Duration::from_secs(15) && !beat {
        std::thread::sleep(Duration::from_millis(200));
        beat = std::fs::read_to_string(&head)
            .unwrap()
            .contains("\"as_of\"");
        assert!(
            child.try_wait().unwrap().is_none(),
            "the service's command exited"
        );
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(beat, "no heartbeat from the service's command");

    let out = ok(&run(&["uninstall", "--apply"]));
    assert!(!unit.exists(), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_status_tells_the_backlog_and_only_when_asked_for() {
    let t = TestChannel::new(&["a", "b"]);
    let long = "a long message that needs a summary of its own. ".repeat(20);
    ok(&t.cli(&[
        "--role", "a", "send", "--to", "b", "--topic", "long", "--body", &long,
    ]));
    let c = Client::spawn_with(&t.home, &t.dir, "a", &["--tools", "all,memory"]).await;
    let v = c.call("memory_status", json!({})).await.ok();
    assert_eq!(v["items"].as_u64(), Some(1), "{v}");
    assert_eq!(v["lines_waiting"].as_u64(), Some(1), "{v}");
    assert_eq!(v["ready"].as_u64(), Some(1), "{v}");
    assert_eq!(v["leased"].as_u64(), Some(0), "{v}");
    assert_eq!(v["paused"].as_u64(), Some(0), "{v}");
    c.close().await;
    let d = Client::spawn(&t.home, &t.dir, "a").await;
    d.call("memory_status", json!({}))
        .await
        .value_error("memory_status is not served here");
    d.close().await;
}
