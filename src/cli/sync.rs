//! `countersign sync`: exchange the channel folder with its remote once.

use std::process::ExitCode;
use std::time::Duration;

use super::Cli;
use crate::app::sync::{WhenBusy, remote, sync_within};
use crate::cli::output::outln;

/// Arguments of `sync`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  countersign sync\n  countersign --channel ~/chan sync\n\n\
    git mode commits only this device's feeds, merges the remote's and pushes. rclone mode copies \
    this device's feeds up and the rest down. Nothing is ever deleted or force-pushed. When \
    another machine wins a race (its push lands first, or it replaces a file being copied), the \
    exchange is tried again after a random pause that grows, until --budget is spent. See \
    docs/SYNC.md."
)]
pub struct Args {
    /// How long to keep trying while other machines win the race to the remote (e.g. 60s, 2m,
    /// 0 for one try). Past it the sync fails, naming the tries and the time; nothing is lost.
    #[arg(long, value_name = "DURATION", default_value = "60s",
          value_parser = super::duration::parse)]
    pub budget: Duration,
}

/// Runs one sync and prints what it did.
pub fn run(cli: &Cli, a: &Args) -> anyhow::Result<ExitCode> {
    let mut channel = cli.open_channel()?;
    let report =
        sync_within(&mut channel, WhenBusy::Wait, a.budget)?.expect("a waiting sync always runs");
    let target = remote(&channel).map_or_else(String::new, |r| r.to_string());
    if report.adopted_origin {
        outln!(
            "no remote was chosen for this channel on this device: using the git clone's origin, \
             {target}, and keeping it (`countersign remote set` changes it)"
        );
    }
    let mut done = Vec::new();
    if report.committed {
        done.push("committed this device's records".to_owned());
    }
    if report.pulled {
        done.push("received new records".to_owned());
    }
    if report.pushed {
        done.push("published".to_owned());
    }
    if done.is_empty() {
        done.push("already in sync".to_owned());
    }
    let tries = if report.attempts > 1 {
        format!(
            " (after {} attempts in {:.1} s: other machines won the race meanwhile)",
            report.attempts,
            report.spent.as_secs_f64()
        )
    } else {
        String::new()
    };
    outln!("synced with {target}: {}{tries}", done.join(", "));
    Ok(ExitCode::SUCCESS)
}
