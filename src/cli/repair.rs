//! `countersign repair`: publish again what this device's feeds lack.

use std::process::ExitCode;

use super::Cli;
use crate::cli::output::outln;

/// Arguments of `repair`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Compares each of this device's published feeds with its private journal
/// and publishes again every record the feed lacks (a line edited or cut out
/// by hand, a file lost or replaced by an older copy). Nothing new is signed.
pub fn run(cli: &Cli, _a: &Args) -> anyhow::Result<ExitCode> {
    let channel = cli.open_channel()?;
    let n = channel.repair_own_feeds()?;
    outln!("{n} record(s) published again");
    Ok(ExitCode::SUCCESS)
}
