//! `countersign install claude|codex` and `countersign uninstall`: wire an
//! agent tool to the channel, and take the wiring out again.
//!
//! What is personal — the role, absolute paths, hooks — goes where it is not
//! committed: the project binding `.countersign.local.json` (role and channel,
//! read by `countersign mcp` and the other commands started in the project),
//! Claude Code's local scope (`~/.claude.json`, under the project) for the
//! server, `.claude/settings.local.json` for the hooks and `CLAUDE.local.md`
//! for the note; those files are kept out of git by a block in
//! `.git/info/exclude`. The server entry itself names no role, so one entry
//! serves every project and worktree (Codex has one per user; Claude Code one
//! per repository, shared by its worktrees). `--scope project` writes the
//! shared files instead (`.mcp.json`, `.claude/settings.json`, `CLAUDE.md`).
//! Codex's hooks live in one user file too (`$CODEX_HOME/hooks.json`), so
//! their commands name no role either: `countersign hook` finds the binding
//! from the folder the session runs in, as the server does. Codex runs them
//! only once the user has trusted them, which `install codex` says how to do.
//!
//! Both commands print every change first; only `--apply` writes. Every
//! change is planned before anything is written, so a file that cannot be
//! parsed (or a server entry that is not countersign's) stops the command
//! with nothing changed; the writes are all or nothing (a failed write, or
//! a report that cannot be printed, puts back what was written). A file is
//! never put back from a copy, since other programs write the same files
//! (Claude Code rewrites `~/.claude.json` on every run): install adds
//! countersign's entries and `uninstall` takes out exactly those, JSON
//! edited in place ([`json_text`]: every other byte kept), TOML with
//! `toml_edit`, which keeps comments, order and layout, and finds the server
//! however it is written. A record per file in the countersign home
//! ([`Backups`]) says whether install created it (it then goes once nothing
//! else is in it). Codex's note goes in its own user file
//! (`$CODEX_HOME/AGENTS.md`), never in a project's, often committed,
//! AGENTS.md. The entries run `countersign` from PATH when that is this
//! binary. One folder holds one role: another is refused without `--force`.
//!
//! This module holds the arguments and the two flows; each file the
//! clients read is planned by its own module ([`claude`], [`codex`],
//! [`hooks`], [`note`], [`git`]), as an [`edit::Edit`] that [`edit::report`]
//! prints and makes.

mod block;
mod claude;
mod codex;
mod compactor;
mod edit;
mod file;
mod git;
mod hooks;
mod json;
mod json_text;
mod note;
mod served;
mod server_entry;
mod service;
mod shell;
mod statusline;
mod trust;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::bail;

use super::Cli;
use crate::cli::output::{self, outln};
use crate::store::backup::{Backups, Saved};
use crate::store::binding::{self, Binding};
use claude::{claude_project, claude_user_config, claude_user_settings, mcp_json};
use codex::{codex_agents, codex_config, codex_hooks, codex_toml};
use compactor::{AGENT_FILE, COMMAND_FILE, agent_file, command_file};
use edit::{Written, plain_file, report};
use git::{exclude_block, git_exclude};
use hooks::{HookCommand, hook_commands, record_commands, settings};
use note::{Whose, section, section_text};
use server_entry::ServerEntry;
use statusline::statusline;

/// The agent tool to wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Tool {
    /// Claude Code: its local scope (~/.claude.json) for the server,
    /// ./.claude/settings.local.json (hooks) and ./CLAUDE.local.md.
    Claude,
    /// Codex: $CODEX_HOME/config.toml, $CODEX_HOME/hooks.json and $CODEX_HOME/AGENTS.md
    /// (default ~/.codex).
    Codex,
    /// A service that runs `countersign serve` for the channel at login (a systemd user unit
    /// on Linux, a launchd agent on macOS): sync, heartbeats and background work while no
    /// session runs. Needs no role.
    Service,
}

impl Tool {
    fn name(self) -> &'static str {
        match self {
            Self::Claude => "claude",
            Self::Codex => "codex",
            Self::Service => service::TOOL,
        }
    }
}

/// Where Claude Code's server entry and hooks go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Scope {
    /// Personal, never committed, no approval asked: Claude Code's local scope
    /// (~/.claude.json, under this project), .claude/settings.local.json, CLAUDE.local.md.
    Local,
    /// Shared with the team through git: ./.mcp.json (Claude Code asks each user to approve
    /// it), ./.claude/settings.json and ./CLAUDE.md, with the role written in them.
    Project,
}

/// Arguments of `install`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  countersign --role backend install claude --apply\n  \
    countersign --role backend install codex --tools mail,debts --apply\n\n\
    Both write the project binding ./.countersign.local.json (role and channel, kept out of \
    git): the server entry runs `countersign mcp` without --role, and the server takes role and \
    channel from the binding of the folder the session starts in, so several projects and git \
    worktrees can each work as their own role. When COUNTERSIGN_HOME (or --home) is set, the \
    server entry passes it on: clients start servers with a short environment.\n\n\
    install codex puts the SessionStart and Stop hooks in one user file, $CODEX_HOME/hooks.json, \
    so their commands name no role: `countersign hook` takes it from the binding of the folder \
    the session runs in. Codex runs a new or changed hook only after you trust it, and `codex \
    exec` never asks: once, start `codex` in a terminal and choose \"Trust all and continue\" \
    when it shows \"Hooks need review\" (or trust them in /hooks). Until then the server and \
    the AGENTS.md note work, the hooks do not."
)]
pub struct Args {
    /// claude: the MCP server "channel" in Claude Code's local scope (~/.claude.json, under
    /// this project), the SessionStart and Stop hooks in ./.claude/settings.local.json and a
    /// short section in ./CLAUDE.local.md. codex: the [mcp_servers.channel] table in
    /// $CODEX_HOME/config.toml (default ~/.codex), the SessionStart and Stop hooks in
    /// $CODEX_HOME/hooks.json (they run once you trust them in Codex) and a section in
    /// $CODEX_HOME/AGENTS.md (read in every session; never the project's AGENTS.md). Run it
    /// in the project folder the agent session starts in.
    #[arg(value_enum)]
    pub tool: Tool,
    /// Make the changes (without it, only print them).
    #[arg(long)]
    pub apply: bool,
    /// claude only: `local` (default) keeps everything personal and uncommitted;
    /// `project` writes ./.mcp.json, ./.claude/settings.json and ./CLAUDE.md for a team.
    #[arg(long, value_enum, default_value = "local")]
    pub scope: Scope,
    /// The tool sets the server serves (passed to `countersign mcp --tools`), e.g. mail,debts.
    #[arg(long, value_name = "SETS")]
    pub tools: Option<String>,
    /// claude only: wire Claude Code to a `countersign serve` at URL (https, or http to this
    /// machine) instead of a channel folder here: an HTTP server entry for URL/mcp sending the
    /// role token held in the variable of --token-env, and hooks that read the channel through
    /// the server. No channel folder, role or binding is needed on this machine.
    #[arg(long, value_name = "URL", requires = "token_env")]
    pub url: Option<String>,
    /// With --url: the name of the environment variable that holds the role token (e.g.
    /// COUNTERSIGN_TOKEN). Only the name is written; export the variable where Claude Code
    /// starts.
    #[arg(long, value_name = "VAR", requires = "url")]
    pub token_env: Option<String>,
    /// Also record, as notes in --role's feed: the prompts the user types and the agent's
    /// final replies, word for word, and one short record of each turn's tool calls (files
    /// changed, commands that failed). Everyone who can read the channel folder can read
    /// them, for good. Without it nothing is recorded (and an install without it takes the
    /// recording hooks out).
    #[arg(long, conflicts_with = "url")]
    pub record: bool,
    /// Replace this folder's binding when it names another role or channel (without it,
    /// install refuses: one folder holds one role; give a second role a git worktree).
    #[arg(long)]
    pub force: bool,
}

/// What `install --record` says about who reads what it records.
const RECORD_NOTICE: &str = "Recording is on: the prompts typed in these sessions and the \
    agent's final replies, word for word, and one short record of each turn's tool calls (files \
    changed, commands that failed) become notes in the role's feed. Everyone who can read the \
    channel folder can read them — every role, every machine the folder syncs to, anyone with a \
    copy — and they are permanent: a note is a signed record, like a message, and cannot be \
    taken back. Install again without --record to stop recording.";

/// Arguments of `uninstall`.
#[derive(Debug, clap::Args)]
pub struct UninstallArgs {
    /// Make the changes (without it, only print them).
    #[arg(long)]
    pub apply: bool,
}

/// The name of the MCP server entry, hence the `mcp__channel__*` tool names.
const SERVER: &str = "channel";

/// Prints (and with --apply makes) the wiring of `tool` to the channel as --role.
pub fn run(cli: &Cli, a: &Args) -> anyhow::Result<ExitCode> {
    all_or_nothing(|| match (&a.url, &a.token_env) {
        (Some(url), Some(var)) => served::run(cli, a, url, var),
        _ => install(cli, a),
    })
}

/// Prints (and with --apply makes) the removal of what `install` added. The
/// channel folder and the keys stay. An entry other projects still use
/// (Codex's user entry, Claude Code's entry of a repository whose other
/// worktrees are bound, the git exclude block) stays while they do.
pub fn run_uninstall(cli: &Cli, a: &UninstallArgs) -> anyhow::Result<ExitCode> {
    all_or_nothing(|| uninstall(cli, a))
}

/// Runs `command` with its output held back until it has written every file,
/// then prints it; when that fails (the reader went away), every file it
/// wrote is put back and the command fails: an install is all or nothing.
fn all_or_nothing(command: impl FnOnce() -> anyhow::Result<Written>) -> anyhow::Result<ExitCode> {
    output::hold();
    let written = match command() {
        Ok(w) => w,
        Err(e) => {
            // The plan printed so far says what was looked at; best effort.
            let _ = output::release();
            return Err(e);
        }
    };
    match output::release() {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(e) if !written.any() => Err(anyhow::anyhow!(
            "cannot print the report ({e}); nothing was written"
        )),
        Err(e) => {
            let all = written.undo();
            bail!(
                "cannot print the report ({e}), so {}; run it again with its output going where \
                 it can be read (not into a pipe that closes early, such as `| head`)",
                if all {
                    "every file it wrote was put back as it was"
                } else {
                    "it put back what it could (see above)"
                }
            )
        }
    }
}

fn install(cli: &Cli, a: &Args) -> anyhow::Result<Written> {
    if a.tool == Tool::Service {
        return service::install(cli, a);
    }
    if a.tool == Tool::Codex && a.scope == Scope::Project {
        bail!(
            "--scope project is for claude: Codex reads its servers from $CODEX_HOME/config.toml \
             (per user) or from a trusted project's .codex/config.toml; install codex writes one \
             user entry without a role, and the role goes in this project's binding"
        );
    }
    let session = cli.session_with_role()?;
    let role = session.role()?.to_string();
    let cwd = working_dir()?;
    let root = session.channel().dir().root();
    let dir = root
        .canonicalize()
        .unwrap_or_else(|_| root.to_path_buf())
        .display()
        .to_string();
    let home = cli.home()?;
    let home_root = home
        .root()
        .map(|r| r.canonicalize().unwrap_or_else(|_| r.to_path_buf()))
        .map(|r| r.display().to_string());
    let backups = Backups::of(&home);
    let (exe, pinned) = executable();
    let personal = a.tool == Tool::Codex || a.scope == Scope::Local;
    let mut args: Vec<String> = vec!["mcp".into()];
    if !personal {
        args.extend([
            "--role".into(),
            role.clone(),
            "--channel".into(),
            dir.clone(),
        ]);
    }
    if let Some(t) = &a.tools {
        args.extend(["--tools".into(), t.clone()]);
    }
    let entry = ServerEntry {
        command: exe.clone(),
        args,
        home: home_root.clone(),
    };
    let mut edits = Vec::new();
    // Whether Codex's hooks file changes: Codex then asks for its review again.
    let mut codex_hooks_changed = false;
    let binding_path = cwd.join(binding::FILE);
    if personal {
        let text = Binding {
            role: role.clone(),
            channel: PathBuf::from(&dir),
        }
        .to_text();
        refuse_second_role(&binding_path, &text, a.force)?;
        edits.push(plain_file(&binding_path, Some(&text))?);
        if let Some(ex) = git_exclude(&cwd) {
            edits.push(exclude_block(&ex, true)?);
        }
    }
    match a.tool {
        Tool::Claude => {
            let mut hooks: Vec<HookCommand> = hook_commands(
                &exe,
                Some((&role, &dir)),
                home_root.as_deref(),
                a.tools.as_deref(),
            )
            .into();
            if a.record {
                hooks.extend(record_commands(
                    &exe,
                    "claude",
                    Some((&role, &dir)),
                    home_root.as_deref(),
                ));
            }
            let (settings_file, note_file) = if personal {
                let key = claude_project(&cwd);
                edits.push(mcp_json(
                    &claude_user_config()?,
                    &["projects", &key],
                    Some(entry.json(true)),
                )?);
                ("settings.local.json", "CLAUDE.local.md")
            } else {
                edits.push(mcp_json(
                    &cwd.join(".mcp.json"),
                    &[],
                    Some(entry.json(false)),
                )?);
                ("settings.json", "CLAUDE.md")
            };
            let claude_dir = cwd.join(".claude");
            let project_settings = claude_dir.join("settings.json");
            let user_settings = claude_user_settings().ok();
            let mut lower: Vec<&Path> = Vec::new();
            if personal {
                lower.push(&project_settings);
            }
            lower.extend(user_settings.as_deref());
            edits.push(statusline(
                settings(&claude_dir.join(settings_file), Some(&hooks))?,
                &lower,
                Some((&exe, home_root.as_deref())),
            )?);
            edits.push(plain_file(
                &claude_dir.join(AGENT_FILE),
                Some(&agent_file(&exe, &role, &dir, home_root.as_deref())),
            )?);
            edits.push(plain_file(
                &claude_dir.join(COMMAND_FILE),
                Some(&command_file(&exe, &role, &dir, home_root.as_deref())),
            )?);
            edits.push(section(
                &cwd.join(note_file),
                Some(&section_text(&Whose::Bound(&role, &dir), "mcp__channel__")),
            )?);
        }
        Tool::Codex => {
            edits.push(codex_toml(&codex_config()?, Some(&entry))?);
            // One user file for every project: no role in it, the binding says.
            let mut hooks: Vec<HookCommand> =
                hook_commands(&exe, None, home_root.as_deref(), a.tools.as_deref()).into();
            if a.record {
                hooks.extend(record_commands(&exe, "codex", None, home_root.as_deref()));
            }
            let edit = settings(&codex_hooks()?, Some(&hooks))?;
            codex_hooks_changed = edit.changed();
            edits.push(edit);
            // The note goes in Codex's own user file, never in the project's
            // AGENTS.md, which is often committed; an earlier install's
            // section there comes out.
            edits.push(section(
                &codex_agents()?,
                Some(&section_text(&Whose::Binding, "")),
            )?);
            edits.push(section(&cwd.join("AGENTS.md"), None)?);
        }
        Tool::Service => unreachable!("install service is planned by `service`"),
    }
    let tool = a.tool.name();
    outln!("countersign install {tool}: role '{role}', channel {dir}");
    match &home_root {
        Some(h) => outln!("home {h}: the server entry passes it on as COUNTERSIGN_HOME"),
        None => outln!(
            "home: {}; set COUNTERSIGN_HOME or --home to use another",
            home.describe()
        ),
    }
    match &pinned {
        None => outln!(
            "binary: `countersign`, found on PATH: the entries run it from there, so an upgrade \
             in place needs no new install"
        ),
        Some(why) => outln!("binary: {exe}: {why}"),
    }
    let written = report(
        &edits,
        a.apply,
        &backups,
        Some((binding_path.as_path(), tool)),
        true,
    )?;
    let how = match (a.tool, personal) {
        (Tool::Claude, true) => format!(
            "Claude Code runs `{exe} mcp` (the server \"{SERVER}\" of its local scope for {}, \
             needing no approval) in the folder the session starts in; the server takes role \
             '{role}' and the channel from {} (the nearest binding above that folder).",
            claude_project(&cwd),
            binding_path.display()
        ),
        (Tool::Claude, false) => format!(
            "Claude Code asks each user once to approve the project server \"{SERVER}\" of \
             .mcp.json; it runs as role '{role}' for everyone who uses this checkout."
        ),
        (Tool::Codex, _) => format!(
            "Codex runs `{exe} mcp` (one [mcp_servers.{SERVER}] entry for every project) in the \
             folder the session starts in; the server takes role '{role}' and the channel from \
             {} (the nearest binding above that folder), so each project and worktree holds its \
             own role. Start codex in this folder or below it. Its SessionStart and Stop hooks \
             (one user file, {}) run `{exe} hook …` in the session's folder, and take the role \
             from the same binding.",
            binding_path.display(),
            codex_hooks()?.display()
        ),
        (Tool::Service, _) => unreachable!("install service is planned by `service`"),
    };
    outln!("How it resolves: {how}");
    if a.record {
        outln!("{RECORD_NOTICE}");
        if a.tool == Tool::Codex {
            outln!(
                "Codex's hooks are one user file: every project bound on this machine that \
                 Codex runs in is recorded, each in its own role's feed."
            );
        }
    }
    if a.tool == Tool::Claude {
        outln!("{}", trust::compactor_note(&cwd, &exe));
    }
    if a.tool == Tool::Codex {
        let when = if codex_hooks_changed {
            "Trust the hooks once"
        } else {
            "The hooks are as they were: if you trusted them before, they run; if not, trust \
             them once"
        };
        outln!(
            "{when}: Codex runs a new or changed hook only after you trust it, and `codex exec` \
             never asks (it skips them without a word). Start `codex` in a terminal and choose \
             \"Trust all and continue\" when it shows \"Hooks need review\" (or review them with \
             /hooks). Until then the server and the note work, the hooks do not run."
        );
    }
    if written.any() {
        outln!("Restart the agent session in {} to use it.", cwd.display());
    }
    Ok(written)
}

/// Refuses to bind the folder of `binding` to another role or channel than
/// the binding there names, unless `force`: one folder holds one role.
fn refuse_second_role(binding: &Path, text: &str, force: bool) -> anyhow::Result<()> {
    let Some(old) = file::read(binding)? else {
        return Ok(());
    };
    let new = serde_json::from_str::<Binding>(text).ok();
    let was = match serde_json::from_str::<Binding>(&old) {
        Ok(b) if force || Some(&b) == new.as_ref() => return Ok(()),
        Ok(b) => format!("role '{}' of the channel {}", b.role, b.channel.display()),
        Err(_) if force => return Ok(()),
        Err(_) => "something install cannot read".into(),
    };
    bail!(
        "this folder is already bound to {was} ({}), and one folder holds one role. To work as a \
         second role, give it a folder of its own, e.g. a git worktree (`git worktree add \
         ../<name>`, then install there); to replace the binding here, run install again with \
         --force",
        binding.display()
    )
}

fn uninstall(cli: &Cli, a: &UninstallArgs) -> anyhow::Result<Written> {
    let cwd = working_dir()?;
    let home = cli.home()?;
    let backups = Backups::of(&home);
    let binding_path = cwd.join(binding::FILE);
    // The other projects still bound through this home, and the clients they use.
    let others: Vec<Saved> = backups
        .all()?
        .into_iter()
        .filter(|s| s.path != binding_path && s.path.ends_with(binding::FILE))
        .filter(|s| s.after.is_some() && s.path.is_file())
        .collect();
    let other_dirs = |tool: &str| -> Vec<PathBuf> {
        others
            .iter()
            .filter(|s| s.tools.iter().any(|t| t == tool))
            .filter_map(|s| s.path.parent().map(Path::to_path_buf))
            .collect()
    };
    let mut kept = Vec::new();
    let project_settings = cwd.join(".claude").join("settings.json");
    let user_settings = claude_user_settings().ok();
    let mut under_local: Vec<&Path> = vec![&project_settings];
    under_local.extend(user_settings.as_deref());
    let mut edits = vec![
        plain_file(&binding_path, None)?,
        mcp_json(&cwd.join(".mcp.json"), &[], None)?,
        statusline(settings(&project_settings, None)?, &under_local[1..], None)?,
        statusline(
            settings(&cwd.join(".claude").join("settings.local.json"), None)?,
            &under_local,
            None,
        )?,
        plain_file(&cwd.join(".claude").join(AGENT_FILE), None)?,
        plain_file(&cwd.join(".claude").join(COMMAND_FILE), None)?,
        section(&cwd.join("CLAUDE.md"), None)?,
        section(&cwd.join("CLAUDE.local.md"), None)?,
        section(&cwd.join("AGENTS.md"), None)?,
    ];
    let key = claude_project(&cwd);
    let sharing: Vec<PathBuf> = other_dirs("claude")
        .into_iter()
        .filter(|d| claude_project(d) == key)
        .collect();
    if let Ok(path) = claude_user_config() {
        if sharing.is_empty() {
            edits.push(mcp_json(&path, &["projects", &key], None)?);
        } else {
            kept.push(format!(
                "{}: the server \"{SERVER}\" of {key} stays: {} still use it",
                path.display(),
                list(&sharing)
            ));
        }
    }
    if let Some(ex) = git_exclude(&cwd) {
        let sharing: Vec<PathBuf> = others
            .iter()
            .filter_map(|s| s.path.parent().map(Path::to_path_buf))
            .filter(|d| git_exclude(d).as_deref() == Some(ex.as_path()))
            .collect();
        if sharing.is_empty() {
            edits.push(exclude_block(&ex, false)?);
        } else {
            kept.push(format!(
                "{}: the countersign block stays: {} still use it",
                ex.display(),
                list(&sharing)
            ));
        }
    }
    // Without a home there is no Codex config to clean, and nothing to say about it.
    if let (Ok(path), Ok(hooks)) = (codex_config(), codex_hooks()) {
        let sharing = other_dirs("codex");
        if sharing.is_empty() {
            edits.push(codex_toml(&path, None)?);
            edits.push(settings(&hooks, None)?);
            edits.push(section(&codex_agents()?, None)?);
        } else {
            kept.push(format!(
                "{}: [mcp_servers.{SERVER}] stays: {} still use it",
                path.display(),
                list(&sharing)
            ));
            kept.push(format!(
                "{}: the countersign hooks stay: {} still use them",
                hooks.display(),
                list(&sharing)
            ));
            kept.push(format!(
                "{}: the countersign section stays: {} still use it",
                codex_agents()?.display(),
                list(&sharing)
            ));
        }
    }
    // The channel's service goes with the last project bound through this home.
    if others.is_empty() {
        edits.extend(service::removal(cli, a.apply)?);
    }
    for e in &mut edits {
        if let Some(saved) = backups.get(&e.path)? {
            e.undo(&saved);
        }
    }
    outln!("countersign uninstall: the channel folder and the keys stay");
    for k in &kept {
        outln!("{k}");
    }
    // The records go with the last project bound through this home; until
    // then a shared file's record still says whether install created it.
    report(&edits, a.apply, &backups, None, !others.is_empty())
}

fn list(dirs: &[PathBuf]) -> String {
    let words: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    words.join(", ")
}

/// The folder the command runs in, resolved: the project the session starts in.
fn working_dir() -> anyhow::Result<PathBuf> {
    let cwd = std::env::current_dir()?;
    Ok(cwd.canonicalize().unwrap_or(cwd))
}

/// The binary hooks and servers should run: `countersign` when the one on
/// PATH is this binary (an upgrade in place then needs no new install, and
/// a path through a versioned folder never lands in a client's file);
/// otherwise this one by its absolute path, with why (`Some`).
fn executable() -> (String, Option<String>) {
    let this = std::env::current_exe().and_then(|p| p.canonicalize()).ok();
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .filter(|d| d.is_absolute())
            .map(|d| d.join("countersign"))
            .find(|p| p.is_file())
    });
    let Some(this) = this.filter(|p| p.to_str().is_some()) else {
        return (
            "countersign".into(),
            Some(
                "this binary's own path cannot be read: the entries run `countersign` from PATH"
                    .into(),
            ),
        );
    };
    let path = this.to_str().expect("checked above").to_owned();
    match on_path {
        Some(p) if p.canonicalize().is_ok_and(|c| c == this) => ("countersign".into(), None),
        Some(p) => (
            path,
            Some(format!(
                "the countersign on PATH ({}) is another binary; put this one first on PATH (or \
                 run that one) and install again to have the entries run it from PATH",
                p.display()
            )),
        ),
        None => (
            path,
            Some(
                "no countersign is on PATH; put its folder on PATH and install again to have the \
                 entries run it from there, so an upgrade in place needs no new install"
                    .into(),
            ),
        ),
    }
}

fn env_path(k: &str) -> Option<PathBuf> {
    std::env::var_os(k)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}
