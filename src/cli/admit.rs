//! `countersign admit`: the owner admits another device's key for a role.

use std::process::ExitCode;

use anyhow::Context as _;

use super::Cli;
use crate::app::membership::admit;
use crate::cli::output::outln;

/// Arguments of `admit`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Example, on the owner's machine (the command `join` printed):\n  \
    countersign admit backend 3b6a27bc…e1 --device laptop-3f9a2c\n  countersign sync\n\n\
    ROLE may also be given as the feed id ROLE/DEVICE. Admitting the same key again changes \
    nothing."
)]
pub struct Args {
    /// The role (or the feed id ROLE/DEVICE).
    pub role: String,
    /// The device's public key, as `countersign join` printed it.
    pub pubkey: String,
    /// The device id (the part after the slash in the feed id `join` printed).
    #[arg(long)]
    pub device: Option<String>,
}

/// Runs `admit`.
pub fn run(cli: &Cli, a: &Args) -> anyhow::Result<ExitCode> {
    let (role, device) = match (a.role.split_once('/'), &a.device) {
        (Some((r, d)), None) => (r.to_owned(), d.to_owned()),
        (None, Some(d)) => (a.role.clone(), d.clone()),
        (Some((r, d)), Some(dev)) if d == dev => (r.to_owned(), d.to_owned()),
        _ => None.context(
            "name the device: `countersign admit ROLE PUBKEY --device DEVICE` (or ROLE/DEVICE)",
        )?,
    };
    let mut channel = cli.open_channel()?;
    let out = admit(&mut channel, &role, &a.pubkey, &device)?;
    if out.written {
        outln!(
            "admitted {} with key {}; run `countersign sync` so the device receives it",
            out.feed,
            a.pubkey
        );
    } else {
        outln!(
            "{} is already admitted with this key; nothing written",
            out.feed
        );
    }
    Ok(ExitCode::SUCCESS)
}
