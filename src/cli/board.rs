//! `countersign board`: a link to the channel's board, opened in a browser.
//!
//! Issues a view key and a one-time link in this home's access store, makes
//! sure a server of this home serves the channel on the address (starting
//! `countersign serve` for this channel in the background, logging to the
//! channel's state folder, when nothing answers), prints the link and opens
//! it where a browser can be found. A missing browser never fails the
//! command: the link is printed.
//!
//! A link goes only to a server that proves it holds this home: it answers
//! a fresh challenge with the proof of `core::proof` made with the home's
//! server secret, for the address asked and this channel. Anything else
//! answering on the port (another home's server, a process squatting it)
//! gets no link. `--revoke` ends every view key of the channel instead, on
//! every server of this home, whatever its mode.

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
use crate::core::proof::{CHALLENGE_BYTES, board_proof, same};
use crate::core::timestamp::format_rfc3339;
use crate::store::access::{Access, ChannelRef};
use crate::store::clock::now_ms;

/// How long a server started here may take to answer.
const START_WAIT: Duration = Duration::from_secs(15);

/// Arguments of `board`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    countersign board\n  \
    countersign board --channel ~/work/.countersign --listen 127.0.0.1:9000 --no-open\n\n\
    countersign board --revoke\n\n\
    The link works once, within 60 seconds; the page it opens keeps working in that browser \
    for 7 days at most, and until the key is revoked (`countersign board --revoke`, `countersign \
    token revoke ID`, or the revoke_board_access tool).")]
pub struct Args {
    /// Where the server listens (or is started to listen), loopback.
    #[arg(long, value_name = "ADDR:PORT", default_value = DEFAULT_LISTEN)]
    pub listen: SocketAddr,
    /// Print the link only; open no browser.
    #[arg(long)]
    pub no_open: bool,
    /// Make no link: end every view key of the channel instead, and with them every board
    /// opened with one, on every server of this home.
    #[arg(long, conflicts_with = "no_open")]
    pub revoke: bool,
}

/// Runs `board`.
pub fn run(cli: &Cli, a: &Args) -> anyhow::Result<ExitCode> {
    if a.revoke {
        return revoke(cli);
    }
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
    let access = Access::open(&home.access_db())?;
    let secret = access.server_secret()?;
    match probe(a.listen, &secret, &channel) {
        Probe::Ours => {}
        Probe::Stranger(why) => bail!(
            "{} answers, but not as a server of this home serving channel '{}' ({why}), so it \
             gets no link: stop whatever listens there, or pass another --listen",
            a.listen,
            channel.name
        ),
        Probe::Nobody => {
            let log = home.state_dir(dir.id()).join("serve.log");
            start_server(dir.root(), cli.home.as_deref(), a.listen, &log)?;
            let started = Instant::now();
            while probe(a.listen, &secret, &channel) != Probe::Ours {
                if started.elapsed() > START_WAIT {
                    bail!(
                        "the server started for the board does not prove it serves channel '{}' \
                         on {}: see {}",
                        channel.name,
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
    }
    let link = issue_link(&access, &channel, "board", "cli", now_ms())?;
    let url = format!("{}{}", base.trim_end_matches('/'), link.path);
    outln!("{url}");
    eprintln!(
        "the link opens the board of '{}' once, until {}; view key {} lasts until {} (end every \
         key of the channel with `countersign board --revoke`)",
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

/// `board --revoke`: ends every view key of the channel in this home's
/// access store. Every server of the home reads that store on each request,
/// so their boards close at once, whatever mode they serve in.
fn revoke(cli: &Cli) -> anyhow::Result<ExitCode> {
    let dir = cli.channel_dir()?;
    let home = cli.home()?;
    let channel = channel_ref(&dir);
    let access = Access::open(&home.access_db())?;
    let ended = access.revoke_view_keys(&channel.id, now_ms())?;
    outln!(
        "ended {} view key(s) of channel '{}': every board opened with one is closed, on every \
         server of this home",
        ended.len(),
        channel.name
    );
    Ok(ExitCode::SUCCESS)
}

/// What answers on the board's address.
#[derive(Debug, PartialEq, Eq)]
enum Probe {
    /// A server of this home, serving the channel there.
    Ours,
    /// Something that does not prove it is (why).
    Stranger(String),
    /// Nothing answers.
    Nobody,
}

/// Asks whatever listens on `addr` to prove that it holds this home's
/// server `secret` and serves `channel` there, with a fresh challenge.
fn probe(addr: SocketAddr, secret: &[u8], channel: &ChannelRef) -> Probe {
    let mut challenge = [0u8; CHALLENGE_BYTES];
    getrandom::fill(&mut challenge).expect("the OS random source works");
    let challenge = hex::encode(challenge);
    let agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_millis(800)))
        .http_status_as_error(false)
        .max_redirects(0)
        .build()
        .new_agent();
    let url = format!("http://{addr}/board/{}/proof?c={challenge}", channel.name);
    let Ok(mut answer) = agent.get(url).call() else {
        return Probe::Nobody;
    };
    if answer.status() != 200 {
        return Probe::Stranger(format!("it answers {} to the proof", answer.status()));
    }
    let proof = answer
        .body_mut()
        .with_config()
        .limit(4096)
        .read_to_string()
        .ok()
        .and_then(|body| serde_json::from_str::<serde_json::Value>(&body).ok())
        .and_then(|v| v.get("proof")?.as_str().map(str::to_owned));
    let want = board_proof(secret, addr, &channel.id, &challenge);
    match proof {
        Some(p) if same(&p, &want) => Probe::Ours,
        Some(_) => Probe::Stranger("its proof is not made with this home's secret".into()),
        None => Probe::Stranger("it gives no proof".into()),
    }
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
