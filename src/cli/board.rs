//! `countersign board`: a link to the channel's board, opened in a browser.
//!
//! Issues a view key and a one-time link in this home's access store, makes
//! sure a server answers on the address (starting `countersign serve` for
//! this channel in the background, logging to the channel's state folder,
//! when none does), prints the link and opens it where a browser can be
//! found. A missing browser never fails the command: the link is printed.

use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};

use super::Cli;
use super::serve::DEFAULT_LISTEN;
use crate::app::board::issue_link;
use crate::app::hosting::channel_ref;
use crate::cli::output::outln;
use crate::core::timestamp::format_rfc3339;
use crate::store::access::Access;
use crate::store::clock::now_ms;

/// How long a server started here may take to answer.
const START_WAIT: Duration = Duration::from_secs(15);

/// Arguments of `board`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    countersign board\n  \
    countersign board --channel ~/work/.countersign --listen 127.0.0.1:9000 --no-open\n\n\
    The link works once, within 60 seconds; the page it opens keeps working in that browser \
    for 7 days at most, and until the key is revoked (the revoke_board_access tool).")]
pub struct Args {
    /// Where the server listens (or is started to listen), loopback.
    #[arg(long, value_name = "ADDR:PORT", default_value = DEFAULT_LISTEN)]
    pub listen: SocketAddr,
    /// Print the link only; open no browser.
    #[arg(long)]
    pub no_open: bool,
}

/// Runs `board`.
pub fn run(cli: &Cli, a: &Args) -> anyhow::Result<ExitCode> {
    if !a.listen.ip().is_loopback() {
        bail!(
            "--listen {}: `countersign board` starts and reaches a server on loopback only; for \
             a public one run `countersign serve --public` behind a proxy and use the board_link \
             tool",
            a.listen
        );
    }
    let dir = cli.channel_dir()?;
    let home = cli.home()?;
    let channel = channel_ref(&dir);
    let base = format!("http://{}", a.listen);
    if !answers(a.listen) {
        let log = home.state_dir(dir.id()).join("serve.log");
        start_server(dir.root(), cli.home.as_deref(), a.listen, &log)?;
        let started = Instant::now();
        while !answers(a.listen) {
            if started.elapsed() > START_WAIT {
                bail!(
                    "the server started for the board does not answer on {}: see {}",
                    a.listen,
                    log.display()
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        eprintln!(
            "started `countersign serve` for channel '{}' on {base} (log: {})",
            channel.name,
            log.display()
        );
    }
    let access = Access::open(&home.access_db())?;
    let link = issue_link(&access, &channel, "board", "cli", now_ms())?;
    let url = format!("{}{}", base.trim_end_matches('/'), link.path);
    outln!("{url}");
    eprintln!(
        "the link opens the board of '{}' once, until {}; view key {} lasts until {} (end every \
         key of the channel with the revoke_board_access tool)",
        channel.name,
        format_rfc3339(link.link_expires_ms),
        link.key_id,
        format_rfc3339(link.key_expires_ms)
    );
    if !a.no_open {
        open_browser(&url);
    }
    Ok(ExitCode::SUCCESS)
}

/// True when something answers `GET /healthz` on `addr` like a countersign
/// server.
fn answers(addr: SocketAddr) -> bool {
    let agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_millis(800)))
        .http_status_as_error(false)
        .build()
        .new_agent();
    agent
        .get(format!("http://{addr}/healthz"))
        .call()
        .ok()
        .filter(|r| r.status() == 200)
        .and_then(|mut r| r.body_mut().read_to_string().ok())
        .is_some_and(|body| body.contains("\"ok\""))
}

/// Starts `countersign serve --channel DIR --listen ADDR` in the
/// background, detached from this terminal (its own process group), with
/// its output in `log`.
fn start_server(
    channel: &Path,
    home: Option<&Path>,
    listen: SocketAddr,
    log: &Path,
) -> anyhow::Result<()> {
    use std::os::unix::process::CommandExt as _;
    if let Some(parent) = log.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot make {}", parent.display()))?;
    }
    let out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .with_context(|| format!("cannot open {}", log.display()))?;
    let exe = std::env::current_exe().context("cannot find this program to start the server")?;
    let mut cmd = Command::new(exe);
    if let Some(h) = home {
        cmd.arg("--home").arg(h);
    }
    cmd.arg("serve")
        .arg("--channel")
        .arg(channel)
        .arg("--listen")
        .arg(listen.to_string())
        .env_remove("COUNTERSIGN_ADMIN_TOKEN")
        .stdin(Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(out)
        .process_group(0);
    cmd.spawn().context("cannot start `countersign serve`")?;
    Ok(())
}

/// Opens `url` in a browser where one can be found (`$BROWSER`, `xdg-open`,
/// `open`); says so on stderr when none can, and never fails.
fn open_browser(url: &str) {
    let candidates: Vec<String> = std::env::var("BROWSER")
        .ok()
        .filter(|b| !b.trim().is_empty())
        .into_iter()
        .chain(["xdg-open".to_owned(), "open".to_owned()])
        .collect();
    for program in candidates {
        let spawned = Command::new(&program)
            .arg(url)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        if spawned.is_ok() {
            return;
        }
    }
    eprintln!("no browser found: open the link above yourself");
}
