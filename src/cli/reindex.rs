//! `countersign reindex`: rebuild the index from the feeds, with a progress bar.

use std::process::ExitCode;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};

use super::Cli;
use crate::cli::output::outln;
use crate::store::survey;

/// Arguments of `reindex`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Rebuilds and prints what was folded and the state digest.
pub fn run(cli: &Cli, _a: &Args) -> anyhow::Result<ExitCode> {
    let mut channel = cli.open_channel()?;
    let total: u64 = survey::list_feeds(&channel.dir().feeds())?
        .iter()
        .filter_map(|(_, dir)| survey::list_segments(dir).ok())
        .flatten()
        .filter_map(|s| std::fs::metadata(&s.path).ok())
        .map(|m| m.len())
        .sum();
    // indicatif draws on stderr and hides itself when stderr is not a terminal.
    let bar = ProgressBar::new(total).with_style(
        ProgressStyle::with_template("{spinner} reindex [{bar:40}] {bytes}/{total_bytes} ({eta})")
            .expect("the template is valid")
            .progress_chars("=> "),
    );
    let started = Instant::now();
    let mut tick = |n: u64| bar.inc(n);
    let report = channel.reindex(Some(&mut tick))?;
    bar.finish_and_clear();
    let secs = started.elapsed().as_secs_f64();
    outln!(
        "reindexed {} records in {secs:.2}s ({:.0} records/s); {} messages folded; {} problem(s) recorded",
        report.accepted,
        report.accepted as f64 / secs.max(1e-9),
        report.refolded,
        report.new_problems
    );
    for w in &report.waiting {
        outln!("waiting: {w}");
    }
    outln!("state digest {}", channel.index().digest()?);
    Ok(ExitCode::SUCCESS)
}
