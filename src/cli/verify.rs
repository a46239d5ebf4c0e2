//! `countersign verify`: check every signature and chain, straight from the files.

use std::process::ExitCode;

use super::Cli;
use crate::cli::output::outln;
use crate::core::peer_text::one_line;
use crate::store::Index;
use crate::store::{Ingest, ScanCache};

/// Arguments of `verify`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Folds every feed into a throwaway in-memory index (the real index is not
/// touched) and lists what could not be applied. Exit 0 clean, 1 problems.
pub fn run(cli: &Cli, _a: &Args) -> anyhow::Result<ExitCode> {
    let dir = cli.channel_dir()?;
    let index = Index::in_memory(dir.id())?;
    let report = index.write(|tx| Ingest::run(tx, &dir, &mut ScanCache::default()))?;
    let problems = index.problems()?;
    for p in &problems {
        let rec = p
            .record
            .as_deref()
            .map(|r| format!(" record {}", &r[..12.min(r.len())]))
            .unwrap_or_default();
        // Paths are named by whoever wrote the folder: shown inert.
        outln!(
            "{}: {}:{}{rec}: {}",
            p.kind,
            one_line(&p.path),
            p.offset,
            one_line(&p.reason)
        );
    }
    for w in &report.waiting {
        outln!("waiting: {}", one_line(w));
    }
    let clean = problems.is_empty() && report.waiting.is_empty();
    outln!(
        "{} records verified, {} problem(s), {} feed(s) waiting — {}",
        report.accepted,
        problems.len(),
        report.waiting.len(),
        if clean { "clean" } else { "NOT clean" }
    );
    Ok(if clean {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
