//! The board in a real browser: headless Chromium (Debian's `chromium`,
//! which .ci/run installs) follows a link to a real `countersign serve`,
//! takes a screenshot into the test output and dumps the DOM it built.
//! The look of the board is checked as a person sees it, through the
//! browser's DevTools protocol: at 1400 and 390 px wide, in light and dark,
//! with right-to-left text, as time passes and when the server stops.

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use countersign::app::Session;
use countersign::app::lifecycle::{
    confirm_resolution, reopen_message, resolve_message, set_work_status,
};
use countersign::app::pin::{PinRequest, pin_set};
use countersign::app::send::{SendRequest, ToArg, send_message};
use countersign::app::vote::acknowledge;
use serde_json::{Value, json};

use countersign::board_page as page;

use crate::board::{HOSTILE_FILE, HOSTILE_TOPIC, PERSON_NOTE, board_of, scene};
use crate::board_http::BoardServer;
use crate::common::local::{Local, send};

/// Fails the test, loudly, when Chromium is not installed: the browser tests
/// must never pass without running.
fn require_chromium() -> &'static str {
    let ok = Command::new("chromium")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "chromium is not installed: the board's browser tests need it (`apt-get install -y \
         chromium`, which .ci/run does)"
    );
    "chromium"
}

/// Runs headless Chromium on `url` with a fresh profile in `profile`,
/// plus `args`, for 60 s at most (`timeout`); returns its stdout.
fn chromium(profile: &Path, url: &str, args: &[String]) -> String {
    let out = Command::new("timeout")
        .args(["60", require_chromium()])
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--hide-scrollbars",
            "--window-size=1280,1600",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(url)
        .output()
        .expect("chromium runs");
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The test output folder of this run.
fn output_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("board");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn the_board_renders_in_a_browser_with_peer_text_as_text() {
    let sc = scene();
    let server = BoardServer::start(&sc.local);
    let tmp = tempfile::tempdir().unwrap();

    // A screenshot, into the test output.
    let shot = output_dir().join("board.png");
    let _ = std::fs::remove_file(&shot);
    chromium(
        &tmp.path().join("shot"),
        &server.link().url,
        &[format!("--screenshot={}", shot.display())],
    );
    let png = std::fs::read(&shot).expect("a screenshot was taken");
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 20_000,
        "{} bytes",
        png.len()
    );
    println!("board screenshot: {}", shot.display());

    // The DOM the browser built from the page (after its script ran).
    let dom = chromium(
        &tmp.path().join("dom"),
        &server.link().url,
        &["--dump-dom".into()],
    );
    std::fs::write(output_dir().join("board.dom.html"), &dom).unwrap();
    for (what, needle) in [
        (
            "an open debt",
            "<td class=\"topic\" dir=\"auto\">ship the parser</td>",
        ),
        ("a pin", "<code><bdi>style</bdi></code>"),
        ("a device", "this machine</span>"),
        ("an alarm", "<td class=\"kind\">wrong type</td>"),
        ("the chart", "<svg class=\"chart\""),
    ] {
        assert!(dom.contains(needle), "{what} missing from the DOM");
    }
    // The hostile topic and file name are text: escaped in the DOM, and no
    // element came of them (the page's own script is the only one).
    assert!(dom.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(!dom.contains(HOSTILE_TOPIC));
    assert!(!dom.contains(&HOSTILE_FILE.replace(' ', "")));
    assert!(!dom.contains("<img"));
    assert_eq!(dom.matches("<script").count(), 1);
}

#[test]
fn a_link_of_the_attention_strip_opens_the_message_in_the_browser() {
    let sc = scene();
    let server = BoardServer::start(&sc.local);
    let tmp = tempfile::tempdir().unwrap();
    let profile = tmp.path().join("profile");

    // The board, as the browser built it: the strip links to the task
    // blocked on a person.
    let dom = chromium(&profile, &server.link().url, &["--dump-dom".into()]);
    let strip = &dom[dom
        .find("id=\"attention\"")
        .expect("the strip is in the DOM")..];
    let href = format!("local/m/{}", sc.ids["licence"]);
    assert!(
        strip.contains(&format!("href=\"{href}\"")),
        "no link to {href}"
    );
    assert!(strip.contains(PERSON_NOTE));

    // The same browser (its cookie kept in the profile) follows it, the
    // href resolved against the board's address as a click resolves it.
    let url = format!("{}/board/{href}", server.base);
    let detail = chromium(
        &profile,
        &url,
        &[format!(
            "--screenshot={}",
            output_dir().join("board-detail.png").display()
        )],
    );
    let _ = detail;
    let dom = chromium(&profile, &url, &["--dump-dom".into()]);
    std::fs::write(output_dir().join("board-detail.dom.html"), &dom).unwrap();
    assert!(
        dom.contains("<h1 dir=\"auto\">pick a licence</h1>"),
        "the message's page opened: {dom}"
    );
    assert!(dom.contains("about pick a licence"));
    assert!(dom.contains("work status → blocked"));
    assert!(!dom.contains("<script"), "the detail page runs no script");
}

/// A right-to-left topic (Hebrew: "translating the guide into Hebrew").
pub const RTL_TOPIC: &str = "תרגום המדריך לעברית, פרק 2";

/// A channel as a person finds it after a while of work: six roles, debts
/// in every state (in progress, blocked on another debt or on a person,
/// handed back, done on both sides, resolved and waiting for confirmation,
/// confirmed, reopened), proposals with votes (one contested), a pin, a right-to-left topic, a hostile topic, a planted
/// file, and chatter between them. The screenshots in docs/ are of it.
pub fn realistic() -> Local {
    let roles = ["lead", "parser", "storage", "web", "docs", "review"];
    let local = Local::new(&roles);
    let mut s: Vec<Session> = roles.iter().map(|r| local.session(r)).collect();
    let at = |r: &str| roles.iter().position(|x| *x == r).unwrap();
    let debt = |s: &mut [Session], from: &str, to: &str, topic: &str, body: &str| {
        let mut req = SendRequest::new(to, topic, body);
        req.action_required = true;
        send_message(&mut s[at(from)], req).unwrap().id
    };
    let chatter = [
        (
            "lead",
            "parser",
            "Plan for the week",
            "Parser first, then the index migration; the board gets a phone layout.",
        ),
        (
            "parser",
            "lead",
            "CSV edge cases",
            "Quoted commas and CRLF inside quotes both break the header scan.",
        ),
        (
            "storage",
            "web",
            "Timeline reads",
            "A paged read needs the index migration first; I will say when it lands.",
        ),
        (
            "web",
            "docs",
            "Screenshots",
            "The new board renders; screenshots follow once dark mode is in.",
        ),
        (
            "review",
            "parser",
            "Tokenizer review",
            "Two findings: an off-by-one at EOF and a quadratic rescan.",
        ),
        (
            "docs",
            "review",
            "Glossary",
            "Please check the glossary entries for debt, court and pin.",
        ),
        (
            "lead",
            "storage",
            "Retention",
            "Keep uploads 90 days unless pinned; tell me if that is too short.",
        ),
        (
            "parser",
            "review",
            "Fix pushed",
            "Both findings fixed, with a regression test each.",
        ),
        (
            "storage",
            "lead",
            "WAL mode",
            "Checkpoints every 1000 pages; readers no longer wait on the writer.",
        ),
        (
            "web",
            "lead",
            "Board status",
            "Rows become cards below 700 px; the chart draws steps now.",
        ),
        (
            "docs",
            "lead",
            "Release notes draft",
            "Draft is in docs/CHANGES.md; corrections welcome until Friday.",
        ),
        (
            "review",
            "web",
            "Contrast",
            "Two greys were under 4.5:1 on the tag background.",
        ),
    ];
    for (from, to, topic, body) in chatter {
        send(&mut s[at(from)], to, topic, body);
    }
    let csv = debt(
        &mut s,
        "lead",
        "parser",
        "Parse quoted commas in CSV headers",
        "The header scan splits inside quotes.",
    );
    set_work_status(&mut s[at("parser")], &csv, "in_progress", None, None).unwrap();
    let wal = debt(
        &mut s,
        "lead",
        "storage",
        "Migrate the index to WAL mode",
        "Readers block on the writer today.",
    );
    set_work_status(&mut s[at("storage")], &wal, "in_progress", None, None).unwrap();
    let paged = debt(
        &mut s,
        "web",
        "storage",
        "Expose a paged read of the timeline",
        "The board needs pages of 50.",
    );
    set_work_status(
        &mut s[at("storage")],
        &paged,
        "blocked",
        Some("needs the WAL migration first".into()),
        Some(&wal),
    )
    .unwrap();
    debt(
        &mut s,
        "review",
        "docs",
        RTL_TOPIC,
        "נא לתרגם את הפרק השני עד יום חמישי.",
    );
    debt(
        &mut s,
        "parser",
        "review",
        HOSTILE_TOPIC,
        "a topic that tries to run script",
    );
    let retention = debt(
        &mut s,
        "storage",
        "lead",
        "Decide the retention of uploads",
        "90 days, or until unpinned?",
    );
    set_work_status(
        &mut s[at("lead")],
        &retention,
        "needs_you",
        Some("which uploads are large?".into()),
        None,
    )
    .unwrap();
    let shots = debt(
        &mut s,
        "docs",
        "web",
        "Screenshots of the board for the README",
        "At 1400 and 390 px.",
    );
    resolve_message(&mut s[at("web")], &shots, Some("both in docs/".into())).unwrap();
    let notes = debt(
        &mut s,
        "lead",
        "docs",
        "Changelog for 0.4",
        "One line per change.",
    );
    resolve_message(&mut s[at("docs")], &notes, Some("done".into())).unwrap();
    confirm_resolution(&mut s[at("lead")], &notes, None).unwrap();
    let fuzz = debt(
        &mut s,
        "review",
        "parser",
        "Fuzz the tokenizer for an hour",
        "cargo fuzz, one hour.",
    );
    resolve_message(&mut s[at("parser")], &fuzz, Some("no crash".into())).unwrap();
    reopen_message(
        &mut s[at("review")],
        &fuzz,
        Some("it ran 5 minutes, not an hour".into()),
    )
    .unwrap();
    let dark = debt(
        &mut s,
        "lead",
        "web",
        "Dark mode for the board",
        "Follow the system setting.",
    );
    set_work_status(&mut s[at("web")], &dark, "done_local", None, None).unwrap();
    // The lead checked it too: done on both sides, the debt still open.
    set_work_status(&mut s[at("lead")], &dark, "done", None, None).unwrap();
    let proxy = debt(
        &mut s,
        "lead",
        "web",
        "Publish the board behind the company proxy",
        "Under /countersign, with TLS.",
    );
    set_work_status(
        &mut s[at("web")],
        &proxy,
        "blocked",
        Some("waiting for IT to open port 443 on the proxy".into()),
        None,
    )
    .unwrap();

    let vote = |s: &mut [Session], key: &str, topic: &str| {
        let mut req = SendRequest::new("*", topic, "Agree or reject by Friday.");
        req.kind = Some("proc".into());
        req.pin_key = Some(Some(key.into()));
        req.about_message_id = Some(None);
        req.voters = Some(Some(ToArg::One("*".into())));
        send_message(&mut s[at("lead")], req).unwrap().id
    };
    let style = vote(&mut s, "style", "House style: short sentences, no jargon");
    for r in ["parser", "storage", "web", "docs", "review"] {
        acknowledge(&mut s[at(r)], &style, "agree", None, None).unwrap();
    }
    pin_set(
        &mut s[at("lead")],
        PinRequest {
            key: "style".into(),
            title: "House style".into(),
            version: "v2".into(),
            body: "Short sentences. No jargon. Say who must act.\n".into(),
            body_ref: None,
            approved_by: Some(style),
            dry_run: false,
        },
    )
    .unwrap();
    let ports = vote(&mut s, "ports", "Serve the board on port 8417 by default");
    acknowledge(&mut s[at("web")], &ports, "agree", None, None).unwrap();
    acknowledge(&mut s[at("storage")], &ports, "agree", None, None).unwrap();
    acknowledge(
        &mut s[at("review")],
        &ports,
        "reject",
        Some("8417 is taken on CI".into()),
        None,
    )
    .unwrap();
    send(
        &mut s[at("web")],
        "review",
        "مرحبا",
        "نص من اليمين إلى اليسار في المقتطف",
    );

    std::os::unix::fs::symlink("/etc/hostname", local.dir.join("feeds").join(HOSTILE_FILE))
        .unwrap();
    drop(s);
    local
}

#[test]
fn every_piece_of_peer_text_keeps_its_own_direction() {
    let local = realistic();
    let html = page::render(&board_of(&local));
    // Every place the right-to-left topic shows, it is isolated in its own
    // direction: a cell or span with dir="auto", or a <bdi>.
    let shown: Vec<usize> = html.match_indices(RTL_TOPIC).map(|(i, _)| i).collect();
    assert!(shown.len() >= 2, "in the debts and in the activity");
    for at in shown {
        let before = &html[..at];
        assert!(
            before.ends_with("dir=\"auto\">") || before.ends_with("<bdi>"),
            "{}",
            &before[before.len() - 80..]
        );
    }
    // Role names too, wherever a row names them.
    assert!(html.contains("<bdi>review</bdi> → <bdi>docs</bdi>"));
    // The page's own palette follows the system's, with a dark one.
    assert!(html.contains("color-scheme: light dark"));
    assert!(html.contains("@media (prefers-color-scheme: dark)"));
}

/// Headless Chromium driven over its DevTools protocol on a pipe (fds 3
/// and 4, set up by `sh`: no socket, nothing else can reach it), with one
/// page open. Killed when dropped.
struct Browser {
    child: Child,
    to: ChildStdin,
    from: BufReader<ChildStdout>,
    next: u64,
    session: Option<String>,
    events: Vec<Value>,
}

impl Browser {
    /// A browser with a fresh profile in `profile`, one page of `width` ×
    /// `height` CSS px (a phone's below 700), in `dark` or light mode.
    fn open(profile: &Path, width: u32, height: u32, dark: bool) -> Self {
        let mut child = Command::new("sh")
            .args([
                "-c",
                r#"exec timeout 120 "$0" "$@" 3<&0 4>&1 </dev/null >/dev/null"#,
                require_chromium(),
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--hide-scrollbars",
                "--remote-debugging-pipe",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromium runs");
        let to = child.stdin.take().unwrap();
        let from = BufReader::new(child.stdout.take().unwrap());
        let mut b = Self {
            child,
            to,
            from,
            next: 0,
            session: None,
            events: Vec::new(),
        };
        let target = b.call("Target.createTarget", json!({"url": "about:blank"}));
        let attached = b.call(
            "Target.attachToTarget",
            json!({"targetId": target["targetId"], "flatten": true}),
        );
        b.session = Some(attached["sessionId"].as_str().unwrap().to_owned());
        b.call("Page.enable", json!({}));
        b.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 700}),
        );
        b.call(
            "Emulation.setEmulatedMedia",
            json!({"features": [{"name": "prefers-color-scheme",
                                 "value": if dark { "dark" } else { "light" }}]}),
        );
        b
    }

    /// Sends one command to the page (or the browser before a page is
    /// attached) and waits for its answer; events met meanwhile are kept.
    fn call(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        let mut msg = json!({"id": id, "method": method, "params": params});
        if let Some(s) = &self.session {
            msg["sessionId"] = json!(s);
        }
        let mut bytes = serde_json::to_vec(&msg).unwrap();
        bytes.push(0);
        self.to.write_all(&bytes).unwrap();
        self.to.flush().unwrap();
        loop {
            let m = self.read();
            if m["id"] == json!(id) {
                assert!(m.get("error").is_none(), "{method}: {m}");
                return m["result"].clone();
            }
            self.events.push(m);
        }
    }

    fn read(&mut self) -> Value {
        let mut buf = Vec::new();
        let n = self.from.read_until(0, &mut buf).unwrap();
        assert!(n > 0, "chromium closed its pipe");
        buf.pop();
        serde_json::from_slice(&buf).unwrap()
    }

    /// Opens `url` and waits for its load event.
    fn go(&mut self, url: &str) {
        self.events.clear();
        self.call("Page.navigate", json!({"url": url}));
        while !self
            .events
            .iter()
            .any(|e| e["method"] == "Page.loadEventFired")
        {
            let m = self.read();
            self.events.push(m);
        }
    }

    /// The value of a JavaScript expression in the page.
    fn eval(&mut self, expr: &str) -> Value {
        let r = self.call(
            "Runtime.evaluate",
            json!({"expression": expr, "returnByValue": true}),
        );
        assert!(r.get("exceptionDetails").is_none(), "{expr}: {r}");
        r["result"]["value"].clone()
    }

    /// Waits up to `secs` for `expr` to be true.
    fn until(&mut self, expr: &str, secs: u64) -> bool {
        let end = Instant::now() + Duration::from_secs(secs);
        while Instant::now() < end {
            if self.eval(expr) == json!(true) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        false
    }

    /// A screenshot of the whole page (beyond the viewport), or of its top
    /// `max_height` px, into `path`.
    fn screenshot(&mut self, path: &Path, max_height: Option<u64>) {
        let mut size = self.call("Page.getLayoutMetrics", json!({}))["cssContentSize"].clone();
        if let Some(max) = max_height {
            size["height"] = json!(size["height"].as_f64().unwrap().min(max as f64));
        }
        let shot = self.call(
            "Page.captureScreenshot",
            json!({"format": "png", "captureBeyondViewport": true,
                   "clip": {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}}),
        );
        let png = base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().unwrap())
            .unwrap();
        assert!(
            png.starts_with(b"\x89PNG") && png.len() > 20_000,
            "{} bytes",
            png.len()
        );
        std::fs::write(path, png).unwrap();
        println!("board screenshot: {}", path.display());
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What the page looks like, measured in the browser.
const LAYOUT: &str = r#"(() => {
  const topic = [...document.querySelectorAll("td.topic")].find(e => e.textContent.includes("תרגום"));
  const times = [...document.querySelectorAll("td time")];
  return {
    scroll: document.documentElement.scrollWidth,
    inner: innerWidth,
    body: getComputedStyle(document.body).backgroundColor,
    ink: getComputedStyle(document.body).color,
    row: getComputedStyle(document.querySelector("tr.debt")).display,
    roles: Math.round(document.querySelector(".cards").getBoundingClientRect().height),
    wrapped: times.filter(t => t.getClientRects().length > 1).map(t => t.textContent),
    times: times.length,
    rtl_dir: topic && topic.getAttribute("dir"),
    rtl_direction: topic && getComputedStyle(topic).direction,
    rtl_text: topic && topic.textContent,
    scripts: document.querySelectorAll("script").length,
    strip: (() => {
      const s = document.getElementById("attention");
      if (!s) return null;
      const r = s.getBoundingClientRect();
      return { top: Math.round(r.top), width: Math.round(r.width), height: Math.round(r.height),
               visible: getComputedStyle(s).display !== "none" && getComputedStyle(s).visibility === "visible",
               items: [...s.querySelectorAll("li .what")].map(e => e.textContent),
               round: s.querySelector("li.contested a.id") && s.querySelector("li.contested a.id").href };
    })(),
    badge: document.querySelector("header #alarm-count") && document.querySelector("header #alarm-count").textContent,
  };
})()"#;

/// What a page below the board looks like, measured in the browser.
const DETAIL_LAYOUT: &str = r#"(() => ({
  scroll: document.documentElement.scrollWidth,
  inner: innerWidth,
  body: getComputedStyle(document.body).backgroundColor,
  viewport: !!document.querySelector('meta[name="viewport"]'),
  h1_dir: document.querySelector("h1") && document.querySelector("h1").getAttribute("dir"),
  text_dir: document.querySelector("pre.body") && document.querySelector("pre.body").getAttribute("dir"),
  row: document.querySelector("tr.move, tr.vote") && getComputedStyle(document.querySelector("tr.move, tr.vote")).display,
}))()"#;

/// Also writes the screenshots docs/ shows (`docs-board.png` and
/// `docs-board-phone.png` in the test output are docs/board.png and
/// docs/board-phone.png).
#[test]
fn the_board_fits_a_desktop_and_a_phone_in_light_and_dark() {
    let local = realistic();
    let server = BoardServer::start(&local);
    let tmp = tempfile::tempdir().unwrap();
    for (name, width, dark) in [
        ("board.png", 1400, false),
        ("board-phone.png", 390, false),
        ("board-dark.png", 1400, true),
        ("board-phone-dark.png", 390, true),
    ] {
        let mut b = Browser::open(&tmp.path().join(name), width, 900, dark);
        b.go(&server.link().url);
        b.screenshot(&output_dir().join(name), None);
        if !dark {
            // The top of the page, as docs/ shows it.
            let top = if width < 700 { 1200 } else { 1600 };
            b.screenshot(&output_dir().join(format!("docs-{name}")), Some(top));
        }
        let m = b.eval(LAYOUT);
        let what = format!("{name}: {m}");
        // No sideways scroll: the page is exactly as wide as the screen.
        assert_eq!(m["scroll"], json!(width), "{what}");
        assert_eq!(m["inner"], json!(width), "{what}");
        // Each palette, from the system's colour scheme.
        let (page, ink) = if dark {
            ("rgb(13, 17, 23)", "rgb(230, 237, 243)")
        } else {
            ("rgb(246, 248, 250)", "rgb(31, 35, 40)")
        };
        assert_eq!(
            (m["body"].as_str(), m["ink"].as_str()),
            (Some(page), Some(ink)),
            "{what}"
        );
        if width < 700 {
            // Rows are cards; the six roles are a row of chips, not screens
            // of cards.
            assert_eq!(m["row"], "flex", "{what}");
            assert!(m["roles"].as_u64().unwrap() < 60, "{what}");
        } else {
            assert_eq!(m["row"], "table-row", "{what}");
        }
        // Short columns never break ("4 / d").
        assert!(m["times"].as_u64().unwrap() > 20, "{what}");
        assert_eq!(m["wrapped"], json!([]), "{what}");
        // The right-to-left topic keeps its own order, in its own direction.
        assert_eq!(m["rtl_dir"], "auto", "{what}");
        assert_eq!(m["rtl_direction"], "rtl", "{what}");
        assert_eq!(m["rtl_text"], RTL_TOPIC, "{what}");
        assert_eq!(m["scripts"], 1, "{what}");
        // The strip opens the page, in view, with what the channel holds:
        // a task blocked on a person, a contested round, work done on both
        // sides; the alarm's count is in the header the script swaps.
        let strip = &m["strip"];
        assert_eq!(strip["visible"], true, "{what}");
        assert!(strip["height"].as_i64().unwrap() > 60, "{what}");
        assert!(strip["top"].as_i64().unwrap() < 200, "{what}");
        assert!(
            strip["width"].as_i64().unwrap() <= i64::from(width),
            "{what}"
        );
        for item in ["blocked on a person", "contested", "done, still open"] {
            assert!(
                strip["items"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|i| i.as_str().unwrap().contains(item)),
                "{item}: {what}"
            );
        }
        assert_eq!(m["badge"], "1 alarm", "{what}");
        if width < 700 {
            // The contested round's page, reached from the strip, fits the
            // phone too (its votes as cards), in the same palette.
            let url = strip["round"].as_str().unwrap().to_owned();
            b.go(&url);
            if !dark {
                b.screenshot(&output_dir().join("board-detail-phone.png"), None);
            }
            let d = b.eval(DETAIL_LAYOUT);
            let what = format!("{name} {url}: {d}");
            assert_eq!(d["scroll"], json!(width), "{what}");
            assert_eq!(d["inner"], json!(width), "{what}");
            assert_eq!(d["body"], page, "{what}");
            assert_eq!(d["viewport"], true, "{what}");
            assert_eq!(d["h1_dir"], "auto", "{what}");
            assert_eq!(d["text_dir"], "auto", "{what}");
            assert_eq!(d["row"], "flex", "{what}");
        }
    }
}

#[test]
fn times_move_on_and_a_stopped_server_shows_since_when() {
    let local = realistic();
    let server = BoardServer::start(&local);
    let tmp = tempfile::tempdir().unwrap();
    let mut b = Browser::open(&tmp.path().join("p"), 1400, 900, false);
    b.go(&server.link().url);
    let header = "document.querySelector('header').textContent";
    assert!(
        b.until(&format!("{header}.includes('live')"), 20),
        "the event stream opened: {}",
        b.eval(header)
    );
    assert!(b.eval(header).as_str().unwrap().contains("read just now"));

    // Five minutes later (as the page's clock tells), without any change in
    // the channel: the page says so, when it next looks at the time.
    b.eval(
        "(() => { const real = Date.now; Date.now = () => real() + 5 * 60000; \
         document.dispatchEvent(new Event('visibilitychange')); })()",
    );
    let text = b.eval(header);
    assert!(text.as_str().unwrap().contains("read 5 min ago"), "{text}");
    let sent = b.eval("document.querySelector('tr.debt td time.ago').textContent");
    assert_eq!(sent, "5 min ago");

    // The server stops: the header says so, in words and with the time.
    drop(server);
    assert!(
        b.until(&format!("{header}.includes('disconnected since')"), 20),
        "{}",
        b.eval(header)
    );
    let live = b.eval(
        "(() => { const e = document.getElementById('live'); \
         return [e.textContent, e.className, getComputedStyle(e).fontSize]; })()",
    );
    let text = live[0].as_str().unwrap();
    let hhmm = &text["disconnected since ".len()..][..5];
    assert!(
        hhmm.as_bytes()[2] == b':' && hhmm.replace(':', "").parse::<u32>().is_ok(),
        "{live}"
    );
    assert_eq!(live[1], "meta live down", "{live}");
    assert_eq!(live[2], "14px", "not a small grey note: {live}");
}
