//! `countersign rotate-key`: replace a feed's key.

use std::process::ExitCode;

use anyhow::Context as _;

use super::Cli;
use crate::app::Session;
use crate::app::membership::rotate_key;
use crate::cli::output::outln;

/// Arguments of `rotate-key` (the role is the global --role).
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  countersign --role backend rotate-key\n      \
    this device's backend key is replaced; the change is signed by the old key\n  \
    countersign --role backend rotate-key --lost --device laptop-3f9a2c --pubkey 3b6a…e1 --from-seq 42\n      \
    on the owner's machine, when the old key is lost: the owner signs the change (the new key \
    comes from `countersign --role backend join` on that device)\n\n\
    After the change, the feed's records must be signed by the new key. The old key file is \
    kept beside the new one as <role>.replaced-<ms>.key."
)]
pub struct Args {
    /// The old key is lost: the owner signs the replacement (run on the owner's machine).
    #[arg(long)]
    pub lost: bool,
    /// With --lost: the device whose feed gets the new key (default: this one).
    #[arg(long, requires = "lost")]
    pub device: Option<String>,
    /// With --lost: the new public key (default: a new key made on this device).
    #[arg(long, requires = "lost")]
    pub pubkey: Option<String>,
    /// With --lost: the first seq of the feed signed by the new key (`join` on the device
    /// prints it; default: the seq after the last record this machine has of the feed).
    #[arg(long, requires = "lost")]
    pub from_seq: Option<u64>,
}

/// Runs `rotate-key`.
pub fn run(cli: &Cli, a: &Args) -> anyhow::Result<ExitCode> {
    let role = Session::role_from(cli.role_arg()?.as_deref())?
        .context("no role: pass --role ROLE or set COUNTERSIGN_ROLE")?
        .to_string();
    let mut channel = cli.open_channel()?;
    let out = rotate_key(
        &mut channel,
        &role,
        a.lost,
        a.device.as_deref(),
        a.pubkey.as_deref(),
        a.from_seq,
    )?;
    outln!(
        "{} now writes with key {} (signed by the {}); run `countersign sync`",
        out.feed,
        out.pubkey,
        out.signed_by
    );
    Ok(ExitCode::SUCCESS)
}
