//! The `countersign` binary: parses the command line and runs it.

use std::process::ExitCode;

fn main() -> ExitCode {
    // Before anything else: a secret in the arguments is already visible in
    // `ps`; say so rather than use it.
    let args: Vec<_> = std::env::args_os().collect();
    if let Some(why) = countersign::secret_in_args(&args) {
        eprintln!("countersign: {why}");
        return ExitCode::from(2);
    }
    countersign::run(countersign::Cli::parse_args(args))
}
