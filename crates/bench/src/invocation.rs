//! The `countersign` the bench measures, and timing it as a process.
//!
//! The bench measures the product binary, not itself: the `countersign` built
//! beside `countersign-bench` (`cargo build --workspace` links both from
//! the same sources). `cargo run --bin countersign-bench` builds only the
//! bench, which can leave an older `countersign` beside it; that is warned
//! about, since the table would then describe other code.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};

/// How much older than the bench the product binary may be before it is
/// taken for a leftover of an earlier build: one `cargo build` links the two
/// within seconds of each other, in either order.
const STALE_AFTER: Duration = Duration::from_secs(60);

/// The product binary under measurement.
pub struct Countersign {
    path: PathBuf,
}

impl Countersign {
    /// The `countersign` in the folder of this executable.
    pub fn beside_this() -> anyhow::Result<Self> {
        let me = std::env::current_exe().context("finding this executable")?;
        let path = me.with_file_name(format!("countersign{}", std::env::consts::EXE_SUFFIX));
        ensure!(
            path.is_file(),
            "no countersign beside this binary ({}): build both with \
             `cargo build --release --workspace`",
            path.display()
        );
        let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
        if let (Some(product), Some(bench)) = (modified(&path), modified(&me))
            && bench.duration_since(product).is_ok_and(|d| d > STALE_AFTER)
        {
            eprintln!(
                "warning: {} is older than this bench binary; it may be from an earlier build \
                 (`cargo build --release --workspace` builds both)",
                path.display()
            );
        }
        Ok(Self { path })
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `countersign --channel DIR --role ROLE ARGS…` with
    /// `COUNTERSIGN_HOME=home` and `stdin` on its standard input, its output
    /// discarded, and returns the time from start to exit (whatever the exit
    /// code: `status` exits 1 when something is actionable).
    pub fn time(
        &self,
        dir: &Path,
        home: &Path,
        role: &str,
        args: &[&str],
        stdin: Option<&str>,
    ) -> anyhow::Result<Duration> {
        let start = Instant::now();
        let mut child = Command::new(&self.path)
            .arg("--channel")
            .arg(dir)
            .arg("--role")
            .arg(role)
            .args(args)
            .env("COUNTERSIGN_HOME", home)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("running countersign {}", args.join(" ")))?;
        if let Some(text) = stdin {
            child
                .stdin
                .take()
                .context("stdin")?
                .write_all(text.as_bytes())?;
        }
        drop(child.stdin.take());
        child.wait()?;
        Ok(start.elapsed())
    }
}
