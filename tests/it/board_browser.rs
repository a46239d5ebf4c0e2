//! The board in a real browser: headless Chromium (Debian's `chromium`,
//! which .ci/run installs) follows a link to a real `countersign serve`,
//! takes a screenshot into the test output and dumps the DOM it built.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::board::{HOSTILE_FILE, HOSTILE_TOPIC, PERSON_NOTE, scene};
use crate::board_http::BoardServer;

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
        ("an open debt", "<td class=\"topic\">ship the parser</td>"),
        ("a pin", "<code>style</code>"),
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
