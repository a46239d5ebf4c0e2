//! `countersign status` and `hook stop` through a real `countersign serve`
//! (`COUNTERSIGN_URL`, `COUNTERSIGN_TOKEN`), against the same commands run
//! beside the folder; `/status` and `/hook-status` refusals, `?wait=` and its
//! bounds; and what the client refuses before sending anything.

use std::io::Write as _;
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::serve::{self, Served};
use crate::common::{TestChannel, bin, counter};

/// `countersign serve --channel` of `ch`.
fn serve_channel(ch: &TestChannel) -> Served {
    Served::start(&ch.home, &["--channel", ch.dir.to_str().unwrap()], &[])
}

/// A role token of `role`, made in the channel's home.
fn token(ch: &TestChannel, role: &str) -> String {
    serve::token(&ch.home, &ch.dir, role)
}

/// What one run gave.
struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
    took: Duration,
}

impl Ran {
    fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {} / {}", self.stdout, self.stderr))
    }
}

/// Runs the binary in an empty folder far from any channel, with only the
/// environment given (so a remote run cannot fall back on a folder).
fn run_in(cwd: &Path, home: &Path, args: &[&str], env: &[(&str, &str)], stdin: &str) -> Ran {
    let mut c = Command::new(bin());
    c.env("COUNTERSIGN_HOME", home)
        .env_remove("COUNTERSIGN_ROLE")
        .env_remove("AI_AGENT_CHANNEL_ROLE")
        .env_remove("COUNTERSIGN_CHANNEL")
        .env_remove("COUNTERSIGN_URL")
        .env_remove("COUNTERSIGN_TOKEN")
        .current_dir(cwd)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        c.env(k, v);
    }
    let started = Instant::now();
    let mut child = c.spawn().expect("the binary runs");
    // A run refused before it reads stdin closes it: that is no failure here.
    let _ = child.stdin.take().unwrap().write_all(stdin.as_bytes());
    let out = child.wait_with_output().unwrap();
    Ran {
        code: out.status.code().expect("exited, not killed"),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        took: started.elapsed(),
    }
}

/// A machine without the channel: its own empty home and working folder.
struct Away {
    tmp: tempfile::TempDir,
}

impl Away {
    fn new() -> Self {
        Self {
            tmp: tempfile::tempdir().unwrap(),
        }
    }

    fn run(&self, args: &[&str], url: &str, token: &str, stdin: &str) -> Ran {
        let home = self.tmp.path().join("home");
        run_in(
            self.tmp.path(),
            &home,
            args,
            &[("COUNTERSIGN_URL", url), ("COUNTERSIGN_TOKEN", token)],
            stdin,
        )
    }
}

/// The same command beside the folder, as `role`.
fn local(ch: &TestChannel, role: &str, args: &[&str], stdin: &str) -> Ran {
    let mut all = vec!["--channel", ch.dir.to_str().unwrap(), "--role", role];
    all.extend_from_slice(args);
    run_in(ch.tmp.path(), &ch.home, &all, &[], stdin)
}

fn send_debt(ch: &TestChannel, from: &str, to: &str, topic: &str) {
    let out = ch.cli(&[
        "--role",
        from,
        "send",
        "--to",
        to,
        "--topic",
        topic,
        "--body",
        "b",
        "--action-required",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A GET with a bearer secret: status and JSON body.
fn get(url: &str, secret: &str) -> (u16, Value, Option<String>) {
    let agent = ureq::Agent::new_with_config(
        ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(60)))
            .build(),
    );
    let mut r = agent
        .get(url)
        .header("Authorization", &format!("Bearer {secret}"))
        .call()
        .expect("the server answers");
    let retry = r
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_owned());
    let body = r.body_mut().read_to_string().unwrap();
    (
        r.status().as_u16(),
        serde_json::from_str(&body).unwrap_or(Value::Null),
        retry,
    )
}

#[test]
fn status_through_the_server_is_the_local_status_before_and_after_mail() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let secret = token(&ch, "backend");
    let server = serve_channel(&ch);
    let away = Away::new();
    let url = server.url("/mcp/");

    for round in ["quiet", "a debt arrived"] {
        let here = local(&ch, "backend", &["status"], "");
        let there = away.run(&["status"], &url, &secret, "");
        assert_eq!(there.code, here.code, "{round}: {}", there.stderr);
        assert_eq!(there.json(), here.json(), "{round}");
        assert_eq!(there.stdout, here.stdout, "{round}: the same bytes");
        let here = local(&ch, "backend", &["status", "--text"], "");
        let there = away.run(&["status", "--text"], &url, &secret, "");
        assert_eq!(
            (there.code, &there.stdout),
            (here.code, &here.stdout),
            "{round}"
        );
        if round == "quiet" {
            assert_eq!(there.code, 0);
            send_debt(&ch, "frontend", "backend", "migrate the <db>");
        } else {
            assert_eq!(there.code, 1, "something actionable");
            assert!(
                there.stdout.contains("migrate the <db>"),
                "{}",
                there.stdout
            );
        }
    }
    // The folder was never near the remote run.
    assert!(!away.tmp.path().join("home").join("state").exists());
}

#[test]
fn the_stop_hook_through_the_server_decides_as_the_local_one() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let secret = token(&ch, "backend");
    let server = serve_channel(&ch);
    let away = Away::new();
    let first = r#"{"stop_hook_active": false}"#;
    let retry = r#"{"stop_hook_active": true}"#;

    let there = away.run(&["hook", "stop"], &server.url(""), &secret, first);
    assert_eq!(
        (there.code, there.stdout.as_str()),
        (0, ""),
        "{}",
        there.stderr
    );

    send_debt(&ch, "frontend", "backend", "review the schema");
    let here = local(&ch, "backend", &["hook", "stop"], first);
    let there = away.run(&["hook", "stop"], &server.url(""), &secret, first);
    assert_eq!(there.code, 0);
    assert_eq!(there.stdout, here.stdout, "{}", there.stderr);
    let block: Value = serde_json::from_str(&there.stdout).unwrap();
    assert_eq!(block["decision"], "block");
    assert!(
        block["reason"]
            .as_str()
            .unwrap()
            .contains("pending items for 'backend'"),
        "{block}"
    );

    // The retry: nothing new since the reminder → the stop passes.
    let there = away.run(&["hook", "stop"], &server.url(""), &secret, retry);
    assert_eq!(
        (there.code, there.stdout.as_str()),
        (0, ""),
        "{}",
        there.stderr
    );
    // A new reminder chain, then something new arrives before the retry.
    let there = away.run(&["hook", "stop"], &server.url(""), &secret, first);
    assert!(there.stdout.contains("block"));
    send_debt(&ch, "frontend", "backend", "and the index");
    let there = away.run(&["hook", "stop"], &server.url(""), &secret, retry);
    assert!(
        there
            .stdout
            .contains("new items arrived since the last reminder"),
        "{} / {}",
        there.stdout,
        there.stderr
    );
    // The snapshot is kept in the home of the machine away, per server and token.
    let snaps: Vec<_> = std::fs::read_dir(away.tmp.path().join("home/remote"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(snaps.len(), 1, "{snaps:?}");
    assert!(
        snaps[0].starts_with(".stop-hook-") && snaps[0].ends_with("-backend.json"),
        "{snaps:?}"
    );
    assert!(!snaps[0].contains(&secret[4..12]), "no part of the token");
}

#[test]
fn a_wrong_or_revoked_token_fails_status_and_lets_the_stop_pass_with_a_word() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let secret = token(&ch, "backend");
    send_debt(&ch, "frontend", "backend", "pending");
    let server = serve_channel(&ch);
    let away = Away::new();

    let refused = |bad: &str| {
        let st = away.run(&["status"], &server.url(""), bad, "");
        assert_eq!(st.code, 2, "{}", st.stdout);
        assert!(st.stdout.is_empty());
        assert!(
            st.stderr.contains("401") && st.stderr.contains("COUNTERSIGN_URL"),
            "{}",
            st.stderr
        );
        let hook = away.run(&["hook", "stop"], &server.url(""), bad, "{}");
        assert_eq!((hook.code, hook.stdout.as_str()), (0, ""), "fails open");
        assert!(
            hook.stderr.contains("COUNTERSIGN_URL") && hook.stderr.contains("NOT checked"),
            "{}",
            hook.stderr
        );
    };
    refused("cst_0000000000000000000000000000000000000000000");

    assert_eq!(away.run(&["status"], &server.url(""), &secret, "").code, 1);
    let list = String::from_utf8(ch.cli(&["token", "list"]).stdout).unwrap();
    let id = list.split_whitespace().next().unwrap().to_owned();
    let out = ch.cli(&["token", "revoke", &id]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    refused(&secret);
}

#[test]
fn an_unreachable_or_silent_server_fails_status_and_lets_the_stop_pass_in_time() {
    let away = Away::new();
    // A port nobody listens on.
    let closed = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    let st = away.run(&["status"], &closed, "cst_x", "");
    assert_eq!(st.code, 2, "{}", st.stderr);
    assert!(st.stderr.contains("cannot reach"), "{}", st.stderr);
    let hook = away.run(&["hook", "stop"], &closed, "cst_x", "{}");
    assert_eq!((hook.code, hook.stdout.as_str()), (0, ""));

    // A server that takes the connection and never answers.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", silent.local_addr().unwrap());
    let hook = away.run(&["hook", "stop"], &url, "cst_x", "{}");
    assert_eq!(
        (hook.code, hook.stdout.as_str()),
        (0, ""),
        "{}",
        hook.stderr
    );
    assert!(
        hook.took >= Duration::from_millis(2500) && hook.took < Duration::from_secs(6),
        "the stop waits about 3 s, no more: {:?}",
        hook.took
    );
    drop(silent);
}

#[test]
fn the_client_refuses_a_token_in_argv_and_plain_http_elsewhere_before_sending() {
    let away = Away::new();
    for args in [
        vec!["status", "cst_abcdef"],
        vec!["hook", "stop", "--token=csv_abcdef"],
        vec!["send", "--body", "cst_abcdef"],
    ] {
        let r = away.run(&args, "", "", "{}");
        assert_eq!(r.code, 2, "{args:?}");
        assert!(
            r.stderr.contains("COUNTERSIGN_TOKEN") && r.stderr.contains("ps"),
            "{}",
            r.stderr
        );
    }
    let r = away.run(&["status"], "http://cs.example.org/mcp", "cst_x", "");
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("https"), "{}", r.stderr);
    let r = away.run(&["status"], "http://127.0.0.1:1", "", "");
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("COUNTERSIGN_TOKEN is empty"),
        "{}",
        r.stderr
    );
    let r = away.run(&["hook", "stop"], "http://127.0.0.1:1", "", "{}");
    assert_eq!((r.code, r.stdout.as_str()), (0, ""));
    assert!(r.stderr.contains("NOT checked"), "{}", r.stderr);
    let r = away.run(&["status", "pins"], "http://127.0.0.1:1", "cst_x", "");
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("only `status`"), "{}", r.stderr);
}

#[test]
fn only_a_role_token_reads_status_and_hook_status() {
    let tmp = tempfile::tempdir().unwrap();
    let admin = "an-admin-token-long-enough-to-be-accepted-0123";
    let chs = tmp.path().join("channels");
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&chs).unwrap();
    let out = Command::new(bin())
        .env("COUNTERSIGN_HOME", &home)
        .args([
            "init",
            chs.join("team").to_str().unwrap(),
            "--roles",
            "a,b",
            "--name",
            "team",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dir = countersign::store::ChannelDir::open(&chs.join("team")).unwrap();
    let access = countersign::store::access::Access::open(
        &countersign::store::Home::at(home.clone()).access_db(),
    )
    .unwrap();
    let channel = countersign::store::access::ChannelRef {
        id: dir.id().to_owned(),
        name: "team".into(),
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let (role_secret, _) = access.create_role_token(&channel, "a", "", now).unwrap();
    let (view_secret, _) = access
        .create_view_key(&channel, "", "test", Duration::from_secs(3600), now)
        .unwrap();
    let server = Served::start(
        &home,
        &["--channels-dir", chs.to_str().unwrap()],
        &[("COUNTERSIGN_ADMIN_TOKEN", admin)],
    );
    for route in ["status", "hook-status"] {
        let url = server.url(&format!("/{route}"));
        for (who, secret) in [("admin", admin), ("view key", view_secret.as_str())] {
            let (code, body, _) = get(&url, secret);
            assert_eq!(code, 403, "{who} on /{route}: {body}");
            assert!(
                body["error"].as_str().unwrap().contains("role token"),
                "{body}"
            );
        }
        let (code, _, _) = get(&url, "nothing-like-a-token");
        assert_eq!(code, 401);
        let (code, body, _) = get(&url, &role_secret);
        assert_eq!(code, 200, "{body}");
        assert_eq!(body["role"], "a");
        assert_eq!(body["channel"], "team");
    }
    let (_, hook, _) = get(&server.url("/hook-status"), &role_secret);
    assert_eq!(
        hook.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["channel", "role", "counts"]
    );
    assert_eq!(hook["counts"], json!({}), "lean: no counter is above zero");
}

#[test]
fn a_waiting_status_answers_when_mail_arrives_and_waiting_is_bounded() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let secret = token(&ch, "backend");
    let server = serve_channel(&ch);
    let url = server.url("/status?wait=30");

    // Quiet: a wait of 1 s holds about that long and answers the report.
    let started = Instant::now();
    let (code, body, _) = get(&server.url("/status?wait=1"), &secret);
    assert_eq!(code, 200);
    assert_eq!(counter(&body, "unread"), 0);
    assert!(started.elapsed() >= Duration::from_millis(900));

    // Mail arriving wakes the waiting request well before its 30 s.
    let waiter = {
        let (url, secret) = (url.clone(), secret.clone());
        std::thread::spawn(move || {
            let started = Instant::now();
            let (code, body, _) = get(&url, &secret);
            (code, body, started.elapsed())
        })
    };
    std::thread::sleep(Duration::from_millis(500));
    send_debt(&ch, "frontend", "backend", "wake up");
    let (code, body, took) = waiter.join().unwrap();
    assert_eq!(code, 200);
    assert_eq!(counter(&body, "unread"), 1, "{body}");
    assert!(took < Duration::from_secs(10), "{took:?}");

    // With something pending, a wait answers at once.
    let started = Instant::now();
    assert_eq!(get(&url, &secret).0, 200);
    assert!(started.elapsed() < Duration::from_secs(5));

    // Eight waiting requests per token at most: the ninth is told to come back.
    let quiet = token(&ch, "frontend");
    let waiting: Vec<_> = (0..8)
        .map(|_| {
            let (url, quiet) = (server.url("/status?wait=4"), quiet.clone());
            std::thread::spawn(move || get(&url, &quiet).0)
        })
        .collect();
    std::thread::sleep(Duration::from_millis(1500));
    let (code, body, retry) = get(&server.url("/status?wait=4"), &quiet);
    assert_eq!(code, 429, "{body}");
    assert_eq!(retry.as_deref(), Some("5"));
    // Another token still gets its place.
    assert_eq!(get(&url, &secret).0, 200);
    for w in waiting {
        assert_eq!(w.join().unwrap(), 200);
    }
    // Their places are given back.
    assert_eq!(get(&server.url("/status?wait=1"), &quiet).0, 200);
}

/// The folder of the pinned clients' executables (`.ci/clients.sh`), as
/// `real_clients.rs` finds it; fails with the install command when absent.
fn clients_bin() -> std::path::PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = match std::env::var_os("COUNTERSIGN_CLIENTS").filter(|v| !v.is_empty()) {
        Some(p) => manifest.join(p),
        None => manifest.join("target/clients"),
    }
    .join("node_modules/.bin");
    assert!(
        dir.join("claude").is_file(),
        "Claude Code is not installed in {}: run `bash .ci/clients.sh` or set COUNTERSIGN_CLIENTS",
        dir.display()
    );
    dir
}

/// `claude mcp list` in `project` as `home`, with `env`: the `channel` line.
fn claude_mcp_list(home: &Path, project: &Path, env: &[(&str, &str)]) -> String {
    let path = format!(
        "{}:{}",
        clients_bin().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut c = Command::new("claude");
    c.env_clear()
        .env("PATH", &path)
        .env("HOME", home)
        .env("LANG", "C.UTF-8")
        .env("TMPDIR", std::env::temp_dir())
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .current_dir(project)
        .args(["mcp", "list"])
        .stdin(Stdio::null());
    for (k, v) in env {
        c.env(k, v);
    }
    let out_file = tempfile::NamedTempFile::new().unwrap();
    let err_file = tempfile::NamedTempFile::new().unwrap();
    c.stdout(out_file.reopen().unwrap())
        .stderr(err_file.reopen().unwrap());
    let mut child = c.spawn().expect("claude starts");
    let started = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if started.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            panic!("claude mcp list did not finish within 120 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let out = std::process::Output {
        status,
        stdout: std::fs::read(out_file.path()).unwrap(),
        stderr: std::fs::read(err_file.path()).unwrap(),
    };
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "claude mcp list failed: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
        .lines()
        .find(|l| l.starts_with("channel:"))
        .unwrap_or_else(|| panic!("no `channel` server listed: {stdout}"))
        .to_owned()
}

#[test]
fn install_claude_url_wires_claude_code_to_the_server_and_uninstall_takes_it_out() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let secret = token(&ch, "frontend");
    let server = serve_channel(&ch);
    // The machine of the agent: a HOME, a git project, no channel folder.
    let machine = tempfile::tempdir().unwrap();
    let home = machine.path().join("home");
    let project = machine.path().join("project");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&project).unwrap();
    assert!(
        Command::new("git")
            .args(["init", "-q"])
            .current_dir(&project)
            .status()
            .unwrap()
            .success()
    );
    let cs = |args: &[&str]| {
        let env = [("HOME", home.to_str().unwrap())];
        run_in(&project, &home.join("cs"), args, &env, "")
    };
    let url = server.url("/mcp");
    let r = cs(&[
        "install",
        "claude",
        "--url",
        &url,
        "--token-env",
        "CS_TOKEN",
        "--apply",
    ]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("export CS_TOKEN="), "{}", r.stdout);
    assert!(
        !project.join(".countersign.local.json").exists(),
        "no binding"
    );

    let user: Value =
        serde_json::from_slice(&std::fs::read(home.join(".claude.json")).unwrap()).unwrap();
    let key = project.canonicalize().unwrap().display().to_string();
    assert_eq!(
        user["projects"][&key]["mcpServers"]["channel"],
        json!({"type": "http", "url": server.url("/mcp"),
               "headers": {"Authorization": "Bearer ${CS_TOKEN}"}})
    );
    let settings = std::fs::read_to_string(project.join(".claude/settings.local.json")).unwrap();
    assert!(!settings.contains(&secret), "no token in any file");
    let s: Value = serde_json::from_str(&settings).unwrap();
    let stop = s["hooks"]["Stop"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap();
    assert!(
        stop.starts_with(&format!(
            "COUNTERSIGN_URL={} COUNTERSIGN_TOKEN=\"$CS_TOKEN\" ",
            server.url("")
        )),
        "{stop}"
    );

    // The Stop hook as Claude Code runs it (through a shell), with the variable exported.
    send_debt(&ch, "backend", "frontend", "over to you");
    let mut sh = Command::new("sh");
    sh.args(["-c", stop])
        .env_remove("COUNTERSIGN_TOKEN")
        .env("CS_TOKEN", &secret)
        .current_dir(&project)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped());
    let mut child = sh.spawn().unwrap();
    let _ = child.stdin.take().unwrap().write_all(b"{}");
    let out = child.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("\"block\"") && said.contains("'frontend'"),
        "{said}"
    );

    // The real Claude Code connects with the variable exported, and is refused without.
    let line = claude_mcp_list(&home, &project, &[("CS_TOKEN", &secret)]);
    assert!(line.contains("Connected"), "{line}");
    let line = claude_mcp_list(&home, &project, &[]);
    assert!(!line.contains("Connected"), "{line}");

    let r = cs(&["uninstall", "--apply"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let user: Value =
        serde_json::from_slice(&std::fs::read(home.join(".claude.json")).unwrap()).unwrap();
    assert!(user["projects"][&key]["mcpServers"].is_null(), "{user}");
    assert!(!project.join(".claude/settings.local.json").exists());
    assert!(!project.join("CLAUDE.local.md").exists());
}

#[test]
fn install_url_refuses_a_token_for_a_variable_and_codex() {
    let away = Away::new();
    for (args, needle) in [
        (
            vec![
                "install",
                "claude",
                "--url",
                "https://cs.example.org",
                "--token-env",
                "x y",
            ],
            "name of an environment variable",
        ),
        (
            vec![
                "install",
                "codex",
                "--url",
                "https://cs.example.org",
                "--token-env",
                "T",
            ],
            "--url is for claude",
        ),
        (
            vec![
                "install",
                "claude",
                "--url",
                "http://cs.example.org",
                "--token-env",
                "T",
            ],
            "https",
        ),
    ] {
        let r = away.run(&args, "", "", "");
        assert_eq!(r.code, 2, "{args:?}");
        assert!(r.stderr.contains(needle), "{args:?}: {}", r.stderr);
    }
}

#[test]
fn status_watch_through_the_server_wakes_when_mail_arrives() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let secret = token(&ch, "backend");
    let server = serve_channel(&ch);
    let away = Away::new();
    let (url, home, cwd) = (
        server.url(""),
        away.tmp.path().join("home"),
        away.tmp.path().to_path_buf(),
    );
    let watching = std::thread::spawn(move || {
        run_in(
            &cwd,
            &home,
            &["status", "watch", "--max-polls", "1"],
            &[("COUNTERSIGN_URL", &url), ("COUNTERSIGN_TOKEN", &secret)],
            "",
        )
    });
    std::thread::sleep(Duration::from_millis(1500));
    send_debt(&ch, "frontend", "backend", "look at this");
    let r = watching.join().unwrap();
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout
            .contains(" waiting: 1 unread message, 1 debt owed to you not yet taken up\n"),
        "{}",
        r.stdout
    );
    assert!(
        r.took < Duration::from_secs(15),
        "woken by the message, not by the 50 s: {:?}",
        r.took
    );
}
