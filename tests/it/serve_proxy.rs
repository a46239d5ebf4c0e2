//! The TLS reverse proxy of docs/SERVE.md, as written in
//! docs/examples/Caddyfile: a real Caddy (Debian's `caddy`, installed by
//! .ci/run) in front of a real `countersign serve`, and the Python MCP SDK
//! talking HTTPS to Caddy, trusting only Caddy's local authority.

use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::TestChannel;
use crate::common::serve::{Served, free_port, token};

/// Kills a child process when the test ends, however it ends.
pub struct Running(pub Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Waits up to 30 s for `ready`.
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
    let backend = token(&ch.home, &ch.dir, "backend");
    let frontend = token(&ch.home, &ch.dir, "frontend");
    let proxy_port = free_port();
    let public = format!("localhost:{proxy_port}");
    let server = Served::start(
        &ch.home,
        &[
            "--channel",
            ch.dir.to_str().unwrap(),
            "--allow-host",
            &public,
        ],
        &[],
    );
    let port = server.port();

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
