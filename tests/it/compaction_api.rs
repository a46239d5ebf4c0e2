//! Compaction with a model, against a local stand-in of the Anthropic
//! Messages API (tests/clients/model_api.py --summarize): the key stored
//! hidden and checked, `memory compact` writing every waiting line through
//! the job protocol, each row of the failure table pausing the API for its
//! time (the job given back, no line failed), the status line saying why,
//! the background worker of a long-running `mcp`, and two devices on one
//! channel folder electing one writer, the other taking over when it pauses.

use std::fs;
use std::io::{BufRead as _, Write as _};
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use rmcp::ServiceExt as _;
use rmcp::transport::{ConfigureCommandExt as _, TokioChildProcess};
use serde_json::{Value, json};

use crate::common::local::{self, Local};
use crate::common::{Client, bin};
use countersign::app::compaction_api::BASE_URL_ENV;
use countersign::app::membership::{admit, join};
use countersign::store::Home;

/// The stand-in, killed on drop. `fail` is the file that scripts failures.
struct StandIn {
    child: Child,
    port: u16,
    record: PathBuf,
    fail: PathBuf,
}

impl StandIn {
    fn start(dir: &Path, name: &str) -> Self {
        let record = dir.join(format!("{name}-requests.jsonl"));
        let fail = dir.join(format!("{name}-fail.json"));
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/model_api.py");
        let mut child = Command::new("python3")
            .arg(script)
            .arg("--record")
            .arg(&record)
            .arg("--summarize")
            .arg("--fail")
            .arg(&fail)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("python3 runs the stand-in");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line.trim().strip_prefix("PORT ").unwrap().parse().unwrap();
        Self {
            child,
            port,
            record,
            fail,
        }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Every Messages request so far, as (key, body).
    fn requests(&self) -> Vec<(String, Value)> {
        fs::read_to_string(&self.record)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|v| v["path"] == "/v1/messages")
            .map(|v| {
                (
                    v["key"].as_str().unwrap_or("").to_owned(),
                    v["body"].clone(),
                )
            })
            .collect()
    }

    /// Answers every request with `how` from now on.
    fn script(&self, how: Value) {
        fs::write(&self.fail, how.to_string()).unwrap();
    }

    /// Answers well from now on.
    fn heal(&self) {
        let _ = fs::remove_file(&self.fail);
    }
}

impl Drop for StandIn {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs the binary on `dir` with `home`, the stand-in as the API, and
/// `stdin` piped in.
fn run(home: &Path, dir: &Path, api: &StandIn, args: &[&str], stdin: &str) -> Output {
    let mut c = Command::new(bin())
        .env("COUNTERSIGN_HOME", home)
        .env(BASE_URL_ENV, api.url())
        .env_remove("COUNTERSIGN_ROLE")
        .env_remove("AI_AGENT_CHANNEL_ROLE")
        .env_remove("COUNTERSIGN_CHANNEL")
        .args(args)
        .arg("--channel")
        .arg(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    c.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    c.wait_with_output().unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn status(home: &Path, dir: &Path, api: &StandIn) -> Value {
    let o = run(home, dir, api, &["memory", "status", "--json"], "");
    assert!(o.status.success(), "{}", text(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// A channel whose memory waits for `n` summaries (long messages).
fn waiting_channel(n: usize) -> Local {
    let l = Local::new(&["a", "b"]);
    let mut s = l.session("a");
    for i in 0..n {
        let body = format!(
            "Message {i}: {}",
            "the login token expires too soon ".repeat(30)
        );
        local::send(&mut s, "b", &format!("topic {i}"), &body);
    }
    l
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

fn ms_of(rfc3339: &str) -> i64 {
    countersign::core::timestamp::parse_since(rfc3339).expect("an RFC 3339 time")
}

#[test]
fn a_stored_key_writes_every_waiting_line_through_the_job_protocol() {
    let l = waiting_channel(12);
    let home = l.home_root();
    let api = StandIn::start(l.tmp.path(), "api");
    // A key the API refuses is not stored.
    api.script(json!({"status": 401, "message": "invalid x-api-key"}));
    let o = run(&home, &l.dir, &api, &["memory", "api-key"], "sk-bad\n");
    assert!(!o.status.success());
    assert!(text(&o).contains("nothing was stored"), "{}", text(&o));
    assert!(!l.home.api_key_file().exists());
    api.heal();
    let o = run(&home, &l.dir, &api, &["memory", "api-key"], "sk-test-one\n");
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        !text(&o).contains("sk-test-one"),
        "the key is never printed"
    );
    let mode = fs::metadata(l.home.api_key_file())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    // One tiny request checked it.
    let checks = api.requests();
    assert_eq!(checks.last().unwrap().0, "sk-test-one");
    assert_eq!(checks.last().unwrap().1["max_tokens"], 1);

    let before = status(&home, &l.dir, &api);
    assert!(before["wanted"].as_u64().unwrap() >= 12, "{before}");
    let o = run(&home, &l.dir, &api, &["memory", "compact"], "");
    assert!(o.status.success(), "{}", text(&o));
    let after = status(&home, &l.dir, &api);
    assert_eq!(after["wanted"], 0, "{after}");
    assert_eq!(after["lines_waiting"], 0, "{after}");
    let written = after["api"]["lines"].as_u64().unwrap();
    assert!(written >= 12, "{after}");
    assert!(after["api"]["dollars"].as_f64().unwrap() > 0.0, "{after}");
    assert!(
        after["api"]["input_tokens"].as_u64().unwrap() > 0,
        "{after}"
    );
    assert_eq!(after["api"]["model"], "claude-haiku-4-5");
    // The jobs went out as the subagent reads them, with the key, no tools.
    let jobs: Vec<(String, Value)> = api
        .requests()
        .into_iter()
        .filter(|(_, b)| {
            b["messages"][0]["content"]
                .as_str()
                .unwrap_or("")
                .contains("TASK 1 of")
        })
        .collect();
    assert!(jobs.len() >= 2, "12 items make two jobs of at most 10");
    for (key, body) in &jobs {
        assert_eq!(key, "sk-test-one");
        assert!(body.get("tools").is_none());
        assert!(
            body["messages"][0]["content"]
                .as_str()
                .unwrap()
                .contains("NEVER INSTRUCTIONS")
        );
    }
    // The summaries are records: a view shows them.
    let o = run(&home, &l.dir, &api, &["memory", "view"], "");
    assert!(text(&o).contains("summary of "), "{}", text(&o));
    // Nothing waits: a second run does nothing and says so.
    let o = run(&home, &l.dir, &api, &["memory", "compact"], "");
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("done"), "{}", text(&o));

    let o = run(&home, &l.dir, &api, &["memory", "api-key", "--remove"], "");
    assert!(o.status.success(), "{}", text(&o));
    assert!(!l.home.api_key_file().exists());
}

#[test]
fn each_failure_pauses_the_api_for_its_row_and_gives_the_job_back() {
    let l = waiting_channel(31);
    let home = l.home_root();
    let api = StandIn::start(l.tmp.path(), "api");
    // Without a key, compact exits 3 and names the way out.
    let o = run(&home, &l.dir, &api, &["memory", "compact"], "");
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    assert!(
        text(&o).contains("countersign memory api-key"),
        "{}",
        text(&o)
    );
    let o = run(&home, &l.dir, &api, &["memory", "api-key"], "sk-one\n");
    assert!(o.status.success(), "{}", text(&o));
    let wanted = status(&home, &l.dir, &api)["wanted"].clone();

    let min = 60_000;
    let rows: [(Value, &str, Option<i64>); 7] = [
        (json!({"status": 402}), "no credit", Some(3_600_000)),
        (
            json!({"status": 400, "message": "Your credit balance is too low"}),
            "no credit",
            Some(3_600_000),
        ),
        (
            json!({"status": 429, "retry_after": "120"}),
            "rate limited",
            Some(120_000),
        ),
        (
            json!({"status": 429, "retry_after": "5"}),
            "rate limited",
            Some(min),
        ),
        (json!({"status": 529}), "not reachable", Some(300_000)),
        (json!({"status": 503}), "not reachable", Some(300_000)),
        (json!({"status": 500}), "error", Some(3_600_000)),
    ];
    for (how, words, pause) in rows {
        api.script(how.clone());
        let t0 = now_ms();
        let o = run(&home, &l.dir, &api, &["memory", "compact"], "");
        assert_eq!(o.status.code(), Some(3), "{how}: {}", text(&o));
        assert!(text(&o).contains(words), "{how}: {}", text(&o));
        let st = status(&home, &l.dir, &api);
        assert_eq!(st["api"]["paused"], words, "{how}: {st}");
        let until = ms_of(st["api"]["paused_until"].as_str().unwrap());
        let pause = pause.unwrap();
        assert!(
            until >= t0 + pause - 1_000 && until <= now_ms() + pause + 1_000,
            "{how}: paused until {until}, expected about {pause} ms after {t0}"
        );
        // Not a failure of the items: the job was given back, nothing is
        // leased or paused, every line still waits.
        assert_eq!(st["leased"], 0, "{how}: {st}");
        assert_eq!(st["paused"], 0, "{how}: {st}");
        assert_eq!(st["wanted"], wanted, "{how}: {st}");
        let o = run(&home, &l.dir, &api, &["memory", "status"], "");
        assert!(
            text(&o).contains(&format!(
                "paused until {}, {words}",
                st["api"]["paused_until"].as_str().unwrap()
            )),
            "{}",
            text(&o)
        );
    }

    // The status line says why while the API rests (31 items wait).
    api.script(json!({"status": 402}));
    let o = run(&home, &l.dir, &api, &["memory", "compact"], "");
    assert_eq!(o.status.code(), Some(3));
    let o = run(
        &home,
        &l.dir,
        &api,
        &["memory", "status", "--statusline"],
        "{}",
    );
    assert!(text(&o).contains("API: no credit"), "{}", text(&o));

    // A key rejected pauses until a new key, whatever the time.
    api.script(json!({"status": 401}));
    let o = run(&home, &l.dir, &api, &["memory", "compact"], "");
    assert_eq!(o.status.code(), Some(3));
    assert!(text(&o).contains("until a new key"), "{}", text(&o));
    let st = status(&home, &l.dir, &api);
    assert_eq!(st["api"]["paused"], "key rejected", "{st}");
    assert_eq!(st["api"]["paused_until"], Value::Null, "{st}");
    assert_eq!(st["api"]["runs_here"], false, "{st}");
    api.heal();
    let o = run(&home, &l.dir, &api, &["memory", "api-key"], "sk-two\n");
    assert!(o.status.success(), "{}", text(&o));
    let st = status(&home, &l.dir, &api);
    assert_eq!(st["api"]["paused"], Value::Null, "{st}");
    assert_eq!(st["api"]["runs_here"], true, "{st}");

    // A model that answers nonsense: compact_submit refuses it, the job is
    // given back, exit 3.
    api.script(json!({"answer": "I cannot do that."}));
    let o = run(&home, &l.dir, &api, &["memory", "compact"], "");
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    assert!(text(&o).contains("refused"), "{}", text(&o));
    assert_eq!(status(&home, &l.dir, &api)["leased"], 0);

    // Healed, the API writes everything and the pause is over.
    api.heal();
    let o = run(&home, &l.dir, &api, &["memory", "compact"], "");
    assert!(o.status.success(), "{}", text(&o));
    let st = status(&home, &l.dir, &api);
    assert_eq!(st["wanted"], 0, "{st}");
    assert_eq!(st["api"]["paused"], Value::Null, "{st}");
}

/// `countersign mcp --role a` with the stand-in as the API.
async fn mcp(home: &Path, dir: &Path, api: &StandIn) -> Client {
    let (home, dir, url) = (home.to_path_buf(), dir.to_path_buf(), api.url());
    let transport = TokioChildProcess::new(tokio::process::Command::new(bin()).configure(|c| {
        c.args(["mcp", "--role", "a", "--sync-every", "off", "--channel"])
            .arg(&dir)
            .env("COUNTERSIGN_HOME", &home)
            .env(BASE_URL_ENV, &url)
            .env_remove("COUNTERSIGN_ROLE")
            .env_remove("AI_AGENT_CHANNEL_ROLE");
    }))
    .unwrap();
    Client {
        inner: ().serve(transport).await.expect("MCP handshake"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_running_mcp_writes_the_summaries_in_the_background() {
    let l = waiting_channel(12);
    let home = l.home_root();
    let api = StandIn::start(l.tmp.path(), "api");
    let o = run(&home, &l.dir, &api, &["memory", "api-key"], "sk-bg\n");
    assert!(o.status.success(), "{}", text(&o));
    // While a serve of this home holds its lock, the mcp leaves the work
    // to it.
    let serving = countersign::store::FileLock::try_exclusive(&l.home.serve_lock())
        .unwrap()
        .unwrap();
    let server = mcp(&home, &l.dir, &api).await;
    tokio::time::sleep(Duration::from_secs(4)).await;
    let st = status(&home, &l.dir, &api);
    assert_ne!(st["wanted"], 0, "{st}");
    assert_eq!(st["api"]["jobs"], 0, "{st}");
    drop(serving);
    let deadline = Instant::now() + Duration::from_secs(45);
    loop {
        let st = status(&home, &l.dir, &api);
        if st["wanted"] == 0 {
            assert!(st["api"]["lines"].as_u64().unwrap() >= 12, "{st}");
            break;
        }
        assert!(Instant::now() < deadline, "no background compaction: {st}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    server.close().await;
}

#[test]
fn two_devices_elect_one_writer_and_the_other_takes_over_when_it_pauses() {
    let l = waiting_channel(3);
    let home1 = l.home_root();
    let home2 = l.tmp.path().join("home-2");
    let joined = join(&mut local::open(&l.dir, &Home::at(home2.clone())), "b").unwrap();
    admit(&mut l.channel(), "b", &joined.pubkey, &joined.device).unwrap();
    let mut b = countersign::app::Session::new(
        local::open(&l.dir, &Home::at(home2.clone())),
        Some(countersign::core::ids::Role::new("b").unwrap()),
    )
    .unwrap();
    local::send(&mut b, "a", "hello", "from the second device");
    let api1 = StandIn::start(l.tmp.path(), "one");
    let api2 = StandIn::start(l.tmp.path(), "two");
    for (home, api) in [(&home1, &api1), (&home2, &api2)] {
        let o = run(home, &l.dir, api, &["memory", "api-key"], "sk-k\n");
        assert!(o.status.success(), "{}", text(&o));
    }
    let id1 = l.home.device().unwrap().id;
    let id2 = joined.device;
    let ((first_home, first_api, first_id), (second_home, second_api)) = if id1 < id2 {
        ((&home1, &api1, &id1), (&home2, &api2))
    } else {
        ((&home2, &api2, &id2), (&home1, &api1))
    };
    let st1 = status(first_home, &l.dir, first_api);
    let st2 = status(second_home, &l.dir, second_api);
    assert_eq!(st1["api"]["runs_here"], true, "{st1}");
    assert_eq!(st2["api"]["runs_here"], false, "{st2}");
    assert!(
        st2["api"]["why"]
            .as_str()
            .unwrap()
            .contains(first_id.as_str()),
        "{st2}"
    );
    // The first pauses (no credit): the other takes over.
    first_api.script(json!({"status": 402}));
    let o = run(first_home, &l.dir, first_api, &["memory", "compact"], "");
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let st1 = status(first_home, &l.dir, first_api);
    let st2 = status(second_home, &l.dir, second_api);
    assert_eq!(st1["api"]["runs_here"], false, "{st1}");
    assert_eq!(st2["api"]["runs_here"], true, "{st2}");
    // A forged claim in the folder counts for nothing: the first device's
    // file with its verdict turned back.
    let feed = fs::read_dir(l.dir.join("feeds"))
        .unwrap()
        .flatten()
        .map(|r| r.path().join(first_id.as_str()).join("api.json"))
        .find(|p| p.is_file())
        .expect("the first device's api.json");
    let forged = fs::read_to_string(&feed)
        .unwrap()
        .replace("\"works\":false", "\"works\":true");
    fs::write(&feed, forged).unwrap();
    let st2 = status(second_home, &l.dir, second_api);
    assert_eq!(st2["api"]["runs_here"], true, "{st2}");
}

/// Every byte of every file under `dir`.
fn all_bytes(dir: &Path) -> Vec<u8> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(all_bytes(&p));
        } else {
            out.extend(fs::read(&p).unwrap());
        }
    }
    out
}

#[test]
fn a_shared_key_travels_sealed_to_each_admitted_device_and_so_does_its_removal() {
    let l = waiting_channel(3);
    let home1 = l.home_root();
    let home2 = l.tmp.path().join("home-2");
    let joined = join(&mut local::open(&l.dir, &Home::at(home2.clone())), "b").unwrap();
    admit(&mut l.channel(), "b", &joined.pubkey, &joined.device).unwrap();
    // A device that asked to join and was never admitted.
    let home3 = l.tmp.path().join("home-3");
    join(&mut local::open(&l.dir, &Home::at(home3.clone())), "b").unwrap();
    let api = StandIn::start(l.tmp.path(), "api");
    let secret = "sk-ant-shared-5f1c9a";
    let o = run(
        &home1,
        &l.dir,
        &api,
        &["memory", "api-key", "--share"],
        &format!("{secret}\n"),
    );
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("sealed to 1 other device"),
        "{}",
        text(&o)
    );
    // Whoever reads the folder learns nothing of the key.
    let bytes = all_bytes(&l.dir);
    assert!(
        !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
        "the key is in the folder in clear"
    );
    let device1 = l.home.device().unwrap().id;
    let file = l.dir.join("feeds/a").join(&device1).join("api-key.json");
    assert!(file.is_file());

    // The admitted device takes it up (here at `memory compact`, which then
    // writes with it); the one never admitted cannot open it.
    let o = run(&home2, &l.dir, &api, &["memory", "compact"], "");
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(
        fs::read_to_string(home2.join("anthropic-api-key"))
            .unwrap()
            .trim(),
        secret
    );
    assert_eq!(api.requests().last().unwrap().0, secret);
    let o = run(&home3, &l.dir, &api, &["memory", "compact"], "");
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    assert!(!home3.join("anthropic-api-key").exists());

    // Admitted later, it gets a copy at the sharer's next look.
    let pubkey3 = {
        let mut ch = local::open(&l.dir, &Home::at(home3.clone()));
        join(&mut ch, "b").unwrap().pubkey
    };
    let device3 = Home::at(home3.clone()).device().unwrap().id;
    admit(&mut l.channel(), "b", &pubkey3, &device3).unwrap();
    let o = run(&home1, &l.dir, &api, &["memory", "compact"], "");
    assert!(o.status.success(), "{}", text(&o));
    let o = run(&home3, &l.dir, &api, &["memory", "compact"], "");
    assert!(o.status.success(), "{}", text(&o));
    assert!(home3.join("anthropic-api-key").exists());

    // A forged share (the file altered) is ignored.
    let good = fs::read_to_string(&file).unwrap();
    fs::write(&file, good.replace("\"removed\":false", "\"removed\":true")).unwrap();
    let o = run(&home2, &l.dir, &api, &["memory", "compact"], "");
    assert!(o.status.success(), "{}", text(&o));
    assert!(home2.join("anthropic-api-key").exists());
    fs::write(&file, good).unwrap();

    // The removal travels the same way.
    let o = run(&home1, &l.dir, &api, &["memory", "api-key", "--remove"], "");
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("the other devices delete the key too"),
        "{}",
        text(&o)
    );
    for home in [&home2, &home3] {
        let o = run(home, &l.dir, &api, &["memory", "compact"], "");
        assert_eq!(o.status.code(), Some(3), "{}", text(&o));
        assert!(!home.join("anthropic-api-key").exists());
    }
}
