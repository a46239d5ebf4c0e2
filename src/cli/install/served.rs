//! `install claude --url URL --token-env VAR`: wire Claude Code to a channel
//! served by `countersign serve` elsewhere, with no channel folder here.
//!
//! The server entry is Claude Code's HTTP form, `URL/mcp` with
//! `Authorization: Bearer ${VAR}`, which Claude Code expands from its
//! environment when it connects; the hooks run `countersign hook` with
//! `COUNTERSIGN_URL` and `COUNTERSIGN_TOKEN="$VAR"`, so they read the
//! channel through the server. Only the variable's name is written, never
//! the token. No project binding is written: the token names the role and
//! the channel. Files, backups and `uninstall` are the local install's.

use std::path::Path;

use anyhow::bail;
use serde_json::{Value, json};

use super::claude::{claude_project, claude_user_config, mcp_json};
use super::edit::{Written, report};
use super::git::{exclude_block, git_exclude};
use super::hooks::{served_hook_commands, settings};
use super::note::{Whose, section, section_text};
use super::{Args, SERVER, Scope, Tool, executable, working_dir};
use crate::cli::Cli;
use crate::cli::output::outln;
use crate::cli::remote_channel::{TOKEN_VAR, URL_VAR, base_url};
use crate::store::backup::Backups;
use crate::store::binding;

/// Prints (and with --apply makes) the wiring of Claude Code to the server
/// at `url`, sending the token held in the variable `var`.
pub(super) fn run(cli: &Cli, a: &Args, url: &str, var: &str) -> anyhow::Result<Written> {
    if a.tool != Tool::Claude {
        bail!(
            "--url is for claude: it writes Claude Code's HTTP server entry; drop --url for codex"
        );
    }
    if a.tools.is_some() {
        bail!(
            "--tools chooses what a local `countersign mcp` serves; a server serves its token's \
             tools, so --url takes no --tools; drop --tools"
        );
    }
    if !is_variable_name(var) {
        bail!(
            "--token-env takes the name of an environment variable (letters, digits and _), \
             not the token itself: e.g. --token-env {TOKEN_VAR}"
        );
    }
    let (base, _) = base_url(url).map_err(|e| anyhow::anyhow!("{e}"))?;
    let home = cli.home()?;
    let home_root = home
        .root()
        .map(|r| r.canonicalize().unwrap_or_else(|_| r.to_path_buf()))
        .map(|r| r.display().to_string());
    let backups = Backups::of(&home);
    let (exe, _) = executable();
    let cwd = working_dir()?;
    let personal = a.scope == Scope::Local;
    let entry = served_entry(&base, var);
    let hooks = served_hook_commands(&exe, &base, var, home_root.as_deref());
    let mut edits = Vec::new();
    let (settings_file, note_file) = if personal {
        if let Some(ex) = git_exclude(&cwd) {
            edits.push(exclude_block(&ex, true)?);
        }
        edits.push(mcp_json(
            &claude_user_config()?,
            &["projects", &claude_project(&cwd)],
            Some(entry),
        )?);
        ("settings.local.json", "CLAUDE.local.md")
    } else {
        edits.push(mcp_json(&cwd.join(".mcp.json"), &[], Some(entry))?);
        ("settings.json", "CLAUDE.md")
    };
    edits.push(settings(
        &cwd.join(".claude").join(settings_file),
        Some(&hooks),
    )?);
    edits.push(section(
        &cwd.join(note_file),
        Some(&section_text(&Whose::Served(&base), "mcp__channel__")),
    )?);
    outln!(
        "countersign install claude: the channel served at {base}, as the role of the token in ${var}"
    );
    let binding_path = cwd.join(binding::FILE);
    let written = report(
        &edits,
        a.apply,
        &backups,
        Some((binding_path.as_path(), "claude")),
        true,
    )?;
    outln!(
        "How it resolves: Claude Code connects to {base}/mcp (the server \"{SERVER}\") and sends \
         `Authorization: Bearer ${{{var}}}`, expanding {var} from the environment it starts in; \
         the hooks run `{exe} hook …` with {URL_VAR}={base} and {TOKEN_VAR} taken from {var}, \
         and read the channel through the server. No channel folder is needed on this machine."
    );
    outln!(
        "Still to do: export {var}=<the role token> (from `countersign token create --role R` \
         on the server's machine) in the environment Claude Code starts from — your shell \
         profile or a secret manager, never a file in the project. Without it Claude Code \
         cannot connect and the stop hook lets every stop pass."
    );
    if written.any() {
        outln!("Restart the agent session in {} to use it.", show(&cwd));
    }
    Ok(written)
}

/// Claude Code's HTTP server entry for the server at `base`.
fn served_entry(base: &str, var: &str) -> Value {
    json!({
        "type": "http",
        "url": format!("{base}/mcp"),
        "headers": {"Authorization": format!("Bearer ${{{var}}}")},
    })
}

/// A POSIX environment variable name: what `${VAR}` and `"$VAR"` expand.
fn is_variable_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn show(p: &Path) -> String {
    p.display().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_variable_name_is_taken_for_the_token() {
        for ok in ["COUNTERSIGN_TOKEN", "_T", "cs_token2"] {
            assert!(is_variable_name(ok), "{ok}");
        }
        for bad in ["", "2X", "A-B", "$X", "A B", "${X}"] {
            assert!(!is_variable_name(bad), "{bad}");
        }
    }

    #[test]
    fn the_entry_is_claude_codes_http_form_and_counts_as_ours() {
        let e = served_entry("https://cs.example.org", "CS_TOKEN");
        assert_eq!(
            e,
            json!({"type": "http", "url": "https://cs.example.org/mcp",
                   "headers": {"Authorization": "Bearer ${CS_TOKEN}"}})
        );
        assert!(super::super::claude::is_ours(&e));
    }
}
