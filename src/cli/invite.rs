//! `countersign invite`: the owner invites one machine to join as a role
//! and gets the one-time code to hand over.

use std::process::ExitCode;
use std::time::Duration;

use super::Cli;
use crate::app::invitation::invite;
use crate::cli::output::outln;

/// Arguments of `invite`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Example, on the owner's machine:\n  \
    countersign invite --role backend --expires 24h\n  # prints a code such as csi1…; on the new \
    machine, in its copy of the channel:\n  countersign join --invite csi1…\n\n\
    The code holds a secret that never enters the folder (the folder holds only a commitment to \
    it). The owner's machine admits the first valid claim of the code as soon as any countersign \
    command or server there reads it (`sync`, `status`, `mcp --sync-every`). A second claim, or \
    one that comes after the expiry, is an alarm and is never admitted. Hand the code over as you \
    would a password.")]
pub struct Args {
    /// The role the new machine joins as.
    #[arg(long)]
    pub role: String,
    /// How long the code admits (e.g. 30m, 24h, 7d; at most 30 days; a bare number is seconds).
    #[arg(long, default_value = "24h", value_parser = super::duration::parse)]
    pub expires: Duration,
}

/// Runs `invite`.
pub fn run(cli: &Cli, a: &Args) -> anyhow::Result<ExitCode> {
    let mut channel = cli.open_channel()?;
    let out = invite(&mut channel, &a.role, a.expires)?;
    let until = crate::core::timestamp::format_rfc3339(out.expires_ms);
    outln!("{}", out.code);
    eprintln!(
        "Invitation {} to join as '{}', until {until}. On the new machine, in its copy of the \
         channel:\n  countersign join --invite {}\nthen keep `countersign mcp --sync-every 30s` \
         (or `countersign sync`) running on both machines; this machine admits the claim when it \
         reads it.",
        &out.invitation[..12],
        out.role,
        out.code
    );
    Ok(ExitCode::SUCCESS)
}
