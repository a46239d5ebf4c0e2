//! `countersign join`: make this device's key for a role and print what the
//! owner runs to admit it.

use std::process::ExitCode;

use anyhow::Context as _;

use super::Cli;
use crate::app::Session;
use crate::app::membership::{JoinState, join};

/// Arguments of `join` (the role is the global --role).
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Example, on a second machine that holds a copy of the channel:\n  \
    countersign --role backend join\n  # prints: countersign admit backend <pubkey> --device <this device>\n  \
    # run that on the owner's machine, `countersign sync` there, then `countersign sync` here.\n\n\
    Until the owner's admit arrives, writing as the role from this device is refused."
)]
pub struct Args {}

/// Runs `join`.
pub fn run(cli: &Cli, _a: &Args) -> anyhow::Result<ExitCode> {
    let role = Session::role_from(cli.role_arg()?.as_deref())?
        .context("no role: pass --role ROLE or set COUNTERSIGN_ROLE")?
        .to_string();
    let mut channel = cli.open_channel()?;
    let out = join(&mut channel, &role)?;
    let command = out.owner_command.as_deref().unwrap_or_default();
    println!("feed:   {}", out.feed);
    println!("pubkey: {}", out.pubkey);
    match out.state {
        JoinState::Admitted => println!("This device is admitted: it can write as '{role}'."),
        JoinState::KeyDiffers => println!(
            "The feed is admitted with another key. On the owner's machine run:\n  {command}\nthen \
             sync both machines."
        ),
        JoinState::WaitingForAdmit => println!(
            "Not admitted yet. On the owner's machine run:\n  {command}\nthen `countersign sync` \
             there and here."
        ),
    }
    Ok(ExitCode::SUCCESS)
}
