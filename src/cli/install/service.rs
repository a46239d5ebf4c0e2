//! `countersign install service`: a process that runs at login for the
//! channel — a systemd user unit on Linux, a launchd agent on macOS — running
//! `countersign serve` for it, on a loopback port of its own choosing. What
//! it is for is its background work: the sync with the remote, this device's
//! heartbeats (`store::channel::heartbeat`) and whatever else a long-running process
//! of the channel does in the background, even while no agent session runs.
//!
//! Planned and written like every other install file (printed first, written
//! with `--apply`, recorded in the home); `uninstall` takes it out. With
//! `--apply` it is enabled when the service manager answers
//! (`systemctl --user`, `launchctl`), and otherwise the command that enables
//! it is printed. It must not know any agent client's files.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::Context as _;

use super::edit::{Edit, Written, plain_file, report};
use super::{Args, env_path};
use crate::cli::Cli;
use crate::cli::output::outln;
use crate::core::peer_text::one_line;
use crate::store::ChannelDir;
use crate::store::backup::Backups;

/// The client name the install record of a service names.
pub(super) const TOOL: &str = "service";

/// Which service manager this machine has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Manager {
    /// systemd's user instance (Linux).
    Systemd,
    /// launchd's per-user agents (macOS).
    Launchd,
}

impl Manager {
    /// The one of this machine.
    pub(super) fn here() -> Self {
        if cfg!(target_os = "macos") {
            Self::Launchd
        } else {
            Self::Systemd
        }
    }
}

/// What a service runs: the binary, its arguments and its environment.
pub(super) struct Service {
    /// Its name (`countersign-<channel>`), from the channel's id.
    pub(super) name: String,
    /// The channel's name, for people.
    pub(super) channel: String,
    /// The binary, by its absolute path (a login session's PATH is short).
    pub(super) exe: String,
    /// Its arguments.
    pub(super) args: Vec<String>,
    /// `COUNTERSIGN_HOME`, when one was chosen.
    pub(super) home: Option<String>,
}

impl Service {
    /// The service of the channel in `dir` run from `exe`, with `home`.
    pub(super) fn of(dir: &ChannelDir, exe: String, home: Option<String>) -> Self {
        let root = dir.root();
        let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
        let id: String = dir
            .id()
            .chars()
            .filter(char::is_ascii_alphanumeric)
            .take(12)
            .collect();
        Self {
            name: format!("countersign-{id}"),
            channel: dir.genesis().name.clone(),
            exe,
            args: vec![
                "serve".into(),
                "--channel".into(),
                root.display().to_string(),
                "--listen".into(),
                "127.0.0.1:0".into(),
            ],
            home,
        }
    }

    /// The file the manager reads it from.
    pub(super) fn path(&self, m: Manager) -> anyhow::Result<PathBuf> {
        let home = || env_path("HOME").context("cannot find the service folder: set HOME");
        Ok(match m {
            Manager::Systemd => env_path("XDG_CONFIG_HOME")
                .map_or_else(|| home().map(|h| h.join(".config")), Ok)?
                .join("systemd/user")
                .join(format!("{}.service", self.name)),
            Manager::Launchd => home()?
                .join("Library/LaunchAgents")
                .join(format!("org.countersign.{}.plist", self.name)),
        })
    }

    /// The file's text.
    pub(super) fn text(&self, m: Manager) -> String {
        match m {
            Manager::Systemd => self.unit(),
            Manager::Launchd => self.plist(),
        }
    }

    fn unit(&self) -> String {
        let mut exec = vec![systemd_quote(&self.exe)];
        exec.extend(self.args.iter().map(|a| systemd_quote(a)));
        let env = self
            .home
            .as_ref()
            .map(|h| {
                format!(
                    "Environment={}\n",
                    systemd_quote(&format!("COUNTERSIGN_HOME={h}"))
                )
            })
            .unwrap_or_default();
        format!(
            "# Written by `countersign install service`; `countersign uninstall` removes it.\n\
             [Unit]\n\
             Description=countersign for the channel {}: sync, heartbeats and background work\n\
             After=network-online.target\n\
             \n\
             [Service]\n\
             Type=simple\n\
             {env}\
             ExecStart={}\n\
             Restart=on-failure\n\
             RestartSec=30\n\
             \n\
             [Install]\n\
             WantedBy=default.target\n",
            one_line(&self.channel).replace('%', "%%"),
            exec.join(" ")
        )
    }

    fn plist(&self) -> String {
        let mut args = format!("    <string>{}</string>\n", xml(&self.exe));
        for a in &self.args {
            args.push_str(&format!("    <string>{}</string>\n", xml(a)));
        }
        let env = self
            .home
            .as_ref()
            .map(|h| {
                format!(
                    "  <key>EnvironmentVariables</key>\n  <dict>\n    \
                     <key>COUNTERSIGN_HOME</key>\n    <string>{}</string>\n  </dict>\n",
                    xml(h)
                )
            })
            .unwrap_or_default();
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
             <!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \
             \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n\
             <!-- Written by `countersign install service`; `countersign uninstall` removes it. -->\n\
             <plist version=\"1.0\">\n<dict>\n  \
             <key>Label</key>\n  <string>org.countersign.{}</string>\n  \
             <key>ProgramArguments</key>\n  <array>\n{args}  </array>\n{env}  \
             <key>RunAtLoad</key>\n  <true/>\n  \
             <key>KeepAlive</key>\n  <true/>\n\
             </dict>\n</plist>\n",
            xml(&self.name)
        )
    }

    /// The commands that enable it now and at every login.
    pub(super) fn enable(&self, m: Manager, path: &Path) -> Vec<Vec<String>> {
        match m {
            Manager::Systemd => vec![
                words(&["systemctl", "--user", "daemon-reload"]),
                words(&[
                    "systemctl",
                    "--user",
                    "enable",
                    "--now",
                    &format!("{}.service", self.name),
                ]),
            ],
            Manager::Launchd => vec![words(&[
                "launchctl",
                "load",
                "-w",
                &path.display().to_string(),
            ])],
        }
    }

    /// The commands that stop it and keep it from starting again.
    pub(super) fn disable(&self, m: Manager, path: &Path) -> Vec<Vec<String>> {
        match m {
            Manager::Systemd => vec![words(&[
                "systemctl",
                "--user",
                "disable",
                "--now",
                &format!("{}.service", self.name),
            ])],
            Manager::Launchd => {
                vec![words(&[
                    "launchctl",
                    "unload",
                    "-w",
                    &path.display().to_string(),
                ])]
            }
        }
    }
}

fn words(w: &[&str]) -> Vec<String> {
    w.iter().map(|s| (*s).to_owned()).collect()
}

/// One argument of a systemd command line: plain words as they are, others
/// in double quotes; `%` and `$` escaped as systemd reads them.
fn systemd_quote(s: &str) -> String {
    let s = s.replace('%', "%%").replace('$', "$$");
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._:=@+-,%$".contains(c));
    if plain {
        s
    } else {
        format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
    }
}

fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Runs `commands` in order while they succeed; `false` at the first that
/// cannot run or fails (the manager does not answer here).
fn run_all(commands: &[Vec<String>]) -> bool {
    commands.iter().all(|c| {
        Command::new(&c[0])
            .args(&c[1..])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
}

fn shown(commands: &[Vec<String>]) -> String {
    commands
        .iter()
        .map(|c| c.join(" "))
        .collect::<Vec<_>>()
        .join(" && ")
}

/// The binary by its absolute path.
fn this_binary() -> anyhow::Result<String> {
    let exe = std::env::current_exe()
        .and_then(|p| p.canonicalize())
        .context("cannot find this binary's own path for the service to run")?;
    exe.to_str()
        .map(str::to_owned)
        .context("this binary's path is not UTF-8: a service file cannot name it")
}

/// The service of the channel this command names, as it would be installed.
pub(super) fn planned(cli: &Cli) -> anyhow::Result<Service> {
    let dir = cli.channel_dir()?;
    let home = cli.home()?;
    let home_root = home
        .root()
        .map(|r| r.canonicalize().unwrap_or_else(|_| r.to_path_buf()))
        .map(|r| r.display().to_string());
    Ok(Service::of(&dir, this_binary()?, home_root))
}

/// `install service`: plans (and with --apply writes and enables) the service.
pub(super) fn install(cli: &Cli, a: &Args) -> anyhow::Result<Written> {
    let m = Manager::here();
    let service = planned(cli)?;
    let path = service.path(m)?;
    let edits: Vec<Edit> = vec![plain_file(&path, Some(&service.text(m)))?];
    outln!(
        "countersign install service: `{}` at login for the channel {} — the sync with its \
         remote, this device's heartbeats and the background work of a long-running process, \
         while no agent session runs",
        shown(&[std::iter::once(service.exe.clone())
            .chain(service.args.iter().cloned())
            .collect()]),
        service.channel
    );
    let backups = Backups::of(&cli.home()?);
    let written = report(&edits, a.apply, &backups, Some((&path, TOOL)), true)?;
    let enable = service.enable(m, &path);
    if !a.apply {
        outln!("With --apply it is then enabled: {}", shown(&enable));
    } else if run_all(&enable) {
        outln!(
            "enabled: it runs now and at every login ({})",
            shown(&enable)
        );
    } else {
        outln!(
            "The service manager does not answer here, so the service is not enabled yet: run \
             `{}` in your login session",
            shown(&enable)
        );
    }
    Ok(written)
}

/// The removal of the service of the channel this command names, for
/// `uninstall` (`None` when no channel is named here); with `apply` the
/// manager is asked first to stop it.
pub(super) fn removal(cli: &Cli, apply: bool) -> anyhow::Result<Option<Edit>> {
    let Ok(service) = planned(cli) else {
        return Ok(None);
    };
    let m = Manager::here();
    let path = service.path(m)?;
    if !path.exists() {
        return Ok(None);
    }
    let disable = service.disable(m, &path);
    if apply && !run_all(&disable) {
        outln!(
            "The service manager does not answer here: if {} still runs, stop it with `{}`",
            service.name,
            shown(&disable)
        );
    }
    Ok(Some(plain_file(&path, None)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn service() -> Service {
        Service {
            name: "countersign-abc".into(),
            channel: "shared".into(),
            exe: "/opt/count ersign/bin/countersign".into(),
            args: vec!["serve".into(), "--channel".into(), "/srv/ch 100%".into()],
            home: Some("/home/u/.cs".into()),
        }
    }

    #[test]
    fn a_unit_quotes_what_systemd_would_read_otherwise() {
        let unit = service().text(Manager::Systemd);
        assert!(
            unit.contains(
                "ExecStart=\"/opt/count ersign/bin/countersign\" serve --channel \"/srv/ch 100%%\""
            ),
            "{unit}"
        );
        assert!(
            unit.contains("Environment=COUNTERSIGN_HOME=/home/u/.cs\n"),
            "{unit}"
        );
        assert!(unit.contains("WantedBy=default.target"), "{unit}");
    }

    #[test]
    fn a_launchd_agent_lists_each_argument_escaped() {
        let mut s = service();
        s.args.push("<&>".into());
        let plist = s.text(Manager::Launchd);
        assert!(plist.contains("<string>/srv/ch 100%</string>"), "{plist}");
        assert!(plist.contains("<string>&lt;&amp;&gt;</string>"), "{plist}");
        assert!(plist.contains("<key>RunAtLoad</key>\n  <true/>"), "{plist}");
        assert!(plist.contains("<string>org.countersign.countersign-abc</string>"));
    }
}
