//! `countersign join`: make this device's key for a role and print what the
//! owner runs to admit it; with `--invite CODE`, claim an invitation
//! instead, which the owner's machine admits by itself.

use std::process::ExitCode;

use anyhow::Context as _;

use super::Cli;
use crate::app::Session;
use crate::app::invitation::{ClaimState, join_invite};
use crate::app::membership::{JoinState, join};
use crate::cli::output::outln;

/// Arguments of `join` (the role is the global --role).
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Example, on a second machine that holds a copy of the channel:\n  \
    countersign --role backend join\n  # prints: countersign admit backend <pubkey> --device <this device>\n  \
    # run that on the owner's machine, `countersign sync` there, then `countersign sync` here.\n\n\
    Until the owner's admit arrives, writing as the role from this device is refused.\n\n\
    With an invitation code from the owner (`countersign invite`), nothing is run on the owner's \
    machine:\n  countersign join --invite csi1…\n  countersign mcp --role backend   \
    # syncs by itself; or `countersign sync`, here and on the owner's machine"
)]
pub struct Args {
    /// An invitation code from `countersign invite` (the role comes with it).
    #[arg(long, value_name = "CODE")]
    pub invite: Option<String>,
}

/// Runs `join`.
pub fn run(cli: &Cli, a: &Args) -> anyhow::Result<ExitCode> {
    if let Some(code) = &a.invite {
        return run_invite(cli, code);
    }
    let role = Session::role_from(cli.role_arg()?.as_deref())?
        .context("no role: pass --role ROLE or set COUNTERSIGN_ROLE")?
        .to_string();
    let mut channel = cli.open_channel()?;
    let out = join(&mut channel, &role)?;
    let command = out.owner_command.as_deref().unwrap_or_default();
    outln!("feed:   {}", out.feed);
    outln!("pubkey: {}", out.pubkey);
    match out.state {
        JoinState::Admitted => outln!("This device is admitted: it can write as '{role}'."),
        JoinState::KeyDiffers => outln!(
            "The feed is admitted with another key. On the owner's machine run:\n  {command}\nthen \
             sync both machines."
        ),
        JoinState::WaitingForAdmit => outln!(
            "Not admitted yet. On the owner's machine run:\n  {command}\nthen `countersign sync` \
             there and here."
        ),
    }
    Ok(ExitCode::SUCCESS)
}

fn run_invite(cli: &Cli, code: &str) -> anyhow::Result<ExitCode> {
    let mut channel = cli.open_channel()?;
    let out = join_invite(&mut channel, code)?;
    if let Some(given) = Session::role_from(cli.role_arg()?.as_deref())?
        && given != out.role
    {
        outln!(
            "note: the invitation is for role '{}', not '{given}'; this device joins as '{}'",
            out.role,
            out.role
        );
    }
    outln!("feed:   {}", out.feed);
    outln!("pubkey: {}", out.pubkey);
    match out.state {
        ClaimState::Admitted => {
            outln!("This device is admitted: it can write as '{}'.", out.role)
        }
        ClaimState::Claimed => outln!(
            "Claim written. The owner's machine admits it when it reads it: keep \
             `countersign mcp --role {}` running here (it syncs by itself; or run \
             `countersign sync`); nothing needs to be run there by hand.",
            out.role
        ),
    }
    Ok(ExitCode::SUCCESS)
}
