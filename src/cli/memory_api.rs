//! `countersign memory api-key` and `countersign memory compact`: the key
//! that lets the memory be summarized by a model in the background, and a
//! round of that work now.
//!
//! A thin adapter over `app::compaction_api`. The key is read hidden (from
//! the terminal with its echo off, or from stdin when piped), never from
//! the command line, and never printed.

use std::io::{BufRead as _, IsTerminal as _, Write as _};
use std::process::{Command, ExitCode, Stdio};

use anyhow::bail;

use super::Cli;
use crate::app::Session;
use crate::app::compaction::now_ms;
use crate::app::compaction_api::{self, ModelApi, Round};
use crate::app::key_share;
use crate::cli::output::outln;
use crate::store::api_key;

/// The exit status of `memory compact` when the API did not work.
pub const COMPACT_FAILED: u8 = 3;

/// Where keys are made.
const KEYS_PAGE: &str = "https://platform.claude.com/settings/keys";

/// Arguments of `memory api-key`.
#[derive(Debug, clap::Args)]
pub struct KeyArgs {
    /// Delete the stored key instead (a key this device shared is removed on the others too).
    #[arg(long)]
    pub remove: bool,
    /// Also write the key into the channel folder, sealed to each admitted device (only their
    /// device keys open it); the others take it up within a background round or at `memory
    /// compact`. Kept current when a device is admitted, retired or rotated.
    #[arg(long, conflicts_with = "remove")]
    pub share: bool,
}

/// Runs `memory api-key`.
pub fn api_key(cli: &Cli, a: &KeyArgs) -> anyhow::Result<ExitCode> {
    let home = cli.home()?;
    if a.remove {
        let had = api_key::remove(&home)?;
        let travels = session(cli)
            .map(|mut s| key_share::unshare(&mut s, now_ms()))
            .transpose()?
            .unwrap_or(false);
        forget_pause(cli);
        if travels {
            outln!("The removal is in the channel folder: the other devices delete the key too.");
        }
        outln!(
            "{}",
            if had {
                "The API key was deleted: background compaction stops here."
            } else {
                "No API key was stored."
            }
        );
        return Ok(ExitCode::SUCCESS);
    }
    let key = read_key()?;
    if key.is_empty() {
        bail!("no key was given: paste the key (it stays hidden) and press Enter");
    }
    if key.chars().any(|c| c.is_control() || c.is_whitespace()) {
        bail!("the key holds spaces or control characters: paste the key alone, on one line");
    }
    let api = ModelApi::with_key(key.clone());
    if let Err(f) = api.check() {
        bail!(
            "the API did not accept a request with this key ({}: {}); nothing was stored. Check \
             the key at {KEYS_PAGE} and run this again",
            f.failure.words(),
            f.reason
        );
    }
    api_key::save(&home, &key)?;
    forget_pause(cli);
    if a.share {
        let Some(mut s) = session(cli) else {
            bail!("the key is stored here, but no channel was found to share it through");
        };
        let n = key_share::share(&mut s, now_ms())?;
        outln!(
            "Shared: the key is in the channel folder sealed to {n} other device(s); only their \
             device keys open it."
        );
    }
    outln!(
        "The key works and is stored in {} (readable only by you). A long-running countersign \
         process (serve, or mcp when no serve runs) now writes the memory's summaries with {} \
         in the background; `countersign memory compact` tries now.",
        home.api_key_file().display(),
        api.model()
    );
    Ok(ExitCode::SUCCESS)
}

/// A session on the channel found here, if any.
fn session(cli: &Cli) -> Option<Session> {
    let channel = cli.open_channel().ok()?;
    Session::new(channel, None).ok()
}

/// A new key (or none) ends a pause of the channel found here, if any.
fn forget_pause(cli: &Cli) {
    if let Ok(channel) = cli.open_channel()
        && let Ok(mut s) = Session::new(channel, None)
    {
        let _ = compaction_api::new_key(&mut s);
    }
}

/// The key: from the terminal with its echo off, else one line of stdin.
fn read_key() -> anyhow::Result<String> {
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        let mut line = String::new();
        stdin.lock().take_line(&mut line)?;
        return Ok(line.trim().to_owned());
    }
    eprintln!("Make a key at {KEYS_PAGE}, then paste it here (it stays hidden) and press Enter:");
    let echo = |on: bool| {
        std::fs::File::open("/dev/tty").ok().and_then(|tty| {
            Command::new("stty")
                .arg(if on { "echo" } else { "-echo" })
                .stdin(Stdio::from(tty))
                .status()
                .ok()
        })
    };
    if !echo(false).is_some_and(|s| s.success()) {
        bail!(
            "cannot hide the input on this terminal: pipe the key in instead, e.g. `countersign \
             memory api-key < keyfile`"
        );
    }
    let mut line = String::new();
    let read = stdin.lock().take_line(&mut line);
    echo(true);
    eprintln!();
    read?;
    Ok(line.trim().to_owned())
}

/// One line, at most 4 KiB.
trait TakeLine {
    fn take_line(&mut self, out: &mut String) -> std::io::Result<()>;
}

impl<R: std::io::BufRead> TakeLine for R {
    fn take_line(&mut self, out: &mut String) -> std::io::Result<()> {
        use std::io::Read as _;
        self.take(4096).read_line(out).map(|_| ())
    }
}

/// Runs `memory compact`: one round with the API now, exit 3 when it did
/// not work.
pub fn compact(cli: &Cli) -> anyhow::Result<ExitCode> {
    let channel = cli.open_channel()?;
    let role =
        Session::role_from(cli.role_arg()?.as_deref())?.or_else(|| Session::keyed_role(&channel));
    let mut s = Session::new(channel, role)?;
    // A key shared through the folder (or its removal) is taken up first.
    compaction_api::take_up_shared_key(&mut s)?;
    let round = compaction_api::round(&mut s, true, &now_ms)?;
    let failed = |line: String| {
        let _ = writeln!(std::io::stderr(), "{line}");
        Ok(ExitCode::from(COMPACT_FAILED))
    };
    match round {
        Round::Worked {
            jobs,
            lines,
            status,
        } => {
            outln!("The API wrote {lines} line(s) in {jobs} job(s); the jobs say: {status}.");
            Ok(ExitCode::SUCCESS)
        }
        Round::NoKey => failed(
            "No API key is stored here (countersign memory api-key): use the compactor \
             subagent (/countersign-compact)."
                .into(),
        ),
        Round::Paused { until, why } => failed(format!(
            "The API is paused ({why}, {}).",
            until.map_or_else(|| "until a new key".into(), |u| format!("until {u}"))
        )),
        Round::Failed {
            why,
            reason,
            until,
            lines,
        } => failed(format!(
            "The API failed: {why} ({reason}); {lines} line(s) were written before. The job was \
             given back, and the API is paused {}. Use the compactor subagent meanwhile.",
            until.map_or_else(
                || "until a new key is stored".into(),
                |u| format!("until {u}")
            )
        )),
        Round::Refused { reason, lines } => failed(format!(
            "The model's answer was refused ({reason}); {lines} line(s) were written before. \
             Use the compactor subagent."
        )),
    }
}

/// The API's lines of `memory status`.
pub fn status_lines(st: &compaction_api::ApiStatus) -> String {
    let paused = match (&st.paused, &st.paused_until) {
        (Some(why), Some(u)) => format!("paused until {u}, {why}"),
        (Some(why), None) => format!("paused until a new key, {why}"),
        _ if st.key => "works".to_owned(),
        _ => "no key (countersign memory api-key)".to_owned(),
    };
    format!(
        "api:            {paused}; model {}\n\
         api written:    {} lines in {} jobs, {} input and {} output tokens, about ${:.4}\n\
         api runs here:  {}: {}\n",
        st.model,
        st.lines,
        st.jobs,
        st.input_tokens,
        st.output_tokens,
        st.dollars,
        if st.runs_here { "yes" } else { "no" },
        crate::core::peer_text::one_line(&st.why)
    )
}
