//! The board's loopback server: finding a server of this home that serves a
//! channel on a loopback address, starting one (`countersign serve` in the
//! background) when nothing answers, and stopping the one started so.
//! `countersign board` and the stdio `board_link` tool both come here.
//!
//! A server counts as ours only when it answers a fresh challenge with the
//! proof of `core::proof` made with the home's server secret, for the
//! address asked and this channel; anything else on the port (another
//! home's server, a process squatting it) gets no link. A server started
//! here is written down in the channel's state folder (`board-server.json`:
//! its pid and address), and `stop` ends only a process that is still that
//! server: its command line must be `serve` of this channel, and it must
//! still prove it is ours. Links and keys are `app::board`'s: [`link_for`]
//! only asks for one once the server answers.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::Session;
use super::hosting::{BoardLink, channel_ref, issue_link};
use super::refusal::{AppError, AppResult};
use crate::core::proof::{CHALLENGE_BYTES, board_proof, same};
use crate::store::hosting::access::{Access, ChannelRef};

/// Where the board's own server listens unless told otherwise (`serve`'s
/// default address too).
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8765";

/// How long a server started here may take to answer.
const START_WAIT: Duration = Duration::from_secs(15);

/// How long a stopped server may take to end.
const STOP_WAIT: Duration = Duration::from_secs(10);

/// The file, in the channel's state folder, naming the server started here.
const STARTED_FILE: &str = "board-server.json";

/// What answers on the board's address.
#[derive(Debug, PartialEq, Eq)]
pub enum Probe {
    /// A server of this home, serving the channel there.
    Ours,
    /// Something that does not prove it is (why).
    Stranger(String),
    /// Nothing answers.
    Nobody,
}

/// Where the board's server runs, and how to start one.
#[derive(Clone, Debug)]
pub struct Loopback {
    /// The channel folder.
    pub channel_dir: PathBuf,
    /// The channel.
    pub channel: ChannelRef,
    /// The home given on the command line (passed on to a started server).
    pub home_arg: Option<PathBuf>,
    /// The channel's state folder in the home (the log and the started file).
    pub state_dir: PathBuf,
    /// The home's server secret.
    pub secret: Vec<u8>,
    /// The loopback address.
    pub listen: SocketAddr,
}

/// The server started by `countersign board` (or board_link).
#[derive(Debug, Serialize, Deserialize)]
struct Started {
    pid: u32,
    listen: SocketAddr,
}

/// What [`Loopback::ensure`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum Serving {
    /// A server of this home already answered.
    Reused,
    /// One was started; its log is there.
    Started(PathBuf),
}

impl Loopback {
    /// The server's log file.
    pub fn log(&self) -> PathBuf {
        self.state_dir.join("serve.log")
    }

    /// Asks whatever listens on the address to prove that it holds this
    /// home's server secret and serves the channel there, with a fresh
    /// challenge.
    pub fn probe(&self) -> Probe {
        let mut challenge = [0u8; CHALLENGE_BYTES];
        getrandom::fill(&mut challenge).expect("the OS random source works");
        let challenge = hex::encode(challenge);
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_millis(800)))
            .http_status_as_error(false)
            .max_redirects(0)
            .build()
            .new_agent();
        let url = format!(
            "http://{}/board/{}/proof?c={challenge}",
            self.listen, self.channel.name
        );
        let Ok(mut answer) = agent.get(url).call() else {
            return Probe::Nobody;
        };
        if answer.status() != 200 {
            return Probe::Stranger(format!("it answers {} to the proof", answer.status()));
        }
        let proof = answer
            .body_mut()
            .with_config()
            .limit(4096)
            .read_to_string()
            .ok()
            .and_then(|body| serde_json::from_str::<serde_json::Value>(&body).ok())
            .and_then(|v| v.get("proof")?.as_str().map(str::to_owned));
        let want = board_proof(&self.secret, self.listen, &self.channel.id, &challenge);
        match proof {
            Some(p) if same(&p, &want) => Probe::Ours,
            Some(_) => Probe::Stranger("its proof is not made with this home's secret".into()),
            None => Probe::Stranger("it gives no proof".into()),
        }
    }

    /// Makes sure a server of this home serves the channel on the address:
    /// reuses one that proves it, starts one when nothing answers, refuses
    /// when a stranger holds the port.
    pub fn ensure(&self) -> AppResult<Serving> {
        if !self.listen.ip().is_loopback() {
            return Err(AppError::value(format!(
                "{}: the board's own server listens on loopback only; for a public one run \
                 `countersign serve --public` behind a proxy",
                self.listen
            )));
        }
        match self.probe() {
            Probe::Ours => return Ok(Serving::Reused),
            Probe::Stranger(why) => {
                return Err(AppError::value(format!(
                    "{} answers, but not as a server of this home serving channel '{}' ({why}), \
                     so it gets no link: stop whatever listens there, or choose another address",
                    self.listen, self.channel.name
                )));
            }
            Probe::Nobody => {}
        }
        let log = self.log();
        let pid = self.start(&log)?;
        let started = Instant::now();
        while self.probe() != Probe::Ours {
            if started.elapsed() > START_WAIT {
                return Err(AppError::value(format!(
                    "the server started for the board does not prove it serves channel '{}' on \
                     {}: see {}",
                    self.channel.name,
                    self.listen,
                    log.display()
                )));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let record = serde_json::to_vec(&Started {
            pid,
            listen: self.listen,
        })
        .expect("the record serializes");
        // Without the file the server still serves; only `board --stop`
        // cannot find it, and it says so.
        let _ =
            crate::store::folder_file::replace(&self.state_dir.join(STARTED_FILE), &record, false);
        Ok(Serving::Started(log))
    }

    /// Starts `countersign serve --channel DIR --listen ADDR` in the
    /// background, detached from this terminal (its own process group),
    /// with its output in `log`; its pid.
    fn start(&self, log: &Path) -> AppResult<u32> {
        use std::os::unix::process::CommandExt as _;
        let io = |what: &str, e: std::io::Error| {
            AppError::value(format!("cannot {what} to start the board's server: {e}"))
        };
        if let Some(parent) = log.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| io(&format!("make {}", parent.display()), e))?;
        }
        let out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .map_err(|e| io(&format!("open {}", log.display()), e))?;
        let err = out.try_clone().map_err(|e| io("share the log", e))?;
        let exe = std::env::current_exe().map_err(|e| io("find this program", e))?;
        let mut cmd = Command::new(exe);
        if let Some(h) = &self.home_arg {
            cmd.arg("--home").arg(h);
        }
        cmd.arg("serve")
            .arg("--channel")
            .arg(&self.channel_dir)
            .arg("--listen")
            .arg(self.listen.to_string())
            .env_remove("COUNTERSIGN_ADMIN_TOKEN")
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .process_group(0);
        let child = cmd.spawn().map_err(|e| io("run `countersign serve`", e))?;
        Ok(child.id())
    }

    /// Stops the server this home started for the channel (by `board` or
    /// board_link): what was stopped, in words, or why nothing was.
    pub fn stop(&self) -> AppResult<String> {
        let file = self.state_dir.join(STARTED_FILE);
        let Some(started) = std::fs::read(&file)
            .ok()
            .and_then(|b| serde_json::from_slice::<Started>(&b).ok())
        else {
            return Ok(format!(
                "no board server was started here for channel '{}': nothing to stop (a \
                 `countersign serve` you started yourself stops with Ctrl-C)",
                self.channel.name
            ));
        };
        let here = Self {
            listen: started.listen,
            ..self.clone()
        };
        if !here.is_our_serve(started.pid) {
            let _ = std::fs::remove_file(&file);
            return Ok(format!(
                "the board server started for channel '{}' (pid {}) has ended already: nothing \
                 to stop",
                self.channel.name, started.pid
            ));
        }
        if here.probe() != Probe::Ours {
            return Err(AppError::value(format!(
                "pid {} runs `serve` for channel '{}' but does not prove it is this home's \
                 server on {}, so it is left running: stop it yourself if it is yours",
                started.pid, self.channel.name, started.listen
            )));
        }
        // kill(1): the crate has no unsafe code to call kill(2) itself.
        let sent = Command::new("kill")
            .arg("-TERM")
            .arg(started.pid.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        if !sent.is_ok_and(|s| s.success()) {
            return Err(AppError::value(format!(
                "cannot stop the board server (pid {}): `kill -TERM {}` failed",
                started.pid, started.pid
            )));
        }
        let asked = Instant::now();
        while here.is_our_serve(started.pid) && asked.elapsed() < STOP_WAIT {
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = std::fs::remove_file(&file);
        Ok(format!(
            "stopped the board server of channel '{}' (pid {}, {})",
            self.channel.name, started.pid, started.listen
        ))
    }

    /// True when `pid` is a live `countersign serve` of this channel on
    /// this address, by its command line (`/proc/PID/cmdline`): a pid the
    /// system gave to another program since is never signalled.
    fn is_our_serve(&self, pid: u32) -> bool {
        let Ok(raw) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            return false;
        };
        let args: Vec<&[u8]> = raw.split(|b| *b == 0).collect();
        let has = |flag: &str, value: &[u8]| {
            args.windows(2)
                .any(|w| w[0] == flag.as_bytes() && w[1] == value)
        };
        use std::os::unix::ffi::OsStrExt as _;
        args.contains(&b"serve".as_slice())
            && has("--channel", self.channel_dir.as_os_str().as_bytes())
            && has("--listen", self.listen.to_string().as_bytes())
    }
}

/// What board_link was asked for in a stdio session: the hosted tool's
/// parameters ([`super::hosting::BoardLinkRequest`]) said leaner, since
/// every tool a session lists costs its context.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
pub struct LinkRequest {
    /// Leave out: the session's own channel.
    #[serde(default)]
    pub channel: String,
    /// A slug naming the view key.
    #[serde(default = "super::hosting::board_label")]
    pub label: String,
}

/// The board_link tool of a stdio session: makes sure a server of this home
/// serves the session's channel on `listen` ([`DEFAULT_LISTEN`] unless the
/// session was told otherwise), reusing or starting one as `countersign
/// board` does, then issues a one-time link as the session's role, its
/// `url` whole (`http://127.0.0.1:8765/board/…`).
pub fn link_for(s: &Session, label: &str, listen: SocketAddr) -> AppResult<BoardLink> {
    let me = s.role()?;
    let dir = s.channel().dir();
    let home = s.channel().home();
    let channel = channel_ref(dir);
    let access = Access::open(&home.access_db())?;
    let server = Loopback {
        channel_dir: dir.root().to_path_buf(),
        channel: channel.clone(),
        home_arg: home.root().map(Path::to_path_buf),
        state_dir: home.state_dir(dir.id()),
        secret: access.server_secret()?.to_vec(),
        listen,
    };
    let serving = server.ensure()?;
    let mut link = issue_link(&access, &channel, label, (me.as_str(), None))?;
    link.url = format!("http://{}{}", server.listen, link.url);
    link.note = format!(
        "Give this link to your person: it opens the board of '{}' in a browser on this \
         machine, once, within {} s. {} Revoke every view key with `countersign board \
         --revoke`; stop the server with `countersign board --stop`.",
        channel.name,
        link.expires_in_s,
        match serving {
            Serving::Reused => "A server of this machine already served it.".to_owned(),
            Serving::Started(log) => format!(
                "A server was started for it on {} (log: {}).",
                server.listen,
                log.display()
            ),
        }
    );
    Ok(link)
}
