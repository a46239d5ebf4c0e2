//! `countersign add-role`: the owner adds a role to the roster.

use std::process::ExitCode;

use super::Cli;
use crate::app::membership::add_role;
use crate::cli::output::outln;

/// Arguments of `add-role`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Example, on the owner's machine:\n  countersign add-role infra\n  \
    countersign sync\n\nThe roster is channel.json's roles plus the roles added this way."
)]
pub struct Args {
    /// The new role (a lowercase slug).
    pub role: String,
}

/// Runs `add-role`.
pub fn run(cli: &Cli, a: &Args) -> anyhow::Result<ExitCode> {
    let mut channel = cli.open_channel()?;
    let out = add_role(&mut channel, &a.role)?;
    outln!(
        "added role '{}'; roles now: {}",
        a.role,
        serde_json::to_string(&out.roles)?
    );
    Ok(ExitCode::SUCCESS)
}
