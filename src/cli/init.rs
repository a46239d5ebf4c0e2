//! `countersign init`: create a channel folder and the owner key, and say
//! how the project's git treats the folder (with `--keep-out-of-git`, keep it
//! out by a line in `.git/info/exclude`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;

use super::Cli;
use crate::app::init::create_channel;
use crate::app::sync::set_remote;
use crate::cli::output::{out, outln};
use crate::core::ids::Role;
use crate::store::DEFAULT_DIR;
use crate::store::Remote;
use crate::store::{Channel, ChannelDir};

/// Arguments of `init`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Folder to create (default: ./.countersign, which commands run inside this project find
    /// on their own). It must not exist or be empty.
    pub dir: Option<PathBuf>,
    /// The roles, comma-separated: 2 to 12 distinct lowercase slugs, e.g. frontend,backend.
    #[arg(long, value_delimiter = ',', required = true)]
    pub roles: Vec<String>,
    /// A name for the channel (a lowercase slug). Default: the project folder's name.
    #[arg(long)]
    pub name: Option<String>,
    /// Sync through git: make the folder its own git repository with this `origin`
    /// (`countersign sync` then publishes). E.g. --git-remote git@host:team/chan.git
    #[arg(long, value_name = "URL", conflicts_with = "rclone_remote")]
    pub git_remote: Option<String>,
    /// Sync through rclone with this REMOTE:PATH (or a local path). E.g. --rclone-remote gdrive:chan
    #[arg(long, value_name = "REMOTE:PATH")]
    pub rclone_remote: Option<String>,
    /// When the folder lies inside a project's git repository: keep it out of that
    /// repository's commits by a line in its .git/info/exclude (personal, never committed).
    /// Without it, init says whether git would pick the folder up and changes nothing in git.
    #[arg(long)]
    pub keep_out_of_git: bool,
    /// Also print the channel's id and, for each role, the MCP server entry to write into
    /// Claude Code's or Codex's configuration by hand.
    #[arg(long, short)]
    pub verbose: bool,
}

/// Creates the channel and prints the next steps.
pub fn run(cli: &Cli, a: &Args) -> anyhow::Result<ExitCode> {
    let names: Vec<&str> = a.roles.iter().map(String::as_str).collect();
    let root = absolute(&a.dir.clone().unwrap_or_else(|| PathBuf::from(DEFAULT_DIR)))?;
    let name = a.name.clone().unwrap_or_else(|| default_name(&root));
    let home = cli.home()?;
    let dir = create_channel(&root, &names, &name, &home)?;
    let remote = match (&a.git_remote, &a.rclone_remote) {
        (Some(url), _) => Some(Remote::Git(url.clone())),
        (None, Some(target)) => Some(Remote::Rclone(target.clone())),
        (None, None) => None,
    };
    out!("{}", next_steps(&dir, &dir.genesis().roles));
    if a.verbose {
        out!("{}", by_hand(&dir, &dir.genesis().roles));
    }
    if let Some(remote) = remote {
        let channel = Channel::open(dir.clone(), home)?;
        let note = set_remote(&channel, remote.clone())?;
        outln!(
            "Sync: {remote}. Run `countersign --channel {} sync` to publish; another machine \
             gets the channel with {} and then `countersign remote set ...` (see docs/SYNC.md).",
            dir.root().display(),
            match &remote {
                Remote::Git(url) => format!("`git clone {url} DIR`"),
                Remote::Rclone(t) => format!("`rclone copy {t} DIR`"),
            }
        );
        if let Some(note) = note {
            outln!("Note: {note}.");
        }
    }
    if let Some(words) = project_git(dir.root(), a.keep_out_of_git)? {
        outln!("{words}");
    }
    Ok(ExitCode::SUCCESS)
}

/// What the project's git makes of the channel folder `root`, in words
/// (`None` outside a repository): the folder is never committed to the
/// project (its history would be rewritten with the branch's; it syncs on
/// its own, or stays on this machine), so when git would pick it up, init
/// says so and, with `apply`, keeps it out by a line in `.git/info/exclude`.
fn project_git(root: &Path, apply: bool) -> anyhow::Result<Option<String>> {
    let Some(parent) = root.parent() else {
        return Ok(None);
    };
    let git = |args: &[&str]| -> Option<String> {
        let out = std::process::Command::new("git")
            .arg("-C")
            .arg(parent)
            .args(args)
            .stderr(std::process::Stdio::null())
            .output()
            .ok()?;
        let text = String::from_utf8(out.stdout).ok()?;
        out.status.success().then(|| text.trim().to_owned())
    };
    let Some(top) = git(&["rev-parse", "--show-toplevel"]).filter(|t| !t.is_empty()) else {
        return Ok(None);
    };
    let top = PathBuf::from(top);
    let top = top.canonicalize().unwrap_or(top);
    let here = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let Ok(rel) = here.strip_prefix(&top) else {
        return Ok(None);
    };
    let shown = rel.display();
    let why = "a channel is never committed to the project (a rebase or force-push would \
               rewrite it); it syncs on its own (docs/SYNC.md) or stays on this machine";
    let ignored = std::process::Command::new("git")
        .arg("-C")
        .arg(parent)
        .args(["check-ignore", "-q", "--"])
        .arg(&here)
        .status()
        .is_ok_and(|s| s.success());
    if ignored {
        return Ok(Some(format!(
            "Git: {shown}/ lies in the repository {} and git ignores it, as it should: {why}.",
            top.display()
        )));
    }
    let Some(exclude) = git(&[
        "rev-parse",
        "--path-format=absolute",
        "--git-path",
        "info/exclude",
    ]) else {
        return Ok(None);
    };
    let line = format!("/{shown}/");
    if !apply {
        return Ok(Some(format!(
            "Git: {shown}/ lies in the repository {} and git would pick it up: add {line} to \
             {exclude} or .gitignore ({why}; `init --keep-out-of-git` does the first).",
            top.display()
        )));
    }
    let path = PathBuf::from(&exclude);
    let mut text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(anyhow::Error::new(e).context(format!("cannot read {exclude}"))),
    };
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&format!(
        "# the countersign channel folder: it syncs on its own, never in the project's commits\n{line}\n"
    ));
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot write {exclude}"))?;
    }
    std::fs::write(&path, text).with_context(|| format!("cannot write {exclude}"))?;
    Ok(Some(format!(
        "Git: {shown}/ lies in the repository {}; added {line} to {exclude}, so git leaves it out \
         ({why}).",
        top.display()
    )))
}

fn absolute(p: &Path) -> anyhow::Result<PathBuf> {
    Ok(if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()?.join(p)
    })
}

/// The project folder's name as a slug, or "channel".
fn default_name(root: &Path) -> String {
    let base = if root.file_name().is_some_and(|n| n == DEFAULT_DIR) {
        root.parent()
    } else {
        Some(root)
    };
    let raw = base
        .and_then(Path::file_name)
        .and_then(|n| n.to_str())
        .unwrap_or("channel");
    crate::core::ids::slugify(raw, 64).unwrap_or_else(|| "channel".into())
}

/// What a person does next, in a few lines: whatever the number of roles,
/// the output stays short (the by-hand wiring is behind `--verbose`).
fn next_steps(dir: &ChannelDir, roles: &[Role]) -> String {
    let path = dir.root().display().to_string();
    let names = roles
        .iter()
        .map(Role::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "Created channel '{name}' in {path} (roles: {names})\n\
         The owner key is in this device's countersign home: back it up, it cannot be recovered.\n\n\
         Next, in the folder where each agent session starts, give it one ROLE ({names}):\n  \
         countersign --channel {path} --role ROLE install claude --apply   (or: install codex --apply)\n\
         Then try:\n  \
         countersign --channel {path} --role {a} send --to {b} --topic hello --body 'first message'\n  \
         countersign --channel {path} --role {b} status\n\
         (`init --verbose` also prints the MCP server entries to write by hand; README: Setup.)\n",
        name = dir.genesis().name,
        a = roles[0],
        b = roles[1],
    )
}

/// The channel's id and each role's MCP server entry, for wiring a client
/// by hand (`init --verbose`).
fn by_hand(dir: &ChannelDir, roles: &[Role]) -> String {
    let path = dir.root().display().to_string();
    let mut out = format!("\nChannel id {}\n", dir.id());
    for role in roles {
        let args = format!(
            "[\"mcp\", \"--role\", \"{role}\", \"--channel\", {}]",
            json_str(&path)
        );
        out.push_str(&format!(
            "\nRole '{role}' by hand:\n  \
             Claude Code (its local scope; .mcp.json would be committed):\n    \
             {{\"mcpServers\": {{\"channel\": {{\"command\": \"countersign\", \"args\": {args}}}}}}}\n  \
             Codex (~/.codex/config.toml):\n    [mcp_servers.channel]\n    command = \"countersign\"\n    \
             args = {args}\n"
        ));
    }
    out
}

fn json_str(s: &str) -> String {
    serde_json::to_string(s).expect("strings serialize")
}
