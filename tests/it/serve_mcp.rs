//! `/mcp` of `countersign serve`, from the outside: the real binary on a
//! loopback port, the official Python SDK and rmcp's client over streamable
//! HTTP, and raw requests for what no client library sends. Every refusal is
//! checked to have written nothing (the feeds' record count, `verify`).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use countersign::app::hosting::channel_ref;
use countersign::store::access::Access;
use countersign::store::{ChannelDir, Home};
use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};

use crate::common::serve::{
    INITIALIZE, Served, assert_verified, logged, post_mcp, raw_request, token,
};
use crate::common::{TestChannel, bin, sha256_hex};
use crate::python_client::{has_mcp, python};

/// A second channel made with `tc`'s home (the same owner) at `path` (under
/// `tc`'s temporary folder), named `name`.
fn another_channel(tc: &TestChannel, path: &str, name: &str) -> std::path::PathBuf {
    let dir = tc.tmp.path().join(path);
    let out = tc.cli(&[
        "init",
        dir.to_str().unwrap(),
        "--roles",
        "frontend,backend",
        "--name",
        name,
    ]);
    assert!(
        out.status.success(),
        "init {name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    dir
}

/// A `send_message` call as raw JSON-RPC (for requests refused before any
/// session is looked up).
fn send_call(body: &str) -> Vec<u8> {
    json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "send_message",
        "arguments": {"to": "backend", "topic": "raw", "body": body}}})
    .to_string()
    .into_bytes()
}

/// The `error` of a JSON refusal body.
fn error_of(body: &str) -> String {
    let v: Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body:?}"));
    v["error"].as_str().expect("an error").to_owned()
}

#[test]
fn the_python_sdk_runs_a_debt_through_its_confirm_over_http() {
    let py = python();
    if let Err(why) = has_mcp(&py) {
        panic!(
            "the Python MCP SDK is missing in {}: {why}; run `bash .ci/python-env.sh` or set \
             COUNTERSIGN_PYTHON",
            py.display()
        );
    }
    let tc = TestChannel::new(&["frontend", "backend"]);
    let fe = token(&tc.home, &tc.dir, "frontend");
    let be = token(&tc.home, &tc.dir, "backend");
    let server = Served::start(&tc.home, &["--channel", tc.dir.to_str().unwrap()], &[]);

    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/http_check.py");
    let mut child = Command::new(&py)
        .arg(&script)
        .arg(server.url("/mcp"))
        .env("COUNTERSIGN_TOKEN_FRONTEND", &fe)
        .env("COUNTERSIGN_TOKEN_BACKEND", &be)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the script");
    let start = Instant::now();
    while child.try_wait().expect("poll").is_none() {
        if start.elapsed() > Duration::from_secs(180) {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().expect("the script's output");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "http_check.py failed ({})\n--- stdout ---\n{stdout}--- stderr ---\n{}--- server ---\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr),
        server.stderr()
    );
    print!("{stdout}");
    let ids: Value = serde_json::from_str(stdout.lines().last().unwrap()).expect("the ids line");
    let (debt, reply) = (
        ids["debt"].as_str().unwrap(),
        ids["reply"].as_str().unwrap(),
    );

    // The folder holds what the answers said, written by the tokens' roles.
    assert!(server.stop().success());
    let log = logged(&tc.home, &tc.dir);
    let send = log.iter().find(|r| r.id == debt).expect("the debt's send");
    assert_eq!((send.role.as_str(), send.op.as_str()), ("frontend", "send"));
    assert_eq!(send.data["action_required"], true, "{:?}", send.data);
    let re = log.iter().find(|r| r.id == reply).expect("the reply");
    assert_eq!((re.role.as_str(), re.op.as_str()), ("backend", "send"));
    let full = |op: &str, role: &str| {
        log.iter()
            .filter(|r| r.op == op && r.role == role)
            .filter(|r| r.data["id"].as_str().is_some_and(|i| i.starts_with(debt)))
            .count()
    };
    assert_eq!(full("resolve", "backend"), 1, "one resolve by backend");
    assert_eq!(full("confirm", "frontend"), 1, "one confirm by frontend");
    assert_eq!(
        log.iter().filter(|r| r.op == "send").count(),
        2,
        "the refused sends wrote nothing"
    );
    assert_verified(&tc.home, &tc.dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_without_a_live_role_token_of_the_channel_is_refused_and_writes_nothing() {
    let tc = TestChannel::new(&["frontend", "backend"]);
    let other = another_channel(&tc, "other", "other");
    let good = token(&tc.home, &tc.dir, "frontend");
    let foreign = token(&tc.home, &other, "frontend");
    let doomed = token(&tc.home, &tc.dir, "backend");
    let server = Served::start(&tc.home, &["--channel", tc.dir.to_str().unwrap()], &[]);
    let port = server.port();

    // One message through a live token: the channel works.
    let fe = server.client(&good).await;
    fe.send("backend", "before", "sent with a live token").await;
    let be = server.client(&doomed).await;
    be.send("frontend", "also before", "sent before the revoke")
        .await;
    let (here, there) = (tc.feed_records(), logged(&tc.home, &other).len());

    // No token, a wrong one, another scheme: 401 before any session.
    for (what, auth) in [
        ("no token", None),
        ("a wrong token", Some(format!("cst_{}", "0".repeat(64)))),
        ("a token of no known kind", Some("s3cret".to_owned())),
    ] {
        let r = post_mcp(port, auth.as_deref(), &[], INITIALIZE.as_bytes());
        assert_eq!(r.status, 401, "{what}: {r:?}");
        assert!(error_of(&r.body).contains("bearer token"), "{what}: {r:?}");
        let r = post_mcp(port, auth.as_deref(), &[], &send_call("x"));
        assert_eq!(r.status, 401, "{what}: {r:?}");
        assert!(
            server
                .try_client(auth.as_deref().unwrap_or(""))
                .await
                .is_err()
        );
    }
    let basic = raw_request(
        port,
        "POST",
        "/mcp",
        &[
            ("Authorization", &format!("Basic {good}")),
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ],
        INITIALIZE.as_bytes(),
    )
    .unwrap();
    assert_eq!(
        basic.status, 401,
        "a role token under another scheme: {basic:?}"
    );

    // A view key is for the board only.
    let access = Access::open(&Home::at(tc.home.clone()).access_db()).unwrap();
    let dir = ChannelDir::open(&tc.dir).unwrap();
    let (view, _) = access
        .create_view_key(
            &channel_ref(&dir),
            "board",
            "cli",
            Duration::from_secs(3600),
            countersign::store::now_ms(),
        )
        .unwrap();
    let r = post_mcp(port, Some(&view), &[], INITIALIZE.as_bytes());
    assert_eq!(r.status, 403, "a view key on /mcp: {r:?}");
    assert!(error_of(&r.body).contains("board"), "{r:?}");
    assert!(server.try_client(&view).await.is_err());

    // A token of a channel this server does not host.
    let r = post_mcp(port, Some(&foreign), &[], INITIALIZE.as_bytes());
    assert_eq!(r.status, 404, "another channel's token: {r:?}");
    assert!(error_of(&r.body).contains("not hosted"), "{r:?}");
    assert!(server.try_client(&foreign).await.is_err());

    // A revoked token: refused from its next request on, even in the session
    // it opened.
    let id = &sha256_hex(&doomed)[..12];
    let out = tc.cli(&["token", "revoke", id]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let call = be
        .inner
        .call_tool(
            CallToolRequestParams::new("send_message").with_arguments(
                json!({"to": "frontend", "topic": "after", "body": "after the revoke"})
                    .as_object()
                    .unwrap()
                    .clone(),
            ),
        )
        .await;
    assert!(
        call.is_err(),
        "a revoked token's session still calls: {call:?}"
    );
    let r = post_mcp(port, Some(&doomed), &[], INITIALIZE.as_bytes());
    assert_eq!(r.status, 401, "a revoked token: {r:?}");
    assert!(server.try_client(&doomed).await.is_err());

    assert_eq!(
        tc.feed_records(),
        here,
        "a refused request wrote to the channel"
    );
    assert_eq!(
        logged(&tc.home, &other).len(),
        there,
        "a refused request wrote to the other channel"
    );
    // The live token still works: the refusals above broke nothing.
    fe.send("backend", "after", "still works").await;
    assert_eq!(tc.feed_records(), here + 1);
    assert_verified(&tc.home, &tc.dir);
    assert_verified(&tc.home, &other);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_of_one_hosted_channel_acts_in_that_channel_only() {
    let tc = TestChannel::new(&["frontend", "backend"]);
    let hosted = tc.tmp.path().join("hosted");
    std::fs::create_dir(&hosted).unwrap();
    let alpha = another_channel(&tc, "hosted/alpha", "alpha");
    let beta = another_channel(&tc, "hosted/beta", "beta");
    // --channels-dir serves with the management tools, which need an admin token.
    let admin = format!("admin-{}", "a".repeat(40));
    let server = Served::start(
        &tc.home,
        &["--channels-dir", hosted.to_str().unwrap()],
        &[("COUNTERSIGN_ADMIN_TOKEN", &admin)],
    );
    let a = server.client(&token(&tc.home, &alpha, "frontend")).await;
    let b = server.client(&token(&tc.home, &beta, "frontend")).await;

    let in_alpha = a
        .send("backend", "alpha only", "written through alpha's token")
        .await;
    let in_beta = b
        .send("backend", "beta only", "written through beta's token")
        .await;

    let topics = |c: &Value| -> Vec<String> {
        c["result"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["topic"].as_str().unwrap().to_owned())
            .collect()
    };
    let seen_a = a.call("list_messages", json!({})).await.ok();
    let seen_b = b.call("list_messages", json!({})).await.ok();
    assert_eq!(topics(&seen_a), ["alpha only"]);
    assert_eq!(topics(&seen_b), ["beta only"]);
    let log_a = logged(&tc.home, &alpha);
    let log_b = logged(&tc.home, &beta);
    assert!(log_a.iter().any(|r| r.id == in_alpha) && !log_a.iter().any(|r| r.id == in_beta));
    assert!(log_b.iter().any(|r| r.id == in_beta) && !log_b.iter().any(|r| r.id == in_alpha));
    // The channel the server does not host under the folder is out of reach.
    let r = post_mcp(
        server.port(),
        Some(&token(&tc.home, &tc.dir, "frontend")),
        &[],
        INITIALIZE.as_bytes(),
    );
    assert_eq!(r.status, 404, "{r:?}");
}

#[test]
fn host_and_origin_must_name_this_server() {
    let tc = TestChannel::new(&["frontend", "backend"]);
    let good = token(&tc.home, &tc.dir, "frontend");
    let server = Served::start(&tc.home, &["--channel", tc.dir.to_str().unwrap()], &[]);
    let port = server.port();
    let before = tc.feed_records();
    let own = format!("http://127.0.0.1:{port}");
    let foreign_host = format!("evil.example:{port}");

    // DNS rebinding: a page of another site resolving to 127.0.0.1 sends its own name.
    let r = post_mcp(
        port,
        Some(&good),
        &[("Host", &foreign_host)],
        INITIALIZE.as_bytes(),
    );
    assert_eq!(r.status, 421, "{r:?}");
    assert!(error_of(&r.body).contains("Host"), "{r:?}");
    let r = post_mcp(
        port,
        Some(&good),
        &[("Host", &foreign_host)],
        &send_call("x"),
    );
    assert_eq!(r.status, 421, "{r:?}");
    // A browser on another origin.
    for origin in [
        "http://evil.example",
        "null",
        &format!("http://localhost:{}", port + 1),
    ] {
        let r = post_mcp(
            port,
            Some(&good),
            &[("Origin", origin)],
            INITIALIZE.as_bytes(),
        );
        assert_eq!(r.status, 403, "Origin {origin}: {r:?}");
        assert!(error_of(&r.body).contains("Origin"), "{r:?}");
    }
    // This server's own names pass.
    for (host, origin) in [
        (format!("127.0.0.1:{port}"), own),
        (
            format!("localhost:{port}"),
            format!("http://localhost:{port}"),
        ),
    ] {
        let r = post_mcp(
            port,
            Some(&good),
            &[("Host", &host), ("Origin", &origin)],
            INITIALIZE.as_bytes(),
        );
        assert_eq!(r.status, 200, "{host} {origin}: {r:?}");
        // One JSON answer to the request: no session, no stream.
        assert!(
            r.headers
                .to_ascii_lowercase()
                .contains("content-type: application/json")
                && r.body.contains("\"serverInfo\""),
            "no initialize answer: {r:?}"
        );
    }
    // /healthz carries nothing and answers any Host (a load balancer's probe).
    let r = raw_request(port, "GET", "/healthz", &[("Host", &foreign_host)], b"").unwrap();
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(tc.feed_records(), before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_over_the_limit_is_refused_with_413_and_writes_nothing() {
    let tc = TestChannel::new(&["frontend", "backend"]);
    let good = token(&tc.home, &tc.dir, "frontend");
    let server = Served::start(
        &tc.home,
        &[
            "--channel",
            tc.dir.to_str().unwrap(),
            "--body-limit",
            "4096",
        ],
        &[],
    );
    let port = server.port();
    let client = server.client(&good).await;
    let before = tc.feed_records();
    let big = "b".repeat(8000);

    // Declared too long.
    let r = post_mcp(port, Some(&good), &[], &send_call(&big));
    assert_eq!(r.status, 413, "{r:?}");
    assert!(error_of(&r.body).contains("4096"), "{r:?}");
    // Chunked, with no length declared: refused once past the limit.
    let raw = send_call(&big);
    let mut chunked = Vec::new();
    for part in raw.chunks(1000) {
        chunked.extend_from_slice(format!("{:x}\r\n", part.len()).as_bytes());
        chunked.extend_from_slice(part);
        chunked.extend_from_slice(b"\r\n");
    }
    chunked.extend_from_slice(b"0\r\n\r\n");
    let auth = format!("Bearer {good}");
    let r = raw_request(
        port,
        "POST",
        "/mcp",
        &[
            ("Authorization", &auth),
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("Transfer-Encoding", "chunked"),
        ],
        &chunked,
    )
    .unwrap();
    assert_eq!(r.status, 413, "{r:?}");
    // Through a real session: the oversized call fails, a small one works.
    let res = client
        .inner
        .call_tool(
            CallToolRequestParams::new("send_message").with_arguments(
                json!({"to": "backend", "topic": "big", "body": big})
                    .as_object()
                    .unwrap()
                    .clone(),
            ),
        )
        .await;
    assert!(res.is_err(), "an oversized call went through: {res:?}");
    assert_eq!(tc.feed_records(), before, "a refused body wrote something");
    client.send("backend", "small", "fits").await;
    assert_eq!(tc.feed_records(), before + 1);
}

#[test]
fn listening_off_loopback_needs_public() {
    let tc = TestChannel::new(&["frontend", "backend"]);
    let port = crate::common::serve::free_port();
    let mut child = Command::new(bin())
        .args(["serve", "--listen", &format!("0.0.0.0:{port}"), "--channel"])
        .arg(&tc.dir)
        .env("COUNTERSIGN_HOME", &tc.home)
        .env_remove("COUNTERSIGN_ADMIN_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("serve on 0.0.0.0 without --public did not refuse: it is serving");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--public") && stderr.contains("loopback"),
        "{stderr}"
    );
    assert!(
        raw_request(port, "GET", "/healthz", &[], b"").is_err(),
        "something listens on the port"
    );

    // With --public it serves, on every address (loopback included).
    let server = Served::start(
        &tc.home,
        &[
            "--listen",
            "0.0.0.0:0",
            "--public",
            "--channel",
            tc.dir.to_str().unwrap(),
        ],
        &[],
    );
    assert!(server.addr.ip().is_unspecified(), "{}", server.addr);
    let r = raw_request(server.port(), "GET", "/healthz", &[], b"").unwrap();
    assert_eq!(r.status, 200, "{r:?}");
    assert!(server.stop().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_while_sends_are_in_flight_loses_nothing() {
    const ROLES: [&str; 4] = ["frontend", "backend", "infra", "qa"];
    let tc = TestChannel::new(&ROLES);
    let tokens: Vec<String> = ROLES.iter().map(|r| token(&tc.home, &tc.dir, r)).collect();
    let server = Served::start(&tc.home, &["--channel", tc.dir.to_str().unwrap()], &[]);
    let mut tasks = Vec::new();
    for (i, t) in tokens.iter().enumerate() {
        let client = server.client(t).await;
        let to = ROLES[(i + 1) % ROLES.len()];
        tasks.push(tokio::spawn(async move {
            // Every id the server answered with, then how the sends ended.
            let mut answered = Vec::new();
            let mut n = 0;
            loop {
                let args = json!({"to": to, "topic": format!("in flight {n}"), "body": "x"});
                let call = client.inner.call_tool(
                    CallToolRequestParams::new("send_message")
                        .with_arguments(args.as_object().unwrap().clone()),
                );
                match tokio::time::timeout(Duration::from_secs(10), call).await {
                    Ok(Ok(r)) if r.is_error != Some(true) => {
                        let id = r.structured_content.unwrap()["id"]
                            .as_str()
                            .unwrap()
                            .to_owned();
                        answered.push(id);
                    }
                    Ok(Ok(r)) => panic!("a send was refused: {r:?}"),
                    Ok(Err(e)) => return (answered, format!("ended: {e}")),
                    Err(_) => return (answered, "ended: no answer within 10 s".to_owned()),
                }
                n += 1;
            }
        }));
    }
    // Let the sends run, then stop the server under them.
    let started = Instant::now();
    while tc.feed_records() < 40 && started.elapsed() < Duration::from_secs(60) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let stopping = Instant::now();
    let status = tokio::task::spawn_blocking(move || server.stop())
        .await
        .unwrap();
    assert!(status.success(), "the server exited with {status}");
    println!("stopped {:?} after SIGTERM", stopping.elapsed());

    let mut answered = Vec::new();
    for t in tasks {
        let (ids, how) = t.await.unwrap();
        println!("{} answered, then {how}", ids.len());
        answered.extend(ids);
    }
    assert!(
        answered.len() >= 20,
        "too few sends before the stop: {}",
        answered.len()
    );
    let log = logged(&tc.home, &tc.dir);
    let sent: std::collections::HashSet<&str> = log
        .iter()
        .filter(|r| r.op == "send")
        .map(|r| r.id.as_str())
        .collect();
    let lost: Vec<&String> = answered
        .iter()
        .filter(|id| !sent.contains(id.as_str()))
        .collect();
    assert!(lost.is_empty(), "answered but not in the log: {lost:?}");
    println!(
        "{} sends answered, {} in the log",
        answered.len(),
        sent.len()
    );
    // A stop lets each call under way finish and answer: every send in the
    // log was answered.
    assert_eq!(
        sent.len(),
        answered.len(),
        "{} sends in the log, {} answered",
        sent.len(),
        answered.len()
    );
    assert_verified(&tc.home, &tc.dir);
}

#[tokio::test(flavor = "multi_thread")]
async fn one_folder_watcher_serves_every_role_the_status_waits_and_the_sync() {
    let roles = ["frontend", "backend", "infra"];
    let tc = TestChannel::new(&roles);
    let server = Served::start(
        &tc.home,
        &["--channel", tc.dir.to_str().unwrap(), "--sync-every", "1h"],
        &[],
    );
    for role in roles {
        let secret = token(&tc.home, &tc.dir, role);
        let client = server.client(&secret).await;
        // A wait makes the role's service watch the folder.
        let v = client
            .call(
                "wait_for_mail",
                json!({"timeout_s": 1, "poll_interval_s": 0.5}),
            )
            .await
            .ok();
        assert_eq!(v["timed_out"], true, "{v}");
        let (code, body) = server.get("/status?wait=1", Some(&secret));
        assert_eq!(code, 200, "{body}");
    }
    // Three role services, the status waits and the background sync share
    // one watcher: one inotify instance, not one per consumer and role.
    assert_eq!(server.inotify_instances(), 1, "{}", server.stderr());
}
