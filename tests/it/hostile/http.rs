//! `countersign serve` against callers without a good secret, on loopback:
//! half a request head, a head with part of a body, an idle keep-alive,
//! wrong tokens from the address a good caller uses, made-up
//! `X-Forwarded-For`, and all of them at once while a caller with a token
//! is timed and the server's memory and descriptors are read from /proc.

use std::io::{ErrorKind, Read as _, Write as _};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::common::TestChannel;
use crate::common::serve::{INITIALIZE, Served, post_mcp, token};

/// How long a silent connection may stay open: the server's head timeout
/// (10 s) and room for a busy machine.
const SILENT_AT_MOST: Duration = Duration::from_secs(16);

/// A served channel with a role token.
fn served(extra: &[&str]) -> (TestChannel, Served, String) {
    let tc = TestChannel::new(&["frontend", "backend"]);
    let good = token(&tc.home, &tc.dir, "frontend");
    let mut args = vec!["--channel", tc.dir.to_str().unwrap()];
    args.extend_from_slice(extra);
    let server = Served::start(&tc.home, &args, &[]);
    (tc, server, good)
}

/// A connection to the server with `bytes` written and nothing more.
fn connect(port: u16, bytes: &[u8]) -> TcpStream {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.write_all(bytes).expect("write");
    s
}

/// [`connect`], or nothing when the server does not take the connection
/// (an attacker moves on).
fn try_connect(port: u16, bytes: &[u8]) -> Option<TcpStream> {
    let mut s = TcpStream::connect_timeout(
        &std::net::SocketAddr::from(([127, 0, 0, 1], port)),
        Duration::from_secs(2),
    )
    .ok()?;
    s.set_write_timeout(Some(Duration::from_secs(2))).ok()?;
    let _ = s.write_all(bytes);
    Some(s)
}

/// The head of a POST to /mcp declaring `length` bytes of body.
fn mcp_head(port: u16, bearer: Option<&str>, length: usize, extra: &str) -> String {
    let auth = bearer
        .map(|b| format!("Authorization: Bearer {b}\r\n"))
        .unwrap_or_default();
    format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n{auth}{extra}Content-Length: {length}\r\n\r\n"
    )
}

/// Reads from `s` until the server closes it (returning when, and what it
/// said) or `limit` passes (`None`).
fn closed_within(s: &mut TcpStream, limit: Duration) -> Option<(Duration, String)> {
    let start = Instant::now();
    let mut said = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let left = limit.checked_sub(start.elapsed())?;
        s.set_read_timeout(Some(left.max(Duration::from_millis(1))))
            .unwrap();
        match s.read(&mut buf) {
            Ok(0) => return Some((start.elapsed(), String::from_utf8_lossy(&said).into())),
            Ok(n) => said.extend_from_slice(&buf[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return None;
            }
            Err(_) => return Some((start.elapsed(), String::from_utf8_lossy(&said).into())),
        }
    }
}

/// A good `initialize` call: how long it took to be answered.
fn good_call(port: u16, good: &str) -> Duration {
    let start = Instant::now();
    let r = post_mcp(port, Some(good), &[], INITIALIZE.as_bytes());
    let took = start.elapsed();
    assert_eq!(r.status, 200, "{r:?}");
    assert!(r.body.contains("serverInfo"), "{r:?}");
    took
}

/// A wrong-token call (with `extra` header lines): its status and how long
/// its answer took.
fn wrong_call(port: u16, extra: &str) -> (u16, Duration) {
    let body = INITIALIZE.as_bytes();
    let extra = format!("Connection: close\r\n{extra}");
    let mut s = connect(
        port,
        mcp_head(port, Some("cst_wrong"), body.len(), &extra).as_bytes(),
    );
    let start = Instant::now();
    s.write_all(body).unwrap();
    let (took, said) = closed_within(&mut s, Duration::from_secs(30)).expect("an answer");
    let status = said
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, took.min(start.elapsed()))
}

/// The server's resident memory, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS")
}

/// The file descriptors the server holds.
fn descriptors(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("/proc fd")
        .count()
}

#[test]
fn a_stranger_cannot_hold_a_connection_open() {
    let (_tc, server, _good) = served(&[]);
    let port = server.port();
    // Half a request head.
    let mut half = connect(
        port,
        format!("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n").as_bytes(),
    );
    let half_since = Instant::now();
    // A kept-alive connection, idle after its answer.
    let mut idle = connect(
        port,
        format!("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n").as_bytes(),
    );
    let mut buf = [0u8; 1024];
    idle.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let n = idle.read(&mut buf).expect("the /healthz answer");
    assert!(String::from_utf8_lossy(&buf[..n]).contains("200"));
    let idle_since = Instant::now();
    // A head with part of a 4 MiB body and no token: refused at once, the
    // body unread, the connection closed.
    let mut body = connect(port, mcp_head(port, None, 4 << 20, "").as_bytes());
    let _ = body.write_all(&vec![b' '; 64 << 10]);
    let (took, said) = closed_within(&mut body, Duration::from_secs(5))
        .expect("a tokenless request with a body still coming must be refused and closed");
    assert!(said.starts_with("HTTP/1.1 401"), "{said}");
    assert!(took < Duration::from_secs(5), "{took:?}");

    // Each closed by the head timeout, counted from when it fell silent.
    closed_within(
        &mut half,
        SILENT_AT_MOST.saturating_sub(half_since.elapsed()),
    )
    .expect("half a head must not hold a connection past the head timeout");
    let took = half_since.elapsed();
    assert!(took >= Duration::from_secs(5), "closed too soon: {took:?}");
    closed_within(
        &mut idle,
        SILENT_AT_MOST.saturating_sub(idle_since.elapsed()),
    )
    .expect("an idle keep-alive must end after the head timeout");
    let took = idle_since.elapsed();
    assert!(took >= Duration::from_secs(5), "closed too soon: {took:?}");
}

#[test]
fn wrong_tokens_wait_but_a_good_one_from_the_same_address_does_not() {
    let (_tc, server, good) = served(&[]);
    let port = server.port();
    good_call(port, &good);
    // Sixteen wrong tokens from this address, all at once, their answers
    // not awaited: the address is then past its free failures.
    let body = INITIALIZE.as_bytes();
    let mut pending: Vec<TcpStream> = (0..16)
        .map(|_| {
            let mut s = connect(
                port,
                mcp_head(port, Some("cst_wrong"), body.len(), "").as_bytes(),
            );
            s.write_all(body).unwrap();
            s
        })
        .collect();
    std::thread::sleep(Duration::from_millis(1500));
    let took = good_call(port, &good);
    assert!(
        took < Duration::from_secs(3),
        "a good token waited {took:?} for others' wrong ones"
    );
    // A further wrong one is still held back.
    let mut more = connect(
        port,
        mcp_head(port, Some("cst_wrong"), body.len(), "").as_bytes(),
    );
    more.write_all(body).unwrap();
    assert!(
        closed_within(&mut more, Duration::from_secs(2)).is_none(),
        "a wrong token past the free ones was answered at once"
    );
    pending.push(more);
}

#[test]
fn a_made_up_forwarded_for_does_not_escape_the_pause() {
    // No trusted proxy: every X-Forwarded-For is the caller's own invention.
    let (_tc, server, _good) = served(&[]);
    let port = server.port();
    let start = Instant::now();
    for i in 0..8 {
        let (status, _) = wrong_call(port, &format!("X-Forwarded-For: 203.0.113.{i}\r\n"));
        assert_eq!(status, 401);
    }
    let took = start.elapsed();
    assert!(
        took >= Duration::from_millis(1500),
        "8 wrong tokens under made-up addresses took {took:?}: the pause was escaped"
    );
    drop(server);

    // Behind a trusted proxy, the forwarded address is the caller: distinct
    // callers do not slow each other, one caller is slowed.
    let (_tc, server, good) = served(&["--trusted-proxy", "127.0.0.1"]);
    let port = server.port();
    let start = Instant::now();
    for i in 0..8 {
        let (status, _) = wrong_call(port, &format!("X-Forwarded-For: 203.0.113.{i}\r\n"));
        assert_eq!(status, 401);
    }
    assert!(
        start.elapsed() < Duration::from_millis(1500),
        "distinct callers behind a proxy were slowed: {:?}",
        start.elapsed()
    );
    let start = Instant::now();
    for _ in 0..8 {
        let (status, _) = wrong_call(port, "X-Forwarded-For: 198.51.100.1, 127.0.0.1\r\n");
        assert_eq!(status, 401);
    }
    assert!(
        start.elapsed() >= Duration::from_millis(1500),
        "one caller behind a proxy escaped the pause: {:?}",
        start.elapsed()
    );
    good_call(port, &good);
}

#[test]
fn a_good_caller_is_answered_in_its_time_while_strangers_attack() {
    let (_tc, server, good) = served(&[]);
    let port = server.port();
    let pid = server.pid();
    // A good call's normal time, once its service is made.
    good_call(port, &good);
    let normal = (0..3).map(|_| good_call(port, &good)).max().unwrap();
    let rss_before = rss_kib(pid);
    // Fewer descriptors than the attack opens (lowered, never raised).
    let lowered = std::process::Command::new("prlimit")
        .args(["--pid", &pid.to_string(), "--nofile=256:256"])
        .status()
        .expect("prlimit (util-linux) runs");
    assert!(lowered.success());

    // 300 half heads.
    let mut held: Vec<TcpStream> = (0..300)
        .filter_map(|_| {
            try_connect(
                port,
                format!("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n").as_bytes(),
            )
        })
        .collect();
    // 50 idle keep-alives after an answer.
    for _ in 0..50 {
        held.extend(try_connect(
            port,
            format!("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n").as_bytes(),
        ));
    }
    // 30 wrong tokens, answers not awaited.
    let body = INITIALIZE.as_bytes();
    for _ in 0..30 {
        let mut head = mcp_head(port, Some("cst_wrong"), body.len(), "").into_bytes();
        head.extend_from_slice(body);
        held.extend(try_connect(port, &head));
    }
    // 50 heads of 4 MiB bodies without a token, 2 MiB of each sent.
    let senders: Vec<_> = (0..5)
        .map(|_| {
            std::thread::spawn(move || {
                let mut mine = Vec::new();
                for _ in 0..10 {
                    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
                        continue;
                    };
                    s.set_write_timeout(Some(Duration::from_secs(2))).unwrap();
                    let _ = s.write_all(mcp_head(port, None, 4 << 20, "").as_bytes());
                    let _ = s.write_all(&vec![b'x'; 2 << 20]);
                    mine.push(s);
                }
                mine
            })
        })
        .collect();
    for t in senders {
        held.extend(t.join().unwrap());
    }

    let took = good_call(port, &good);
    let fds = descriptors(pid);
    let grown_mib = rss_kib(pid).saturating_sub(rss_before) / 1024;
    assert!(
        took <= normal * 5 + Duration::from_secs(1),
        "a good call took {took:?} under attack (normally {normal:?})"
    );
    assert!(
        grown_mib < 48,
        "the server grew by {grown_mib} MiB for callers without a token"
    );
    assert!(
        fds < 200,
        "the server holds {fds} descriptors for {} stranger connections",
        held.len()
    );
    drop(held);
}
