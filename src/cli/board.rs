//! `countersign board`: a link to the channel's board, opened in a browser.
//!
//! Issues a view key and a one-time link in this home's access store, makes
//! sure a server of this home serves the channel on the address (starting
//! `countersign serve` for this channel in the background, logging to the
//! channel's state folder, when nothing answers), prints the link and opens
//! it where a browser can be found. A missing browser never fails the
//! command: the link is printed.
//!
//! A link goes only to a server that proves it holds this home
//! (`app::loopback`, shared with the stdio board_link tool). `--revoke` ends
//! every view key of the channel instead, on every server of this home,
//! whatever its mode; `--stop` stops the server started here.

use std::net::SocketAddr;
use std::process::{Command, ExitCode, Stdio};

use anyhow::bail;

use super::Cli;
use super::serve::DEFAULT_LISTEN;
use crate::app::board::issue_link;
use crate::app::hosting::channel_ref;
use crate::app::loopback::{Loopback, Serving};
use crate::cli::output::outln;
use crate::core::timestamp::format_rfc3339;
use crate::store::access::Access;
use crate::store::now_ms;

/// Arguments of `board`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    countersign board\n  \
    countersign board --channel ~/work/.countersign --listen 127.0.0.1:9000 --no-open\n\n\
    countersign board --revoke\n  \
    countersign board --stop\n\n\
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
    /// Make no link: stop the server `countersign board` (or the board_link tool of a stdio
    /// session) started for the channel, if it still runs.
    #[arg(long, conflicts_with_all = ["no_open", "revoke"])]
    pub stop: bool,
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
    let access = Access::open(&home.access_db())?;
    let server = Loopback {
        channel_dir: dir.root().to_path_buf(),
        channel: channel.clone(),
        home_arg: cli.home.clone(),
        state_dir: home.state_dir(dir.id()),
        secret: access.server_secret()?.to_vec(),
        listen: a.listen,
    };
    if a.stop {
        outln!("{}", server.stop()?);
        return Ok(ExitCode::SUCCESS);
    }
    let base = format!("http://{}", a.listen);
    if let Serving::Started(log) = server.ensure()? {
        eprintln!(
            "started `countersign serve` for channel '{}' on {base} (log: {}; stop it with \
             `countersign board --stop`)",
            channel.name,
            log.display()
        );
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
