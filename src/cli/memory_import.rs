//! `countersign memory import FILE`: old notes into the memory, as --role.
//!
//! A thin adapter: reads the file (bounded), lets `core::memory::import`
//! check every entry, and hands the notes to `app::import`, which writes all
//! of them or none. A file with a bad entry is refused whole, every bad entry
//! named by its line.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::bail;

use super::Cli;
use crate::app::import::import_notes;
use crate::cli::output::outln;
use crate::core::memory::import::{Format, parse};
use crate::core::peer_text::one_line;
use crate::store::folder_file;

/// The largest file `memory import` reads.
const MAX_IMPORT_FILE: u64 = 64 * 1024 * 1024;

/// How many bad entries a refusal lists before it says how many more.
const SHOWN_BAD: usize = 20;

/// Arguments of `memory import`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Formats, by the file's name:
  FILE.txt (or .md)  one note per paragraph (paragraphs are separated by a blank line)
  FILE.jsonl         one {\"kind\", \"text\", \"date\", \"origin\"} per line; kind is prompt, reply,
                     turn or note; date and origin are optional and open the note's text
Importing the same entries again adds nothing. A file with a bad entry is refused whole, every bad
entry named by its line. The notes are records of --role's feed: everyone who can read the
channel folder can read them, for good.")]
pub struct Args {
    /// The file of notes (.txt, .md or .jsonl).
    pub file: PathBuf,
}

/// Imports the file and prints `{written, already}` as JSON.
pub fn run(cli: &Cli, a: &Args) -> anyhow::Result<ExitCode> {
    let name = a.file.display().to_string();
    let Some(format) = Format::of_name(&name) else {
        bail!(
            "{name}: the format is told by the file's name: .txt or .md (a note per paragraph) or \
             .jsonl (one {{kind, text, date, origin}} per line). Nothing was imported"
        );
    };
    let bytes = folder_file::read(&a.file, MAX_IMPORT_FILE)?;
    let Ok(text) = String::from_utf8(bytes) else {
        bail!("{name} is not UTF-8 text. Nothing was imported");
    };
    let notes = match parse(&text, format) {
        Ok(n) => n,
        Err(bad) => {
            for b in bad.iter().take(SHOWN_BAD) {
                eprintln!("{}:{}: {}", one_line(&name), b.line, one_line(&b.why));
            }
            if bad.len() > SHOWN_BAD {
                eprintln!("… and {} more", bad.len() - SHOWN_BAD);
            }
            bail!(
                "{} entr{} of {name} cannot be imported (listed above): fix them and run the \
                 import again. Nothing was imported",
                bad.len(),
                if bad.len() == 1 { "y" } else { "ies" }
            );
        }
    };
    let mut session = cli.session_with_role()?;
    let out = import_notes(&mut session, notes)?;
    outln!("{}", serde_json::to_string(&out)?);
    Ok(ExitCode::SUCCESS)
}
