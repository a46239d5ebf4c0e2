//! `countersign remote`: choose or show where `sync` moves the channel.

use std::process::ExitCode;

use super::Cli;
use crate::app::sync::{remote, set_remote};
use crate::cli::output::outln;
use crate::store::Remote;

/// Arguments of `remote`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  countersign remote set git git@example.com:team/chan.git\n  \
    countersign remote set rclone gdrive:team/chan\n  countersign remote show\n\n\
    The choice is kept on this device only (state/<channel>/local.json). git mode makes the \
    channel folder its own repository if it is not one yet. See docs/SYNC.md."
)]
pub struct Args {
    #[command(subcommand)]
    action: Action,
}

#[derive(Debug, clap::Subcommand)]
enum Action {
    /// Choose the remote of this channel on this device.
    Set {
        /// `git` (the folder is a git repository pushing to URL) or `rclone` (REMOTE:PATH).
        #[arg(value_enum)]
        kind: Kind,
        /// The git URL, or the rclone REMOTE:PATH (a plain local path works too).
        target: String,
    },
    /// Print the remote of this channel on this device (exit 1 if none is set).
    Show,
}

/// The kinds of remote.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Kind {
    /// A git repository.
    Git,
    /// An rclone remote.
    Rclone,
}

impl Kind {
    /// The remote of this kind at `target`.
    pub fn remote(self, target: String) -> Remote {
        match self {
            Self::Git => Remote::Git(target),
            Self::Rclone => Remote::Rclone(target),
        }
    }
}

/// Runs `remote set` or `remote show`.
pub fn run(cli: &Cli, a: &Args) -> anyhow::Result<ExitCode> {
    let channel = cli.open_channel()?;
    match &a.action {
        Action::Set { kind, target } => {
            let r = kind.remote(target.clone());
            let note = set_remote(&channel, r.clone())?;
            outln!("remote: {r}\nrun `countersign sync` to exchange the channel with it");
            if let Some(note) = note {
                outln!("note: {note}");
            }
            Ok(ExitCode::SUCCESS)
        }
        Action::Show => match remote(&channel) {
            Some(r) => {
                outln!("{r}");
                Ok(ExitCode::SUCCESS)
            }
            None => {
                outln!("no remote: this channel is not synced from this device");
                Ok(ExitCode::from(1))
            }
        },
    }
}
