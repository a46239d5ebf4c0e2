//! An independent client: the official Python MCP SDK drives the real binary
//! (tests/python/cross_check.py), so the server is known to work with a client other than rmcp.
//!
//! The interpreter is `$COUNTERSIGN_PYTHON` if set, else `target/py/bin/python` when
//! `.ci/python-env.sh` has made it, else `python3`. Without the `mcp` package the test fails
//! and says how to install it: it never passes without running.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const TIMEOUT: Duration = Duration::from_secs(300);

fn manifest_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `$COUNTERSIGN_PYTHON` (a relative path is taken from the crate root), else the venv
/// `.ci/python-env.sh` makes, else `python3`.
pub fn python() -> PathBuf {
    if let Some(p) = std::env::var_os("COUNTERSIGN_PYTHON").filter(|v| !v.is_empty()) {
        let p = PathBuf::from(p);
        return if p.is_relative() && p.components().count() > 1 {
            manifest_dir().join(p)
        } else {
            p
        };
    }
    let venv = manifest_dir().join("target/py/bin/python");
    if venv.is_file() {
        venv
    } else {
        PathBuf::from("python3")
    }
}

/// `Ok(())` if the interpreter runs and imports `mcp`; otherwise why not.
pub fn has_mcp(py: &Path) -> Result<(), String> {
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
        panic!(
            "the Python MCP SDK is missing in {}: {why}; run `bash .ci/python-env.sh` \
             (it makes target/py, which this test finds) or set COUNTERSIGN_PYTHON",
            py.display()
        );
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
