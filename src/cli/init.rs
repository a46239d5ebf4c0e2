//! `countersign init`: create a channel folder and the owner key.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::Cli;
use crate::app::init::create_channel;
use crate::app::sync::set_remote;
use crate::cli::output::{out, outln};
use crate::core::ids::Role;
use crate::store::channel_dir::DEFAULT_DIR;
use crate::store::prefs::Remote;
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
    if let Some(remote) = remote {
        let channel = Channel::open(dir.clone(), home)?;
        let note = set_remote(&channel, remote.clone())?;
        outln!(
            "\nSync: {remote}. Run `countersign --channel {} sync` to publish; another machine \
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
    Ok(ExitCode::SUCCESS)
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

fn next_steps(dir: &ChannelDir, roles: &[Role]) -> String {
    let path = dir.root().display().to_string();
    let mut out = format!(
        "Created channel '{}' in {path}\n  id {}\n  roles: {}\n  owner key: stored in this device's countersign home (back it up; it cannot be recovered)\n\n",
        dir.genesis().name,
        dir.id(),
        roles
            .iter()
            .map(Role::as_str)
            .collect::<Vec<_>>()
            .join(", "),
    );
    out.push_str("Next steps — give each agent session one role.\n\n");
    for role in roles {
        let args = format!(
            "[\"mcp\", \"--role\", \"{role}\", \"--channel\", {}]",
            json_str(&path)
        );
        out.push_str(&format!(
            "Role '{role}': in the folder its agent session starts in, run\n    \
             countersign --channel {path} --role {role} install claude --apply   \
             (or: install codex --apply)\n  \
             or give the client this server entry by hand —\n  \
             Claude Code (its local scope; .mcp.json would be committed):\n    \
             {{\"mcpServers\": {{\"channel\": {{\"command\": \"countersign\", \"args\": {args}}}}}}}\n  \
             Codex (~/.codex/config.toml):\n    [mcp_servers.channel]\n    command = \"countersign\"\n    \
             args = {args}\n\n"
        ));
    }
    out.push_str(&format!(
        "Try it from a shell:\n  countersign --channel {path} --role {a} send --to {b} --topic hello --body 'first message'\n  \
         countersign --channel {path} --role {b} inbox\n  countersign --channel {path} log\n",
        a = roles[0],
        b = roles[1],
    ));
    out
}

fn json_str(s: &str) -> String {
    serde_json::to_string(s).expect("strings serialize")
}
