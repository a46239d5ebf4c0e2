//! The CLI as a person uses it: one line per message in aligned columns, a
//! look that records nothing, `view`, `log`'s filters, `status --watch`,
//! the grouped `--help`, the memory page; and the screens in a real
//! terminal (tmux): colour there, none when piped.

use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{TestChannel, bin, counter};

fn out(ch: &TestChannel, args: &[&str]) -> String {
    let o = ch.cli(args);
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).expect("UTF-8")
}

/// Sends as `from`; returns the short id (from `--json`).
fn send(ch: &TestChannel, from: &str, to: &str, topic: &str, extra: &[&str]) -> String {
    let mut args = vec![
        "--role", from, "send", "--to", to, "--topic", topic, "--body", "the body", "--json",
    ];
    args.extend_from_slice(extra);
    let v: Value = serde_json::from_str(&out(ch, &args)).unwrap();
    v["id"].as_str().unwrap().to_owned()
}

fn unopened(ch: &TestChannel, role: &str) -> u64 {
    let v: Value = serde_json::from_str(&out(ch, &["--role", role, "status", "--json"])).unwrap();
    counter(&v, "unopened")
}

/// The column each cell of a line starts at (cells are split by two spaces
/// or more).
fn columns(line: &str) -> Vec<usize> {
    let chars: Vec<char> = line.chars().collect();
    let mut starts = vec![0];
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == ' ' && chars.get(i + 1) == Some(&' ') {
            while i < chars.len() && chars[i] == ' ' {
                i += 1;
            }
            starts.push(i);
        } else {
            i += 1;
        }
    }
    starts
}

#[test]
fn inbox_is_one_aligned_line_per_message_and_a_peek_records_nothing() {
    let ch = TestChannel::new(&["frontend", "backend", "qa"]);
    let debt = send(
        &ch,
        "frontend",
        "backend",
        "Schema change",
        &["--action-required"],
    );
    let note = send(&ch, "qa", "backend", "fyi: flaky test", &[]);
    assert_eq!(unopened(&ch, "backend"), 2);

    let peek = out(&ch, &["--role", "backend", "inbox", "--peek"]);
    let lines: Vec<&str> = peek.lines().collect();
    assert_eq!(lines.len(), 2, "{peek}");
    assert!(
        lines[0].starts_with(&format!("#{debt}  frontend  now  owed")),
        "{peek}"
    );
    assert!(
        lines[1].starts_with(&format!("#{note}  qa        now  unread")),
        "{peek}"
    );
    assert_eq!(columns(lines[0]), columns(lines[1]), "aligned:\n{peek}");
    assert!(lines[0].ends_with("Schema change") && lines[1].ends_with("fyi: flaky test"));
    assert!(!peek.contains('\x1b'), "no colour when piped");
    assert_eq!(unopened(&ch, "backend"), 2, "a peek records no delivery");

    // Piped and not asked to peek, it records delivery as read_inbox does.
    let listed = out(&ch, &["--role", "backend", "inbox"]);
    assert_eq!(listed, peek);
    assert_eq!(unopened(&ch, "backend"), 0);
}

#[test]
fn view_shows_one_message_with_its_thread() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let q = send(&ch, "frontend", "backend", "Login API?", &[]);
    let a = send(
        &ch,
        "backend",
        "frontend",
        "Re: Login API",
        &["--reply-to", &q],
    );
    let v = out(&ch, &["view", &a]);
    let lines: Vec<&str> = v.lines().collect();
    assert_eq!(lines[0], format!("#{a}  Re: Login API"), "{v}");
    assert!(lines[1].starts_with("from backend to frontend · "), "{v}");
    assert!(v.contains(&format!("reply to #{q}")), "{v}");
    assert!(v.contains("\n  | the body\n"), "{v}");
    assert!(v.contains("thread (2 messages):"), "{v}");
    assert!(v.contains(&format!("  #{q}  frontend")), "{v}");
    assert!(
        v.contains(&format!("> #{a}  backend")),
        "this one marked: {v}"
    );
    let none = ch.cli(&["view", "0123456789"]);
    assert_eq!(none.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&none.stderr).contains("not found"));
}

#[test]
fn log_picks_records_by_role_time_text_and_count() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    send(&ch, "frontend", "backend", "alpha", &[]);
    send(&ch, "backend", "frontend", "beta", &[]);
    send(&ch, "frontend", "backend", "gamma", &[]);
    let all = out(&ch, &["log"]);
    let by_role = out(&ch, &["log", "--role", "frontend"]);
    assert!(by_role.lines().count() >= 3, "{by_role}");
    assert!(
        by_role.lines().all(|l| l.contains(" frontend/")),
        "{by_role}"
    );
    assert!(all.lines().any(|l| l.contains(" backend/")), "{all}");
    let grep = out(&ch, &["log", "--grep", "BETA"]);
    assert_eq!(grep.lines().count(), 1, "{grep}");
    assert!(grep.contains("\"beta\""), "{grep}");
    let last = out(&ch, &["log", "--limit", "1"]);
    assert_eq!(last.lines().count(), 1);
    assert_eq!(
        last.lines().next(),
        all.lines().rfind(|l| l.starts_with('✓'))
    );
    assert_eq!(out(&ch, &["log", "--since", "2999-01-01"]), "");
    let bad = ch.cli(&["log", "--since", "yesterday-ish"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--since"));
    // --json takes the same filters.
    let json = out(&ch, &["log", "--json", "--grep", "gamma"]);
    assert_eq!(json.lines().count(), 1, "{json}");
    serde_json::from_str::<Value>(json.trim()).unwrap();
}

#[test]
fn status_watch_is_also_a_flag_and_status_speaks_plainly() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    send(&ch, "frontend", "backend", "please", &["--action-required"]);
    let w = ch.cli(&["--role", "backend", "status", "--watch", "--max-polls", "1"]);
    assert_eq!(
        w.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&w.stderr)
    );
    let w = String::from_utf8_lossy(&w.stdout).into_owned();
    assert!(
        w.ends_with(" waiting: 1 unread message, 1 debt owed to you not yet taken up\n"),
        "{w}"
    );
    let text = out(&ch, &["--role", "backend", "status", "--text"]);
    for jargon in ["open_obligations", "unread=", "pending:", "needs_you"] {
        assert!(!text.contains(jargon), "{jargon} in:\n{text}");
    }
    // Piped without --text: the JSON, as scripts read it.
    let json = out(&ch, &["--role", "backend", "status"]);
    assert!(serde_json::from_str::<Value>(&json).is_ok(), "{json}");
}

#[test]
fn send_and_note_answer_in_one_line() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let s = out(
        &ch,
        &[
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
        ],
    );
    let words: Vec<&str> = s.split_whitespace().collect();
    assert_eq!(words[0], "sent");
    assert_eq!(words[1].len(), 12, "{s}");
    assert_eq!(
        &words[2..],
        ["to", "backend", "(action", "required)"],
        "{s}"
    );
    let n = out(&ch, &["--role", "frontend", "note", "remember this"]);
    assert!(n.starts_with("noted ") && n.lines().count() == 1, "{n}");
}

#[test]
fn help_groups_the_commands() {
    let h = Command::new(bin()).arg("--help").output().unwrap();
    let h = String::from_utf8_lossy(&h.stdout);
    let at = |heading: &str| h.find(heading).unwrap_or_else(|| panic!("{heading}:\n{h}"));
    assert!(at("Daily:") < at("Setup:"));
    assert!(at("Setup:") < at("Machines:") && at("Machines:") < at("Memory:"));
    assert!(at("Memory:") < at("Maintenance:") && at("Maintenance:") < at("Options:"));
    assert!(h[at("Daily:")..at("Setup:")].contains("  inbox "), "{h}");
    assert!(!h.contains("Commands:"), "each command once:\n{h}");
}

#[test]
fn the_memory_page_reads_by_day_with_a_search_under_a_strict_policy() {
    use base64::Engine as _;
    use sha2::Digest as _;
    let ch = TestChannel::new(&["frontend", "backend"]);
    send(&ch, "frontend", "backend", "<b>Login</b> شروع", &[]);
    send(&ch, "backend", "frontend", "tokens", &[]);
    let page = ch.tmp.path().join("memory.html");
    out(&ch, &["memory", "export", page.to_str().unwrap()]);
    let html = fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("<title dir=\"auto\">test · memory</title>"),
        "named by the channel"
    );
    assert!(!html.contains(ch.dir.to_str().unwrap()), "no folder path");
    assert!(html.contains("<meta name=\"viewport\""));
    assert!(
        !html.contains("not summarized") && !html.contains("+1|"),
        "no tree jargon"
    );
    // A heading per day, then `author · time · topic` per message.
    let day = html.find("<section class=\"day\"><h2>").expect("a day");
    let first = html.find("<details class=\"item\">").expect("a message");
    assert!(day < first);
    assert!(
        html.contains("<span class=\"who\" dir=\"auto\">frontend</span> · <span class=\"meta\">")
    );
    assert!(
        html.contains("&lt;b&gt;Login&lt;/b&gt; شروع"),
        "escaped, kept in order"
    );
    assert!(html.contains("<input type=\"search\" id=\"q\""));
    // The one script runs by its hash; nothing else may.
    let script = &html[html.find("<script>").unwrap() + 8..html.find("</script>").unwrap()];
    let hash = base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(script));
    let csp = html
        .lines()
        .find(|l| l.contains("Content-Security-Policy"))
        .unwrap();
    assert!(
        csp.contains(&format!("script-src 'sha256-{hash}'")),
        "{csp}"
    );
    assert!(
        csp.contains("default-src 'none'") && !csp.contains("unsafe"),
        "{csp}"
    );
}

// ---------------------------------------------------------------------------------------
// In a real terminal

/// A tmux server of its own, ended when dropped.
struct Tmux {
    socket: String,
}

impl Tmux {
    /// Runs `command` (a shell line) in a new 150x40 pane.
    fn run(tag: &str, command: &str) -> Self {
        let socket = format!("cs-{tag}-{}", std::process::id());
        let ok = Command::new("tmux")
            .args([
                "-L",
                &socket,
                "-f",
                "/dev/null",
                "new-session",
                "-d",
                "-x",
                "150",
                "-y",
                "40",
            ])
            .arg(format!("{command}; sleep 60"))
            .status()
            .expect("tmux runs (apt-get install tmux)");
        assert!(ok.success());
        Self { socket }
    }

    /// The pane's text, with its escape codes when `escapes`.
    fn screen(&self, escapes: bool) -> String {
        let mut c = Command::new("tmux");
        c.args(["-L", &self.socket, "capture-pane", "-p", "-t", "0"]);
        if escapes {
            c.arg("-e");
        }
        String::from_utf8_lossy(&c.output().unwrap().stdout).into_owned()
    }

    /// The screen once `done` holds for it (within 20 s).
    fn wait_for(&self, done: impl Fn(&str) -> bool) -> String {
        let started = Instant::now();
        loop {
            let s = self.screen(false);
            if done(&s) {
                return s;
            }
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "never came:\n{s}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .status();
    }
}

/// A shell line running the binary on `ch` as a person's terminal would.
fn shell_line(ch: &TestChannel, args: &str) -> String {
    let q = |p: &Path| format!("'{}'", p.display());
    format!(
        "env -u NO_COLOR -u CLAUDECODE -u CODEX_SANDBOX TERM=xterm-256color PAGER=cat \
         COUNTERSIGN_HOME={} {} --channel {} {args}",
        q(&ch.home),
        bin(),
        q(&ch.dir)
    )
}

#[test]
fn the_screens_in_a_terminal_are_coloured_aligned_and_a_look_records_nothing() {
    let ch = TestChannel::new(&["frontend", "backend", "qa"]);
    let debt = send(
        &ch,
        "frontend",
        "backend",
        "Schema change",
        &["--action-required"],
    );
    send(&ch, "qa", "backend", "fyi", &[]);

    let t = Tmux::run("inbox", &shell_line(&ch, "--role backend inbox; echo END"));
    let screen = t.wait_for(|s| s.contains("END"));
    let coloured = t.screen(true);
    let rows: Vec<&str> = screen.lines().filter(|l| l.starts_with('#')).collect();
    assert_eq!(rows.len(), 2, "{screen}");
    assert!(
        rows[0].starts_with(&format!("#{debt}  frontend  ")),
        "{screen}"
    );
    assert_eq!(columns(rows[0]), columns(rows[1]), "aligned:\n{screen}");
    assert!(
        coloured.contains("\x1b["),
        "colour on a terminal:\n{coloured}"
    );
    // At a person's terminal the inbox is a look: said, and nothing recorded.
    assert!(screen.contains("(a look: nothing is recorded"), "{screen}");
    assert_eq!(unopened(&ch, "backend"), 2);
    drop(t);

    // status on a terminal is text, in words and columns.
    let t = Tmux::run(
        "status",
        &shell_line(&ch, "--role backend status; echo END"),
    );
    let screen = t.wait_for(|s| s.contains("END"));
    assert!(
        screen.contains("backend in channel 'test', waiting for you:"),
        "{screen}"
    );
    assert!(
        screen.contains("1 debt owed to you not yet taken up"),
        "{screen}"
    );
    assert!(
        screen.contains(&format!(
            "  #{debt}  frontend  now  owed, not taken  Schema change"
        )),
        "{screen}"
    );
    assert!(t.screen(true).contains("\x1b["));
    drop(t);

    // NO_COLOR is respected on a terminal.
    let line = shell_line(&ch, "--role backend inbox --peek; echo END").replacen(
        "PAGER=cat",
        "PAGER=cat NO_COLOR=1",
        1,
    );
    let t = Tmux::run("nocolour", &line);
    t.wait_for(|s| s.contains("END"));
    let plain = t.screen(true);
    assert!(plain.contains(&format!("#{debt}")), "{plain}");
    assert!(!plain.contains("\x1b["), "{plain}");
}

// ---------------------------------------------------------------------------------------
// The board from anywhere

/// A loopback port nothing listens on (just now).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// True while something accepts connections on the port.
fn listening(port: u16) -> bool {
    std::net::TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_millis(300))
        .is_ok()
}

#[tokio::test]
async fn a_stdio_session_hands_its_person_a_board_link_and_board_stop_ends_that_server() {
    use serde_json::json;
    let ch = TestChannel::new(&["frontend", "backend"]);
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let c = crate::common::Client::spawn_with(
        &ch.home,
        &ch.dir,
        "frontend",
        &["--board-listen", &addr],
    )
    .await;
    let link = c.call("board_link", json!({})).await.ok();
    let url = link["url"].as_str().unwrap().to_owned();
    assert!(
        url.starts_with(&format!("http://{addr}/board/test?n=")),
        "{link}"
    );
    assert!(
        link["note"].as_str().unwrap().contains("board --stop"),
        "{link}"
    );
    // The link opens the board, once.
    let agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .build()
        .new_agent();
    let opened = agent.get(&url).call().unwrap();
    assert!(opened.status().as_u16() < 400, "{:?}", opened.status());
    // A second link reuses the server; another channel is refused.
    let again = c.call("board_link", json!({"label": "phone"})).await.ok();
    assert!(
        again["note"].as_str().unwrap().contains("already served"),
        "{again}"
    );
    c.call("board_link", json!({"channel": "other"}))
        .await
        .permission_error("own channel");
    c.close().await;
    assert!(listening(port), "the server outlives the session");

    // Both view keys are in `token list`, and `board --revoke` ends them.
    let list = out(&ch, &["token", "list"]);
    assert_eq!(
        list.lines().filter(|l| l.contains("view key")).count(),
        2,
        "{list}"
    );
    let revoked = out(&ch, &["board", "--revoke"]);
    assert!(revoked.starts_with("ended 2 view key(s)"), "{revoked}");

    let stop = out(&ch, &["board", "--stop"]);
    assert!(stop.starts_with("stopped the board server"), "{stop}");
    let asked = Instant::now();
    while listening(port) {
        assert!(asked.elapsed() < Duration::from_secs(10), "still listening");
        std::thread::sleep(Duration::from_millis(100));
    }
    let again = out(&ch, &["board", "--stop"]);
    assert!(again.contains("nothing to stop"), "{again}");

    // A pid that is not the server started here is never signalled.
    let mut other = Command::new("sleep").arg("30").spawn().unwrap();
    let id = countersign::store::ChannelDir::open(&ch.dir)
        .unwrap()
        .id()
        .to_owned();
    let state = countersign::store::Home::at(ch.home.clone()).state_dir(&id);
    fs::write(
        state.join("board-server.json"),
        format!(r#"{{"pid":{},"listen":"{addr}"}}"#, other.id()),
    )
    .unwrap();
    let refused = out(&ch, &["board", "--stop"]);
    assert!(refused.contains("nothing to stop"), "{refused}");
    assert!(
        other.try_wait().unwrap().is_none(),
        "the stranger still runs"
    );
    other.kill().unwrap();
    let _ = other.wait();
}
