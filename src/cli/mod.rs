//! The command line: one file per command, each a thin adapter over `app` or
//! `store`. `main` maps outcomes to exit codes: 0 done, 1 problems found (verify),
//! 2 the command could not run.

mod add_role;
mod admit;
mod attention;
mod backup;
mod board;
mod compress;
mod demo;
mod duration;
mod hook;
mod inbox;
mod init;
mod install;
mod invite;
mod join;
mod log;
mod mcp;
mod mcp_line;
// Public for `countersign-bench`, which drives servers through the same client.
pub mod mcp_client;
pub(crate) mod memory;
mod memory_api;
mod memory_import;
mod memory_page;
mod memory_status;
mod message_table;
mod note;
pub(crate) mod output;
mod pin;
mod reindex;
mod remote;
mod remote_channel;
mod repair;
mod rotate_key;
mod send;
mod serve;
mod status;
mod sync;
mod terminal;
mod token;
mod verify;
mod view;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::OnceLock;

use anyhow::Context as _;
use clap::{Parser, Subcommand};

pub use remote_channel::secret_in_args;

use crate::app::Session;
use crate::store::binding::{self, Found};
use crate::store::{Channel, ChannelDir, Home};
use crate::store::{IoContext as _, StoreResult};

/// countersign: a coordination channel for coding-agent sessions, with no server.
///
/// A channel is a folder of signed, append-only message feeds, one per role and
/// device. Agents reach it through `countersign mcp` (a stdio MCP server); people,
/// hooks and scripts use the other commands.
#[derive(Debug, Parser)]
#[command(
    name = "countersign",
    version,
    about,
    long_about,
    max_term_width = 100,
    help_template = HELP_TEMPLATE
)]
pub struct Cli {
    /// The channel folder (the one holding channel.json). Default: $COUNTERSIGN_CHANNEL,
    /// else the channel of the nearest .countersign.local.json (written by `install`) above
    /// the working directory, else the nearest .countersign/ above it.
    #[arg(long, global = true, value_name = "DIR")]
    pub channel: Option<PathBuf>,
    /// The role to act as. Default: $COUNTERSIGN_ROLE, else $AI_AGENT_CHANNEL_ROLE, else the
    /// role of the nearest .countersign.local.json above the working directory.
    #[arg(long, global = true, value_name = "ROLE")]
    pub role: Option<String>,
    /// This device's home (keys, device id, index). Default: $COUNTERSIGN_HOME, else
    /// ~/.config/countersign and ~/.local/state/countersign.
    #[arg(long, global = true, value_name = "DIR")]
    pub home: Option<PathBuf>,
    /// The project binding above the working directory, once read: the role
    /// and the channel may both come from it.
    #[arg(skip)]
    bound: OnceLock<Option<Found>>,
    /// Whether git was asked if that binding is tracked (it is refused
    /// then), or is to be asked later by the caller ([`Self::check_binding_later`]).
    #[arg(skip)]
    binding_check: OnceLock<BindingCheck>,
    #[command(subcommand)]
    command: Command,
}

/// Whether a run's project binding was checked against git
/// ([`Cli::binding`]).
#[derive(Clone, Copy, Debug)]
enum BindingCheck {
    /// Checked: git does not track it.
    Done,
    /// Left to the command ([`Cli::check_binding_later`]).
    Later,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Create a channel folder and the owner key, and print how to wire agents to it.
    Init(init::Args),
    /// Serve the channel to one agent session over stdio (MCP).
    Mcp(mcp::Args),
    /// Serve the channel (or every channel under --channels-dir) over HTTP: MCP at /mcp for
    /// agents holding a role token, the board for people, /status for remote hooks.
    Serve(serve::Args),
    /// Role tokens for `serve` (`token create --role R`, `token list`, `token revoke ID`).
    Token(token::Args),
    /// Print a one-time link to the channel's board (starting `serve` on loopback if none
    /// answers) and open it in a browser.
    Board(board::Args),
    /// Send a message as --role.
    Send(send::Args),
    /// Show the messages addressed to --role, one line each (records delivery, never marks
    /// read; a person's look at a terminal records nothing).
    Inbox(inbox::Args),
    /// Show one message in full: its header, body and thread (records nothing).
    View(view::Args),
    /// Add a note to the channel's memory as --role (`note "text"`). Everyone who can read
    /// the channel folder can read it, for good.
    Note(note::Args),
    /// Print every record of the channel in readable form, with verification marks; --role,
    /// --since, --grep and --limit pick records.
    Log(log::Args),
    /// Read the channel's memory: the whole history as one-line summaries (`memory view`),
    /// a line opened (`memory zoom ID N`), a search (`memory search QUERY`), one HTML page
    /// of every level (`memory export FILE.html`), and how much waits for a compaction
    /// (`memory status [--statusline]`).
    Memory(memory::Args),
    /// Read a pinned rule whole: `pin show KEY` prints its text with its version and sha256.
    Pin(pin::Args),
    /// Check every signature and chain from the files: exit 0 clean, 1 problems, 2 unreadable.
    Verify(verify::Args),
    /// Rebuild this device's index of the channel from the feeds.
    Reindex(reindex::Args),
    /// Gzip the sealed segments of this device's own feeds (for folders synced with rclone;
    /// under git keep them plain). Readers take .jsonl and .jsonl.gz alike.
    Compress(compress::Args),
    /// Publish again the records of this device that its feeds in the folder lack (a line
    /// edited or cut out by hand, a file lost or replaced by an older copy), from its journal.
    Repair(repair::Args),
    /// Exchange the channel with its remote (git or rclone) once: publish this device's feeds,
    /// receive the others'. E.g. `countersign sync`.
    Sync(sync::Args),
    /// Choose (`remote set git URL`, `remote set rclone REMOTE:PATH`) or show the remote
    /// `sync` uses on this device.
    Remote(remote::Args),
    /// Make this device's key for --role and print the `admit` command for the owner's machine;
    /// `join --invite CODE` claims an invitation instead, admitted by the owner's machine itself.
    Join(join::Args),
    /// Owner: print a one-time code that lets one machine join as a role
    /// (`invite --role R [--expires 24h]`).
    Invite(invite::Args),
    /// Owner: let another device write as a role (`admit ROLE PUBKEY --device D`).
    Admit(admit::Args),
    /// Owner: add a role to the roster (`add-role ROLE`).
    AddRole(add_role::Args),
    /// Replace the key of --role's feed on this device (or, with --lost, as the owner).
    RotateKey(rotate_key::Args),
    /// Play a short exchange between two roles on a throwaway channel, through the real
    /// MCP server, and print it.
    Demo(demo::Args),
    /// What --role has waiting: exit 0 nothing to do, 1 something actionable, 2 the channel
    /// cannot be read. Text on a terminal, JSON when piped (--text, --json choose). `status
    /// pins` lists the pinned rules; `status --watch` (or `status watch`) stays running and
    /// prints a line when something actionable arrives; `--digest` prints the state digest.
    Status(status::Args),
    /// Agent-session hooks (always exit 0): `hook session-start` prints how a session begins,
    /// `hook stop` is the Stop hook (Claude Code, Codex) and holds a stop while something
    /// actionable waits, `hook record EVENT` records prompts and replies as notes (install
    /// --record). All take the session's folder from the JSON on stdin (`cwd`).
    Hook(hook::Args),
    /// Wire Claude Code or Codex to the channel as --role: the project binding (role and
    /// channel, kept out of git), the MCP server, the hooks and a note. Prints every change;
    /// --apply makes them, keeping the files as they were in the countersign home.
    Install(install::Args),
    /// Take out what `install` added (the channel folder stays), putting back byte for byte
    /// every file nobody changed since. Prints every change; --apply makes them.
    Uninstall(install::UninstallArgs),
    /// Write the channel folder to one archive (`backup FILE.tar.gz`), verified before and
    /// after; never this device's keys unless --with-keys.
    Backup(backup::Args),
}

/// `--help`: the commands by what a person does with them (every command is
/// in one group: `tests::every_command_is_in_a_group`), then the options.
const HELP_TEMPLATE: &str = "\
{before-help}{about-with-newline}
{usage-heading} {usage}

Daily:
  status      What waits for your role (--watch: stay and print what arrives)
  inbox       The messages addressed to your role, one line each
  view        One message in full, with its thread
  pin         A pinned rule in full (pin show KEY)
  send        Send a message as your role
  note        Add a note to the channel's memory
  log         Every record, with verification marks (--role, --since, --grep, --limit)
  board       Open the channel's board in a browser (--revoke, --stop)

Setup:
  init        Create a channel folder and the owner key
  install     Wire Claude Code or Codex to the channel as a role
  uninstall   Take out what install added
  join        Make this device's key for a role, or claim an invitation
  invite      Owner: a one-time code that lets one machine join
  admit       Owner: let another device write as a role
  add-role    Owner: add a role to the roster
  token       Role tokens for serve
  demo        Play a short exchange on a throwaway channel

Machines:
  sync        Exchange the channel with its remote once
  remote      Choose or show the remote sync uses
  serve       Serve the channel over HTTP (MCP, the board, /status)
  mcp         Serve the channel to one agent session over stdio
  hook        Agent-session hooks (session-start, stop, record)

Memory:
  memory      Read the memory: view, zoom, search, export, import, status,
              api-key, compact

Maintenance:
  verify      Check every signature and chain from the files
  reindex     Rebuild this device's index from the feeds
  repair      Publish again this device's records its feeds lack
  compress    Gzip this device's sealed segments (rclone folders)
  backup      Write the channel folder to one verified archive
  rotate-key  Replace the key of a role's feed on this device
  help        Print this message or the help of a command

Options:
{options}

`countersign COMMAND --help` tells more about each.
";

/// Runs the parsed command line.
pub fn run(cli: Cli) -> ExitCode {
    let result = match &cli.command {
        Command::Init(a) => init::run(&cli, a),
        Command::Mcp(a) => mcp::run(&cli, a),
        Command::Serve(a) => serve::run(&cli, a),
        Command::Token(a) => token::run(&cli, a),
        Command::Board(a) => board::run(&cli, a),
        Command::Send(a) => send::run(&cli, a),
        Command::Inbox(a) => inbox::run(&cli, a),
        Command::View(a) => view::run(&cli, a),
        Command::Note(a) => note::run(&cli, a),
        Command::Log(a) => log::run(&cli, a),
        Command::Memory(a) => memory::run(&cli, a),
        Command::Pin(a) => pin::run(&cli, a),
        Command::Verify(a) => verify::run(&cli, a),
        Command::Reindex(a) => reindex::run(&cli, a),
        Command::Compress(a) => compress::run(&cli, a),
        Command::Repair(a) => repair::run(&cli, a),
        Command::Sync(a) => sync::run(&cli, a),
        Command::Remote(a) => remote::run(&cli, a),
        Command::Join(a) => join::run(&cli, a),
        Command::Admit(a) => admit::run(&cli, a),
        Command::Invite(a) => invite::run(&cli, a),
        Command::AddRole(a) => add_role::run(&cli, a),
        Command::RotateKey(a) => rotate_key::run(&cli, a),
        Command::Demo(a) => demo::run(&cli, a),
        Command::Status(a) => status::run(&cli, a),
        Command::Hook(a) => hook::run(&cli, a),
        Command::Install(a) => install::run(&cli, a),
        Command::Uninstall(a) => install::run_uninstall(&cli, a),
        Command::Backup(a) => backup::run(&cli, a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("countersign: {e:#}");
            ExitCode::from(2)
        }
    }
}

impl Cli {
    /// The channel folder this invocation points at.
    fn channel_dir(&self) -> anyhow::Result<ChannelDir> {
        Ok(ChannelDir::discover(self.channel.as_deref(), || {
            self.binding()
        })?)
    }

    /// The project binding above the working directory, read at most once a
    /// run (a hook moves into the session's folder before anything asks),
    /// and refused if git tracks it, unless the caller asks that later
    /// ([`Self::check_binding_later`]).
    fn binding(&self) -> StoreResult<Option<Found>> {
        let found = match self.bound.get() {
            Some(found) => found.clone(),
            None => {
                let cwd = std::env::current_dir().at(".")?;
                let found = binding::find_unchecked(&cwd)?;
                self.bound.get_or_init(|| found).clone()
            }
        };
        if let Some(f) = &found
            && self.binding_check.get().is_none()
        {
            f.refuse_if_tracked()?;
            let _ = self.binding_check.set(BindingCheck::Done);
        }
        Ok(found)
    }

    /// Leaves asking git whether the project binding is tracked to the
    /// caller, who gets the binding to ask about from
    /// [`Self::binding_to_check`] and must trust it with nothing else
    /// before. Only before the binding is first read.
    fn check_binding_later(&self) {
        let _ = self.binding_check.set(BindingCheck::Later);
    }

    /// The binding this run read and left for its caller to check
    /// ([`Self::check_binding_later`]): `None` when it read none.
    fn binding_to_check(&self) -> Option<Found> {
        match self.binding_check.get() {
            Some(BindingCheck::Later) => self.bound.get().cloned().flatten(),
            _ => None,
        }
    }

    /// This device's home: --home, else the environment's.
    fn home(&self) -> anyhow::Result<Home> {
        Ok(Home::choose(self.home.as_deref())?)
    }

    /// Opens the channel with this device's home.
    fn open_channel(&self) -> anyhow::Result<Channel> {
        Ok(Channel::open(self.channel_dir()?, self.home()?)?)
    }

    /// The role to pass to [`Session::role_from`]: --role, else (when no
    /// role variable is set) the role of the project binding above the
    /// working directory, which `install` writes for sessions started there.
    fn role_arg(&self) -> anyhow::Result<Option<String>> {
        if self.role.is_some() || Session::role_from(None)?.is_some() {
            return Ok(self.role.clone());
        }
        Ok(self.binding()?.map(|f| f.binding.role))
    }

    /// Whether this run was given no channel at all: no --role or
    /// --channel, no `COUNTERSIGN_CHANNEL`, no project binding above the
    /// working directory, and either no role from the environment or no
    /// channel folder above to use it in. The hooks and the server that one
    /// per-user entry starts in every project are quiet there: the folder is
    /// simply not one of the channel's. Anything named explicitly (and a
    /// binding that cannot be read) still fails loudly.
    fn unbound(&self) -> bool {
        let channel_var = std::env::var_os("COUNTERSIGN_CHANNEL").is_some_and(|v| !v.is_empty());
        if self.role.is_some() || self.channel.is_some() || channel_var {
            return false;
        }
        if !matches!(self.binding(), Ok(None)) {
            return false;
        }
        match Session::role_from(None) {
            Ok(None) => true,
            Ok(Some(_)) => std::env::current_dir().is_ok_and(|cwd| {
                !cwd.ancestors().any(|d| {
                    d.join(crate::store::DEFAULT_DIR)
                        .join("channel.json")
                        .is_file()
                })
            }),
            Err(_) => false,
        }
    }

    /// A session acting as the role from --role, the environment or the
    /// project binding (required).
    fn session_with_role(&self) -> anyhow::Result<Session> {
        let role = self.required_role()?;
        Ok(Session::new(self.open_channel()?, Some(role))?)
    }

    /// The role from --role, the environment or the project binding; an
    /// error that says how to give one if none does.
    fn required_role(&self) -> anyhow::Result<crate::core::ids::Role> {
        Session::role_from(self.role_arg()?.as_deref())?.context(
            "no role: pass --role ROLE, set COUNTERSIGN_ROLE (or AI_AGENT_CHANNEL_ROLE), or run \
             `countersign install` in the project so it binds one",
        )
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory as _;

    use super::*;

    #[test]
    fn every_command_is_in_a_group() {
        let cmd = Cli::command();
        for sub in cmd.get_subcommands().filter(|c| !c.is_hide_set()) {
            let line = format!("\n  {} ", sub.get_name());
            assert!(
                HELP_TEMPLATE.contains(&line),
                "`{}` is in no group of --help",
                sub.get_name()
            );
        }
        let listed = HELP_TEMPLATE
            .lines()
            .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
            .count();
        assert_eq!(
            listed,
            cmd.get_subcommands().count() + 1,
            "each once, and help"
        );
    }
}
