//! The real agent clients, end to end: MCP Inspector's CLI, Claude Code and the Codex CLI,
//! at the versions pinned in tests/clients/package.json, wired the way a user wires them
//! (`countersign install … --apply`) and run non-interactively against
//! tests/clients/model_api.py, a local stand-in for their model APIs that answers with a
//! fixed script (one `send_message` call, then a final text) and records every request.
//!
//! Each test runs in a throwaway HOME (every client's configuration lives under it), with
//! the environment cleared, so nothing of the machine's own setup leaks in. The clients are
//! installed by `.ci/clients.sh` into `target/clients` (or `$COUNTERSIGN_CLIENTS`); without
//! them a test fails and says how to install them: it never passes without running.

use std::fs;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::bin;

/// How long one client run may take before it is killed.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(120);

/// The role the client session acts as, and the role it writes to.
const ME: &str = "frontend";
const PEER: &str = "backend";

fn manifest_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Where `.ci/clients.sh` installs the clients.
fn clients_dir() -> PathBuf {
    match std::env::var_os("COUNTERSIGN_CLIENTS").filter(|v| !v.is_empty()) {
        Some(p) => manifest_dir().join(p),
        None => manifest_dir().join("target/clients"),
    }
}

/// The folder of the clients' executables (node 22 among them); fails with the install
/// command when `name` is not there.
fn client_bin(name: &str) -> PathBuf {
    let dir = clients_dir().join("node_modules/.bin");
    for needed in [name, "node"] {
        assert!(
            dir.join(needed).is_file(),
            "`{needed}` is not installed in {}: run `bash .ci/clients.sh` (it installs the \
             pinned clients of tests/clients/package.json there) or set COUNTERSIGN_CLIENTS",
            dir.display()
        );
    }
    dir
}

/// A throwaway machine: a HOME, a git project in it with a channel, and a clean environment.
struct World {
    tmp: tempfile::TempDir,
    home: PathBuf,
    project: PathBuf,
    /// The clients' executables, first on PATH.
    bin_dir: PathBuf,
}

impl World {
    /// A project with a channel of `frontend` and `backend`, owned by this HOME.
    fn new(client: &str) -> Self {
        let w = Self::empty(client);
        w.cs_ok(&["init", "--roles", &format!("{ME},{PEER}"), "--name", "e2e"]);
        w
    }

    /// A HOME and a git project in it, with `client` first on PATH.
    fn empty(client: &str) -> Self {
        let bin_dir = client_bin(client);
        let tmp = tempfile::tempdir().expect("tempdir");
        let home = tmp.path().join("home");
        let project = tmp.path().join("project");
        fs::create_dir_all(&home).unwrap();
        fs::create_dir_all(&project).unwrap();
        let w = Self {
            tmp,
            home,
            project,
            bin_dir,
        };
        let git = w.command("git").args(["init", "-q"]).output().unwrap();
        assert!(git.status.success(), "git init: {}", text(&git.stderr));
        w
    }

    /// A command with only the environment a user's shell would give it: this HOME,
    /// the clients first on PATH, nothing else of the machine's (no COUNTERSIGN_*,
    /// no client configuration, no API keys).
    fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut path = std::env::join_paths([self.bin_dir.clone()]).unwrap();
        if let Some(p) = std::env::var_os("PATH") {
            path.push(":");
            path.push(p);
        }
        let mut c = Command::new(program);
        c.env_clear()
            .env("PATH", path)
            .env("HOME", &self.home)
            .env("LANG", "C.UTF-8")
            .env("TMPDIR", std::env::temp_dir())
            .current_dir(&self.project)
            .stdin(Stdio::null());
        c
    }

    /// `countersign ARGS` in the project, as this HOME.
    fn cs(&self, args: &[&str]) -> Output {
        self.command(bin())
            .args(args)
            .output()
            .expect("countersign runs")
    }

    fn cs_ok(&self, args: &[&str]) -> String {
        let out = self.cs(args);
        assert!(
            out.status.success(),
            "countersign {args:?} failed: {}{}",
            text(&out.stdout),
            text(&out.stderr)
        );
        text(&out.stdout)
    }

    /// The topics in `role`'s inbox, read through countersign, with their senders.
    fn inbox(&self, role: &str) -> Vec<(String, String)> {
        let out = self.cs_ok(&["--role", role, "inbox", "--all", "--json"]);
        let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
        let rows = v
            .get("result")
            .and_then(Value::as_array)
            .unwrap_or_else(|| panic!("no messages in the inbox JSON: {v}"));
        rows.iter()
            .map(|m| {
                (
                    m["from"].as_str().unwrap_or_default().to_owned(),
                    m["topic"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect()
    }

    /// Opens a debt to ME, so the Stop hook has something to hold the stop for.
    fn open_debt(&self) {
        self.cs_ok(&[
            "--role",
            PEER,
            "send",
            "--to",
            ME,
            "--topic",
            "review the API change",
            "--body",
            "please review",
            "--action-required",
        ]);
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// What a bounded run gave.
struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Ran {
    fn shown(&self) -> String {
        format!(
            "exit {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.code,
            tail(&self.stdout),
            tail(&self.stderr)
        )
    }
}

/// The last 6000 characters: enough to see why, not a flood.
fn tail(s: &str) -> &str {
    let mut start = s.len().saturating_sub(6000);
    while !s.is_char_boundary(start) {
        start += 1;
    }
    &s[start..]
}

/// `claude -p PROMPT` in the project against the model stand-in, with `tools` allowed
/// without asking, on Claude Code's default settings: the MCP tools are deferred behind
/// its ToolSearch tool (named in a system reminder, loaded when the model asks), and the
/// stand-in asks for the one its script calls, as a real model does.
fn claude_print(w: &World, api: &ModelApi, prompt: &str, tools: &str) -> Ran {
    let mut c = w.command("claude");
    c.args(["-p", prompt, "--output-format", "json"])
        .args(["--allowedTools", tools])
        .env("ANTHROPIC_BASE_URL", api.url())
        .env("ANTHROPIC_API_KEY", "sk-stand-in")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1");
    run_bounded(c, &format!("claude -p {prompt}"), CLIENT_TIMEOUT)
}

/// Runs `c` to completion or kills it (and everything it started) after `limit`, with a
/// message naming `what`. Output goes to files, so nothing blocks on a full pipe.
fn run_bounded(mut c: Command, what: &str, limit: Duration) -> Ran {
    let out = tempfile::NamedTempFile::new().unwrap();
    let err = tempfile::NamedTempFile::new().unwrap();
    c.stdout(out.reopen().unwrap())
        .stderr(err.reopen().unwrap())
        .process_group(0);
    let mut child = c
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if start.elapsed() > limit {
            kill_group(&mut child);
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let ran = Ran {
        code: status.and_then(|s| s.code()),
        stdout: fs::read_to_string(out.path()).unwrap_or_default(),
        stderr: fs::read_to_string(err.path()).unwrap_or_default(),
    };
    assert!(
        status.is_some(),
        "{what} did not finish within {limit:?} and was killed\n{}",
        ran.shown()
    );
    ran
}

/// Kills a child started in its own process group, with everything it started.
fn kill_group(child: &mut Child) {
    let pid = child.id();
    // Never a group number that means something else: 0 is our own group, 1 is every
    // process. The signal is spelled `-s KILL --` because procps' `kill` reads
    // `-KILL -<pid>` as options and can end up signalling -1, that is, everything.
    if pid > 1 {
        let _ = Command::new("kill")
            .args(["-s", "KILL", "--", &format!("-{pid}")])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// The local stand-in for the model APIs (tests/clients/model_api.py), killed on drop.
struct ModelApi {
    child: Child,
    port: u16,
    record: PathBuf,
}

impl ModelApi {
    /// Starts it with the `send_message` arguments its scripted tool call carries.
    fn start(dir: &Path, send: &Value) -> Self {
        Self::start_with(dir, send, &[])
    }

    /// Starts it with extra arguments (`--compact`: the compaction script).
    fn start_with(dir: &Path, send: &Value, extra: &[&str]) -> Self {
        use std::io::BufRead as _;
        let record = dir.join("requests.jsonl");
        let mut child = Command::new("python3")
            .arg(manifest_dir().join("tests/clients/model_api.py"))
            .arg("--record")
            .arg(&record)
            .arg("--send")
            .arg(send.to_string())
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("python3 runs the model API stand-in");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .trim()
            .strip_prefix("PORT ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| {
                let _ = child.kill();
                let _ = child.wait();
                panic!("the model API stand-in did not start: {line:?}")
            });
        Self {
            child,
            port,
            record,
        }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Every request received so far: (path, body).
    fn requests(&self) -> Vec<(String, Value)> {
        fs::read_to_string(&self.record)
            .unwrap_or_default()
            .lines()
            .map(|l| {
                let v: Value = serde_json::from_str(l).expect("a recorded request");
                (
                    v["path"].as_str().unwrap_or_default().to_owned(),
                    v["body"].clone(),
                )
            })
            .collect()
    }
}

impl Drop for ModelApi {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The tool names a request offers, namespaces flattened as `namespace` + name (Codex
/// groups an MCP server's tools under `mcp__<server>`).
fn offered_tools(body: &Value) -> Vec<String> {
    fn walk(tools: &Value, ns: &str, out: &mut Vec<String>) {
        for t in tools.as_array().into_iter().flatten() {
            let name = t["name"]
                .as_str()
                .or_else(|| t["function"]["name"].as_str())
                .unwrap_or_default();
            if t["type"] == "namespace" {
                walk(&t["tools"], name, out);
            } else if ns.is_empty() {
                out.push(name.to_owned());
            } else {
                out.push(format!("{ns}__{name}"));
            }
        }
    }
    let mut out = Vec::new();
    walk(&body["tools"], "", &mut out);
    out
}

/// Every string inside a JSON value, so a text can be found whatever the API's shape.
fn strings(v: &Value) -> Vec<&str> {
    match v {
        Value::String(s) => vec![s.as_str()],
        Value::Array(a) => a.iter().flat_map(strings).collect(),
        Value::Object(o) => o.values().flat_map(strings).collect(),
        _ => Vec::new(),
    }
}

fn contains_text(v: &Value, needle: &str) -> bool {
    strings(v).iter().any(|s| s.contains(needle))
}

/// The tools a request defers behind Claude Code's ToolSearch: the names, one a line,
/// that its system reminder lists after "The following deferred tools are now available
/// via ToolSearch", whose schemas the model loads on request.
fn deferred_tools(body: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for s in strings(&body["messages"]) {
        let Some(at) = s.find("The following deferred tools are now available via ToolSearch")
        else {
            continue;
        };
        let list = s[at..]
            .lines()
            .skip_while(|l| !l.trim_end().ends_with(':'))
            .skip(1);
        out.extend(
            list.take_while(|l| !l.is_empty() && !l.contains(' '))
                .map(str::to_owned),
        );
    }
    out
}

/// Whether a request offers the tool `name`: with its schema, or deferred behind the
/// client's ToolSearch tool.
fn offers(body: &Value, name: &str) -> bool {
    offered_tools(body).iter().any(|t| t == name) || deferred_tools(body).iter().any(|t| t == name)
}

/// The requests of the conversation proper: those offering the channel's send_message.
fn conversation(api: &ModelApi) -> Vec<Value> {
    api.requests()
        .into_iter()
        .map(|(_, b)| b)
        .filter(|b| offers(b, "mcp__channel__send_message"))
        .collect()
}

/// The countersign tools every client must list.
const CORE_TOOLS: [&str; 4] = [
    "channel_status",
    "send_message",
    "read_inbox",
    "open_obligations",
];

fn assert_tools_listed(first: &Value, client: &str) {
    for t in CORE_TOOLS {
        let name = format!("mcp__channel__{t}");
        assert!(
            offers(first, &name),
            "{client} did not offer the model `{name}`; it offered {:?}",
            offered_tools(first)
        );
    }
}

/// The Stop hook held the first stop (a debt is open) and let the next one through: the
/// model was asked once more, with the hook's reason, and that was the last request.
fn assert_stop_held_once(turns: &[Value], context: &str) {
    let reason = format!("channel has pending items for '{ME}'");
    let with_reason: Vec<usize> = (0..turns.len())
        .filter(|&i| contains_text(&turns[i], &reason))
        .collect();
    let Some(&first_reason) = with_reason.first() else {
        panic!(
            "no request carried the Stop hook's reason ({reason:?}): the stop was not held\n{context}"
        )
    };
    assert_eq!(
        first_reason,
        turns.len() - 1,
        "after the Stop hook's reason the model was asked {} more times: the next stop was \
         held too\n{context}",
        turns.len() - 1 - first_reason
    );
}

// ---------------------------------------------------------------------------------------
// MCP Inspector

#[test]
fn inspector_strict_finds_no_portability_warnings() {
    let w = World::new("mcp-inspector");
    let mut c = w.command("mcp-inspector");
    c.args(["--cli", "--strict", "--method", "tools/list", "--"])
        .arg(bin())
        .args(["mcp", "--role", ME]);
    let ran = run_bounded(c, "mcp-inspector --cli --strict", CLIENT_TIMEOUT);
    let listed: Value = serde_json::from_str(&ran.stdout)
        .unwrap_or_else(|e| panic!("tools/list is not JSON ({e})\n{}", ran.shown()));
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        names.contains(&"send_message") && names.contains(&"channel_status"),
        "the Inspector did not list the channel's tools: {names:?}\n{}",
        ran.shown()
    );
    // Its closing line: "N errors, M warnings across K tools." (absent when clean); each
    // finding also starts a "Warning: tool …" or "Error: tool …" line. Take the larger
    // count, so a changed summary wording cannot pass for clean.
    let summary = ran
        .stderr
        .lines()
        .rev()
        .find(|l| l.contains("warning") && l.contains("error") && l.contains(" across "));
    let count = |word: &str, prefix: &str| -> usize {
        let said = summary
            .and_then(|s| {
                s.split(',')
                    .find(|part| part.contains(word))
                    .and_then(|part| part.split_whitespace().next())
                    .and_then(|n| n.parse().ok())
            })
            .unwrap_or(0);
        let listed = ran.stderr.lines().filter(|l| l.starts_with(prefix)).count();
        said.max(listed)
    };
    let (errors, warnings) = (count("error", "Error:"), count("warning", "Warning:"));
    let first: Vec<&str> = ran
        .stderr
        .lines()
        .filter(|l| l.starts_with("Warning:") || l.starts_with("Error:") || l.contains("Path:"))
        .take(8)
        .collect();
    assert!(
        errors == 0 && warnings == 0 && ran.code == Some(0),
        "MCP Inspector --strict: {errors} errors, {warnings} warnings (exit {:?}); the first:\n{}",
        ran.code,
        first.join("\n")
    );
}

// ---------------------------------------------------------------------------------------
// Claude Code

#[test]
fn claude_code_lists_the_tools_delivers_mail_and_obeys_the_hooks() {
    let w = World::new("claude");
    w.open_debt();
    w.cs_ok(&["--role", ME, "install", "claude", "--apply"]);
    let session_start = w.cs_ok(&["--role", ME, "hook", "session-start"]);
    let topic = "hello from claude code";
    let api = ModelApi::start(
        w.tmp.path(),
        &json!({"to": PEER, "topic": topic, "body": "sent through the real client"}),
    );

    let ran = claude_print(&w, &api, "Tell the backend hello.", "mcp__channel");
    let turns = conversation(&api);
    let context = format!(
        "{}\n--- requests seen: {} in all, {} of the conversation",
        ran.shown(),
        api.requests().len(),
        turns.len()
    );
    assert_eq!(ran.code, Some(0), "claude -p failed\n{context}");
    let first = turns
        .first()
        .unwrap_or_else(|| panic!("Claude Code never offered the channel's tools\n{context}"));

    // The tools are listed, deferred behind ToolSearch as Claude Code does by default (the
    // path every user is on), and the model loaded send_message through it.
    assert_tools_listed(first, "Claude Code");
    assert!(
        deferred_tools(first).contains(&"mcp__channel__send_message".to_owned()),
        "Claude Code offered the channel's tools without ToolSearch: not its default path\n{context}"
    );

    // The session-start text reaches the model in the first request.
    assert!(
        contains_text(first, session_start.trim()),
        "the SessionStart hook's text is not in Claude Code's first request\n\
         --- hook text ---\n{session_start}\n{context}"
    );

    // send_message was delivered: the peer's inbox has it, from ME.
    let inbox = w.inbox(PEER);
    assert!(
        inbox.contains(&(ME.to_owned(), topic.to_owned())),
        "{PEER}'s inbox lacks the message Claude Code sent: {inbox:?}\n{context}"
    );

    // The Stop hook held the first stop (a debt is open) and let the next one through.
    assert_stop_held_once(&turns, &context);
    let result: Value = serde_json::from_str(ran.stdout.trim())
        .unwrap_or_else(|e| panic!("claude's --output-format json is not JSON ({e})\n{context}"));
    assert_eq!(
        result["is_error"],
        json!(false),
        "claude ended with an error\n{context}"
    );
}

/// The pinned Claude Code takes the compactor `install claude` adds: the subagent is offered
/// to the model, and the session itself is offered none of the job tools.
#[test]
fn claude_code_offers_the_compactor_and_the_session_no_job_tool() {
    let w = World::new("claude");
    w.cs_ok(&["--role", ME, "install", "claude", "--apply"]);
    let api = ModelApi::start(
        w.tmp.path(),
        &json!({"to": PEER, "topic": "compactor", "body": "installed"}),
    );
    let ran = claude_print(&w, &api, "Tell the backend hello.", "mcp__channel");
    let turns = conversation(&api);
    let context = ran.shown();
    assert_eq!(ran.code, Some(0), "claude -p failed\n{context}");
    let first = turns
        .first()
        .unwrap_or_else(|| panic!("Claude Code never offered the channel's tools\n{context}"));
    let mut tools = offered_tools(first);
    tools.extend(deferred_tools(first));
    assert!(
        tools.iter().any(|t| t == "mcp__channel__send_message"),
        "the session's tools were not found: {tools:?}"
    );
    assert!(
        tools.iter().all(|t| !t.contains("compact_")),
        "the session was offered job tools: {tools:?}"
    );
    assert!(
        contains_text(first, "countersign-compactor"),
        "Claude Code does not offer the countersign-compactor subagent\n{context}"
    );
}

/// `/countersign-compact` in the pinned Claude Code: the session starts the compactor
/// subagent, which connects its own job server from its frontmatter and works the jobs
/// (the model is a script), so every long message gets its summary record.
#[test]
fn claude_code_compacts_the_memory_through_the_subagent() {
    let w = World::new("claude");
    w.cs_ok(&["--role", ME, "install", "claude", "--apply"]);
    let long = "the whole deployment plan, step by step. ".repeat(30);
    for i in 0..3 {
        // From the session's role: nothing waits for it, so its Stop hook lets it stop.
        w.cs_ok(&[
            "--role",
            ME,
            "send",
            "--to",
            PEER,
            "--topic",
            &format!("plan {i}"),
            "--body",
            &long,
        ]);
    }
    // Claude Code connects a project subagent's own servers only in a folder the user
    // trusts (its first interactive start there asks); a user who has run it here has.
    let config = w.home.join(".claude.json");
    let mut v: Value = serde_json::from_str(&fs::read_to_string(&config).unwrap()).unwrap();
    let key = w.project.canonicalize().unwrap().display().to_string();
    v["projects"][&key]["hasTrustDialogAccepted"] = json!(true);
    fs::write(&config, v.to_string()).unwrap();
    let waiting = |w: &World| -> Value {
        serde_json::from_str(&w.cs_ok(&["memory", "status", "--json"])).unwrap()
    };
    assert_eq!(waiting(&w)["ready"], 3);
    let api = ModelApi::start_with(w.tmp.path(), &json!({}), &["--compact"]);
    let ran = claude_print(
        &w,
        &api,
        "/countersign-compact",
        "mcp__countersign-jobs,Agent,Task",
    );
    let requests = api.requests();
    let ends: Vec<String> = requests
        .iter()
        .map(|(_, b)| {
            let last = b["messages"].as_array().and_then(|m| m.last()).cloned();
            let t = last.unwrap_or_default().to_string();
            t.chars().take(600).collect()
        })
        .collect();
    let context = format!(
        "{}\n--- {} requests, ending with:\n{}",
        ran.shown(),
        requests.len(),
        ends.join("\n")
    );
    assert_eq!(ran.code, Some(0), "claude -p failed\n{context}");
    // The subagent's requests offer the job tools and nothing of the channel's.
    let sub: Vec<&Value> = requests
        .iter()
        .map(|(_, b)| b)
        .filter(|b| offered_tools(b).iter().any(|t| t.ends_with("compact_next")))
        .collect();
    assert!(
        !sub.is_empty(),
        "the subagent never ran with the job tools\n{context}"
    );
    for b in &sub {
        let mut tools = offered_tools(b);
        tools.extend(deferred_tools(b));
        // Claude Code's own stand-in that keeps deferred loading on: never callable.
        tools.retain(|t| t != "DeferredToolPlaceholder");
        assert!(
            tools
                .iter()
                .all(|t| t.starts_with("mcp__countersign-jobs__")),
            "the subagent was offered more than the job tools: {tools:?}"
        );
    }
    let st = waiting(&w);
    assert_eq!(st["wanted"], 0, "{st}\n{context}");
    assert_eq!(st["items_waiting"], 0, "{st}");
}

/// `claude mcp list` in the project, as this HOME: the line naming the `channel` server.
fn claude_mcp_list_line(w: &World) -> String {
    let mut c = w.command("claude");
    c.args(["mcp", "list"])
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1");
    let ran = run_bounded(c, "claude mcp list", CLIENT_TIMEOUT);
    assert_eq!(ran.code, Some(0), "claude mcp list failed\n{}", ran.shown());
    ran.stdout
        .lines()
        .find(|l| l.starts_with("channel:"))
        .unwrap_or_else(|| panic!("claude mcp list does not show `channel`\n{}", ran.shown()))
        .to_owned()
}

#[test]
fn claude_code_connects_the_installed_server_without_an_approval() {
    // The default install (local scope): the server connects, nobody has to approve it.
    let w = World::new("claude");
    w.cs_ok(&["--role", ME, "install", "claude", "--apply"]);
    let line = claude_mcp_list_line(&w);
    assert!(
        line.contains("Connected") && !line.contains("approval"),
        "the locally installed server is not simply connected: {line}"
    );

    // The shared wiring (--scope project) is a server Claude Code asks each user to
    // approve: the contrast the default exists for.
    let shared = World::new("claude");
    shared.cs_ok(&[
        "--role", ME, "install", "claude", "--scope", "project", "--apply",
    ]);
    let line = claude_mcp_list_line(&shared);
    assert!(
        line.contains("approval"),
        "a project-scope server no longer waits for approval: {line}"
    );
}

/// `claude mcp list` in `dir`, as this HOME.
fn claude_mcp_list_in(w: &World, dir: &Path) -> Ran {
    let mut c = w.command("claude");
    c.current_dir(dir)
        .args(["mcp", "list"])
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1");
    let ran = run_bounded(c, "claude mcp list", CLIENT_TIMEOUT);
    assert_eq!(ran.code, Some(0), "claude mcp list failed\n{}", ran.shown());
    ran
}

/// The line of `claude mcp list` naming the `channel` server, if any.
fn channel_line(ran: &Ran) -> Option<String> {
    ran.stdout
        .lines()
        .find(|l| l.starts_with("channel:"))
        .map(str::to_owned)
}

/// A real Claude Code session writes its user file (`~/.claude.json`) between installs:
/// install in p1, a session in p1, install in p2, uninstall in p2. p1 keeps its server
/// and everything Claude Code wrote; p2 has no server left.
#[test]
fn claude_code_keeps_its_file_through_an_uninstall_in_another_project() {
    let w = World::new("claude");
    w.cs_ok(&["--role", ME, "install", "claude", "--apply"]);
    let api = ModelApi::start(
        w.tmp.path(),
        &json!({"to": PEER, "topic": "hello", "body": "sent through the real client"}),
    );
    let ran = claude_print(&w, &api, "Tell the backend hello.", "mcp__channel");
    assert_eq!(ran.code, Some(0), "claude -p failed\n{}", ran.shown());
    let config = w.home.join(".claude.json");
    let by_claude: Value = serde_json::from_str(&fs::read_to_string(&config).unwrap()).unwrap();

    let p2 = w.tmp.path().join("p2");
    fs::create_dir_all(&p2).unwrap();
    let git = w
        .command("git")
        .current_dir(&p2)
        .args(["init", "-q"])
        .output()
        .unwrap();
    assert!(git.status.success());
    let channel = w.project.join(".countersign");
    let install = w
        .command(bin())
        .current_dir(&p2)
        .args(["--channel", channel.to_str().unwrap(), "--role", PEER])
        .args(["install", "claude", "--apply"])
        .output()
        .unwrap();
    assert!(install.status.success(), "{}", text(&install.stderr));
    for dir in [&w.project, &p2] {
        let listed = claude_mcp_list_in(&w, dir);
        let line = channel_line(&listed).unwrap_or_default();
        assert!(
            line.contains("Connected"),
            "{}: {}",
            dir.display(),
            listed.shown()
        );
    }

    let uninstall = w
        .command(bin())
        .current_dir(&p2)
        .args(["uninstall", "--apply"])
        .output()
        .unwrap();
    assert!(uninstall.status.success(), "{}", text(&uninstall.stderr));
    let left: Value = serde_json::from_str(&fs::read_to_string(&config).unwrap()).unwrap();
    for key in by_claude.as_object().unwrap().keys() {
        assert!(left.get(key).is_some(), "{key} is gone: {left}");
    }
    let p1 = w.project.canonicalize().unwrap();
    let p1_state = &by_claude["projects"][p1.to_str().unwrap()];
    assert!(
        p1_state.is_object(),
        "Claude Code filed p1 elsewhere: {by_claude}"
    );
    for (key, value) in p1_state.as_object().unwrap() {
        assert_eq!(
            &left["projects"][p1.to_str().unwrap()][key],
            value,
            "p1's {key} changed"
        );
    }
    let listed = claude_mcp_list_in(&w, &w.project);
    assert!(
        channel_line(&listed).is_some_and(|l| l.contains("Connected")),
        "p1 lost its server\n{}",
        listed.shown()
    );
    let listed = claude_mcp_list_in(&w, &p2);
    assert_eq!(channel_line(&listed), None, "{}", listed.shown());
}

// ---------------------------------------------------------------------------------------
// Codex CLI

/// A world wired for Codex: the user's own configuration (a model provider at the
/// stand-in, whose scripted call sends `topic` to PEER), then `install codex --apply`,
/// whose output comes third.
fn codex_world(topic: &str) -> (World, ModelApi, String) {
    codex_world_with(topic, &[])
}

/// [`codex_world`] with `extra` arguments to `install codex`.
fn codex_world_with(topic: &str, extra: &[&str]) -> (World, ModelApi, String) {
    let w = World::new("codex");
    let api = ModelApi::start(
        w.tmp.path(),
        &json!({"to": PEER, "topic": topic, "body": "sent through the real client"}),
    );
    let codex_home = w.home.join(".codex");
    fs::create_dir_all(&codex_home).unwrap();
    fs::write(
        codex_home.join("config.toml"),
        format!(
            "model = \"stand-in\"\n\
             model_provider = \"stand_in\"\n\n\
             [model_providers.stand_in]\n\
             name = \"stand-in\"\n\
             base_url = \"{}/v1\"\n\
             env_key = \"STAND_IN_API_KEY\"\n\
             wire_api = \"responses\"\n",
            api.url()
        ),
    )
    .unwrap();
    let mut args = vec!["--role", ME, "install", "codex", "--apply"];
    args.extend(extra);
    let installed = w.cs_ok(&args);
    (w, api, installed)
}

/// Runs `codex exec PROMPT` (with `extra` arguments first); returns the run, the
/// conversation's requests and a description of both for failure messages.
fn codex_exec(w: &World, api: &ModelApi, extra: &[&str]) -> (Ran, Vec<Value>, String) {
    let mut c = w.command("codex");
    c.arg("exec")
        .args(extra)
        .args(["--json", "Tell the backend hello."])
        .env("STAND_IN_API_KEY", "sk-stand-in");
    let ran = run_bounded(c, "codex exec", CLIENT_TIMEOUT);
    let turns = conversation(api);
    let context = format!(
        "{}\n--- requests seen: {} in all, {} of the conversation",
        ran.shown(),
        api.requests().len(),
        turns.len()
    );
    assert_eq!(ran.code, Some(0), "codex exec failed\n{context}");
    (ran, turns, context)
}

#[test]
fn codex_lists_the_tools_delivers_mail_and_reads_the_note() {
    let (w, api, _) = codex_world("hello from codex");
    let note = fs::read_to_string(w.home.join(".codex/AGENTS.md"))
        .expect("install wrote Codex's own AGENTS.md");

    let (_, turns, context) = codex_exec(&w, &api, &[]);
    let first = turns
        .first()
        .unwrap_or_else(|| panic!("Codex never offered the channel's tools\n{context}"));

    // The tools are listed.
    assert_tools_listed(first, "Codex");

    // The note `install codex` wrote into Codex's user AGENTS.md (read in every session)
    // reaches the model: every line of it.
    for line in note
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("<!--"))
    {
        assert!(
            contains_text(first, line),
            "AGENTS.md's line {line:?} is not in Codex's first request\n{context}"
        );
    }

    // send_message was delivered, and the tool's answer went back to the model.
    let inbox = w.inbox(PEER);
    assert!(
        inbox.contains(&(ME.to_owned(), "hello from codex".to_owned())),
        "{PEER}'s inbox lacks the message Codex sent: {inbox:?}\n{context}"
    );
    let answered = turns.iter().any(|t| {
        t["input"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|item| item["type"] == "function_call_output")
    });
    assert!(
        answered,
        "Codex never sent send_message's result back to the model\n{context}"
    );
}

/// Codex's app server (`codex app-server`, JSON-RPC over stdio): what its `/hooks` review
/// reads and writes, driven the way the interactive review does it. Killed on drop.
struct AppServer {
    child: Child,
    stdin: std::process::ChildStdin,
    lines: std::sync::mpsc::Receiver<String>,
    next_id: u64,
}

impl AppServer {
    fn start(w: &World) -> Self {
        use std::io::BufRead as _;
        let mut c = w.command("codex");
        c.arg("app-server")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .process_group(0);
        let mut child = c.spawn().expect("codex app-server starts");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut app = Self {
            child,
            stdin,
            lines,
            next_id: 1,
        };
        app.call(
            "initialize",
            json!({"clientInfo": {"name": "countersign-tests", "version": "1"}}),
        );
        app.send(&json!({"method": "initialized"}));
        app
    }

    fn send(&mut self, msg: &Value) {
        use std::io::Write as _;
        writeln!(self.stdin, "{msg}").expect("the app server reads its stdin");
        self.stdin.flush().unwrap();
    }

    /// The result of `method`; fails on an error answer or after CLIENT_TIMEOUT.
    fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"id": id, "method": method, "params": params}));
        let deadline = Instant::now() + CLIENT_TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self
                .lines
                .recv_timeout(left)
                .unwrap_or_else(|e| panic!("codex app-server gave no answer to {method}: {e}"));
            let Ok(msg) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if msg["id"] == json!(id) {
                assert!(
                    msg.get("error").is_none(),
                    "codex app-server refused {method}: {msg}"
                );
                return msg["result"].clone();
            }
        }
    }

    /// The hooks Codex would run for a session in `cwd`.
    fn hooks(&mut self, cwd: &Path) -> Vec<Value> {
        let listed = self.call("hooks/list", json!({"cwds": [cwd]}));
        listed["data"][0]["hooks"]
            .as_array()
            .unwrap_or_else(|| panic!("hooks/list gave no hooks: {listed}"))
            .clone()
    }

    /// Trusts `hooks` as the review's "Trust all and continue" does: their current hashes
    /// under `hooks.state` in the user's config.toml.
    fn trust(&mut self, hooks: &[Value]) {
        let state: serde_json::Map<String, Value> = hooks
            .iter()
            .map(|h| {
                let key = h["key"].as_str().expect("a hook key").to_owned();
                (key, json!({"trusted_hash": h["currentHash"]}))
            })
            .collect();
        let written = self.call(
            "config/batchWrite",
            json!({"edits": [{"keyPath": "hooks.state", "mergeStrategy": "upsert", "value": state}]}),
        );
        assert_eq!(written["status"], "ok", "trusting the hooks: {written}");
    }
}

impl Drop for AppServer {
    fn drop(&mut self) {
        kill_group(&mut self.child);
    }
}

/// A hook Codex lists that runs `countersign hook …`.
fn is_ours(h: &Value) -> bool {
    h["command"]
        .as_str()
        .is_some_and(|c| c.contains("countersign") && c.contains(" hook "))
}

/// countersign's hooks among those Codex lists: (event, command, trust status).
fn our_hooks(listed: &[Value]) -> Vec<(String, String, String)> {
    listed
        .iter()
        .filter(|h| is_ours(h))
        .map(|h| {
            let s = |k: &str| h[k].as_str().unwrap_or_default().to_owned();
            (s("eventName"), s("command"), s("trustStatus"))
        })
        .collect()
}

/// `install codex --apply` wires the SessionStart and Stop hooks into
/// `$CODEX_HOME/hooks.json`, with no role in them (the binding of the session's folder
/// names it), and says they run only once trusted. Codex lists them as untrusted, and a
/// `codex exec` then runs without them; trusted through Codex's own review (its app
/// server), the next `codex exec` (no bypass) gets the session-start text, and the Stop
/// hook holds the first stop while a debt is open and lets the next one through.
#[test]
fn codex_runs_the_hooks_install_wrote_once_they_are_trusted() {
    let (w, api, installed) = codex_world("hello from codex, hooked");
    assert!(
        installed.contains("Trust the hooks once") && installed.contains("Trust all and continue"),
        "install codex did not say how to trust the hooks:\n{installed}"
    );
    w.open_debt();
    let cwd = w.project.canonicalize().unwrap();
    let mut app = AppServer::start(&w);
    let ours = our_hooks(&app.hooks(&cwd));
    let events: Vec<&str> = ours.iter().map(|(e, _, _)| e.as_str()).collect();
    assert_eq!(
        events,
        ["sessionStart", "stop"],
        "Codex does not list countersign's two hooks: {ours:?}"
    );
    for (event, command, trust) in &ours {
        assert!(
            !command.contains("--role") && !command.contains("--channel"),
            "the {event} hook names a role or channel: {command}"
        );
        assert_eq!(trust, "untrusted", "the {event} hook: {ours:?}");
    }

    // Untrusted: `codex exec` runs without them, saying nothing.
    let reason = format!("channel has pending items for '{ME}'");
    let session_start = w.cs_ok(&["hook", "session-start"]);
    assert!(
        session_start.contains(&format!("You act as the role '{ME}'")),
        "the hook did not take the role from the binding:\n{session_start}"
    );
    let (_, untrusted, context) = codex_exec(&w, &api, &[]);
    assert!(
        !untrusted.is_empty()
            && !untrusted
                .iter()
                .any(|t| contains_text(t, session_start.trim()) || contains_text(t, &reason)),
        "an untrusted hook ran\n{context}"
    );

    // Trusted the way Codex's review does it: they run.
    let listed = app.hooks(&cwd);
    let to_trust: Vec<Value> = listed.into_iter().filter(is_ours).collect();
    app.trust(&to_trust);
    let ours = our_hooks(&app.hooks(&cwd));
    assert!(
        ours.iter().all(|(_, _, t)| t == "trusted"),
        "still untrusted: {ours:?}"
    );
    drop(app);
    let (_, turns, context) = codex_exec(&w, &api, &[]);
    let turns = &turns[untrusted.len()..];
    let first = turns
        .first()
        .unwrap_or_else(|| panic!("Codex never offered the channel's tools\n{context}"));
    assert!(
        contains_text(first, session_start.trim()),
        "the SessionStart hook's text is not in Codex's first request\n\
         --- hook text ---\n{session_start}\n{context}"
    );
    assert_stop_held_once(turns, &context);
}

/// Codex's per-user entries (one server table, one hooks.json, trusted) in a project no
/// channel is bound to, while a debt waits for the role bound elsewhere: `codex exec` there
/// starts the server without an error and is offered only its `channel_status`, hears
/// nothing of a channel at session start, and its stop is not held.
#[test]
fn codex_in_an_unrelated_project_is_neither_held_nor_told_of_a_channel() {
    let (w, api, _) = codex_world("never sent");
    w.open_debt();
    let other = w.tmp.path().join("unrelated");
    fs::create_dir_all(&other).unwrap();
    let git = w
        .command("git")
        .current_dir(&other)
        .args(["init", "-q"])
        .output()
        .unwrap();
    assert!(git.status.success(), "git init: {}", text(&git.stderr));
    let cwd = other.canonicalize().unwrap();
    let mut app = AppServer::start(&w);
    let ours: Vec<Value> = app.hooks(&cwd).into_iter().filter(is_ours).collect();
    assert_eq!(ours.len(), 2, "the user's hooks apply here too: {ours:?}");
    app.trust(&ours);
    drop(app);

    let mut c = w.command("codex");
    c.current_dir(&other)
        .args(["exec", "--json", "Tell the backend hello."])
        .env("STAND_IN_API_KEY", "sk-stand-in");
    let ran = run_bounded(c, "codex exec in an unrelated project", CLIENT_TIMEOUT);
    let requests: Vec<Value> = api.requests().into_iter().map(|(_, b)| b).collect();
    let context = format!("{}\n--- {} requests", ran.shown(), requests.len());
    assert_eq!(ran.code, Some(0), "codex exec failed\n{context}");
    let main: Vec<&Value> = requests
        .iter()
        .filter(|b| contains_text(b, "Tell the backend hello."))
        .collect();
    assert!(
        !main.is_empty(),
        "the prompt never reached the model\n{context}"
    );
    for b in &main {
        let channel: Vec<String> = offered_tools(b)
            .into_iter()
            .filter(|t| t.starts_with("mcp__channel__"))
            .collect();
        assert_eq!(
            channel,
            ["mcp__channel__channel_status"],
            "the unbound server offered other tools, or none\n{context}"
        );
    }
    for needle in [
        "connected to a countersign channel",
        "channel has pending items",
    ] {
        assert!(
            !requests.iter().any(|b| contains_text(b, needle)),
            "{needle:?} reached the model in a project with no channel\n{context}"
        );
    }
    // The note lives in Codex's personal AGENTS.md, read in every project: it reaches the
    // model only in the form that says to ignore it where no binding is found.
    for b in &main {
        if contains_text(b, "Coordination channel (countersign)") {
            assert!(
                contains_text(b, "elsewhere ignore this section"),
                "the personal note claims a channel in a project with none\n{context}"
            );
        }
    }
    let out = format!("{}{}", ran.stdout, ran.stderr).to_lowercase();
    assert!(
        !out.contains("mcp client for `channel` failed") && !out.contains("no role"),
        "Codex reported the channel server failing\n{context}"
    );
}

// ---------------------------------------------------------------------------------------
// Recording (`install … --record`)

/// The notes in `role`'s feeds of the project's channel: (kind, text, agent).
fn feed_notes(w: &World, role: &str) -> Vec<(String, String, String)> {
    use countersign::core::op::Op;
    let mut out = Vec::new();
    let feeds = w.project.join(".countersign/feeds").join(role);
    for device in fs::read_dir(&feeds).into_iter().flatten().flatten() {
        for seg in countersign::store::survey::list_segments(&device.path()).unwrap() {
            for line in fs::read_to_string(&seg.path).unwrap().lines() {
                let rec = countersign::core::record::decode(line.as_bytes()).unwrap();
                if let Some(Op::Note(n)) = rec.op {
                    out.push((
                        n.kind.as_str().to_owned(),
                        n.text,
                        n.agent.unwrap_or_default(),
                    ));
                }
            }
        }
    }
    out
}

/// Waits (at most 30 s: the hooks deliver in the background) until ME's feed holds a
/// prompt note and a reply note; returns the notes.
fn wait_for_notes(w: &World, context: &str) -> Vec<(String, String, String)> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let notes = feed_notes(w, ME);
        let has = |k: &str| notes.iter().any(|(kind, _, _)| kind == k);
        if has("prompt") && has("reply") {
            return notes;
        }
        assert!(
            Instant::now() < deadline,
            "the recording hooks left no prompt and reply in {ME}'s feed: {notes:?}\n{context}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `install claude --record --apply`, then `claude -p`: the prompt and the final reply
/// are notes in the role's feed, word for word, and the debts' Stop hook still runs.
#[test]
fn claude_code_records_the_prompt_and_the_final_reply_as_notes() {
    let w = World::new("claude");
    let installed = w.cs_ok(&["--role", ME, "install", "claude", "--record", "--apply"]);
    assert!(
        installed.contains("Everyone who can read the channel folder can read them"),
        "{installed}"
    );
    let api = ModelApi::start(
        w.tmp.path(),
        &json!({"to": PEER, "topic": "recorded", "body": "sent while recording"}),
    );
    let ran = claude_print(&w, &api, "Tell the backend hello.", "mcp__channel");
    let context = ran.shown();
    assert_eq!(ran.code, Some(0), "claude -p failed\n{context}");
    let notes = wait_for_notes(&w, &context);
    assert!(
        notes.contains(&(
            "prompt".into(),
            "Tell the backend hello.".into(),
            "claude".into()
        )),
        "{notes:?}"
    );
    assert!(
        notes.contains(&(
            "reply".into(),
            "Done: the message is sent.".into(),
            "claude".into()
        )),
        "{notes:?}"
    );
    assert!(
        w.inbox(PEER)
            .contains(&(ME.to_owned(), "recorded".to_owned())),
        "the message itself was not sent\n{context}"
    );
    // The memory's lines say where the prompt came from: the project's root
    // folder of ME, with a hash of its absolute path, the agent, this device
    // and the session.
    let found = w.cs_ok(&["--role", ME, "memory", "search", "backend hello"]);
    let hash = countersign::core::memory::provenance::folder_hash(
        &w.project.canonicalize().unwrap().to_string_lossy(),
    );
    assert!(
        found.contains(&format!("|prompt@{ME}~{hash}/claude@")) && found.contains('#'),
        "{found}"
    );
}

/// `install codex --record --apply`, the hooks trusted as Codex's review does, then
/// `codex exec`: the prompt and the final reply are notes in the role's feed.
#[test]
fn codex_records_the_prompt_and_the_final_reply_as_notes() {
    let (w, api, installed) = codex_world_with("recorded by codex", &["--record"]);
    assert!(installed.contains("Recording is on"), "{installed}");
    let cwd = w.project.canonicalize().unwrap();
    let mut app = AppServer::start(&w);
    let ours: Vec<Value> = app.hooks(&cwd).into_iter().filter(is_ours).collect();
    let events: Vec<String> = our_hooks(&ours).into_iter().map(|(e, _, _)| e).collect();
    assert_eq!(
        events,
        ["sessionStart", "userPromptSubmit", "stop", "stop"],
        "Codex does not list countersign's four hooks"
    );
    app.trust(&ours);
    drop(app);
    let (_, _, context) = codex_exec(&w, &api, &[]);
    let notes = wait_for_notes(&w, &context);
    assert!(
        notes.contains(&(
            "prompt".into(),
            "Tell the backend hello.".into(),
            "codex".into()
        )),
        "{notes:?}"
    );
    assert!(
        notes.contains(&(
            "reply".into(),
            "Done: the message is sent.".into(),
            "codex".into()
        )),
        "{notes:?}"
    );
}

/// `codex exec --ephemeral` keeps no transcript, like the Codex app's background threads
/// (task suggestions): its hooks run, but nothing of it is recorded. A later run that keeps
/// its transcript is recorded as usual.
#[test]
fn codex_records_nothing_of_a_thread_without_a_transcript() {
    let (w, api, _) = codex_world_with("not recorded", &["--record"]);
    let cwd = w.project.canonicalize().unwrap();
    let mut app = AppServer::start(&w);
    let ours: Vec<Value> = app.hooks(&cwd).into_iter().filter(is_ours).collect();
    app.trust(&ours);
    drop(app);
    let (_, turns, context) = codex_exec(&w, &api, &["--ephemeral"]);
    assert!(
        !turns.is_empty(),
        "the ephemeral run never reached the model\n{context}"
    );
    // Whatever its hooks spooled is delivered now, not in the background.
    w.cs_ok(&["hook", "deliver"]);
    let notes = feed_notes(&w, ME);
    assert!(
        notes.is_empty(),
        "an ephemeral thread was recorded: {notes:?}"
    );
    let (_, _, context) = codex_exec(&w, &api, &[]);
    let notes = wait_for_notes(&w, &context);
    let prompts = notes.iter().filter(|(kind, _, _)| kind == "prompt").count();
    assert_eq!(prompts, 1, "{notes:?}");
}

// ---------------------------------------------------------------------------------------
// Two machines

impl World {
    /// A HOME and a git project on one machine of `m`'s world, the project bound to `m`'s
    /// channel folder as `role` by `install claude` with `m`'s countersign home (which the
    /// entry and the hooks carry, as they do for a user who set COUNTERSIGN_HOME).
    fn bound_to(m: &crate::common::machines::Machine, role: &str) -> Self {
        let w = Self::empty("claude");
        w.cs_ok(&[
            "--home",
            m.home.to_str().unwrap(),
            "--channel",
            m.dir.to_str().unwrap(),
            "--role",
            role,
            "install",
            "claude",
            "--apply",
        ]);
        w
    }
}

/// Two machines set up as a user sets them up (a channel synced through git, each with
/// `install claude` and nothing else: no flag, no manual sync), each running a real Claude
/// Code session on its default settings: what the session on one sends, the session on
/// the other receives while it waits for mail.
#[test]
fn claude_code_sessions_on_two_machines_talk_with_no_manual_sync() {
    let world = crate::common::machines::World::git(2, &[ME, PEER]);
    let (a, b) = (&world.machines[0], &world.machines[1]);
    let (wa, wb) = (World::bound_to(a, ME), World::bound_to(b, PEER));
    let topic = "crossing machines by default";
    let api_a = ModelApi::start(
        wa.tmp.path(),
        &json!({"to": PEER, "topic": topic, "body": "sent on machine A"}),
    );
    let script = json!([["wait_for_mail", {"timeout_s": 45}], ["read_inbox", {}]]);
    let api_b = ModelApi::start_with(
        wb.tmp.path(),
        &json!({}),
        &["--script", &script.to_string()],
    );
    // B waits for mail first, then A sends: B's server must pull A's write by itself.
    let b_session = std::thread::spawn(move || {
        let ran = claude_print(&wb, &api_b, "Wait for mail, then read it.", "mcp__channel");
        (ran, api_b.requests(), wb)
    });
    std::thread::sleep(Duration::from_secs(3));
    let ran_a = claude_print(&wa, &api_a, "Tell the backend hello.", "mcp__channel");
    assert_eq!(
        ran_a.code,
        Some(0),
        "claude -p on A failed\n{}",
        ran_a.shown()
    );

    let (ran_b, requests, _wb) = b_session.join().unwrap();
    let context = format!("{}\n--- {} requests on B", ran_b.shown(), requests.len());
    assert_eq!(ran_b.code, Some(0), "claude -p on B failed\n{context}");
    let results: Vec<&str> = requests
        .iter()
        .flat_map(|(_, body)| strings(&body["messages"]))
        .collect();
    let remote_log = crate::common::machines::git_ok(
        world.tmp.path(),
        &[
            "--git-dir",
            world.remote.to_str().unwrap(),
            "log",
            "--all",
            "--stat",
            "--format=%s",
        ],
    );
    let tail_b: Vec<String> = requests
        .iter()
        .map(|(_, b)| {
            let last = b["messages"].as_array().and_then(|m| m.last()).cloned();
            last.unwrap_or_default()
                .to_string()
                .chars()
                .take(400)
                .collect()
        })
        .collect();
    assert!(
        results.iter().any(|s| s.contains(topic)),
        "B's session never read A's message\n{context}\n--- B's last messages ---\n{}\n--- A ---\n{}\n--- the remote ---\n{remote_log}",
        tail_b.join("\n"),
        ran_a.shown()
    );
}
