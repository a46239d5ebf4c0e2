//! The `countersign` binary: parses the command line and runs it.

use std::process::ExitCode;

use clap::Parser as _;

fn main() -> ExitCode {
    countersign::cli::run(countersign::cli::Cli::parse())
}
