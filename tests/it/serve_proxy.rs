//! The TLS reverse proxy of docs/SERVE.md, as written in
//! docs/examples/Caddyfile: a real Caddy (Debian's `caddy`, installed by
//! .ci/run) in front of a real `countersign serve`, and the Python MCP SDK
//! talking HTTPS to Caddy, trusting only Caddy's local authority.

use std::io::{BufRead as _, BufReader};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{TestChannel, bin};

/// Kills a child process when the test ends, however it ends.
pub struct Running(pub Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A port free at this moment.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// `countersign serve` on a free loopback port; returns it and the port.
fn serve(ch: &TestChannel, extra: &[&str]) -> (Running, u16) {
    serve_at(&ch.home, &ch.dir, extra)
}

/// `countersign serve --channel dir` with `home` on a free loopback port;
/// returns it and the port.
pub fn serve_at(home: &Path, dir: &Path, extra: &[&str]) -> (Running, u16) {
    let mut child = Command::new(bin())
        .env("COUNTERSIGN_HOME", home)
        .env_remove("COUNTERSIGN_ADMIN_TOKEN")
        .args(["serve", "--channel"])
        .arg(dir)
        .args(["--listen", "127.0.0.1:0"])
        .args(extra)
        .stderr(Stdio::piped())
        .spawn()
        .expect("countersign serve starts");
    let mut line = String::new();
    BufReader::new(child.stderr.take().unwrap())
        .read_line(&mut line)
        .expect("serve says where it listens");
    let port = line
        .split("http://127.0.0.1:")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no address in {line:?}"));
    (Running(child), port)
}

fn token(ch: &TestChannel, role: &str) -> String {
    let out = ch.cli(&["token", "create", "--role", role]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

pub fn wait_for(what: &str, mut ready: impl FnMut() -> bool) {
    let start = Instant::now();
    while !ready() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{what} never came"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn the_documented_caddy_proxy_carries_mcp_over_tls() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let backend = token(&ch, "backend");
    let frontend = token(&ch, "frontend");
    let proxy_port = free_port();
    let public = format!("localhost:{proxy_port}");
    let (_server, port) = serve(&ch, &["--allow-host", &public]);

    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let caddy_home = ch.tmp.path().join("caddy");
    std::fs::create_dir_all(&caddy_home).unwrap();
    // The test's own global options (no admin endpoint, nothing installed
    // into the system's trust store), then the documented site as is.
    let config = caddy_home.join("Caddyfile");
    std::fs::write(
        &config,
        format!(
            "{{\n\tadmin off\n\tskip_install_trust\n\tauto_https disable_redirects\n\
             \tstorage file_system {}\n}}\nimport {}\n",
            caddy_home.join("data").display(),
            root.join("docs/examples/Caddyfile").display()
        ),
    )
    .unwrap();
    let caddy = Command::new("caddy")
        .args(["run", "--adapter", "caddyfile", "--config"])
        .arg(&config)
        .env("HOME", &caddy_home)
        .env("XDG_DATA_HOME", caddy_home.join("xdg-data"))
        .env("XDG_CONFIG_HOME", caddy_home.join("xdg-config"))
        .env("COUNTERSIGN_DOMAIN", &public)
        .env("COUNTERSIGN_TLS", "internal")
        .env("COUNTERSIGN_PORT", port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("caddy runs (Debian's `caddy`; .ci/run installs it)");
    let _caddy = Running(caddy);
    let ca = caddy_home.join("data/pki/authorities/local/root.crt");
    wait_for("caddy's local authority", || ca.is_file());
    wait_for("caddy listening", || {
        TcpStream::connect(("127.0.0.1", proxy_port)).is_ok()
    });

    let out = Command::new(crate::python_client::python())
        .arg(root.join("tests/python/through_proxy.py"))
        .arg(format!("https://{public}/mcp"))
        .arg(&ca)
        .arg(&backend)
        .arg(&frontend)
        .output()
        .expect("python runs");
    assert!(
        out.status.success(),
        "the MCP round trip through caddy failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // The message really went through the server into the channel.
    let id = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    let log = ch.cli(&["log"]);
    assert!(
        String::from_utf8_lossy(&log.stdout).contains(&id),
        "{id} not in the log"
    );
}
