//! The board over real HTTP: a real `countersign serve` process on a free
//! port, reached with a plain HTTP client. Links, cookies, keys and
//! refusals; the event stream and its end on revocation.

use std::io::{BufRead as _, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use countersign::app::board::issue_link;
use countersign::store::access::{Access, ChannelRef};
use countersign::store::now_ms;
use countersign::store::{ChannelDir, Home};

use crate::board::scene;
use crate::common::bin;
use crate::common::local::{Local, send};

/// A link as the tests follow it: the full URL and the key behind it.
pub struct BoardLink {
    pub url: String,
    pub key_id: String,
    pub view_key: String,
}

/// The headers every board answer carries.
const SECURITY_HEADERS: [(&str, &str); 5] = [
    (
        "content-security-policy",
        "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; \
         img-src data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; \
         form-action 'none'",
    ),
    ("referrer-policy", "no-referrer"),
    ("x-content-type-options", "nosniff"),
    ("cache-control", "no-store"),
    ("x-frame-options", "DENY"),
];

/// A `countersign serve --channel DIR` process on a free loopback port,
/// stopped when dropped.
pub struct BoardServer {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    home: std::path::PathBuf,
    channel: ChannelRef,
}

impl BoardServer {
    /// Serves `local`'s channel with its home.
    pub fn start(local: &Local) -> Self {
        let mut child = Command::new(bin())
            .env("COUNTERSIGN_HOME", local.home_root())
            .env_remove("COUNTERSIGN_ADMIN_TOKEN")
            .env_remove("COUNTERSIGN_CHANNEL")
            .args(["serve", "--listen", "127.0.0.1:0", "--channel"])
            .arg(&local.dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("countersign serve starts");
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let first = lines.next().expect("serve says where it listens").unwrap();
        // Keep reading its log, so the pipe never fills.
        std::thread::spawn(move || for _ in lines.map_while(Result::ok) {});
        let at = first
            .find("http://")
            .unwrap_or_else(|| panic!("no address: {first}"));
        let base: String = first[at..]
            .chars()
            .take_while(|c| !c.is_whitespace())
            .collect();
        let dir = ChannelDir::open(&local.dir).unwrap();
        Self {
            child,
            base,
            home: local.home_root(),
            channel: ChannelRef {
                id: dir.id().to_owned(),
                name: dir.genesis().name.clone(),
            },
        }
    }

    /// The home's access store, as `countersign board` opens it.
    pub fn access(&self) -> Access {
        Access::open(&Home::at(self.home.clone()).access_db()).unwrap()
    }

    /// A fresh link to the board, as `countersign board` issues it.
    pub fn link(&self) -> BoardLink {
        let link = issue_link(&self.access(), &self.channel, "board", "cli", now_ms()).unwrap();
        BoardLink {
            url: format!("{}{}", self.base, link.path),
            key_id: link.key_id,
            view_key: link.view_key,
        }
    }

    /// The board page's URL.
    pub fn page(&self) -> String {
        format!("{}/board/{}", self.base, self.channel.name)
    }

    /// Follows `link` once and returns the cookie it set
    /// (`cs_board_<server>_<channel>=…`).
    pub fn cookie(&self, link: &BoardLink) -> String {
        let r = get(&link.url, &[]);
        assert_eq!(r.status, 303, "{}", r.body);
        r.header("set-cookie").split(';').next().unwrap().to_owned()
    }
}

impl Drop for BoardServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One answer, read whole.
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Answer {
    pub fn header(&self, name: &str) -> &str {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
            .unwrap_or_else(|| panic!("no {name} header: {:?}", self.headers))
    }

    pub fn assert_secured(&self) {
        for (name, value) in SECURITY_HEADERS {
            assert_eq!(self.header(name), value, "{name}");
        }
    }

    pub fn assert_html(&self, status: u16, needle: &str) {
        assert_eq!(self.status, status, "{}", self.body);
        assert_eq!(self.header("content-type"), "text/html; charset=utf-8");
        assert!(self.body.contains(needle), "{needle} not in {}", self.body);
        self.assert_secured();
    }
}

fn agent(timeout: Option<Duration>) -> ureq::Agent {
    ureq::Agent::config_builder()
        .max_redirects(0)
        .http_status_as_error(false)
        .timeout_global(timeout)
        .build()
        .new_agent()
}

/// `GET url` with extra headers, never following a redirect.
pub fn get(url: &str, headers: &[(&str, &str)]) -> Answer {
    let mut req = agent(Some(Duration::from_secs(20))).get(url);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let mut r = req.call().unwrap();
    Answer {
        status: r.status().as_u16(),
        headers: r
            .headers()
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_owned()))
            .collect(),
        body: r.body_mut().read_to_string().unwrap_or_default(),
    }
}

/// Opens the event stream with `headers`; its lines arrive on the
/// receiver, which is closed when the stream ends.
fn events(url: &str, headers: &[(&str, &str)]) -> (u16, mpsc::Receiver<String>) {
    let mut req = agent(None).get(url);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let r = req.call().unwrap();
    let status = r.status().as_u16();
    let (tx, rx) = mpsc::channel();
    let reader = BufReader::new(r.into_body().into_reader());
    std::thread::spawn(move || {
        for line in reader.lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    (status, rx)
}

/// Waits up to `within` for a line starting with `prefix`.
fn wait_line(rx: &mpsc::Receiver<String>, prefix: &str, within: Duration) -> Option<String> {
    let until = Instant::now() + within;
    loop {
        let left = until.checked_duration_since(Instant::now())?;
        match rx.recv_timeout(left) {
            Ok(line) if line.starts_with(prefix) => return Some(line),
            Ok(_) => {}
            Err(_) => return None,
        }
    }
}

fn bearer(secret: &str) -> String {
    format!("Bearer {secret}")
}

fn page_has_the_board(body: &str) {
    assert!(body.starts_with("<!DOCTYPE html>"), "{body}");
    assert!(body.contains("ship the parser"), "{body}");
}

#[test]
fn a_link_is_exchanged_once_for_a_cookie_that_opens_the_page() {
    let sc = scene();
    let server = BoardServer::start(&sc.local);
    let link = server.link();
    assert!(
        link.url
            .starts_with(&format!("{}/board/local?n=csn_", server.base))
    );

    let first = get(&link.url, &[]);
    assert_eq!(first.status, 303, "{}", first.body);
    assert_eq!(first.header("location"), "/board/local");
    first.assert_secured();
    let set = first.header("set-cookie");
    assert!(
        set.starts_with("cs_board_") && set.contains("_local=csb_"),
        "{set}"
    );
    for attribute in ["HttpOnly", "SameSite=Strict", "Path=/board/local"] {
        assert!(
            set.split("; ").any(|a| a == attribute),
            "{attribute} missing: {set}"
        );
    }
    assert!(!set.contains("Secure"), "plain http on loopback: {set}");
    let cookie = set.split(';').next().unwrap();

    let page = get(&server.page(), &[("Cookie", cookie)]);
    page.assert_html(200, "ship the parser");
    page_has_the_board(&page.body);

    // The link works once.
    get(&link.url, &[]).assert_html(401, "new link");
    // Behind a TLS proxy the cookie is Secure.
    let tls = get(&server.link().url, &[("X-Forwarded-Proto", "https")]);
    assert!(tls.header("set-cookie").ends_with("; Secure"));
}

#[test]
fn an_expired_link_and_a_made_up_one_are_refused() {
    let sc = scene();
    let server = BoardServer::start(&sc.local);
    let link = server.link();
    let access = server.access();
    // A nonce made 61 s ago for the same key: past its 60 s.
    let stale = access
        .create_nonce(&link.key_id, now_ms() - 61_000)
        .unwrap();
    get(&format!("{}?n={stale}", server.page()), &[]).assert_html(401, "60 seconds");
    get(&format!("{}?n=csn_{}", server.page(), "0".repeat(64)), &[]).assert_html(401, "new link");
    // No key at all.
    get(&server.page(), &[]).assert_html(401, "private");
    // The fresh link still works.
    assert_eq!(get(&link.url, &[]).status, 303);
}

#[test]
fn only_a_view_key_of_this_channel_opens_its_board() {
    let sc = scene();
    let server = BoardServer::start(&sc.local);
    let link = server.link();
    let access = server.access();

    // The view key itself, as a bearer.
    let page = get(
        &server.page(),
        &[("Authorization", &bearer(&link.view_key))],
    );
    page.assert_html(200, "ship the parser");

    // A role token of this very channel: never.
    let (token, _) = access
        .create_role_token(&server.channel, "alpha", "", now_ms())
        .unwrap();
    get(&server.page(), &[("Authorization", &bearer(&token))])
        .assert_html(403, "never open a board");
    get(
        &format!("{}/events", server.page()),
        &[("Authorization", &bearer(&token))],
    )
    .assert_html(403, "never open a board");

    // A view key of another channel.
    let other = ChannelRef {
        id: "0".repeat(64),
        name: "other".into(),
    };
    let (foreign, _) = access
        .create_view_key(&other, "board", "cli", Duration::from_secs(3600), now_ms())
        .unwrap();
    get(&server.page(), &[("Authorization", &bearer(&foreign))])
        .assert_html(403, "channel &#39;other&#39; only");
    // And this channel's cookie on another board's address: it is not
    // that board's cookie (each board has its own name), so it is no sign-in.
    let cookie = server.cookie(&server.link());
    get(
        &format!("{}/board/other", server.base),
        &[("Cookie", cookie.as_str())],
    )
    .assert_html(401, "private");
    // A view key is no role token either.
    let mcp = get(
        &format!("{}/mcp", server.base),
        &[("Authorization", &bearer(&link.view_key))],
    );
    assert_eq!(mcp.status, 403, "{}", mcp.body);
}

#[test]
fn the_event_stream_says_when_the_channel_changes() {
    let sc = scene();
    let server = BoardServer::start(&sc.local);
    let cookie = server.cookie(&server.link());
    let url = format!("{}/events", server.page());
    let (status, rx) = events(&url, &[("Cookie", cookie.as_str())]);
    assert_eq!(status, 200);
    // The stream is open once the server has answered; give its watcher a
    // moment, then write.
    std::thread::sleep(Duration::from_millis(300));
    let mut a = sc.local.session("alpha");
    let sent = Instant::now();
    send(&mut a, "beta", "a fresh topic", "x");
    let line = wait_line(&rx, "event: change", Duration::from_secs(5));
    assert!(line.is_some(), "no change event");
    let took = sent.elapsed();
    assert!(took < Duration::from_secs(1), "the change took {took:?}");
    // The page then shows it.
    let page = get(&server.page(), &[("Cookie", cookie.as_str())]);
    assert!(page.body.contains("a fresh topic"));
}

#[test]
fn revoking_the_channels_keys_ends_pages_and_streams() {
    let sc = scene();
    let server = BoardServer::start(&sc.local);
    let link = server.link();
    let cookie = server.cookie(&link);
    let unused = server.link();
    let (status, rx) = events(
        &format!("{}/events", server.page()),
        &[("Cookie", cookie.as_str())],
    );
    assert_eq!(status, 200);
    assert_eq!(
        get(&server.page(), &[("Cookie", cookie.as_str())]).status,
        200
    );

    // What revoke_board_access does: every view key of the channel ends.
    let revoked = server
        .access()
        .revoke_view_keys(&server.channel.id, now_ms())
        .unwrap();
    assert_eq!(revoked.len(), 2, "{revoked:?}");
    let at = Instant::now();

    // The open stream ends (its receiver closes) within about a second.
    loop {
        match rx.recv_timeout(Duration::from_secs(5)) {
            Ok(_) => continue,
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => panic!("the stream is still open"),
        }
    }
    assert!(at.elapsed() < Duration::from_secs(3), "{:?}", at.elapsed());
    get(&server.page(), &[("Cookie", cookie.as_str())]).assert_html(401, "ended");
    get(
        &server.page(),
        &[("Authorization", &bearer(&link.view_key))],
    )
    .assert_html(401, "revoked");
    get(&unused.url, &[]).assert_html(401, "revoked");
}
