//! The `countersign-bench` binary (crates/bench): measures the `countersign`
//! built beside it against the performance budgets. See docs/benchmarks.md.

use std::process::ExitCode;

fn main() -> ExitCode {
    countersign_bench::main()
}
