//! The same tools through `countersign serve`: MCP over streamable HTTP on
//! loopback with a role token, driven by rmcp's client. The workload is the
//! stdio rows' (`server`): sends to `backend` with the same bodies, then
//! `read_inbox` as the same role, against the same `mcp::Server` code. Each
//! call is made over stdio and over HTTP in turn, so the difference between
//! the two rows is the transport and not the moment.
//!
//! The server runs as a process of the `countersign` beside the bench, with
//! the seeded home; the token is made in that home's access database, as
//! `countersign token create` makes it. Owns the server's life for the
//! measurement and nothing else.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use rmcp::ServiceExt as _;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};

use super::SERVER_ROLE;
use super::corpus::{Rng, body};
use super::machine::vm_hwm_kb;
use super::sampler::MIN_CALLS;
use super::seed::Seeded;
use super::server::timed;
use countersign::app::hosting::channel_ref;
use countersign::mcp_client::{self, Client, call};
use countersign::store::access::Access;
use countersign::store::now_ms;

/// How long the server may take to listen.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// The send and read_inbox latencies over both transports, measured in
/// pairs on one channel.
pub struct Http {
    /// Over stdio (`countersign mcp`), each call paired with one over HTTP.
    pub stdio_send: Vec<Duration>,
    pub stdio_inbox: Vec<Duration>,
    /// Over HTTP (`countersign serve`).
    pub send: Vec<Duration>,
    pub inbox: Vec<Duration>,
    /// `server_build`: no SQLite, a tiny answer — the transport's floor.
    pub floor: Vec<Duration>,
    /// The serve process's peak RSS.
    pub server_hwm_kb: Option<u64>,
    /// `GET /board/<channel>` with a view key: the time to the first byte
    /// of each answer, or the status of a server with no board.
    pub board: Result<Vec<Duration>, u16>,
}

impl Http {
    /// Times `calls` sends and inbox reads over each transport, in pairs.
    pub async fn measure(exe: &Path, seeded: &Seeded, calls: usize) -> anyhow::Result<Self> {
        let (stdio, _) =
            mcp_client::spawn(exe, seeded.dir.root(), &seeded.home_path, SERVER_ROLE).await?;
        let mut served = Served::start(exe, seeded)?;
        let http = served.client().await?;
        let mut rng = Rng(7);
        let (stdio_send, send) = paired(&stdio, &http, "send_message", calls, |i| {
            let len = 100 + rng.below(900) as usize;
            json!({"to": "backend", "topic": format!("bench {i}"), "body": body(&mut rng, len, false)})
        })
        .await?;
        let (stdio_inbox, inbox) =
            paired(&stdio, &http, "read_inbox", calls, |_| json!({})).await?;
        let (floor, _) = timed(&http, "server_build", calls, MIN_CALLS, |_| json!({})).await?;
        let board = board_first_byte(&served, seeded)?;
        let server_hwm_kb = vm_hwm_kb(&served.child.id().to_string());
        let _ = http.cancel().await;
        let _ = stdio.cancel().await;
        served.stop()?;
        Ok(Self {
            stdio_send,
            stdio_inbox,
            send,
            inbox,
            floor,
            server_hwm_kb,
            board,
        })
    }
}

/// Board loads before the timed ones, and timed ones.
const BOARD_WARMUP: usize = 3;
const BOARD_LOADS: usize = 30;

/// Loads the seeded channel's board with a view key (made in the seeded
/// home, as `board_link` makes one) and times each answer's first byte
/// from the request's first byte; `Err(status)` when the server answers
/// anything but 200 (a server with no board).
fn board_first_byte(
    served: &Served,
    seeded: &Seeded,
) -> anyhow::Result<Result<Vec<Duration>, u16>> {
    let access = Access::open(&seeded.home.access_db())?;
    let (key, _) = access.create_view_key(
        &channel_ref(&seeded.dir),
        "bench",
        "cli",
        Duration::from_secs(3600),
        now_ms(),
    )?;
    let request = format!(
        "GET /board/{} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {key}\r\n\
         Connection: close\r\n\r\n",
        seeded.dir.genesis().name,
        served.port
    );
    let mut out = Vec::with_capacity(BOARD_LOADS);
    for i in 0..BOARD_WARMUP + BOARD_LOADS {
        let mut s = TcpStream::connect(("127.0.0.1", served.port)).context("connecting")?;
        s.set_read_timeout(Some(Duration::from_secs(30)))?;
        let t = Instant::now();
        s.write_all(request.as_bytes())?;
        let mut first = [0u8; 1];
        s.read_exact(&mut first).context("the board's first byte")?;
        let took = t.elapsed();
        let mut answer = first.to_vec();
        s.read_to_end(&mut answer).context("the board's answer")?;
        let head = String::from_utf8_lossy(&answer[..answer.len().min(16)]).into_owned();
        let status = head
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse::<u16>().ok())
            .unwrap_or(0);
        if status != 200 {
            return Ok(Err(status));
        }
        if i >= BOARD_WARMUP {
            out.push(took);
        }
    }
    Ok(Ok(out))
}

/// Untimed pairs of calls before the timed ones.
const WARMUP: usize = 5;

/// Times `calls` calls of `tool` on each transport, in pairs with the same
/// arguments, which of the two goes first alternating: load that comes and
/// goes on the machine falls on both alike, which two runs one after the
/// other would not give.
async fn paired(
    stdio: &Client,
    http: &Client,
    tool: &str,
    calls: usize,
    mut args: impl FnMut(usize) -> Value,
) -> anyhow::Result<(Vec<Duration>, Vec<Duration>)> {
    let (mut over_stdio, mut over_http) = (Vec::with_capacity(calls), Vec::with_capacity(calls));
    for i in 0..WARMUP + calls {
        let a = args(i);
        let order = if i % 2 == 0 {
            [(stdio, 0), (http, 1)]
        } else {
            [(http, 1), (stdio, 0)]
        };
        let mut took = [Duration::ZERO; 2];
        for (client, slot) in order {
            let t = Instant::now();
            call(client, tool, a.clone()).await?;
            took[slot] = t.elapsed();
        }
        if i >= WARMUP {
            over_stdio.push(took[0]);
            over_http.push(took[1]);
        }
    }
    Ok((over_stdio, over_http))
}

/// A `countersign serve` of the seeded channel on a free loopback port;
/// killed on drop if it still runs.
struct Served {
    child: Child,
    port: u16,
    token: String,
}

impl Served {
    /// Makes a token for the measured role and starts the server; returns
    /// once it listens.
    fn start(exe: &Path, seeded: &Seeded) -> anyhow::Result<Self> {
        let access = Access::open(&seeded.home.access_db())?;
        let (token, _) =
            access.create_role_token(&channel_ref(&seeded.dir), SERVER_ROLE, "bench", now_ms())?;
        let mut child = Command::new(exe)
            .args(["serve", "--listen", "127.0.0.1:0", "--channel"])
            .arg(seeded.dir.root())
            .env("COUNTERSIGN_HOME", &seeded.home_path)
            .env_remove("COUNTERSIGN_ADMIN_TOKEN")
            .env_remove("COUNTERSIGN_ROLE")
            .env_remove("COUNTERSIGN_CHANNEL")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .context("spawning countersign serve")?;
        // Its first line names the port it picked; the rest is drained so
        // the server never blocks on a full pipe.
        let stderr = child.stderr.take().context("the server's stderr")?;
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut tx = Some(tx);
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(port) = listening_port(&line)
                    && let Some(tx) = tx.take()
                {
                    let _ = tx.send(port);
                }
            }
        });
        let mut me = Self {
            child,
            port: 0,
            token,
        };
        match rx.recv_timeout(START_TIMEOUT) {
            Ok(port) => me.port = port,
            Err(_) => match me.child.try_wait()? {
                Some(status) => bail!("countersign serve exited at its start ({status})"),
                None => bail!("countersign serve did not listen within {START_TIMEOUT:?}"),
            },
        }
        Ok(me)
    }

    /// An MCP client on `/mcp` with the token, after the handshake.
    async fn client(&self) -> anyhow::Result<Client> {
        let config = StreamableHttpClientTransportConfig::with_uri(format!(
            "http://127.0.0.1:{}/mcp",
            self.port
        ))
        .auth_header(self.token.clone());
        ().serve(StreamableHttpClientTransport::from_config(config))
            .await
            .context("MCP handshake over HTTP")
    }

    /// SIGTERM, and the graceful stop.
    fn stop(&mut self) -> anyhow::Result<()> {
        Command::new("kill")
            .args(["-s", "TERM", &self.child.id().to_string()])
            .status()
            .context("kill -s TERM")?;
        let start = Instant::now();
        while self.child.try_wait()?.is_none() {
            if start.elapsed() > Duration::from_secs(20) {
                bail!("countersign serve did not stop within 20 s of SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(())
    }
}

/// The port of a `listening on http://127.0.0.1:PORT` line.
fn listening_port(line: &str) -> Option<u16> {
    let rest = line.split("listening on http://").nth(1)?;
    let addr = rest.split_whitespace().next()?;
    addr.rsplit_once(':')?.1.parse().ok()
}

impl Drop for Served {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
