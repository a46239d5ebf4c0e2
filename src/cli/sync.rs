//! `countersign sync`: exchange the channel folder with its remote once.

use std::process::ExitCode;

use super::Cli;
use crate::app::sync::{WhenBusy, remote, sync_now};

/// Arguments of `sync`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  countersign sync\n  countersign --channel ~/chan sync\n\n\
    git mode commits only this device's feeds, merges the remote's and pushes (a rejected push \
    is retried). rclone mode copies this device's feeds up and the rest down. Nothing is ever \
    deleted or force-pushed. See docs/SYNC.md."
)]
pub struct Args {}

/// Runs one sync and prints what it did.
pub fn run(cli: &Cli, _a: &Args) -> anyhow::Result<ExitCode> {
    let mut channel = cli.open_channel()?;
    let report = sync_now(&mut channel, WhenBusy::Wait)?.expect("a waiting sync always runs");
    let target = remote(&channel).map_or_else(String::new, |r| r.to_string());
    if report.adopted_origin {
        println!(
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
        done.push(if report.attempts > 1 {
            format!("published (after {} attempts)", report.attempts)
        } else {
            "published".to_owned()
        });
    }
    if done.is_empty() {
        done.push("already in sync".to_owned());
    }
    println!("synced with {target}: {}", done.join(", "));
    Ok(ExitCode::SUCCESS)
}
