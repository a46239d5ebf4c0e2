//! Side by side with another stdio server of the same tools: the reference
//! implementation whose tool contract countersign keeps (the same names,
//! parameters and refusals), or any server that keeps it. Both get a
//! channel made by the same tool calls, then the same calls are timed on
//! the wire by the same raw client ([`Raw`]), on the same machine, each
//! tool on one side and then on the other. What counts is the ratio of the
//! two, and of their answers' bytes: the machine's load moves both.
//!
//! The other server is started the way the reference is: the program with
//! no arguments, the role in `AI_AGENT_CHANNEL_ROLE` and a database file of
//! its own (fresh, in the scratch folder) in `AI_AGENT_CHANNEL_DB`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use serde_json::{Value, json};

use super::corpus::{Rng, body, topic};
use super::machine::vm_hwm_kb;
use super::seed::progress_bar;
use super::wire::{Raw, Wire};
use super::{COMMON_TERM, RARE_TERM, ROLES, SERVER_ROLE};
use countersign::app::init::create_channel;
use countersign::mcp_client::server_command;
use countersign::store::Home;

/// How many cold starts are timed on each side.
const STARTS: usize = 5;
/// The share of messages that are debts (`action_required`).
const DEBTS: f64 = 0.2;
/// The share of messages whose body holds the selective search term.
const PLANTED: f64 = 0.01;

/// The reads timed, with their arguments: the same on both sides.
pub fn reads() -> [(&'static str, Value); 5] {
    [
        ("read_inbox", json!({"limit": 50})),
        ("list_messages", json!({"limit": 50})),
        ("search_messages", json!({"query": RARE_TERM})),
        ("open_obligations", json!({"limit": 50})),
        ("channel_status", json!({})),
    ]
}

/// Searches as agents mostly make them, timed after [`reads`] on both
/// sides with no budget of their own: a word in about half the messages,
/// and two words (two phrases, both common). FTS5 ranks every match for
/// both servers, so these measure the index's work more than the server's.
pub fn common_searches() -> [(&'static str, Value); 2] {
    [
        (
            "search_messages (common word)",
            json!({"query": COMMON_TERM}),
        ),
        (
            "search_messages (two words)",
            json!({"query": format!("{COMMON_TERM} retry")}),
        ),
    ]
}

/// How one side's server is started for a role.
pub enum Launch {
    /// `countersign mcp` on a channel of the bench's roles.
    Countersign {
        exe: PathBuf,
        channel: PathBuf,
        home: PathBuf,
    },
    /// Another server, started as the reference is.
    Other { program: PathBuf, db: PathBuf },
}

/// The versions of the Python packages that set the reference's speed, when
/// `program` is a script of a Python environment (a `python` beside it):
/// the same reference under another `mcp` or `pydantic` answers at another
/// pace, so a run names them. `None` for any other program.
pub fn python_packages(program: &Path) -> Option<String> {
    let python = program.parent()?.join("python");
    if !python.is_file() {
        return None;
    }
    const SCRIPT: &str = "import importlib.metadata as m\n\
        v = {(d.metadata['Name'] or '').lower(): d.version for d in m.distributions()}\n\
        print(', '.join(p + ' ' + v.get(p, 'absent') for p in ('mcp', 'pydantic')))";
    let out = Command::new(python).arg("-c").arg(SCRIPT).output().ok()?;
    let line = String::from_utf8(out.stdout).ok()?;
    (out.status.success() && !line.trim().is_empty()).then(|| line.trim().to_owned())
}

impl Launch {
    /// countersign on a new channel under `root`.
    pub fn countersign(exe: &Path, root: &Path) -> anyhow::Result<Self> {
        let home = root.join("home");
        let dir = create_channel(
            &root.join("channel"),
            &ROLES,
            "side-by-side",
            &Home::at(home.clone()),
        )?;
        Ok(Self::Countersign {
            exe: exe.to_path_buf(),
            channel: dir.root().to_path_buf(),
            home,
        })
    }

    /// The other server, `program`, with a fresh database under `root`.
    pub fn other(program: &Path, root: &Path) -> anyhow::Result<Self> {
        let meta = std::fs::metadata(program)
            .with_context(|| format!("the server to compare with, {}", program.display()))?;
        ensure!(meta.is_file(), "{} is not a file", program.display());
        let dir = root.join("other");
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        Ok(Self::Other {
            program: program.to_path_buf(),
            db: dir.join("messages.db"),
        })
    }

    fn command(&self, role: &str) -> Command {
        match self {
            Self::Countersign { exe, channel, home } => {
                server_command(exe, channel, home, role, &[])
            }
            Self::Other { program, db } => {
                let mut c = Command::new(program);
                c.env("AI_AGENT_CHANNEL_ROLE", role)
                    .env("AI_AGENT_CHANNEL_DB", db);
                c
            }
        }
    }

    fn start(&self, role: &str) -> anyhow::Result<Raw> {
        Raw::start(self.command(role))
    }
}

/// What one side measured.
pub struct Side {
    pub name: &'static str,
    /// Spawn until the answer to tools/list is read, each start.
    pub starts: Vec<Duration>,
    /// The tools timed, as the wire bench keeps them.
    pub wire: Wire,
    /// The timed server's peak resident memory, kB.
    pub peak_rss_kb: Option<u64>,
    /// The bytes of the answer to tools/list.
    pub tools_list_bytes: usize,
    /// Per read: how long the client's parse of its last answer takes
    /// alone, a share of the wire figure that only the answer's size sets.
    pub parse: Vec<(&'static str, Duration)>,
}

/// The median time the client takes to parse `line` into a JSON value.
fn parse_time(line: &str) -> Duration {
    let mut v: Vec<Duration> = (0..21)
        .map(|_| {
            let t = Instant::now();
            let parsed: serde_json::Result<Value> = serde_json::from_str(line);
            let took = t.elapsed();
            drop(parsed);
            took
        })
        .collect();
    v.sort();
    v[v.len() / 2]
}

/// The calls that make the channel, the same for both sides: who sends,
/// and the arguments.
fn corpus(messages: usize) -> Vec<(usize, Value)> {
    let mut rng = Rng(0x51de_b1de);
    (0..messages)
        .map(|_| {
            let from = rng.below(ROLES.len() as u64) as usize;
            let to = (from + 1 + rng.below(ROLES.len() as u64 - 1) as usize) % ROLES.len();
            let len = 100 + rng.below(900) as usize;
            let planted = rng.chance(PLANTED);
            let args = json!({
                "to": ROLES[to],
                "topic": topic(&mut rng, ""),
                "body": body(&mut rng, len, planted),
                "action_required": rng.chance(DEBTS),
            });
            (from, args)
        })
        .collect()
}

/// Makes the channel of `side` (called `name` on the progress bar): every
/// call of the corpus through a server of its author's role.
pub fn fill(name: &str, side: &Launch, messages: usize) -> anyhow::Result<()> {
    let mut servers = ROLES
        .iter()
        .map(|r| side.start(r))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let bar = progress_bar(messages, &format!("making {name}'s channel"), "sends");
    for (from, args) in bar.wrap_iter(corpus(messages).into_iter()) {
        let sent = servers[from].request(
            "tools/call",
            json!({"name": "send_message", "arguments": args}),
        )?;
        ensure!(
            sent["result"]["isError"] != Value::Bool(true),
            "send_message was refused: {}",
            servers[from].line.chars().take(300).collect::<String>()
        );
    }
    bar.finish_and_clear();
    Ok(())
}

/// Times the starts, the reads and the two durable writes of both sides,
/// through a server of [`SERVER_ROLE`] each: every call on one side, then
/// on the other, so that a change in the machine's load meets both.
pub fn measure(sides: [(&'static str, &Launch); 2], calls: usize) -> anyhow::Result<[Side; 2]> {
    let mut starts = [const { Vec::new() }; 2];
    let mut tools_list_bytes = [0; 2];
    for _ in 0..STARTS {
        for (i, (_, side)) in sides.iter().enumerate() {
            let t = Instant::now();
            let mut raw = side.start(SERVER_ROLE)?;
            raw.request("tools/list", json!({}))?;
            starts[i].push(t.elapsed());
            tools_list_bytes[i] = raw.line.len();
        }
    }
    let mut raws = [
        sides[0].1.start(SERVER_ROLE)?,
        sides[1].1.start(SERVER_ROLE)?,
    ];
    let mut wires = [Wire { rows: Vec::new() }, Wire { rows: Vec::new() }];
    let mut parse = [const { Vec::new() }; 2];
    for (tool, args) in reads() {
        for ((raw, wire), parse) in raws.iter_mut().zip(&mut wires).zip(&mut parse) {
            wire.time(raw, tool, calls, |_| args.clone())?;
            parse.push((tool, parse_time(&raw.line)));
        }
    }
    for (label, args) in common_searches() {
        for (raw, wire) in raws.iter_mut().zip(&mut wires) {
            wire.time_as(raw, label, "search_messages", calls, |_| args.clone())?;
        }
    }
    for (raw, wire) in raws.iter_mut().zip(&mut wires) {
        wire.time_sends(raw, calls)?;
    }
    for ((raw, wire), (_, side)) in raws.iter_mut().zip(&mut wires).zip(&sides) {
        wire.time_resolves(raw, side.start("backend")?, calls)?;
    }
    let [w0, w1] = wires;
    let [s0, s1] = starts;
    let [p0, p1] = parse;
    let side = |i: usize, wire: Wire, starts: Vec<Duration>, parse| Side {
        name: sides[i].0,
        starts,
        wire,
        peak_rss_kb: vm_hwm_kb(&raws[i].pid().to_string()),
        tools_list_bytes: tools_list_bytes[i],
        parse,
    };
    Ok([side(0, w0, s0, p0), side(1, w1, s1, p1)])
}

#[cfg(test)]
mod tests {
    use super::python_packages;
    use std::os::unix::fs::PermissionsExt as _;

    /// Writes an executable shell script `name` into `dir`.
    fn script(dir: &std::path::Path, name: &str, body: &str) -> std::path::PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    #[test]
    fn a_program_of_a_python_environment_names_its_packages_and_any_other_none() {
        let tmp = tempfile::tempdir().unwrap();
        let server = script(tmp.path(), "server", "exit 0");
        assert_eq!(python_packages(&server), None, "no python beside it");
        // A stand-in for the environment's python: what it prints is the answer.
        script(tmp.path(), "python", "echo 'mcp 9.9.9, pydantic absent'");
        assert_eq!(
            python_packages(&server).as_deref(),
            Some("mcp 9.9.9, pydantic absent")
        );
        script(tmp.path(), "python", "echo 'mcp 1'; exit 1");
        assert_eq!(
            python_packages(&server),
            None,
            "a python that fails says nothing"
        );
    }
}
