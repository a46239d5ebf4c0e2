//! Board access as an outsider meets it: real `countersign serve` processes
//! on loopback, a browser's cookie jar (which ignores ports, as browsers
//! do), the real CLI, and processes squatting or relaying the port
//! `countersign board` expects.
//!
//! Each case once went wrong: a revoked token's board stayed open, a
//! one-channel server's boards could not be ended at all, one cookie served
//! every board of the host, and `countersign board` handed its link to
//! anything answering `{"ok":true}` on `/healthz`.

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::Output;

use countersign::store::access::public_id;
use serde_json::json;

use crate::board_http::get;
use crate::common::TestChannel;
use crate::common::serve::Served;

const ADMIN: &str = "admin-token-for-board-tests-0123456789";

/// A browser's cookies, by name and path, for one host: ports play no part
/// (RFC 6265 §8.5), so servers on two ports of 127.0.0.1 share this jar.
#[derive(Default)]
struct Jar(Vec<(String, String, String)>);

impl Jar {
    /// Keeps the cookie of a `Set-Cookie` answer (replacing one of the same
    /// name and path).
    fn keep(&mut self, set_cookie: &str) {
        let mut parts = set_cookie.split(';').map(str::trim);
        let (name, value) = parts.next().unwrap().split_once('=').unwrap();
        let path = parts
            .find_map(|a| a.strip_prefix("Path="))
            .unwrap_or("/")
            .to_owned();
        self.0.retain(|(n, p, _)| !(n == name && *p == path));
        self.0.push((name.to_owned(), path, value.to_owned()));
    }

    /// The `Cookie` header a browser sends for `path`.
    fn header(&self, path: &str) -> String {
        self.0
            .iter()
            .filter(|(_, p, _)| {
                path == p || path.starts_with(&format!("{}/", p.trim_end_matches('/')))
            })
            .map(|(n, _, v)| format!("{n}={v}"))
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// Follows a one-time link (`base` + `path`) as a browser does: the 303
    /// sets the cookie. Returns the `Set-Cookie` header.
    fn follow(&mut self, base: &str, path: &str) -> String {
        let r = get(&format!("{base}{path}"), &[]);
        assert_eq!(r.status, 303, "{}", r.body);
        let set = r.header("set-cookie").to_owned();
        self.keep(&set);
        set
    }

    /// The status of the board page `base/board/<channel>` with this jar.
    fn page(&self, base: &str, channel: &str) -> u16 {
        let path = format!("/board/{channel}");
        let cookie = self.header(&path);
        get(&format!("{base}{path}"), &[("Cookie", cookie.as_str())]).status
    }
}

fn base(served: &Served) -> String {
    served.url("")
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn role_token(ch: &TestChannel, role: &str) -> String {
    ok(&ch.cli(&["--role", role, "token", "create"]))
        .trim()
        .to_owned()
}

fn serve_one(ch: &TestChannel) -> Served {
    Served::start(&ch.home, &["--channel", ch.dir.to_str().unwrap()], &[])
}

/// `countersign board --no-open --listen ADDR`: the link it prints.
fn board_link(ch: &TestChannel, listen: SocketAddr) -> Output {
    ch.cli(&["board", "--no-open", "--listen", &listen.to_string()])
}

#[tokio::test]
async fn revoking_a_token_ends_the_boards_it_opened_on_a_one_channel_server() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let (revoked, kept) = (role_token(&ch, "frontend"), role_token(&ch, "frontend"));
    let served = serve_one(&ch);
    let mut links = Vec::new();
    for token in [&revoked, &kept] {
        let client = served.client(token).await;
        let link = client.call("board_link", json!({})).await.ok();
        client.close().await;
        links.push(link["url"].as_str().unwrap().to_owned());
    }
    let (mut first, mut second) = (Jar::default(), Jar::default());
    first.follow(&base(&served), &links[0]);
    second.follow(&base(&served), &links[1]);
    assert_eq!(first.page(&base(&served), "test"), 200);

    let said = ok(&ch.cli(&["token", "revoke", &public_id(&revoked)]));
    assert_eq!(
        first.page(&base(&served), "test"),
        401,
        "the revoked token's board is still open"
    );
    assert!(said.contains("1 view key(s)"), "{said}");
    assert!(served.try_client(&revoked).await.is_err());
    // The same role's other token, and the board it opened, stand.
    assert_eq!(second.page(&base(&served), "test"), 200);
}

#[test]
fn board_revoke_ends_every_view_key_of_the_channel_and_token_list_shows_them() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let served = serve_one(&ch);
    let url = ok(&board_link(&ch, served.addr)).trim().to_owned();
    let path = url.strip_prefix(&base(&served)).expect("a link to it");
    let mut jar = Jar::default();
    jar.follow(&base(&served), path);
    assert_eq!(jar.page(&base(&served), "test"), 200);

    let listed = ok(&ch.cli(&["token", "list"]));
    let line = listed
        .lines()
        .find(|l| l.contains("view key"))
        .unwrap_or_else(|| panic!("no view key listed: {listed}"));
    assert!(line.contains("test") && line.contains("by cli"), "{line}");
    assert!(!line.contains("revoked"), "{line}");

    let said = ok(&ch.cli(&["board", "--revoke"]));
    assert!(said.contains("ended 1 view key(s)"), "{said}");
    assert_eq!(
        jar.page(&base(&served), "test"),
        401,
        "the board is still open"
    );
    let listed = ok(&ch.cli(&["token", "list"]));
    assert!(
        listed
            .lines()
            .any(|l| l.contains("view key") && l.contains("revoked")),
        "{listed}"
    );
    // Nothing is left to end, and saying so is no failure.
    assert!(ok(&ch.cli(&["board", "--revoke"])).contains("ended 0 view key(s)"));
}

#[tokio::test]
async fn boards_of_two_channels_on_one_server_stay_open_side_by_side() {
    let tmp = tempfile::tempdir().unwrap();
    let channels = tmp.path().join("channels");
    std::fs::create_dir(&channels).unwrap();
    let served = Served::start(
        &tmp.path().join("home"),
        &["--channels-dir", channels.to_str().unwrap()],
        &[("COUNTERSIGN_ADMIN_TOKEN", ADMIN)],
    );
    let admin = served.client(ADMIN).await;
    let mut jar = Jar::default();
    let mut set = Vec::new();
    for name in ["one", "two"] {
        admin
            .call("create_channel", json!({"name": name, "roles": ["a", "b"]}))
            .await
            .ok();
        let link = admin
            .call("board_link", json!({"channel": name}))
            .await
            .ok();
        set.push(jar.follow(&base(&served), link["url"].as_str().unwrap()));
    }
    admin.close().await;
    assert_eq!(
        jar.page(&base(&served), "one"),
        200,
        "opening two closed one"
    );
    assert_eq!(jar.page(&base(&served), "two"), 200);
    for (name, set) in ["one", "two"].into_iter().zip(set) {
        let cookie = set.split(';').next().unwrap();
        assert!(
            cookie.starts_with("cs_board_") && cookie.contains(&format!("_{name}=csb_")),
            "the cookie's name does not carry the channel: {set}"
        );
        assert!(
            set.split("; ").any(|a| a == format!("Path=/board/{name}")),
            "{set}"
        );
    }
}

#[test]
fn boards_of_two_servers_on_one_host_stay_open_side_by_side_and_across_a_restart() {
    let (ch1, ch2) = (
        TestChannel::new(&["frontend", "backend"]),
        TestChannel::new(&["frontend", "backend"]),
    );
    let (s1, s2) = (serve_one(&ch1), serve_one(&ch2));
    let mut jar = Jar::default();
    for (ch, s) in [(&ch1, &s1), (&ch2, &s2)] {
        let url = ok(&board_link(ch, s.addr)).trim().to_owned();
        jar.follow(&base(s), url.strip_prefix(&base(s)).unwrap());
    }
    // Both channels are named `test`, on two ports of 127.0.0.1.
    assert_eq!(
        jar.page(&base(&s1), "test"),
        200,
        "the second server's cookie replaced the first's"
    );
    assert_eq!(jar.page(&base(&s2), "test"), 200);

    // The same server started again on its address keeps its cookie's name.
    let addr = s1.addr;
    s1.stop();
    let again = Served::start(
        &ch1.home,
        &[
            "--channel",
            ch1.dir.to_str().unwrap(),
            "--listen",
            &addr.to_string(),
        ],
        &[],
    );
    assert_eq!(jar.page(&base(&again), "test"), 200);
}

/// Answers every request on a port of its own with `{"ok":true}` and a
/// made-up proof, as a process squatting the board's port could.
fn squatter() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && conn.read(&mut byte).unwrap_or(0) == 1 {
                head.push(byte[0]);
            }
            let body = format!(r#"{{"ok":true,"proof":"{}"}}"#, "0".repeat(64));
            let _ = write!(
                conn,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
                 Connection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    addr
}

/// Relays every connection on a port of its own to `to`, byte for byte: a
/// process on the expected port forwarding to the real server elsewhere.
fn relay(to: SocketAddr) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(inbound) = conn else { continue };
            let Ok(outbound) = TcpStream::connect(to) else {
                continue;
            };
            let (mut a, mut b) = (inbound.try_clone().unwrap(), outbound.try_clone().unwrap());
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut a, &mut b);
                let _ = b.shutdown(std::net::Shutdown::Write);
            });
            let (mut a, mut b) = (outbound, inbound);
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut a, &mut b);
                let _ = b.shutdown(std::net::Shutdown::Write);
            });
        }
    });
    addr
}

fn refused_without_a_link(out: &Output) {
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(!out.status.success(), "a link was handed out: {stdout}");
    assert!(!stdout.contains("csn_"), "{stdout}");
    assert!(stderr.contains("gets no link"), "{stderr}");
}

#[test]
fn board_hands_no_link_to_a_port_squatter() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    refused_without_a_link(&board_link(&ch, squatter()));
    // No view key was made for it either.
    let listed = ok(&ch.cli(&["token", "list"]));
    assert!(!listed.contains("view key"), "{listed}");
}

#[test]
fn board_hands_no_link_to_a_relay_of_this_homes_own_server() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let served = serve_one(&ch);
    refused_without_a_link(&board_link(&ch, relay(served.addr)));
    // The server itself, asked on its own address, gets one.
    let url = ok(&board_link(&ch, served.addr));
    assert!(url.contains("/board/test?n=csn_"), "{url}");
}

/// Wrong board cookies from one address wait out their pause after their
/// check, and a good cookie from the same address is answered at once: the
/// board once made every request of an address that kept failing wait
/// before it looked at the key.
#[tokio::test]
async fn wrong_board_cookies_wait_but_a_good_one_from_the_same_address_does_not() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let token = role_token(&ch, "frontend");
    let served = serve_one(&ch);
    let client = served.client(&token).await;
    let link = client.call("board_link", json!({})).await.ok();
    client.close().await;
    let mut jar = Jar::default();
    let set = jar.follow(&base(&served), link["url"].as_str().unwrap());
    let name = set.split('=').next().unwrap().to_owned();
    assert_eq!(jar.page(&base(&served), "test"), 200);
    // Past the free failures: the later wrong ones are held back.
    let url = format!("{}/board/test", base(&served));
    let wrong = format!("{name}=not-a-session");
    let waiting: Vec<_> = (0..8)
        .map(|_| {
            let (url, wrong) = (url.clone(), wrong.clone());
            std::thread::spawn(move || get(&url, &[("Cookie", wrong.as_str())]).status)
        })
        .collect();
    std::thread::sleep(std::time::Duration::from_millis(600));
    let start = std::time::Instant::now();
    assert_eq!(jar.page(&base(&served), "test"), 200);
    let took = start.elapsed();
    assert!(
        took < std::time::Duration::from_millis(200),
        "a good cookie waited {took:?} for another caller's wrong ones"
    );
    for w in waiting {
        assert_eq!(w.join().unwrap(), 401);
    }
}
