//! The machine the bench runs on, as the report describes it: CPU, memory,
//! kernel, the scratch folder's file system and its fsync time, the load;
//! and the peak memory of a process.

use std::fs;
use std::io::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use super::sampler::p;

pub struct Machine {
    cpu: String,
    cores: usize,
    memory_gb: f64,
    kernel: String,
    fs: String,
    pub fsync_p50: Duration,
}

impl Machine {
    pub fn probe(scratch: &Path) -> anyhow::Result<Self> {
        let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu = cpuinfo
            .lines()
            .find_map(|l| {
                l.strip_prefix("model name")
                    .and_then(|r| r.split(':').nth(1))
            })
            .map_or_else(|| "unknown CPU".to_owned(), |s| s.trim().to_owned());
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        let meminfo = fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let memory_gb = meminfo
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|r| r.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
            .map_or(0.0, |kb| kb * 1024.0 / 1e9);
        let kernel = fs::read_to_string("/proc/sys/kernel/osrelease")
            .map_or_else(|_| "?".into(), |s| s.trim().to_owned());
        let mounts = fs::read_to_string("/proc/mounts").unwrap_or_default();
        let root = fs::canonicalize(scratch).unwrap_or_else(|_| scratch.to_path_buf());
        let fs = mounts
            .lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                (f.len() >= 3 && root.starts_with(f[1]))
                    .then(|| (f[1].len(), format!("{} on {} ({})", f[2], f[1], f[0])))
            })
            .max_by_key(|(n, _)| *n)
            .map_or_else(|| "unknown filesystem".to_owned(), |(_, s)| s);
        // fsync: what every durable append pays once (the journal's).
        let probe = scratch.join("fsync.probe");
        let mut f = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&probe)?;
        let mut samples = Vec::new();
        for _ in 0..50 {
            let t = Instant::now();
            f.write_all(&[b'x'; 4096])?;
            f.sync_data()?;
            samples.push(t.elapsed());
        }
        drop(f);
        let _ = fs::remove_file(&probe);
        Ok(Self {
            cpu,
            cores,
            memory_gb,
            kernel,
            fs,
            fsync_p50: p(&samples, 50),
        })
    }

    pub fn describe(&self) -> String {
        format!(
            "{} × {} cores, {:.1} GB RAM, Linux {}, {}; fsync p50 {:.3} ms; load {}",
            self.cpu,
            self.cores,
            self.memory_gb,
            self.kernel,
            self.fs,
            self.fsync_p50.as_secs_f64() * 1e3,
            load_average()
        )
    }
}

/// The 1, 5 and 15 minute load averages: other work on the machine skews
/// every number here, so the table says how busy it was.
pub fn load_average() -> String {
    fs::read_to_string("/proc/loadavg").map_or_else(
        |_| "?".to_owned(),
        |s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "),
    )
}

/// VmHWM (peak resident set) of a process, in kB, from /proc.
pub fn vm_hwm_kb(pid: &str) -> Option<u64> {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|r| r.trim().trim_end_matches("kB").trim().parse().ok())
}
