//! An independent client: the official Python MCP SDK drives the real binary
//! (tests/python/cross_check.py), so the server is known to work with a client other than rmcp.
//!
//! The interpreter is `$COUNTERSIGN_PYTHON` if set (CI: `.ci/python-env.sh` makes
//! `target/py/bin/python`), else `python3`. Without the `mcp` package the test is skipped
//! locally, but fails when `CI` is set: CI must install it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const TIMEOUT: Duration = Duration::from_secs(300);

fn manifest_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `$COUNTERSIGN_PYTHON` (a relative path is taken from the crate root) or `python3`.
fn python() -> PathBuf {
    match std::env::var_os("COUNTERSIGN_PYTHON").filter(|v| !v.is_empty()) {
        Some(p) => {
            let p = PathBuf::from(p);
            if p.is_relative() && p.components().count() > 1 {
                manifest_dir().join(p)
            } else {
                p
            }
        }
        None => PathBuf::from("python3"),
    }
}

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0")
}

/// `Ok(())` if the interpreter runs and imports `mcp`; otherwise why not.
fn has_mcp(py: &Path) -> Result<(), String> {
    match Command::new(py)
        .args(["-c", "import mcp"])
        .stdin(Stdio::null())
        .output()
    {
        Ok(out) if out.status.success() => Ok(()),
        Ok(out) => {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let last = stderr
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("no output");
            Err(format!("`import mcp` failed: {}", last.trim()))
        }
        Err(e) => Err(format!("cannot run it: {e}")),
    }
}

#[test]
fn the_official_python_sdk_talks_to_the_server() {
    let py = python();
    if let Err(why) = has_mcp(&py) {
        let hint = "run .ci/python-env.sh and set COUNTERSIGN_PYTHON=target/py/bin/python";
        assert!(
            !in_ci(),
            "CI is set but the Python MCP SDK is missing in {}: {why} ({hint})",
            py.display()
        );
        eprintln!(
            "note: skipping the Python MCP cross-check, no `mcp` in {}: {why} ({hint})",
            py.display()
        );
        return;
    }

    // Output goes to files, not pipes: nothing can block, and a hang is killed below.
    let out = tempfile::NamedTempFile::new().expect("temp file");
    let err = tempfile::NamedTempFile::new().expect("temp file");
    let script = manifest_dir().join("tests/python/cross_check.py");
    let mut child = Command::new(&py)
        .arg(&script)
        .arg(env!("CARGO_BIN_EXE_countersign"))
        .env_remove("COUNTERSIGN_ROLE")
        .env_remove("AI_AGENT_CHANNEL_ROLE")
        .env_remove("COUNTERSIGN_CHANNEL")
        .stdin(Stdio::null())
        .stdout(out.reopen().expect("reopen"))
        .stderr(err.reopen().expect("reopen"))
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", py.display()));
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait for the script") {
            break Some(s);
        }
        if start.elapsed() > TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let stdout = std::fs::read_to_string(out.path()).unwrap_or_default();
    let stderr = std::fs::read_to_string(err.path()).unwrap_or_default();
    let shown = format!("--- stdout ---\n{stdout}--- stderr ---\n{stderr}");
    match status {
        None => panic!("cross_check.py did not finish within {TIMEOUT:?}\n{shown}"),
        Some(s) => assert!(
            s.success(),
            "cross_check.py failed ({s}) with {}\n{shown}",
            py.display()
        ),
    }
    print!("{stdout}");
}
