//! A real `countersign serve` process for the HTTP suites: started on a port
//! the OS picks (`--listen 127.0.0.1:0`; the first stderr line names it),
//! checked through `/healthz`, and reached by rmcp's MCP client over
//! streamable HTTP with a bearer token, or by plain HTTP requests.

use std::io::{BufRead as _, BufReader, Read as _};
use std::net::SocketAddr;
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
