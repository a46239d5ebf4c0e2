//! A real `countersign serve` process for the HTTP suites: started on a port
//! the OS picks (`--listen 127.0.0.1:0`; the first stderr line names it),
//! checked through `/healthz`, and reached by rmcp's MCP client over
//! streamable HTTP with a bearer token, or by plain HTTP requests.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::ServiceExt as _;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

use super::{Client, bin};

/// How long a server may take to say where it listens.
const START: Duration = Duration::from_secs(60);

/// A running `countersign serve`; killed when dropped.
pub struct Served {
    child: Child,
    /// The address it listens on.
    pub addr: SocketAddr,
    log: Arc<Mutex<String>>,
}

impl Served {
    /// Starts `countersign serve ARGS` with `home` as its home and `env` added
    /// (`--listen 127.0.0.1:0` unless ARGS has a `--listen`); panics with its
    /// stderr if it does not come up.
    pub fn start(home: &Path, args: &[&str], env: &[(&str, &str)]) -> Self {
        Self::try_start(home, args, env).unwrap_or_else(|e| panic!("serve did not start: {e}"))
    }

    /// [`Self::start`], or the server's stderr when it exits (or stays
    /// silent) instead of listening.
    pub fn try_start(home: &Path, args: &[&str], env: &[(&str, &str)]) -> Result<Self, String> {
        let mut c = Command::new(bin());
        c.arg("serve")
            .args(args)
            .env("COUNTERSIGN_HOME", home)
            .env_remove("COUNTERSIGN_ADMIN_TOKEN")
            .env_remove("COUNTERSIGN_ROLE")
            .env_remove("AI_AGENT_CHANNEL_ROLE")
            .env_remove("COUNTERSIGN_CHANNEL")
            .env_remove("COUNTERSIGN_URL")
            .env_remove("COUNTERSIGN_TOKEN")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        if !args.contains(&"--listen") {
            c.args(["--listen", "127.0.0.1:0"]);
        }
        for (k, v) in env {
            c.env(k, v);
        }
        let mut child = c
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", bin()))?;
        let stderr = child.stderr.take().expect("stderr is piped");
        let log = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = mpsc::channel();
        {
            let log = Arc::clone(&log);
            std::thread::spawn(move || {
                let mut tx = Some(tx);
                for line in BufReader::new(stderr).lines() {
                    let Ok(line) = line else { break };
                    if let Some(addr) = listening_on(&line)
                        && let Some(tx) = tx.take()
                    {
                        let _ = tx.send(addr);
                    }
                    let mut l = log.lock().unwrap();
                    l.push_str(&line);
                    l.push('\n');
                }
            });
        }
        let deadline = Instant::now() + START;
        let addr = loop {
            if let Ok(addr) = rx.recv_timeout(Duration::from_millis(50)) {
                break addr;
            }
            if let Ok(Some(status)) = child.try_wait() {
                // Let the reader drain what was said before the exit.
                std::thread::sleep(Duration::from_millis(100));
                return Err(format!("exited with {status}: {}", log.lock().unwrap()));
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "no 'listening on' line within {START:?}: {}",
                    log.lock().unwrap()
                ));
            }
        };
        let me = Self { child, addr, log };
        me.wait_healthy();
        Ok(me)
    }

    /// Waits until `/healthz` answers 200.
    fn wait_healthy(&self) {
        let deadline = Instant::now() + START;
        loop {
            if self.get("/healthz", None).0 == 200 {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "/healthz never answered: {}",
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// `http://ADDR` followed by `path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// What the server wrote to stderr so far.
    pub fn stderr(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// An MCP client on `/mcp` carrying `Authorization: Bearer <bearer>`;
    /// panics when the server refuses the handshake.
    pub async fn client(&self, bearer: &str) -> Client {
        self.try_client(bearer)
            .await
            .unwrap_or_else(|e| panic!("MCP over HTTP did not connect: {e}"))
    }

    /// [`Self::client`], or why the handshake failed.
    pub async fn try_client(&self, bearer: &str) -> Result<Client, String> {
        let config =
            StreamableHttpClientTransportConfig::with_uri(self.url("/mcp")).auth_header(bearer);
        let transport = StreamableHttpClientTransport::from_config(config);
        let inner = ().serve(transport).await.map_err(|e| format!("{e}"))?;
        Ok(Client { inner })
    }

    /// A plain request: `(status, body)`. Any status is an answer (4xx and
    /// 5xx included); a failed connection panics.
    pub fn request(
        &self,
        method: &str,
        path: &str,
        bearer: Option<&str>,
        body: Option<&str>,
    ) -> (u16, String) {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(60)))
            .build()
            .into();
        let url = self.url(path);
        let auth = bearer.map(|b| format!("Bearer {b}"));
        let result = match (method, body) {
            ("GET", _) => {
                let mut r = agent.get(&url);
                if let Some(a) = &auth {
                    r = r.header("Authorization", a);
                }
                r.call()
            }
            (m, body) => {
                let mut r = ureq::http::Request::builder()
                    .method(m)
                    .uri(&url)
                    .header("Content-Type", "application/json")
                    .header("Accept", "application/json, text/event-stream");
                if let Some(a) = &auth {
                    r = r.header("Authorization", a);
                }
                agent.run(r.body(body.unwrap_or("").to_owned()).unwrap())
            }
        };
        let mut res = result.unwrap_or_else(|e| panic!("{method} {url}: {e}"));
        let status = res.status().as_u16();
        let mut text = String::new();
        let _ = res.body_mut().as_reader().read_to_string(&mut text);
        (status, text)
    }

    /// `GET path`: `(status, body)`.
    pub fn get(&self, path: &str, bearer: Option<&str>) -> (u16, String) {
        self.request("GET", path, bearer, None)
    }

    /// Stops the server as an operator would (SIGTERM) and waits for it.
    pub fn stop(mut self) -> ExitStatus {
        let _ = Command::new("kill")
            .args(["-s", "TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + START;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "serve did not stop: {}",
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The address in `countersign serve: listening on http://ADDR …`.
fn listening_on(line: &str) -> Option<SocketAddr> {
    let rest = line.split("listening on http://").nth(1)?;
    rest.split_whitespace().next()?.parse().ok()
}

/// `countersign serve ARGS` run to its end (for the refusals to start).
pub fn serve_output(home: &Path, args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let mut c = Command::new(bin());
    c.arg("serve")
        .args(args)
        .env("COUNTERSIGN_HOME", home)
        .env_remove("COUNTERSIGN_ADMIN_TOKEN")
        .env_remove("COUNTERSIGN_CHANNEL")
        .stdin(Stdio::null());
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("the binary runs")
}

// ---------------------------------------------------------------------------------------
// Tokens, raw requests and the log, for the suites of /mcp over HTTP (serve_mcp,
// serve_load).

impl Served {
    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// How many inotify instances (folder watchers) the process holds.
    pub fn inotify_instances(&self) -> usize {
        let fds = std::fs::read_dir(format!("/proc/{}/fd", self.pid())).expect("/proc/PID/fd");
        fds.filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
            .filter(|target| target.to_string_lossy().contains("inotify"))
            .count()
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }
}

/// A port nobody listens on right now (the OS's pick, released at once).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// `countersign token create --role ROLE --channel DIR` with `home`: the
/// secret it prints.
pub fn token(home: &Path, channel: &Path, role: &str) -> String {
    let out = Command::new(bin())
        .args(["token", "create", "--role", role, "--channel"])
        .arg(channel)
        .env("COUNTERSIGN_HOME", home)
        .env_remove("COUNTERSIGN_ROLE")
        .env_remove("AI_AGENT_CHANNEL_ROLE")
        .env_remove("COUNTERSIGN_CHANNEL")
        .output()
        .expect("run token create");
    assert!(
        out.status.success(),
        "token create failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let secret = String::from_utf8(out.stdout)
        .expect("utf-8")
        .trim()
        .to_owned();
    assert!(secret.starts_with("cst_"), "not a role token: {secret:?}");
    secret
}

/// A raw HTTP answer.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: String,
    pub body: String,
}

/// One HTTP/1.1 request over a fresh connection, written by hand so any
/// header can be wrong. `Host: 127.0.0.1:<port>` is sent unless `headers`
/// has a Host; `Content-Length` is sent for a non-empty body unless `headers`
/// has a Transfer-Encoding.
pub fn raw_request(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> std::io::Result<Response> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(30)))?;
    let has = |name: &str| headers.iter().any(|(k, _)| k.eq_ignore_ascii_case(name));
    let mut head = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    if !has("host") {
        head.push_str(&format!("Host: 127.0.0.1:{port}\r\n"));
    }
    if !body.is_empty() && !has("transfer-encoding") && !has("content-length") {
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes())?;
    // The server may answer (and close) before reading a body it refuses.
    // No half-close after it: the server takes a closed write side for a
    // client that left, and answers nothing.
    let _ = s.write_all(body);
    let raw = read_answer(&mut s);
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("no HTTP status in {text:?}")))?;
    Ok(Response {
        status,
        headers: head.to_owned(),
        body: body.to_owned(),
    })
}

/// Reads an answer until the connection closes, its declared length has
/// come, or (an event stream, which may stay open) its first event has.
fn read_answer(s: &mut TcpStream) -> Vec<u8> {
    let mut raw = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => return raw,
            Ok(n) => raw.extend_from_slice(&buf[..n]),
        }
        let text = String::from_utf8_lossy(&raw);
        let Some((head, body)) = text.split_once("\r\n\r\n") else {
            continue;
        };
        let head = head.to_ascii_lowercase();
        let length = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse::<usize>().ok());
        if length.is_some_and(|n| body.len() >= n)
            || (head.contains("text/event-stream")
                && body.contains("data:")
                && body.contains("\n\n"))
        {
            return raw;
        }
    }
}

/// The JSON-RPC `initialize` request a client opens an MCP session with.
pub const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;

/// A POST to `/mcp` (JSON, accepting JSON or an event stream), with
/// `Authorization: Bearer <token>` when there is one, and `extra` headers.
pub fn post_mcp(port: u16, token: Option<&str>, extra: &[(&str, &str)], body: &[u8]) -> Response {
    let auth = token.map(|t| format!("Bearer {t}"));
    let mut h: Vec<(&str, &str)> = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ];
    if let Some(a) = &auth {
        h.push(("Authorization", a));
    }
    h.extend_from_slice(extra);
    raw_request(port, "POST", "/mcp", &h, body).expect("an HTTP answer")
}

/// A record of the channel's log, as `countersign log --json` prints it.
#[derive(Debug, Clone)]
pub struct Logged {
    /// The message id of a `send` (the first 12 hex digits of the record id).
    pub id: String,
    /// The role whose feed holds it (`_owner` for the owner's).
    pub role: String,
    /// The op (`send`, `resolve`, `opened`, …).
    pub op: String,
    /// The op's data.
    pub data: serde_json::Value,
}

/// Every accepted record of the channel, in the channel's order, read by
/// `countersign log --json` with `home` (a record's id is the SHA-256 of
/// the body bytes it prints).
pub fn logged(home: &Path, channel: &Path) -> Vec<Logged> {
    let out = Command::new(bin())
        .args(["log", "--json", "--channel"])
        .arg(channel)
        .env("COUNTERSIGN_HOME", home)
        .env_remove("COUNTERSIGN_ROLE")
        .env_remove("AI_AGENT_CHANNEL_ROLE")
        .env_remove("COUNTERSIGN_CHANNEL")
        .output()
        .expect("run log");
    assert!(
        out.status.success(),
        "log failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|line| {
            let body: serde_json::Value = serde_json::from_str(line).expect("a JSON body");
            let feed = body["feed"].as_str().unwrap_or("");
            Logged {
                id: super::sha256_hex(line)[..12].to_owned(),
                role: feed.split('/').next().unwrap_or("").to_owned(),
                op: body["op"].as_str().unwrap_or("").to_owned(),
                data: body["data"].clone(),
            }
        })
        .collect()
}

/// `countersign verify` of the folder: its last line, asserted clean.
pub fn assert_verified(home: &Path, channel: &Path) -> String {
    let out = Command::new(bin())
        .args(["verify", "--channel"])
        .arg(channel)
        .env("COUNTERSIGN_HOME", home)
        .env_remove("COUNTERSIGN_CHANNEL")
        .output()
        .expect("run verify");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success() && text.contains("— clean"),
        "verify is not clean:\n{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text.lines().last().unwrap_or("").to_owned()
}
