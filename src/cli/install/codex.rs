//! Codex's files: where they are (`$CODEX_HOME`, else `~/.codex`), and the
//! `[mcp_servers.channel]` entry of its `config.toml`, edited with
//! `toml_edit` so comments, order and layout stay, and found however it is
//! written. Its `hooks.json` takes Claude Code's settings format
//! ([`super::hooks`]). It must not touch a server entry that does not run
//! countersign.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use toml_edit::{DocumentMut, Item, TableLike};

use super::SERVER;
use super::block::append_block;
use super::edit::Edit;
use super::env_path;
use super::file::read;
use super::server_entry::ServerEntry;

/// Codex's home: `$CODEX_HOME`, else `~/.codex`.
pub(super) fn codex_home() -> anyhow::Result<PathBuf> {
    if let Some(h) = env_path("CODEX_HOME") {
        return Ok(h);
    }
    let home =
        env_path("HOME").context("cannot find the Codex configuration: set CODEX_HOME or HOME")?;
    Ok(home.join(".codex"))
}

/// The Codex config file: `$CODEX_HOME/config.toml`.
pub(super) fn codex_config() -> anyhow::Result<PathBuf> {
    Ok(codex_home()?.join("config.toml"))
}

/// Codex's user hooks file, in Claude Code's settings format: `$CODEX_HOME/hooks.json`.
pub(super) fn codex_hooks() -> anyhow::Result<PathBuf> {
    Ok(codex_home()?.join("hooks.json"))
}

/// Codex's user instructions file, read in every session before a
/// project's own: `$CODEX_HOME/AGENTS.override.md` when that holds
/// anything (Codex then reads it instead), else `$CODEX_HOME/AGENTS.md`.
/// The note goes here, never in a project's AGENTS.md: that one is often
/// committed, and the note is personal.
pub(super) fn codex_agents() -> anyhow::Result<PathBuf> {
    let home = codex_home()?;
    let over = home.join("AGENTS.override.md");
    let used = std::fs::read_to_string(&over).is_ok_and(|t| !t.trim().is_empty());
    Ok(if used { over } else { home.join("AGENTS.md") })
}

/// A TOML basic string (JSON's escapes are valid TOML).
pub(super) fn toml_str(s: &str) -> String {
    serde_json::to_string(s).expect("strings serialize")
}

/// The `channel` server as `install` writes it into Codex's config.
pub(super) type CodexServer = ServerEntry;

impl ServerEntry {
    /// The `[mcp_servers.channel]` table as appended to the file.
    fn table(&self) -> String {
        let env = match &self.home {
            Some(h) => format!("env = {{ COUNTERSIGN_HOME = {} }}\n", toml_str(h)),
            None => String::new(),
        };
        format!(
            "[mcp_servers.{SERVER}]\ncommand = {}\nargs = {}\n{env}",
            toml_str(&self.command),
            self.args_text()
        )
    }

    fn args_text(&self) -> String {
        let words: Vec<String> = self.args.iter().map(|a| toml_str(a)).collect();
        format!("[{}]", words.join(", "))
    }

    /// The `COUNTERSIGN_HOME` an entry passes, however it is written.
    fn home_of(t: &dyn TableLike) -> Option<&str> {
        t.get("env")
            .and_then(Item::as_table_like)
            .and_then(|e| e.get("COUNTERSIGN_HOME"))
            .and_then(Item::as_str)
    }

    /// True when `entry` runs this command with these arguments and this
    /// `COUNTERSIGN_HOME`, however it is written (other keys, and other
    /// variables of `env`, are the user's and stay).
    fn is(&self, entry: &Item) -> bool {
        let Some(t) = entry.as_table_like() else {
            return false;
        };
        let args = t.get("args").and_then(Item::as_array);
        t.get("command").and_then(Item::as_str) == Some(self.command.as_str())
            && args.is_some_and(|a| {
                a.iter()
                    .map(toml_edit::Value::as_str)
                    .eq(self.args.iter().map(|w| Some(w.as_str())))
            })
            && Self::home_of(t) == self.home.as_deref()
    }

    /// Makes countersign's existing entry `t` this one, in place: its
    /// layout, comments and the user's other keys stay.
    fn update(&self, t: &mut dyn TableLike) {
        let command = toml_edit::value(self.command.as_str());
        let args: toml_edit::Array = self.args.iter().map(String::as_str).collect();
        match t.get_mut("command") {
            Some(Item::Value(v)) => *v = command.into_value().expect("a value"),
            _ => {
                t.insert("command", command);
            }
        }
        match t.get_mut("args") {
            Some(Item::Value(v)) => *v = toml_edit::Value::Array(args),
            _ => {
                t.insert("args", toml_edit::value(args));
            }
        }
        let env = t.get_mut("env").and_then(Item::as_table_like_mut);
        match (&self.home, env) {
            (Some(h), Some(env)) => {
                env.insert("COUNTERSIGN_HOME", toml_edit::value(h.as_str()));
            }
            (Some(h), None) => {
                let mut env = toml_edit::InlineTable::new();
                env.insert("COUNTERSIGN_HOME", h.as_str().into());
                t.insert("env", toml_edit::value(env));
            }
            (None, Some(env)) => {
                env.remove("COUNTERSIGN_HOME");
            }
            (None, None) => {}
        }
    }

    /// The entry as an inline table, to go into an inline `mcp_servers`.
    fn inline(&self) -> toml_edit::Value {
        let env = match &self.home {
            Some(h) => format!(", env = {{ COUNTERSIGN_HOME = {} }}", toml_str(h)),
            None => String::new(),
        };
        let text = format!(
            "{{ command = {}, args = {}{env} }}",
            toml_str(&self.command),
            self.args_text()
        );
        text.parse().expect("the entry is valid TOML")
    }
}

/// True when any string in `item` (at any depth) mentions countersign: the
/// server runs it.
pub(super) fn runs_countersign(item: &Item) -> bool {
    fn value(v: &toml_edit::Value) -> bool {
        match v {
            toml_edit::Value::String(s) => s.value().contains("countersign"),
            toml_edit::Value::Array(a) => a.iter().any(value),
            toml_edit::Value::InlineTable(t) => t.iter().any(|(_, v)| value(v)),
            _ => false,
        }
    }
    match item {
        Item::Value(v) => value(v),
        Item::Table(t) => t.iter().any(|(_, i)| runs_countersign(i)),
        Item::ArrayOfTables(a) => a.iter().any(|t| t.iter().any(|(_, i)| runs_countersign(i))),
        Item::None => false,
    }
}

/// The `channel` entry of a parsed config.
pub(super) fn servers_of<'d>(
    path: &Path,
    doc: &'d DocumentMut,
) -> anyhow::Result<Option<&'d Item>> {
    Ok(servers(path, doc)?.and_then(|s| s.get(SERVER)))
}

/// The parsed config; an empty document when there is no file.
pub(super) fn parse_toml(path: &Path, text: &str) -> anyhow::Result<DocumentMut> {
    text.parse::<DocumentMut>().map_err(|e| {
        anyhow::anyhow!(
            "{} is not valid TOML ({}); fix or move it — nothing was changed",
            path.display(),
            e.to_string().trim_end()
        )
    })
}

/// The `mcp_servers` table of `doc`, however it is written; `Ok(None)` when
/// there is none.
pub(super) fn servers<'d>(
    path: &Path,
    doc: &'d DocumentMut,
) -> anyhow::Result<Option<&'d dyn TableLike>> {
    match doc.get("mcp_servers") {
        None => Ok(None),
        Some(item) => match item.as_table_like() {
            Some(t) => Ok(Some(t)),
            None => bail!(
                "\"mcp_servers\" in {} is not a table; fix it — nothing was changed",
                path.display()
            ),
        },
    }
}

/// Adds or updates (`Some`) or removes (`None`) the `channel` server, found
/// wherever and however it is written: its own table, an inline table under
/// `[mcp_servers]` or in `mcp_servers = {…}`, or dotted keys. A server that
/// does not run countersign is left alone.
pub(super) fn codex_toml(path: &Path, server: Option<&CodexServer>) -> anyhow::Result<Edit> {
    let before = read(path)?;
    let text = before.clone().unwrap_or_default();
    let mut doc = parse_toml(path, &text)?;
    let found = servers_of(path, &doc)?.cloned();
    let mut notes = Vec::new();
    let after = match (server, found) {
        (Some(new), Some(old)) if new.is(&old) => {
            notes.push(format!("[mcp_servers.{SERVER}] is already set up"));
            before.clone()
        }
        (Some(new), Some(old)) if runs_countersign(&old) => {
            // An entry of an earlier install (with --role, or another home):
            // it would override the project binding, so it becomes this one.
            notes.push(format!(
                "update [mcp_servers.{SERVER}] (it runs countersign) to:\n{}",
                new.table()
            ));
            let servers = doc["mcp_servers"]
                .as_table_like_mut()
                .expect("found above as a table");
            let entry = servers
                .get_mut(SERVER)
                .and_then(Item::as_table_like_mut)
                .with_context(|| {
                    format!(
                        "[mcp_servers.{SERVER}] in {} is not a table; fix it — nothing was changed",
                        path.display()
                    )
                })?;
            new.update(entry);
            let updated = doc.to_string();
            let check = parse_toml(path, &updated)?;
            if !servers_of(path, &check)?.is_some_and(|e| new.is(e)) {
                bail!(
                    "cannot update [mcp_servers.{SERVER}] in {} without breaking it; edit it by \
                     hand — nothing was changed",
                    path.display()
                );
            }
            Some(updated)
        }
        (Some(_), Some(old)) => bail!(
            "{} already has an [mcp_servers.{SERVER}] entry that does not run countersign ({}); \
             rename or remove it and install again — nothing was changed",
            path.display(),
            old.to_string().trim()
        ),
        (Some(new), None) => {
            let added = match doc
                .get_mut("mcp_servers")
                .and_then(Item::as_inline_table_mut)
            {
                // `mcp_servers = {…}` cannot take a table after it: the entry goes inside.
                Some(inline) => {
                    // The space before `}` belongs to the last value: it moves to the new one.
                    let mut value = new.inline();
                    if let Some((_, last)) = inline.iter_mut().last()
                        && let Some(space) = last.decor().suffix().cloned()
                    {
                        last.decor_mut().set_suffix("");
                        value.decor_mut().set_suffix(space);
                    }
                    inline.insert(SERVER, value);
                    let line = format!("{SERVER} = {}", new.inline());
                    notes.push(format!("add to the inline mcp_servers table:\n{line}"));
                    doc.to_string()
                }
                None => {
                    notes.push(format!("append the table:\n{}", new.table()));
                    append_block(&text, &new.table())
                }
            };
            let check = parse_toml(path, &added)?;
            if !servers_of(path, &check)?.is_some_and(|e| new.is(e)) {
                bail!(
                    "cannot add [mcp_servers.{SERVER}] to {} without breaking it; add it by hand — \
                     nothing was changed",
                    path.display()
                );
            }
            Some(added)
        }
        (None, Some(old)) if runs_countersign(&old) => {
            notes.push(format!("remove the [mcp_servers.{SERVER}] table"));
            if let Some(inline) = doc["mcp_servers"].as_inline_table_mut() {
                let last = inline.iter().last().is_some_and(|(k, _)| k == SERVER);
                let gone = inline.remove(SERVER);
                // The space before `}` was the removed value's: the new last one takes it.
                if let (true, Some(gone), Some((_, before))) =
                    (last, gone, inline.iter_mut().last())
                    && let Some(space) = gone.decor().suffix().cloned()
                {
                    before.decor_mut().set_suffix(space);
                }
            } else if let Some(all) = doc["mcp_servers"].as_table_like_mut() {
                all.remove(SERVER);
            }
            // A table that only held the server and that the user did not
            // write as `[mcp_servers]` goes with it.
            let written = doc["mcp_servers"]
                .as_table()
                .is_some_and(|t| !t.is_implicit() && !t.is_dotted());
            if !written
                && doc["mcp_servers"]
                    .as_table_like()
                    .is_some_and(|t| t.is_empty())
            {
                doc.remove("mcp_servers");
            }
            let rest = doc.to_string();
            (!rest.trim().is_empty()).then_some(rest)
        }
        (None, Some(_)) => {
            notes.push(format!(
                "leave the [mcp_servers.{SERVER}] table: it does not run countersign"
            ));
            before.clone()
        }
        (None, None) => before.clone(),
    };
    Ok(Edit::new(path, before, after, notes))
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;

    /// Runs `codex_toml` on a config holding `text` (`None`: no file) and
    /// returns the planned content and notes.
    fn plan(text: Option<&str>, server: Option<&CodexServer>) -> (Option<String>, String) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        if let Some(text) = text {
            fs::write(&path, text).unwrap();
        }
        let e = codex_toml(&path, server).unwrap();
        (e.after, e.notes.join("\n"))
    }

    fn ours(role: &str) -> CodexServer {
        CodexServer {
            command: "/opt/countersign/bin/countersign".into(),
            args: ["mcp", "--role", role, "--channel", "/ch"]
                .map(str::to_owned)
                .to_vec(),
            home: None,
        }
    }

    /// How many times the config defines the channel server (a duplicate
    /// table would not parse at all).
    fn channel_entry(text: &str) -> Item {
        let doc: DocumentMut = text.parse().unwrap_or_else(|e| panic!("{e}\n{text}"));
        doc["mcp_servers"][SERVER].clone()
    }

    #[test]
    fn the_toml_table_is_found_with_its_subtables_only() {
        let text = "a = 1\n\n[mcp_servers.channel]\ncommand = \"countersign\"\n[mcp_servers.channel.env]\nK = \"v\"\n\n[other]\nb = 2\n";
        let (after, notes) = plan(Some(text), None);
        assert_eq!(
            after.as_deref(),
            Some("a = 1\n\n[other]\nb = 2\n"),
            "{notes}"
        );
        let (after, _) = plan(
            Some("[mcp_servers.channel2]\ncommand = \"countersign\"\n"),
            None,
        );
        assert_eq!(
            after.as_deref(),
            Some("[mcp_servers.channel2]\ncommand = \"countersign\"\n")
        );
        let spaced = "[ mcp_servers . \"channel\" ]\ncommand = \"countersign\"\n";
        assert_eq!(
            plan(Some(spaced), None).0,
            None,
            "the only table: the file goes"
        );
        // An entry of an earlier install becomes this one, where it stands.
        let (updated, notes) = plan(Some(spaced), Some(&ours("web")));
        assert!(notes.contains("update"), "{notes}");
        let updated = updated.unwrap();
        assert!(
            updated.starts_with("[ mcp_servers . \"channel\" ]\n"),
            "{updated}"
        );
        assert!(ours("web").is(&channel_entry(&updated)), "{updated}");
    }

    #[test]
    fn an_inline_or_dotted_server_is_found_never_added_twice() {
        let web = ours("web");
        let forms = |s: &CodexServer| {
            let (command, args) = (toml_str(&s.command), s.args_text());
            [
                format!(
                    "[mcp_servers]\nother = {{ command = \"x\" }}\n{SERVER} = {{ command = {command}, args = {args} }} # ours\n\n[after]\nk = 1\n"
                ),
                format!(
                    "mcp_servers = {{ {SERVER} = {{ command = {command}, args = {args} }}, other = {{ command = \"x\" }} }}\n"
                ),
                format!(
                    "model = \"o3\"\nmcp_servers.{SERVER}.command = {command}\nmcp_servers.{SERVER}.args = {args}\n# tail\n"
                ),
            ]
        };
        for (same, other) in forms(&web).iter().zip(forms(&ours("api")).iter()) {
            // Already there, in whatever form: nothing to do.
            let (after, notes) = plan(Some(same), Some(&web));
            assert_eq!(after.as_deref(), Some(same.as_str()));
            assert!(notes.contains("already set up"), "{notes}");
            // Another install's entry: made this one where it stands, never a second table.
            let (after, notes) = plan(Some(other), Some(&web));
            let after = after.unwrap();
            assert!(notes.contains("update"), "{notes}");
            assert!(web.is(&channel_entry(&after)), "{after}");
            // Uninstalled: the entry goes, the rest stays.
            let (gone, _) = plan(Some(same), None);
            let gone = gone.unwrap_or_default();
            assert!(!gone.contains("countersign"), "{gone}");
            assert!(
                gone.is_empty() || gone.parse::<DocumentMut>().is_ok(),
                "{gone}"
            );
        }
        let [under_table, _, dotted] = forms(&web);
        assert_eq!(
            plan(Some(&under_table), None).0.as_deref(),
            Some("[mcp_servers]\nother = { command = \"x\" }\n\n[after]\nk = 1\n")
        );
        assert_eq!(
            plan(Some(&dotted), None).0.as_deref(),
            Some("model = \"o3\"\n# tail\n")
        );

        // Someone else's inline server: left alone, never a second table.
        let foreign = "[mcp_servers]\nchannel = { command = \"other-tool\" }\n";
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        fs::write(&path, foreign).unwrap();
        let e = codex_toml(&path, Some(&web)).err().unwrap().to_string();
        assert!(
            e.contains("does not run countersign") && e.contains("nothing was changed"),
            "{e}"
        );
        let (after, notes) = plan(Some(foreign), None);
        assert_eq!(after.as_deref(), Some(foreign));
        assert!(notes.contains("does not run countersign"), "{notes}");
    }

    #[test]
    fn a_server_goes_inside_an_inline_mcp_servers_table() {
        let web = ours("web");
        let text =
            "# servers\nmcp_servers = { other = { command = \"x\" } } # mine\nmodel = \"o3\"\n";
        let (after, notes) = plan(Some(text), Some(&web));
        let after = after.unwrap();
        assert!(notes.contains("inline"), "{notes}");
        assert!(web.is(&channel_entry(&after)), "{after}");
        assert!(
            after
                .starts_with("# servers\nmcp_servers = { other = { command = \"x\" }, channel = {"),
            "{after}"
        );
        assert!(after.ends_with(" } # mine\nmodel = \"o3\"\n"), "{after}");
        let (back, _) = plan(Some(&after), None);
        assert_eq!(
            back.as_deref(),
            Some(
                "# servers\nmcp_servers = { other = { command = \"x\" } } # mine\nmodel = \"o3\"\n"
            )
        );
    }

    #[test]
    fn comments_order_and_layout_are_kept() {
        let web = ours("web");
        let (head, tail) = (
            "# top comment\nzeta = 1   # after a value\nalpha = 2\n\n",
            "[profiles.z]\nmodel = \"x\"\n\n[profiles.a]\nmodel = \"y\"\n",
        );
        let after = format!(
            "{head}[mcp_servers.channel]\n# why this server\nargs   =   {}   # our args\nenv = {{ A = \"1\" }}\ncommand = {}\n\n{tail}",
            web.args_text(),
            toml_str(&web.command)
        );
        // Uninstalled: only the server's table goes, byte for byte.
        assert_eq!(
            plan(Some(&after), None).0.as_deref(),
            Some(format!("{head}{tail}").as_str())
        );
        // Installed again with a key of the user's added: already set up.
        let with_env = after.replace("env = { A = \"1\" }", "env = { A = \"2\" }");
        let (again, notes) = plan(Some(&with_env), Some(&web));
        assert_eq!(again.as_deref(), Some(with_env.as_str()));
        assert!(notes.contains("already set up"), "{notes}");
        // Appended to a file without the server, then cut: the file as it was.
        let plain = "# top comment\nzeta = 1 # z\nalpha = 2\n\n[profiles.z]\nmodel = \"x\" # m\n";
        let (added, _) = plan(Some(plain), Some(&web));
        let added = added.unwrap();
        assert_eq!(added, format!("{plain}\n{}", web.table()));
        assert_eq!(plan(Some(&added), None).0.as_deref(), Some(plain));
        // No file: one is made, and removed again.
        let (new, _) = plan(None, Some(&web));
        assert_eq!(new.as_deref(), Some(web.table().as_str()));
        assert_eq!(plan(new.as_deref(), None).0, None);
    }

    #[test]
    fn a_config_that_is_not_toml_or_not_a_table_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        for bad in ["[mcp_servers\n", "mcp_servers = 3\n"] {
            fs::write(&path, bad).unwrap();
            let e = codex_toml(&path, Some(&ours("web")))
                .err()
                .unwrap()
                .to_string();
            assert!(e.contains("nothing was changed"), "{e}");
        }
    }
}
