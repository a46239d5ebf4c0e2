//! Joining by invitation (`invite`, `join --invite`), through the real
//! binary, real homes and a real bare git remote: the owner's machine admits
//! the first valid claim by itself; an expired, used, damaged or forged code
//! never admits anyone, and a refused claim is an `invitation` alarm.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use countersign::core::genesis::channel_id;
use countersign::core::hlc::Hlc;
use countersign::core::ids::{FeedId, RecordId, Role};
use countersign::core::invitation::InviteCode;
use countersign::core::op::{Claim, Op};
use countersign::core::record::{Header, encode, pubkey_hex};
use ed25519_dalek::SigningKey;

use crate::common::bin;
use crate::common::machines::{Machine, World};

const ROLES: [&str; 2] = ["frontend", "backend"];

/// `invite` on `m`; returns the code (the only line on stdout).
fn invite(m: &Machine, args: &[&str]) -> String {
    let mut all = vec!["invite"];
    all.extend_from_slice(args);
    let out = m.ok(&all);
    let code = out.trim().to_owned();
    assert!(code.starts_with("csi1") && !code.contains('\n'), "{out}");
    code
}

/// The `kind feed: reason` lines of `status --text`'s alarms on `m`.
fn alarms(m: &Machine) -> Vec<String> {
    let out = m.cli(&["--role", "frontend", "status", "--text"]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.lines()
        .skip_while(|l| !l.starts_with("alarms:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .map(|l| l.trim().to_owned())
        .collect()
}

/// The admit records of backend feeds in `m`'s log.
fn admits(m: &Machine) -> Vec<String> {
    m.ok(&["log"])
        .lines()
        .filter(|l| l.contains(" admit backend/"))
        .map(str::to_owned)
        .collect()
}

fn can_write(m: &Machine, role: &str, topic: &str) -> bool {
    m.cli(&[
        "--role", role, "send", "--to", "frontend", "--topic", topic, "--body", "b",
    ])
    .status
    .success()
}

/// Polls `f` every 300 ms until it holds or `secs` pass.
fn eventually(secs: u64, mut f: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < end {
        if f() {
            return true;
        }
        sleep(Duration::from_millis(300));
    }
    f()
}

/// A `countersign mcp --sync-every 1s` server left running (stdin held open).
struct Server(Child);

impl Server {
    fn start(home: &Path, dir: &Path, role: &str) -> Self {
        let child = Command::new(bin())
            .env("COUNTERSIGN_HOME", home)
            .env_remove("COUNTERSIGN_ROLE")
            .env_remove("COUNTERSIGN_CHANNEL")
            .args(["--channel", dir.to_str().unwrap(), "mcp", "--role", role])
            .args(["--sync-every", "1s"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the server starts");
        Self(child)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn with_servers_syncing_on_both_machines_nobody_touches_the_owners() {
    let w = World::git(1, &ROLES);
    let a = &w.machines[0];
    let code = invite(a, &["--role", "backend"]);
    a.sync();
    let _a_server = Server::start(&a.home, &a.dir, "frontend");
    // From here on, nothing is run on machine A: only its server.
    let b = w.clone_machine(1);
    assert!(!can_write(&b, "backend", "too early"));
    let out = b.ok(&["join", "--invite", &code]);
    assert!(out.contains("Claim written"), "{out}");
    // Claiming again is answered from the claim already written.
    let again = b.ok(&["join", "--invite", &code]);
    assert!(again.contains("feed:"), "{again}");
    let _b_server = Server::start(&b.home, &b.dir, "backend");
    assert!(
        eventually(60, || can_write(&b, "backend", "joined by invitation")),
        "machine B never became able to write as backend"
    );
    b.sync();
    assert!(
        eventually(30, || a
            .ok(&["--role", "frontend", "inbox", "--all", "--json"])
            .contains("joined by invitation")),
        "the message never reached machine A"
    );
    let admitted = admits(a);
    assert_eq!(admitted.len(), 1, "{admitted:?}");
    assert!(admitted[0].contains(&format!("backend/{}", b.device())));
    assert!(alarms(a).is_empty(), "{:?}", alarms(a));
    // The code is used: another machine is refused before writing anything.
    let c = w.clone_machine(2);
    let refused = c.cli(&["join", "--invite", &code]);
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("used already"));
    assert!(!c.dir.join("feeds/backend").join(c.device()).exists());
}

#[test]
fn a_claim_after_the_expiry_is_an_alarm_and_never_admitted() {
    let w = World::git(1, &ROLES);
    let a = &w.machines[0];
    let code = invite(a, &["--role", "backend", "--expires", "3s"]);
    a.sync();
    let b = w.clone_machine(1);
    b.ok(&["join", "--invite", &code]);
    sleep(Duration::from_secs(4));
    b.sync();
    a.sync();
    let alarms = alarms(a);
    assert!(
        alarms
            .iter()
            .any(|l| l.starts_with("invitation ") && l.contains("expired")),
        "{alarms:?}"
    );
    assert!(admits(a).is_empty());
    b.sync();
    assert!(!can_write(&b, "backend", "never"));
    // Joining with an expired code is refused with nothing written.
    let c = w.clone_machine(2);
    let out = c.cli(&["join", "--invite", &code]);
    assert!(!out.status.success());
    // One sentence, then the fix, then where it was tried on a line of its own.
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("this invitation has expired. Ask the owner for a new one")
            && said.contains("\n(this device: ")
            && !said.contains("MCP clients"),
        "{said}"
    );
    assert!(!c.dir.join("feeds/backend").join(c.device()).exists());
}

#[test]
fn a_second_claim_of_a_used_code_is_an_alarm_and_never_admitted() {
    let w = World::git(1, &ROLES);
    let a = &w.machines[0];
    let code = invite(a, &["--role", "backend"]);
    a.sync();
    let b = w.clone_machine(1);
    // C copies the folder before B's claim is admitted, so it sees the code unused.
    let c = w.clone_machine(2);
    b.ok(&["join", "--invite", &code]);
    b.sync();
    a.sync();
    b.sync();
    assert!(can_write(&b, "backend", "first"));
    c.ok(&["join", "--invite", &code]);
    c.sync();
    a.sync();
    let alarms = alarms(a);
    assert!(
        alarms.iter().any(|l| l.starts_with("invitation ")
            && l.contains(&c.device())
            && l.contains("used by feed")),
        "{alarms:?}"
    );
    assert_eq!(admits(a).len(), 1);
    c.sync();
    assert!(!can_write(&c, "backend", "second"));
}

#[test]
fn a_damaged_or_foreign_code_is_refused_with_nothing_written() {
    let w = World::git(1, &ROLES);
    let a = &w.machines[0];
    let code = invite(a, &["--role", "backend"]);
    a.sync();
    let b = w.clone_machine(1);
    // One character changed: the checksum catches it.
    let mut bytes = code.into_bytes();
    let i = bytes.len() / 2;
    bytes[i] = if bytes[i] == b'a' { b'b' } else { b'a' };
    let damaged = String::from_utf8(bytes).unwrap();
    let out = b.cli(&["join", "--invite", &damaged]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("damaged"));
    // A well-formed code whose secret is not the invitation's.
    let ch = std::fs::read(a.dir.join("channel.json")).unwrap();
    let forged = InviteCode::new(&channel_id(&ch), [9u8; 32]).to_text();
    let out = b.cli(&["join", "--invite", &forged]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no invitation"));
    // A code of another channel.
    let other = InviteCode::new(&"f".repeat(64), [9u8; 32]).to_text();
    let out = b.cli(&["join", "--invite", &other]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("another channel"));
    assert!(!b.dir.join("feeds/backend").exists());
    b.sync();
    a.sync();
    assert!(admits(a).is_empty());
}

/// Writes `claim` as the first record of `feed` in `dir`, signed by `key`.
fn plant_claim(dir: &Path, feed: &FeedId, key: &SigningKey, claim: Claim) -> RecordId {
    let ch = channel_id(&std::fs::read(dir.join("channel.json")).unwrap());
    let rec = encode(
        &Header {
            ch,
            feed: feed.clone(),
            seq: 1,
            prev: None,
            hlc: Hlc(countersign::store::now_ms(), 0),
        },
        &Op::Claim(claim),
        key,
    );
    let folder = dir.join("feeds").join(feed.role()).join(feed.device());
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("00000001.jsonl"), rec.to_line()).unwrap();
    rec.id
}

/// The `invite` record's id in `m`'s log (the only one).
fn invitation_id(m: &Machine) -> RecordId {
    let out = m.ok(&["log", "--json"]);
    // `log --json` prints each body as signed; its id is the hash of those bytes.
    out.lines()
        .find(|l| serde_json::from_str::<serde_json::Value>(l).is_ok_and(|v| v["op"] == "invite"))
        .map(|l| RecordId::of_body(l.as_bytes()))
        .unwrap_or_else(|| panic!("no invite in the log: {out}"))
}

#[test]
fn a_claim_whose_proof_is_wrong_is_ignored_with_an_alarm() {
    let w = World::git(1, &ROLES);
    let a = &w.machines[0];
    let code = invite(a, &["--role", "backend"]);
    let inv = invitation_id(a);
    let ch = channel_id(&std::fs::read(a.dir.join("channel.json")).unwrap());
    // A forger who read the folder (and a real claim in it) but not the code.
    let honest = SigningKey::from_bytes(&[5u8; 32]);
    let honest_feed = FeedId::new("backend", "honest-000001").unwrap();
    let honest_pub = pubkey_hex(&honest.verifying_key());
    let real = InviteCode::parse(&code).unwrap();
    let copied_proof = real.prove(&ch, &inv, &honest_feed, &honest_pub);
    let forger = SigningKey::from_bytes(&[6u8; 32]);
    let forger_pub = pubkey_hex(&forger.verifying_key());
    let forged_feed = FeedId::new("backend", "forger-000001").unwrap();
    plant_claim(
        &a.dir,
        &forged_feed,
        &forger,
        Claim {
            invitation: inv,
            role: Role::new("backend").unwrap(),
            pubkey: forger_pub.clone(),
            device_name: "forger".into(),
            proof: copied_proof,
        },
    );
    let wrong_code = InviteCode::new(&ch, [7u8; 32]);
    let other_feed = FeedId::new("backend", "guess-000001").unwrap();
    plant_claim(
        &a.dir,
        &other_feed,
        &forger,
        Claim {
            invitation: inv,
            role: Role::new("backend").unwrap(),
            pubkey: forger_pub.clone(),
            device_name: "guess".into(),
            proof: wrong_code.prove(&ch, &inv, &other_feed, &forger_pub),
        },
    );
    let alarms = alarms(a);
    for feed in [&forged_feed, &other_feed] {
        assert!(
            alarms
                .iter()
                .any(|l| l.starts_with(&format!("invitation {feed}"))
                    && l.contains("does not match")),
            "{feed}: {alarms:?}"
        );
    }
    assert!(admits(a).is_empty(), "{:?}", admits(a));
    // The honest machine, with the code, still gets in.
    let b = w.clone_machine(1);
    a.sync();
    b.sync();
    b.ok(&["join", "--invite", &code]);
    b.sync();
    a.sync();
    b.sync();
    assert!(can_write(&b, "backend", "the real one"));
    assert_eq!(admits(a).len(), 1);
}

#[test]
fn what_a_claim_is_worth_does_not_depend_on_arrival_order() {
    let w = World::git(1, &ROLES);
    let a = &w.machines[0];
    let code = invite(a, &["--role", "backend"]);
    a.sync();
    let b = w.clone_machine(1);
    let c = w.clone_machine(2);
    b.ok(&["join", "--invite", &code]);
    c.ok(&["join", "--invite", &code]);
    b.sync();
    c.sync();
    a.sync();
    assert_eq!(admits(a).len(), 1);
    // A reader given the finished folder at once, and one given the claims
    // first and the owner's feed (invite, admit) later, end alike.
    let tmp = tempfile::tempdir().unwrap();
    let whole = reader(tmp.path(), "whole");
    let late = reader(tmp.path(), "late");
    copy_tree(&a.dir, &whole.dir, |_| true);
    copy_tree(&a.dir, &late.dir, |p| !p.contains("_owner"));
    let early = late.ok(&["status", "--digest"]);
    copy_tree(&a.dir, &late.dir, |_| true);
    assert_ne!(early, late.ok(&["status", "--digest"]));
    assert_eq!(
        whole.ok(&["status", "--digest"]),
        late.ok(&["status", "--digest"])
    );
    assert_eq!(alarms(&whole), alarms(&late));
    assert_eq!(alarms(&whole), alarms(a));
    assert!(alarms(a).iter().any(|l| l.starts_with("invitation ")));
}

fn reader(tmp: &Path, name: &str) -> Machine {
    Machine {
        name: name.into(),
        home: tmp.join(format!("home-{name}")),
        dir: tmp.join(format!("channel-{name}")),
    }
}

/// Copies the channel files under `from` (not `.git`) whose relative path passes `keep`.
fn copy_tree(from: &Path, to: &Path, keep: impl Fn(&str) -> bool + Copy) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().to_string_lossy().into_owned();
        if name == ".git" {
            continue;
        }
        let src = entry.path();
        let dst = to.join(&name);
        if src.is_dir() {
            copy_tree(&src, &dst, keep);
        } else if keep(&src.to_string_lossy()) {
            std::fs::create_dir_all(to).unwrap();
            std::fs::copy(&src, &dst).unwrap();
        }
    }
}

/// The lines of the block opened by ```` ```sh test:two-machines ```` in
/// `file` (the README's convention for blocks a test runs).
fn doc_block(file: &str) -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    let open = "```sh test:two-machines\n";
    let start = text
        .find(open)
        .unwrap_or_else(|| panic!("{file} lost its block {open}"))
        + open.len();
    let len = text[start..].find("```").unwrap();
    text[start..start + len]
        .lines()
        .map(str::to_owned)
        .collect()
}

/// One machine of the documented steps: a user's home, a working folder
/// and a countersign home.
struct DocMachine {
    home: std::path::PathBuf,
    cwd: std::path::PathBuf,
    countersign_home: std::path::PathBuf,
}

impl DocMachine {
    fn new(root: &Path) -> Self {
        let m = Self {
            home: root.to_path_buf(),
            cwd: root.join("project"),
            countersign_home: root.join("countersign-home"),
        };
        std::fs::create_dir_all(&m.cwd).unwrap();
        m
    }

    fn command(&self, program: &str, args: &[String]) -> Command {
        let mut c = Command::new(program);
        c.args(args)
            .current_dir(&self.cwd)
            .env("HOME", &self.home)
            .env("COUNTERSIGN_HOME", &self.countersign_home)
            .env_remove("COUNTERSIGN_ROLE")
            .env_remove("AI_AGENT_CHANNEL_ROLE")
            .env_remove("COUNTERSIGN_CHANNEL")
            .env("GIT_TERMINAL_PROMPT", "0");
        c
    }

    fn run(&self, program: &str, args: &[String]) -> String {
        let out = self.command(program, args).output().unwrap();
        assert!(
            out.status.success(),
            "`{program} {}` failed: {}{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

/// The server entry `install claude` wrote on `m` (its local scope for the
/// working folder), started as Claude Code starts it: in that folder, with
/// HOME, PATH and the entry's own environment only. No flag is added: the
/// servers sync by default.
fn start_installed_entry(m: &DocMachine) -> Server {
    let claude: serde_json::Value =
        serde_json::from_slice(&std::fs::read(m.home.join(".claude.json")).unwrap()).unwrap();
    let projects = claude["projects"].as_object().unwrap();
    assert_eq!(projects.len(), 1, "{claude}");
    let entry = &projects.values().next().unwrap()["mcpServers"]["channel"];
    let args: Vec<&str> = entry["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert!(!args.contains(&"--sync-every"), "{entry}");
    let mut c = Command::new(entry["command"].as_str().unwrap());
    c.args(&args)
        .current_dir(&m.cwd)
        .env_clear()
        .env("HOME", &m.home)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default());
    for (k, v) in entry["env"].as_object().into_iter().flatten() {
        c.env(k, v.as_str().unwrap());
    }
    let child = c
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    Server(child)
}

/// Runs the documented steps word for word, with three substitutions: the
/// example remote is a bare repository on disk, `$CODE` is what `invite`
/// printed, `~` is the machine's home. Then each machine's session server is
/// started from the entry `install` wrote, with no flag, and a message
/// crosses in both directions through their background syncs alone (each
/// every 30 s while idle: the test takes one to two minutes).
#[test]
fn the_documented_invitation_steps_run_as_written() {
    let steps = doc_block("docs/SYNC.md");
    assert_eq!(
        steps,
        doc_block("README.md"),
        "the README shows the steps docs/SYNC.md shows"
    );
    let tmp = tempfile::tempdir().unwrap();
    let remote = tmp.path().join("remote.git");
    let out = Command::new("git")
        .args(["init", "-q", "--bare", remote.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success());
    let a = DocMachine::new(&tmp.path().join("a"));
    let b = DocMachine::new(&tmp.path().join("b"));
    let mut code: Option<String> = None;
    let mut on: Option<&DocMachine> = None;
    for line in &steps {
        if let Some(name) = line.strip_prefix("# machine ") {
            on = match name.chars().next() {
                Some('A') => Some(&a),
                Some('B') => Some(&b),
                _ => panic!("unknown machine in {line:?}"),
            };
            continue;
        }
        let m = on.expect("a step before any `# machine` line");
        let cmd = line.split(" #").next().unwrap().trim();
        let mut words: Vec<String> = Vec::new();
        for w in cmd.split_whitespace() {
            let w = match w {
                "git@example.com:team/chan.git" => remote.to_str().unwrap().to_owned(),
                "$CODE" => code.clone().expect("`invite` ran before `$CODE` is used"),
                w if w.starts_with("~/") => m.home.join(&w[2..]).to_str().unwrap().to_owned(),
                w => w.to_owned(),
            };
            words.push(w);
        }
        let (program, args) = words.split_first().unwrap();
        match program.as_str() {
            "git" => {
                m.run("git", args);
            }
            "countersign" => {
                let out = m.run(bin(), args);
                if args.iter().any(|w| w == "invite") {
                    code = Some(out.trim().to_owned());
                }
            }
            other => panic!("the documented steps run {other}, which this test does not know"),
        }
    }
    let _servers = [start_installed_entry(&a), start_installed_entry(&b)];
    // B writes as backend without anything more on A than its server.
    let chan = b.home.join("chan");
    let send: Vec<String> = [
        "--channel",
        chan.to_str().unwrap(),
        "--role",
        "backend",
        "send",
        "--to",
        "frontend",
        "--topic",
        "as documented",
        "--body",
        "b",
    ]
    .map(str::to_owned)
    .to_vec();
    assert!(
        eventually(90, || b
            .command(bin(), &send)
            .output()
            .unwrap()
            .status
            .success()),
        "machine B never became able to write"
    );
    let inbox: Vec<String> = ["--role", "frontend", "inbox", "--all", "--json"]
        .map(str::to_owned)
        .to_vec();
    assert!(
        eventually(90, || a.run(bin(), &inbox).contains("as documented")),
        "the message never reached machine A"
    );
    // And back: A's reply reaches B through the same servers.
    let reply: Vec<String> = [
        "--role", "frontend", "send", "--to", "backend", "--topic", "and back", "--body", "a",
    ]
    .map(str::to_owned)
    .to_vec();
    a.run(bin(), &reply);
    let b_inbox: Vec<String> = [
        "--channel",
        chan.to_str().unwrap(),
        "--role",
        "backend",
        "inbox",
        "--all",
        "--json",
    ]
    .map(str::to_owned)
    .to_vec();
    assert!(
        eventually(90, || b.run(bin(), &b_inbox).contains("and back")),
        "the reply never reached machine B"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn channel_status_shows_a_refused_claim_as_an_invitation_alarm() {
    let w = World::git(1, &ROLES);
    let a = &w.machines[0];
    invite(a, &["--role", "backend"]);
    let inv = invitation_id(a);
    let ch = channel_id(&std::fs::read(a.dir.join("channel.json")).unwrap());
    let key = SigningKey::from_bytes(&[8u8; 32]);
    let pubkey = pubkey_hex(&key.verifying_key());
    let feed = FeedId::new("backend", "nocode-000001").unwrap();
    plant_claim(
        &a.dir,
        &feed,
        &key,
        Claim {
            invitation: inv,
            role: Role::new("backend").unwrap(),
            proof: InviteCode::new(&ch, [1u8; 32]).prove(&ch, &inv, &feed, &pubkey),
            pubkey,
            device_name: "nocode".into(),
        },
    );
    let fe = crate::common::Client::spawn(&a.home, &a.dir, "frontend").await;
    let v = fe.call("channel_status", serde_json::json!({})).await.ok();
    let alarms = v["alarms"].as_array().cloned().unwrap_or_default();
    assert!(
        alarms.iter().any(|x| x["kind"] == "invitation"
            && x["feed"] == feed.to_string()
            && x["reason"].as_str().unwrap().contains("does not match")),
        "{v}"
    );
    fe.close().await;
    assert!(admits(a).is_empty());
}
