//! `countersign note`: add a note to the memory by hand, as the session's role.
//!
//! The note is a signed record in the role's feed, like a message: everyone
//! who can read the channel folder reads it, and it stays. Before writing,
//! the command delivers what the recording spool of this home still holds
//! (events a crash left there), so a note by hand never sorts before a
//! recorded prompt typed earlier.

use std::io::Read as _;
use std::process::ExitCode;

use super::Cli;
use crate::app::note::{NoteRequest, write_note};
use crate::app::recording;
use crate::cli::output::outln;
use crate::core::memory::note::{MAX_NOTE_BYTES, NoteKind};

/// Arguments of `note`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Who can read it: everyone who can read the channel folder (every role, every \
    machine the folder syncs to, anyone with a copy of it), for as long as the folder exists. A \
    note is a signed record of your role's feed, like a message; it cannot be taken back."
)]
pub struct Args {
    /// The note's text (at most 64 KiB); read from standard input when omitted.
    pub text: Option<String>,
}

/// Writes the note and prints `{id, created_at, written}` as JSON.
pub fn run(cli: &Cli, a: &Args) -> anyhow::Result<ExitCode> {
    let text = match &a.text {
        Some(t) => t.clone(),
        None => {
            let mut s = String::new();
            std::io::stdin()
                .take(MAX_NOTE_BYTES as u64 + 1)
                .read_to_string(&mut s)?;
            s
        }
    };
    let home = cli.home()?;
    // Events left in the spool by a crash go first; a delivery running
    // elsewhere takes them itself.
    if let Err(e) = recording::deliver(&home, false) {
        eprintln!("countersign note: the recording spool was not delivered ({e})");
    }
    let mut session = cli.session_with_role()?;
    let out = write_note(
        &mut session,
        NoteRequest {
            kind: NoteKind::Note,
            text,
            event: None,
            agent: None,
            session: None,
            folder: None,
            folder_hash: None,
        },
    )?;
    outln!("{}", serde_json::to_string(&out)?);
    Ok(ExitCode::SUCCESS)
}
