//! `countersign compress`: gzip this device's sealed segments.

use std::process::ExitCode;

use super::Cli;
use crate::cli::output::outln;

/// Arguments of `compress`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Replaces each sealed segment of this device's own feeds by its gzip form
/// and prints what was written. Readers take both forms alike.
pub fn run(cli: &Cli, _a: &Args) -> anyhow::Result<ExitCode> {
    let channel = cli.open_channel()?;
    let written = channel.gzip_own_segments()?;
    for p in &written {
        outln!("{}", p.display());
    }
    outln!("{} sealed segment(s) compressed", written.len());
    Ok(ExitCode::SUCCESS)
}
