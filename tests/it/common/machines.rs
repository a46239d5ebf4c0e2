//! Several machines sharing one channel through a real remote: each machine
//! is its own COUNTERSIGN_HOME and its own copy of the channel folder, driven
//! through the real binary; the remote is a bare git repository or an rclone
//! local-backend folder on disk.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use super::bin;

/// One machine: a home and a channel folder.
pub struct Machine {
    pub name: String,
    pub home: PathBuf,
    pub dir: PathBuf,
}

impl Machine {
    /// Runs the binary on this machine's home and folder.
    pub fn cli(&self, args: &[&str]) -> Output {
        Command::new(bin())
            .env("COUNTERSIGN_HOME", &self.home)
            .env_remove("COUNTERSIGN_ROLE")
            .env_remove("AI_AGENT_CHANNEL_ROLE")
            .env_remove("COUNTERSIGN_CHANNEL")
            .arg("--channel")
            .arg(&self.dir)
            .args(args)
            .output()
            .expect("the binary runs")
    }

    /// Runs the binary and requires success; returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.cli(args);
        assert!(
            out.status.success(),
            "{}: `countersign {}` failed: {}{}",
            self.name,
            args.join(" "),
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `countersign sync`, required to succeed.
    pub fn sync(&self) -> String {
        self.ok(&["sync"])
    }

    /// Sends as `role` and returns the new message's short id.
    pub fn send(&self, role: &str, to: &str, topic: &str) -> String {
        let out = self.ok(&[
            "--role", role, "send", "--to", to, "--topic", topic, "--body", "body", "--json",
        ]);
        let v: serde_json::Value = serde_json::from_str(out.trim()).expect("send prints JSON");
        v["id"].as_str().expect("an id").to_owned()
    }

    /// The state digest after a catch-up.
    pub fn digest(&self) -> String {
        self.ok(&["status", "--digest"]).trim().to_owned()
    }

    /// The topics in `role`'s inbox.
    pub fn inbox_topics(&self, role: &str) -> Vec<String> {
        let out = self.ok(&[
            "--role", role, "inbox", "--all", "--limit", "1000", "--json",
        ]);
        let v: serde_json::Value = serde_json::from_str(out.trim()).expect("inbox prints JSON");
        v["result"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|m| m["topic"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The topics of every verified message on this machine, whatever role
    /// it was sent to, as `countersign log` shows them (read from the files).
    pub fn verified_topics(&self) -> Vec<String> {
        self.ok(&["log"])
            .lines()
            .filter(|l| l.starts_with('✓'))
            .filter_map(|l| l.split_once(" send → ").map(|(_, rest)| rest))
            .filter_map(|rest| rest.split_once(": \""))
            .filter_map(|(_, topic)| topic.strip_suffix('"').map(str::to_owned))
            .collect()
    }

    /// This machine's device id.
    pub fn device(&self) -> String {
        let bytes = std::fs::read(self.home.join("device.json")).expect("device.json");
        let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        v["id"].as_str().unwrap().to_owned()
    }

    /// Makes this machine's key for `role` and has `owner` admit it (the
    /// `admit` command `join` prints, run on the owner's machine).
    pub fn join_via(&self, owner: &Machine, role: &str) {
        let out = self.ok(&["--role", role, "join"]);
        let line = out
            .lines()
            .find(|l| l.trim_start().starts_with("countersign admit"))
            .unwrap_or_else(|| panic!("join printed no admit command:\n{out}"));
        let args: Vec<&str> = line.split_whitespace().skip(1).collect();
        owner.ok(&args);
    }
}

/// Runs git in `dir` with a fixed identity (tests need no global git config).
pub fn git(dir: &Path, args: &[&str]) -> Output {
    Command::new("git")
        .args([
            "-c",
            "user.name=test",
            "-c",
            "user.email=test@localhost",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(dir)
        .env("GIT_TERMINAL_PROMPT", "0")
        .output()
        .expect("git runs")
}

/// Runs git and requires success; returns stdout.
pub fn git_ok(dir: &Path, args: &[&str]) -> String {
    let out = git(dir, args);
    assert!(
        out.status.success(),
        "git {} failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A channel shared by `n` machines through a bare git repository. Machine 0
/// is the owner's and writes as `roles[0]`; machine i writes as `roles[i]`,
/// joined and admitted. Everyone has synced once.
pub struct World {
    pub tmp: tempfile::TempDir,
    pub remote: PathBuf,
    pub machines: Vec<Machine>,
}

fn machine(tmp: &Path, i: usize) -> Machine {
    Machine {
        name: format!("machine {}", (b'A' + i as u8) as char),
        home: tmp.join(format!("home-{i}")),
        dir: tmp.join(format!("channel-{i}")),
    }
}

fn init_args<'a>(m: &'a Machine, roles: &'a str, flag: &'a str, remote: &'a str) -> Vec<&'a str> {
    vec![
        "init",
        m.dir.to_str().unwrap(),
        "--roles",
        roles,
        "--name",
        "shared",
        flag,
        remote,
    ]
}

/// Runs `init` (which takes no --channel) on `m`.
fn init(m: &Machine, args: &[&str]) {
    let out = Command::new(bin())
        .env("COUNTERSIGN_HOME", &m.home)
        .env_remove("COUNTERSIGN_CHANNEL")
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "init failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

impl World {
    /// The git world.
    pub fn git(n: usize, roles: &[&str]) -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let remote = tmp.path().join("remote.git");
        git_ok(
            tmp.path(),
            &["init", "-q", "--bare", remote.to_str().unwrap()],
        );
        let url = remote.to_str().unwrap().to_owned();
        let machines: Vec<Machine> = (0..n).map(|i| machine(tmp.path(), i)).collect();
        let roster = roles.join(",");
        init(
            &machines[0],
            &init_args(&machines[0], &roster, "--git-remote", &url),
        );
        machines[0].send(roles[0], roles[1], "hello from the owner");
        machines[0].sync();
        for m in &machines[1..] {
            git_ok(tmp.path(), &["clone", "-q", &url, m.dir.to_str().unwrap()]);
            m.ok(&["remote", "set", "git", &url]);
        }
        let world = Self {
            tmp,
            remote,
            machines,
        };
        world.admit_all(roles);
        world
    }

    /// The rclone world: the remote is a folder on disk reached through
    /// rclone's local backend (`:local:/path`).
    pub fn rclone(n: usize, roles: &[&str]) -> Self {
        require_rclone();
        let tmp = tempfile::tempdir().unwrap();
        let remote = tmp.path().join("remote");
        let target = format!(":local:{}", remote.display());
        let machines: Vec<Machine> = (0..n).map(|i| machine(tmp.path(), i)).collect();
        let roster = roles.join(",");
        init(
            &machines[0],
            &init_args(&machines[0], &roster, "--rclone-remote", &target),
        );
        machines[0].send(roles[0], roles[1], "hello from the owner");
        machines[0].sync();
        for m in &machines[1..] {
            rclone_ok(&["copy", &target, m.dir.to_str().unwrap()]);
            m.ok(&["remote", "set", "rclone", &target]);
        }
        let world = Self {
            tmp,
            remote,
            machines,
        };
        world.admit_all(roles);
        world
    }

    /// Another machine for a git world: a clone with the remote set, that has
    /// not joined any role.
    pub fn clone_machine(&self, i: usize) -> Machine {
        let m = machine(self.tmp.path(), i);
        let url = self.remote.to_str().unwrap();
        git_ok(
            self.tmp.path(),
            &["clone", "-q", url, m.dir.to_str().unwrap()],
        );
        m.ok(&["remote", "set", "git", url]);
        m
    }

    fn admit_all(&self, roles: &[&str]) {
        let owner = &self.machines[0];
        for (i, m) in self.machines.iter().enumerate().skip(1) {
            m.join_via(owner, roles[i]);
        }
        owner.sync();
        for m in &self.machines[1..] {
            m.sync();
        }
    }

    /// Every machine on a thread of its own, all at once: `rounds` times,
    /// machine i sends as `roles[i]` to the next machine's role and syncs.
    /// Returns the topics sent and the syncs that failed (what they said).
    pub fn contend(&self, roles: &[&str], rounds: usize) -> (Vec<String>, Vec<String>) {
        let n = self.machines.len();
        let results: Vec<(Vec<String>, Vec<String>)> = std::thread::scope(|s| {
            let runs: Vec<_> = self
                .machines
                .iter()
                .enumerate()
                .map(|(i, m)| {
                    let (role, to) = (roles[i], roles[(i + 1) % n]);
                    s.spawn(move || {
                        let (mut sent, mut failed) = (Vec::new(), Vec::new());
                        for round in 0..rounds {
                            let topic = format!("{role} round {round}");
                            m.send(role, to, &topic);
                            sent.push(topic);
                            let out = m.cli(&["sync"]);
                            if !out.status.success() {
                                failed.push(format!(
                                    "{} round {round}: {}",
                                    m.name,
                                    String::from_utf8_lossy(&out.stderr)
                                ));
                            }
                        }
                        (sent, failed)
                    })
                })
                .collect();
            runs.into_iter().map(|r| r.join().unwrap()).collect()
        });
        let (mut sent, mut failed) = (Vec::new(), Vec::new());
        for (s, f) in results {
            sent.extend(s);
            failed.extend(f);
        }
        (sent, failed)
    }

    /// [`contend`](Self::contend), then the checks every contention test makes:
    /// no sync failed, every machine settles on one digest, and every topic
    /// sent is verified on every machine.
    pub fn assert_contention_lands(&self, roles: &[&str], rounds: usize) {
        let (sent, failed) = self.contend(roles, rounds);
        assert!(
            failed.is_empty(),
            "{} syncs failed:\n{}",
            failed.len(),
            failed.join("\n")
        );
        let digest = self.settle();
        for m in &self.machines {
            assert_eq!(m.digest(), digest, "{}", m.name);
            let topics = m.verified_topics();
            let missing: Vec<&String> = sent.iter().filter(|t| !topics.contains(t)).collect();
            assert!(missing.is_empty(), "{} lacks {missing:?}", m.name);
        }
    }

    /// Everyone syncs, round after round, until all digests agree (at most 4 rounds).
    pub fn settle(&self) -> String {
        for _ in 0..4 {
            for m in &self.machines {
                m.sync();
            }
            let digests: Vec<String> = self.machines.iter().map(Machine::digest).collect();
            if digests.iter().all(|d| *d == digests[0]) {
                return digests[0].clone();
            }
        }
        let digests: Vec<String> = self.machines.iter().map(Machine::digest).collect();
        panic!("machines did not converge: {digests:?}");
    }
}

/// The roles of the twelve-machine tests: one per machine.
pub const TWELVE: [&str; 12] = [
    "r00", "r01", "r02", "r03", "r04", "r05", "r06", "r07", "r08", "r09", "r10", "r11",
];

/// Fails the test, loudly, when rclone is not installed: tests that need it
/// must never pass without running.
pub fn require_rclone() {
    let ok = Command::new("rclone")
        .arg("version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "rclone is not installed: these tests need it (`apt-get install -y rclone`, which .ci/run does)"
    );
}

/// Runs rclone and requires success.
pub fn rclone_ok(args: &[&str]) -> String {
    let out = Command::new("rclone")
        .args(args)
        .arg("-q")
        .output()
        .expect("rclone runs");
    assert!(
        out.status.success(),
        "rclone {} failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}
