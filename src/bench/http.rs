//! The same tools through `countersign serve`: MCP over streamable HTTP on
//! loopback with a role token, driven by rmcp's client. The workload is the
//! stdio rows' (`server`): sends to `backend` with the same bodies, then
//! `read_inbox` as the same role, against the same `mcp::Server` code, so
//! the difference between the two rows is the transport.
//!
//! The server runs as a process of the `countersign` beside the bench, with
//! the seeded home; the token is made in that home's access database, as
//! `countersign token create` makes it. Owns the server's life for the
//! measurement and nothing else.

use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use rmcp::ServiceExt as _;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::json;

use super::SERVER_ROLE;
use super::corpus::{Rng, body};
use super::machine::vm_hwm_kb;
use super::sampler::MIN_CALLS;
use super::seed::Seeded;
use super::server::timed;
use crate::cli::mcp_client::{self, Client};
use crate::http::hosting::channel_ref;
use crate::store::access::Access;
use crate::store::clock::now_ms;

/// How long the server may take to listen.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// The send and read_inbox latencies over both transports, measured back to
/// back on one channel.
pub struct Http {
    /// Over stdio (`countersign mcp`), when measured here (`--http`); the
    /// full run takes its stdio rows from `server`.
    pub stdio_send: Vec<Duration>,
    pub stdio_inbox: Vec<Duration>,
    /// Over HTTP (`countersign serve`).
    pub send: Vec<Duration>,
    pub inbox: Vec<Duration>,
    /// `server_build`: no SQLite, a tiny answer — the transport's floor.
    pub floor: Vec<Duration>,
    /// The serve process's peak RSS.
    pub server_hwm_kb: Option<u64>,
}

impl Http {
    /// Times `calls` sends and inbox reads over HTTP; with `with_stdio`, the
    /// same over stdio first.
    pub async fn measure(
        exe: &Path,
        seeded: &Seeded,
        calls: usize,
        with_stdio: bool,
    ) -> anyhow::Result<Self> {
        let (mut stdio_send, mut stdio_inbox) = (Vec::new(), Vec::new());
        if with_stdio {
            let (client, _) =
                mcp_client::spawn(exe, seeded.dir.root(), &seeded.home_path, SERVER_ROLE).await?;
            (stdio_send, stdio_inbox) = workload(&client, calls).await?;
            let _ = client.cancel().await;
        }
        let mut served = Served::start(exe, seeded)?;
        let client = served.client().await?;
        let (send, inbox) = workload(&client, calls).await?;
        let (floor, _) = timed(&client, "server_build", calls, MIN_CALLS, |_| json!({})).await?;
        let server_hwm_kb = vm_hwm_kb(&served.child.id().to_string());
        let _ = client.cancel().await;
        served.stop()?;
        Ok(Self {
            stdio_send,
            stdio_inbox,
            send,
            inbox,
            floor,
            server_hwm_kb,
        })
    }
}

/// The stdio rows' workload: sends to `backend` with bodies of 100 to 1000
/// bytes from the same seed, then `read_inbox` with no arguments.
async fn workload(client: &Client, calls: usize) -> anyhow::Result<(Vec<Duration>, Vec<Duration>)> {
    let mut rng = Rng(7);
    let (send, _) = timed(client, "send_message", calls, MIN_CALLS, |i| {
        let len = 100 + rng.below(900) as usize;
        json!({"to": "backend", "topic": format!("bench {i}"), "body": body(&mut rng, len, false)})
    })
    .await?;
    let (inbox, _) = timed(client, "read_inbox", calls, MIN_CALLS, |_| json!({})).await?;
    Ok((send, inbox))
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
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .context("finding a free port")?
            .port();
        let child = Command::new(exe)
            .args([
                "serve",
                "--listen",
                &format!("127.0.0.1:{port}"),
                "--channel",
            ])
            .arg(seeded.dir.root())
            .env("COUNTERSIGN_HOME", &seeded.home_path)
            .env_remove("COUNTERSIGN_ADMIN_TOKEN")
            .env_remove("COUNTERSIGN_ROLE")
            .env_remove("COUNTERSIGN_CHANNEL")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("spawning countersign serve")?;
        let mut me = Self { child, port, token };
        let start = Instant::now();
        // It binds only once its state is open: a connection means ready.
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Some(status) = me.child.try_wait()? {
                bail!("countersign serve exited at its start ({status})");
            }
            if start.elapsed() > START_TIMEOUT {
                bail!("countersign serve did not listen within {START_TIMEOUT:?}");
            }
            std::thread::sleep(Duration::from_millis(10));
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

impl Drop for Served {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
