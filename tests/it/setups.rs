//! Setups as a user makes them: the README's setup blocks run as they stand,
//! two git worktrees and two Codex projects each working as their own role
//! through one server entry, install/uninstall giving back every file byte
//! for byte, and refusals that say which home and channel they used.
//!
//! Everything runs the real binary with a temporary `HOME` and, where a
//! client would, a short environment.

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use rmcp::ServiceExt as _;
use rmcp::transport::{ConfigureCommandExt as _, TokioChildProcess};
use serde_json::{Value, json};

use crate::common::machines::git_ok;
use crate::common::{Client, bin};

/// A user's machine: a temporary `HOME` holding projects, with no
/// countersign variable set.
struct Machine {
    tmp: tempfile::TempDir,
}

impl Machine {
    fn new() -> Self {
        let m = Self {
            tmp: tempfile::tempdir().unwrap(),
        };
        fs::create_dir_all(m.home()).unwrap();
        m
    }

    fn root(&self) -> PathBuf {
        self.tmp.path().canonicalize().unwrap()
    }

    fn home(&self) -> PathBuf {
        self.tmp.path().join("home")
    }

    /// A git repository with one commit, as a project is.
    fn project(&self, name: &str) -> PathBuf {
        let dir = self.root().join(name);
        fs::create_dir_all(&dir).unwrap();
        git_ok(&dir, &["init", "-q"]);
        git_ok(&dir, &["commit", "-q", "--allow-empty", "-m", "start"]);
        dir
    }

    /// The environment a shell of this user has: PATH with countersign on
    /// it, HOME, a git identity; nothing of countersign's.
    fn env(&self) -> Vec<(&'static str, OsString)> {
        let bin_dir = Path::new(bin()).parent().unwrap();
        let mut path = OsString::from(bin_dir);
        path.push(":");
        path.push(std::env::var_os("PATH").unwrap_or_default());
        vec![
            ("PATH", path),
            ("HOME", self.home().into()),
            ("GIT_AUTHOR_NAME", "test".into()),
            ("GIT_AUTHOR_EMAIL", "test@localhost".into()),
            ("GIT_COMMITTER_NAME", "test".into()),
            ("GIT_COMMITTER_EMAIL", "test@localhost".into()),
        ]
    }

    /// Runs `script` with `sh -e` in `cwd`; panics unless it succeeds.
    fn sh(&self, cwd: &Path, script: &str) -> String {
        let out = Command::new("sh")
            .args(["-e", "-c", script])
            .current_dir(cwd)
            .env_clear()
            .envs(self.env())
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "{script}\n{text}");
        text
    }

    /// Runs countersign with `args` in `cwd`; returns (exit code, stdout + stderr).
    fn cs(&self, cwd: &Path, args: &[&str]) -> (i32, String) {
        let out = Command::new(bin())
            .args(args)
            .current_dir(cwd)
            .env_clear()
            .envs(self.env())
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        )
    }

    /// `countersign mcp` with no role or channel, started in `cwd` with a
    /// short environment (HOME and PATH only), as Codex and Claude Code
    /// start the installed entry.
    async fn server_in(&self, cwd: &Path) -> Client {
        let env = self.env();
        let transport =
            TokioChildProcess::new(tokio::process::Command::new(bin()).configure(|c| {
                c.arg("mcp").current_dir(cwd).env_clear().envs(
                    env.iter()
                        .filter(|(k, _)| *k == "HOME" || *k == "PATH")
                        .cloned(),
                );
            }))
            .unwrap();
        Client {
            inner: ().serve(transport).await.expect("MCP handshake"),
        }
    }

    /// Every file under `dirs`, with its bytes (`.git` objects left out).
    fn snapshot(&self, dirs: &[&Path]) -> Vec<(PathBuf, Vec<u8>)> {
        fn walk(d: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
            let Ok(entries) = fs::read_dir(d) else {
                return;
            };
            for e in entries {
                let p = e.unwrap().path();
                let name = p.file_name().unwrap().to_string_lossy().into_owned();
                if ["objects", "logs", "index", "refs"].contains(&name.as_str()) {
                    continue;
                }
                if p.is_dir() {
                    walk(&p, out);
                } else {
                    out.push((p.clone(), fs::read(&p).unwrap()));
                }
            }
        }
        let mut out = Vec::new();
        for d in dirs {
            walk(d, &mut out);
        }
        out.sort();
        out
    }
}

/// The README's fenced block marked `test:<name>`.
fn readme_block(name: &str) -> String {
    let readme = include_str!("../../README.md");
    let open = format!("```sh test:{name}\n");
    let start = readme
        .find(&open)
        .unwrap_or_else(|| panic!("README.md has no block {open}"))
        + open.len();
    let len = readme[start..].find("```").unwrap();
    readme[start..start + len].to_owned()
}

fn read_json(p: &Path) -> Value {
    serde_json::from_slice(&fs::read(p).unwrap()).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The commands of `event` in a hooks file (Claude Code's format, Codex's too) that run
/// `countersign hook`.
fn countersign_hooks(settings: &Value, event: &str) -> Vec<String> {
    settings["hooks"][event]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|g| g["hooks"].as_array().into_iter().flatten())
        .filter_map(|h| h["command"].as_str())
        .filter(|c| c.contains("countersign") && c.contains(" hook "))
        .map(str::to_owned)
        .collect()
}

/// The sender of the one message in `role`'s inbox, read through `server`.
async fn inbox_from(server: &Client) -> Vec<(String, String)> {
    let v = server.call("read_inbox", json!({})).await.ok();
    v["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["from"].as_str().unwrap_or_default().to_owned(),
                r["topic"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

#[tokio::test]
async fn the_readme_setups_run_and_each_worktree_and_project_has_its_role() {
    let m = Machine::new();
    let project = m.project("my-project");
    let other = m.project("another-project");
    for block in ["one-machine", "two-worktrees", "codex"] {
        m.sh(&m.root(), &readme_block(block));
    }
    let worktree = m.root().join("my-project-backend");
    let channel = project.join(".countersign");
    let bound = |dir: &Path| read_json(&dir.join(".countersign.local.json"));
    assert_eq!(
        bound(&project),
        json!({"role": "frontend", "channel": channel})
    );
    assert_eq!(
        bound(&worktree),
        json!({"role": "backend", "channel": channel})
    );
    assert_eq!(
        bound(&other),
        json!({"role": "api", "channel": other.join(".countersign")})
    );

    // Claude Code: one local-scope entry for the repository, shared by its
    // worktrees, with no role in it; hooks and note per worktree.
    let claude = read_json(&m.home().join(".claude.json"));
    let projects = claude["projects"].as_object().unwrap();
    assert_eq!(projects.len(), 1, "{claude}");
    let entry = &claude["projects"][project.to_str().unwrap()]["mcpServers"]["channel"];
    assert_eq!(entry["args"], json!(["mcp"]), "{claude}");
    assert_eq!(entry["type"], "stdio");
    for (dir, role) in [(&project, "frontend"), (&worktree, "backend")] {
        let hooks = fs::read_to_string(dir.join(".claude/settings.local.json")).unwrap();
        assert!(hooks.contains(&format!("--role {role}")), "{hooks}");
        let note = fs::read_to_string(dir.join("CLAUDE.local.md")).unwrap();
        assert!(note.contains(&format!("role `{role}`")), "{note}");
        // Nothing personal shows up for a commit.
        let status = git_ok(dir, &["status", "--porcelain", "--untracked-files=all"]);
        assert!(
            !status.contains("local") && !status.contains("CLAUDE"),
            "{status}"
        );
    }
    assert!(!project.join(".mcp.json").exists());
    assert!(!project.join(".claude/settings.json").exists());

    // Codex: one user entry, no role in it nor in the notes nor in the hooks.
    let codex = fs::read_to_string(m.home().join(".codex/config.toml")).unwrap();
    assert_eq!(codex.matches("[mcp_servers.channel]").count(), 1, "{codex}");
    assert!(codex.contains("args = [\"mcp\"]"), "{codex}");
    let hooks = read_json(&m.home().join(".codex/hooks.json"));
    assert_eq!(
        countersign_hooks(&hooks, "SessionStart").len(),
        1,
        "{hooks}"
    );
    assert_eq!(countersign_hooks(&hooks, "Stop").len(), 1, "{hooks}");
    assert!(!hooks.to_string().contains("--role"), "{hooks}");
    // The note is Codex's user file's, naming no role; no project's AGENTS.md is written.
    let agents = fs::read_to_string(m.home().join(".codex/AGENTS.md")).unwrap();
    assert!(
        !agents.contains("frontend") && !agents.contains("`api`"),
        "{agents}"
    );
    assert!(agents.contains(".countersign.local.json"), "{agents}");
    for dir in [&project, &other] {
        assert!(!dir.join("AGENTS.md").exists());
    }

    // The servers, started as the clients start them (in the session's
    // folder, a short environment), each take their folder's role.
    let fe = m.server_in(&project.join(".claude")).await;
    let be = m.server_in(&worktree).await;
    fe.send("backend", "from the main checkout", "hi").await;
    be.send("frontend", "from the worktree", "hello").await;
    assert_eq!(
        inbox_from(&be).await,
        vec![("frontend".into(), "from the main checkout".into())]
    );
    assert_eq!(
        inbox_from(&fe).await,
        vec![("backend".into(), "from the worktree".into())]
    );
    let api = m.server_in(&other).await;
    api.send("web", "another project", "x").await;
    let (code, out) = m.cs(&other, &["--role", "web", "inbox"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("another project"), "{out}");
    for c in [fe, be, api] {
        c.close().await;
    }

    // The commands people run in a bound folder take its role too.
    let (code, out) = m.cs(&worktree, &["hook", "session-start"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("'backend'"), "{out}");

    // Uninstalling the worktree leaves the entry the main checkout still uses.
    let (code, out) = m.cs(&worktree, &["uninstall", "--apply"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("still use it"), "{out}");
    assert!(!worktree.join(".countersign.local.json").exists());
    let claude = read_json(&m.home().join(".claude.json"));
    assert_eq!(
        claude["projects"][project.to_str().unwrap()]["mcpServers"]["channel"]["args"],
        json!(["mcp"])
    );
    // The Codex entry stays while another project uses it, then goes.
    let (code, out) = m.cs(&project, &["uninstall", "--apply"]);
    assert_eq!(code, 0, "{out}");
    assert!(m.home().join(".codex/config.toml").is_file(), "{out}");
    assert!(!m.home().join(".claude.json").exists(), "{out}");
    let (code, out) = m.cs(&other, &["uninstall", "--apply"]);
    assert_eq!(code, 0, "{out}");
    assert!(!m.home().join(".codex/config.toml").exists(), "{out}");
    assert!(!m.home().join(".codex/hooks.json").exists(), "{out}");
    assert!(!m.home().join(".codex/AGENTS.md").exists(), "{out}");
    for dir in [&project, &worktree, &other] {
        for f in [
            ".countersign.local.json",
            "AGENTS.md",
            "CLAUDE.local.md",
            ".claude",
        ] {
            assert!(!dir.join(f).exists(), "{}", dir.join(f).display());
        }
    }
    let exclude = fs::read_to_string(project.join(".git/info/exclude")).unwrap();
    assert!(!exclude.contains("countersign"), "{exclude}");
}

#[test]
fn install_then_uninstall_gives_back_every_file_byte_for_byte() {
    let m = Machine::new();
    let project = m.project("proj");
    m.cs(&project, &["init", "--roles", "web,api"]);
    // Files with a layout of their own, comments where the format has them.
    let claude_json = "{\n\t\"numStartups\" : 3,\n\t\"projects\": { \"/elsewhere\": {\"mcpServers\": {}} },\n  \"z\": [1,2,  3]\n}";
    fs::write(m.home().join(".claude.json"), claude_json).unwrap();
    fs::create_dir_all(project.join(".claude")).unwrap();
    fs::write(
        project.join(".claude/settings.local.json"),
        "{ \"permissions\": {\"allow\": [\"Bash(ls)\"]},\n    \"hooks\": {\"Stop\": [ {\"hooks\": [{\"type\": \"command\", \"command\": \"echo mine\"}]} ]} }",
    )
    .unwrap();
    fs::write(
        project.join("AGENTS.md"),
        "# Agents\r\nno newline at the end",
    )
    .unwrap();
    fs::create_dir_all(m.home().join(".codex")).unwrap();
    fs::write(
        m.home().join(".codex/config.toml"),
        "# mine\nmodel   =  \"o3\"   # comment\n\n[mcp_servers.other]\ncommand = 'x'\n",
    )
    .unwrap();
    let exclude = project.join(".git/info/exclude");
    let dirs = [m.home(), project.clone()];
    let dirs: Vec<&Path> = dirs.iter().map(PathBuf::as_path).collect();
    let home_dirs = |snap: Vec<(PathBuf, Vec<u8>)>| -> Vec<(PathBuf, Vec<u8>)> {
        // The countersign home's own state (keys, index, backups) is not the user's file.
        snap.into_iter()
            .filter(|(p, _)| !p.starts_with(m.home().join(".config")))
            .filter(|(p, _)| !p.starts_with(m.home().join(".local")))
            .filter(|(p, _)| !p.starts_with(project.join(".countersign")))
            .collect()
    };
    let before = home_dirs(m.snapshot(&dirs));
    let exclude_before = fs::read(&exclude).unwrap();

    for args in [
        ["--role", "web", "install", "claude", "--apply"],
        ["--role", "web", "install", "codex", "--apply"],
    ] {
        let (code, out) = m.cs(&project, &args);
        assert_eq!(code, 0, "{out}");
        assert!(!out.contains("countersign-backup"), "{out}");
    }
    let during = home_dirs(m.snapshot(&dirs));
    assert_ne!(during, before);
    assert!(
        during
            .iter()
            .all(|(p, _)| !p.to_string_lossy().contains("countersign-backup")),
        "no backup files in the tree"
    );
    let claude = read_json(&m.home().join(".claude.json"));
    assert_eq!(claude["numStartups"], 3);
    assert_eq!(
        claude["projects"][project.to_str().unwrap()]["mcpServers"]["channel"]["args"],
        json!(["mcp"])
    );
    let settings = read_json(&project.join(".claude/settings.local.json"));
    assert_eq!(settings["permissions"]["allow"][0], "Bash(ls)");
    assert_eq!(settings["hooks"]["Stop"].as_array().unwrap().len(), 2);
    assert_ne!(fs::read(&exclude).unwrap(), exclude_before);

    let (code, out) = m.cs(&project, &["uninstall", "--apply"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(home_dirs(m.snapshot(&dirs)), before, "{out}");
    assert_eq!(fs::read(&exclude).unwrap(), exclude_before);
    assert!(!project.join("CLAUDE.local.md").exists());
    assert!(!project.join(".countersign.local.json").exists());
    let (code, out) = m.cs(&project, &["uninstall", "--apply"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("Nothing to change"), "{out}");
}

/// Codex's hooks file is the user's: `install codex` merges its two hooks in (one of each,
/// replacing an earlier install's, the user's hooks and the file's indentation kept), the
/// hooks take each project's role from its binding through the `cwd` the client passes,
/// and once the last Codex project goes uninstall takes out countersign's hooks and
/// nothing else, byte for byte.
#[test]
fn install_codex_merges_its_hooks_and_uninstall_gives_the_file_back() {
    let m = Machine::new();
    let (a, b) = (m.project("a"), m.project("b"));
    m.cs(&a, &["init", "--roles", "web,api"]);
    m.cs(&b, &["init", "--roles", "api,web"]);
    let path = m.home().join(".codex/hooks.json");
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mine = "{\n    \"hooks\": {\n        \"SessionStart\": [\n            \
        {\"hooks\": [{\"type\": \"command\", \"command\": \"echo mine\"}]},\n            \
        {\"hooks\": [{\"type\": \"command\", \"command\": \"/old/countersign hook session-start --role api\"}]}\n        \
        ],\n        \"PreToolUse\": [{\"matcher\": \"Bash\", \"hooks\": [{\"type\": \"command\", \"command\": \"lint\"}]}]\n    \
        },\n    \"other\": true\n}";
    fs::write(&path, mine).unwrap();
    let before: Value = serde_json::from_str(mine).unwrap();

    for (dir, role) in [(&a, "web"), (&b, "api")] {
        let (code, out) = m.cs(dir, &["--role", role, "install", "codex", "--apply"]);
        assert_eq!(code, 0, "{out}");
        assert!(out.contains("Trust all and continue"), "{out}");
    }
    let text = fs::read_to_string(&path).unwrap();
    assert!(
        text.starts_with("{\n    \"hooks\": {\n        \"SessionStart\": [\n            {"),
        "the file's indentation was not kept:\n{text}"
    );
    let after: Value = serde_json::from_str(&text).unwrap();
    for event in ["SessionStart", "Stop"] {
        let ours = countersign_hooks(&after, event);
        assert_eq!(ours.len(), 1, "{event}: {ours:?}");
        assert!(
            !ours[0].contains("--role") && !ours[0].contains("--channel"),
            "{ours:?}"
        );
    }
    assert_eq!(
        after["hooks"]["SessionStart"][0],
        before["hooks"]["SessionStart"][0]
    );
    assert_eq!(after["hooks"]["PreToolUse"], before["hooks"]["PreToolUse"]);
    assert_eq!(after["other"], true);

    // The hooks, run where a client runs them (the session's folder only on stdin), act as
    // that folder's role.
    let hook = |which: &str, session: &Path| -> String {
        use std::io::Write as _;
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(&countersign_hooks(&after, which)[0])
            .current_dir(m.root())
            .env_clear()
            .envs(m.env())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let input = json!({"cwd": session, "hook_event_name": which, "stop_hook_active": false});
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.to_string().as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap()
    };
    assert!(hook("SessionStart", &a).contains("the role 'web'"));
    assert!(hook("SessionStart", &b).contains("the role 'api'"));
    let (code, out) = m.cs(
        &b,
        &[
            "--role",
            "web",
            "send",
            "--to",
            "api",
            "--topic",
            "t",
            "--body",
            "b",
            "--action-required",
        ],
    );
    assert_eq!(code, 0, "{out}");
    assert!(hook("Stop", &a).is_empty(), "nothing waits for web in a");
    let held = hook("Stop", &b);
    assert!(held.contains("pending items for 'api'"), "{held}");

    // The hooks stay while another Codex project is bound; then the file is as it was.
    let (code, out) = m.cs(&b, &["uninstall", "--apply"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("the countersign hooks stay"), "{out}");
    assert_eq!(fs::read_to_string(&path).unwrap(), text);
    // The earlier install's hook was countersign's: it goes too, every byte of the
    // user's stays.
    let (code, out) = m.cs(&a, &["uninstall", "--apply"]);
    assert_eq!(code, 0, "{out}");
    let old = ",\n            {\"hooks\": [{\"type\": \"command\", \"command\": \"/old/countersign hook session-start --role api\"}]}";
    assert!(mine.contains(old));
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        mine.replace(old, ""),
        "{out}"
    );
}

#[test]
fn uninstall_after_an_edit_takes_out_only_its_part() {
    let m = Machine::new();
    let project = m.project("proj");
    m.cs(&project, &["init", "--roles", "web,api"]);
    let (code, out) = m.cs(&project, &["--role", "web", "install", "claude", "--apply"]);
    assert_eq!(code, 0, "{out}");
    // Claude Code rewrites its file as it runs; the user adds a hook.
    let path = m.home().join(".claude.json");
    let mut v = read_json(&path);
    v["numStartups"] = json!(7);
    fs::write(&path, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    let (code, out) = m.cs(&project, &["uninstall", "--apply"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("changed since install"), "{out}");
    // Claude Code's own `projects` stays, even empty.
    assert_eq!(read_json(&path), json!({"numStartups": 7, "projects": {}}));
}

#[test]
fn install_passes_the_home_and_the_tool_sets_to_the_server() {
    let m = Machine::new();
    let project = m.project("proj");
    let home = m.root().join("cs-home");
    let h = home.to_str().unwrap();
    let (code, out) = m.cs(&project, &["--home", h, "init", "--roles", "web,api"]);
    assert_eq!(code, 0, "{out}");
    for tool in ["claude", "codex"] {
        let (code, out) = m.cs(
            &project,
            &[
                "--home",
                h,
                "--role",
                "web",
                "install",
                tool,
                "--tools",
                "mail,debts",
                "--apply",
            ],
        );
        assert_eq!(code, 0, "{out}");
        assert!(out.contains("COUNTERSIGN_HOME"), "{out}");
    }
    let claude = read_json(&m.home().join(".claude.json"));
    let entry = &claude["projects"][project.to_str().unwrap()]["mcpServers"]["channel"];
    assert_eq!(entry["args"], json!(["mcp", "--tools", "mail,debts"]));
    assert_eq!(entry["env"], json!({"COUNTERSIGN_HOME": h}));
    let codex = fs::read_to_string(m.home().join(".codex/config.toml")).unwrap();
    assert!(
        codex.contains("args = [\"mcp\", \"--tools\", \"mail,debts\"]\n")
            && codex.contains(&format!("env = {{ COUNTERSIGN_HOME = \"{h}\" }}")),
        "{codex}"
    );
    let hooks = fs::read_to_string(project.join(".claude/settings.local.json")).unwrap();
    assert!(hooks.contains(&format!("--home {h}")), "{hooks}");
    // The backups went to that home.
    assert!(home.join("install").read_dir().unwrap().count() >= 5);

    // An entry of an earlier install (a role in it): made the new one, in place.
    let config = m.home().join(".codex/config.toml");
    let old = codex.replace("\"--tools\", \"mail,debts\"", "\"--role\", \"api\"");
    fs::write(&config, &old).unwrap();
    let (code, out) = m.cs(
        &project,
        &["--home", h, "--role", "web", "install", "codex", "--apply"],
    );
    assert_eq!(code, 0, "{out}");
    let now = fs::read_to_string(&config).unwrap();
    assert!(now.contains("args = [\"mcp\"]"), "{now}");
    assert_eq!(now.matches("[mcp_servers.channel]").count(), 1, "{now}");
}

#[test]
fn a_refusal_names_the_home_and_channel_it_used_and_how() {
    let m = Machine::new();
    let project = m.project("proj");
    let home = m.root().join("cs-home");
    let h = home.to_str().unwrap();
    m.cs(&project, &["--home", h, "init", "--roles", "web,api"]);
    // Without the home that holds the keys: the default home, a new device.
    let (code, out) = m.cs(
        &project,
        &[
            "--role", "api", "send", "--to", "web", "--topic", "t", "--body", "b",
        ],
    );
    assert_eq!(code, 2, "{out}");
    let default = m.home().join(".config/countersign");
    for needle in [
        default.to_str().unwrap(),
        "the default",
        "COUNTERSIGN_HOME did not reach this process",
        project.join(".countersign").to_str().unwrap(),
        "found walking up from the working directory",
    ] {
        assert!(out.contains(needle), "{needle} missing from {out}");
    }
    // A role the channel does not have: the channel folder is named, as chosen.
    let (code, out) = m.cs(
        &project,
        &[
            "--home",
            h,
            "--channel",
            ".countersign",
            "--role",
            "nobody",
            "inbox",
        ],
    );
    assert_eq!(code, 2, "{out}");
    assert!(out.contains(".countersign (from --channel)"), "{out}");
}

#[tokio::test]
async fn a_server_started_without_its_home_says_so() {
    let m = Machine::new();
    let project = m.project("proj");
    let home = m.root().join("cs-home");
    let h = home.to_str().unwrap();
    m.cs(&project, &["--home", h, "init", "--roles", "web,api"]);
    // A binding, but a server entry without the home (the trap): the server
    // uses the default home.
    fs::write(
        project.join(".countersign.local.json"),
        json!({"role": "api", "channel": project.join(".countersign")}).to_string(),
    )
    .unwrap();
    // Started, it says on stderr that it made a new device in the default home.
    let out = Command::new(bin())
        .arg("mcp")
        .current_dir(&project)
        .env_clear()
        .envs(
            m.env()
                .into_iter()
                .filter(|(k, _)| *k == "HOME" || *k == "PATH"),
        )
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("made a new device in the default home")
            && stderr.contains("COUNTERSIGN_HOME did not reach this server"),
        "{stderr}"
    );
    let server = m.server_in(&project).await;
    let message = server
        .call(
            "send_message",
            json!({"to": "web", "topic": "t", "body": "b"}),
        )
        .await
        .permission_error("holds no key");
    assert!(
        message.contains("the default") && message.contains("COUNTERSIGN_HOME did not reach"),
        "{message}"
    );
    assert!(message.contains("from the project binding"), "{message}");
    server.close().await;
}

/// `install claude` adds the compactor: a subagent whose own server serves the job tools
/// only, the command that starts it, and a status line that runs the user's own first; the
/// session's server still serves no job tool; uninstall takes it all out and gives the user's
/// status line back, also from a file changed since.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn install_claude_adds_the_compactor_and_keeps_the_status_line() {
    let m = Machine::new();
    let project = m.project("proj");
    m.cs(&project, &["init", "--roles", "web,api"]);
    let user_settings = m.home().join(".claude/settings.json");
    fs::create_dir_all(user_settings.parent().unwrap()).unwrap();
    let mine =
        r#"{"statusLine": {"type": "command", "command": "echo 'mine here'", "padding": 0}}"#;
    fs::write(&user_settings, mine).unwrap();

    let (code, out) = m.cs(&project, &["--role", "web", "install", "claude", "--apply"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(fs::read_to_string(&user_settings).unwrap(), mine);

    // The subagent: only the job tools, from a server of its own.
    let agent =
        fs::read_to_string(project.join(".claude/agents/countersign-compactor.md")).unwrap();
    let front = agent.split("---\n").nth(1).unwrap();
    let tools: Vec<&str> = front
        .lines()
        .find_map(|l| l.strip_prefix("tools: "))
        .unwrap()
        .split(", ")
        .collect();
    assert_eq!(tools.len(), 5);
    assert!(
        tools
            .iter()
            .all(|t| t.starts_with("mcp__countersign-jobs__compact_"))
    );
    let field = |name: &str| -> Value {
        let line = front
            .lines()
            .find_map(|l| l.trim().strip_prefix(&format!("{name}: ")))
            .unwrap();
        serde_json::from_str(line).unwrap()
    };
    let args: Vec<String> = serde_json::from_value(field("args")).unwrap();
    assert_eq!(&args[..3], ["mcp", "--role", "web"]);
    assert_eq!(&args[5..], ["--tools", "jobs"]);
    let command = project.join(".claude/commands/countersign-compact.md");
    assert!(
        fs::read_to_string(&command)
            .unwrap()
            .contains("countersign-compactor")
    );

    // Its server, started as Claude Code starts it, serves the job tools; the session's own
    // server (the channel entry) none of them.
    let exe = field("command");
    let transport = TokioChildProcess::new(
        tokio::process::Command::new(exe.as_str().unwrap()).configure(|c| {
            c.args(&args).current_dir(&project).env_clear().envs(
                m.env()
                    .into_iter()
                    .filter(|(k, _)| *k == "HOME" || *k == "PATH"),
            );
        }),
    )
    .unwrap();
    let jobs = Client {
        inner: ().serve(transport).await.expect("MCP handshake"),
    };
    let listed: Vec<String> = jobs
        .inner
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name.to_string())
        .filter(|n| n.starts_with("compact_"))
        .collect();
    assert_eq!(listed.len(), 5, "{listed:?}");
    let done = jobs.call("compact_next", json!({})).await.ok();
    assert_eq!(done["status"], "done", "{done}");
    jobs.close().await;
    let session = m.server_in(&project).await;
    let names: Vec<String> = session
        .inner
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    assert!(
        names.iter().all(|n| !n.starts_with("compact_")),
        "{names:?}"
    );
    session.close().await;

    // The status line runs the user's first, and adds nothing while little waits.
    let local = project.join(".claude/settings.local.json");
    let line = read_json(&local)["statusLine"].clone();
    assert_eq!(line["padding"], 0);
    let cmd = line["command"].as_str().unwrap();
    assert!(cmd.contains("memory status --statusline --with"), "{cmd}");
    let input = json!({"cwd": project}).to_string();
    let shown = m.sh(&m.root(), &format!("echo '{input}' | {cmd}"));
    assert_eq!(shown, "mine here\n");

    // Uninstall: everything goes, the user's file never changed.
    let (code, out) = m.cs(&project, &["uninstall", "--apply"]);
    assert_eq!(code, 0, "{out}");
    assert!(!project.join(".claude").exists(), "{out}");
    assert_eq!(fs::read_to_string(&user_settings).unwrap(), mine);

    // A project's own status line, wrapped, and the file changed after install: uninstall
    // gives that status line back and keeps the change.
    let shared = project.join(".claude/settings.json");
    fs::create_dir_all(shared.parent().unwrap()).unwrap();
    fs::write(
        &shared,
        r#"{"statusLine": {"type": "command", "command": "team-line"}}"#,
    )
    .unwrap();
    let (code, out) = m.cs(
        &project,
        &[
            "--role", "web", "install", "claude", "--scope", "project", "--apply",
        ],
    );
    assert_eq!(code, 0, "{out}");
    let mut v = read_json(&shared);
    assert!(
        v["statusLine"]["command"]
            .as_str()
            .unwrap()
            .ends_with("--statusline --with team-line"),
        "{v}"
    );
    v["model"] = json!("opus");
    fs::write(&shared, serde_json::to_string(&v).unwrap()).unwrap();
    let (code, out) = m.cs(&project, &["uninstall", "--apply"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        read_json(&shared),
        json!({"statusLine": {"type": "command", "command": "team-line"}, "model": "opus"})
    );
}

/// `install claude` says whether Claude Code trusts the folder, which it needs to connect the
/// compactor's own server, and how to trust it when it does not: its user file records the
/// trust for the folder or one above it.
#[test]
fn install_claude_says_whether_the_folder_is_trusted_for_the_compactor() {
    let m = Machine::new();
    let project = m.project("proj");
    m.cs(&project, &["init", "--roles", "web,api"]);
    let (code, out) = m.cs(&project, &["--role", "web", "install", "claude"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains(&format!(
            "Claude Code does not trust {} yet",
            project.display()
        )) && out.contains("accept the trust dialog"),
        "{out}"
    );
    // Trusted one folder up, as Claude Code records it in ~/.claude.json.
    let user = json!({"projects": {m.root().display().to_string(): {
        "hasTrustDialogAccepted": true, "allowedTools": []}}});
    fs::write(m.home().join(".claude.json"), user.to_string()).unwrap();
    let (code, out) = m.cs(&project, &["--role", "web", "install", "claude"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains(&format!("Claude Code trusts {}", m.root().display())),
        "{out}"
    );
    assert!(!out.contains("does not trust"), "{out}");
}

/// The project key of `dir` in `~/.claude.json` and the server entry under it.
fn claude_entry(m: &Machine, dir: &Path) -> Value {
    read_json(&m.home().join(".claude.json"))["projects"][dir.to_str().unwrap()]["mcpServers"]
        ["channel"]
        .clone()
}

/// `v` written as another program might: four spaces, its own key order.
fn four_spaces(v: &Value) -> String {
    use serde::Serialize as _;
    let mut out = Vec::new();
    let fmt = serde_json::ser::PrettyFormatter::with_indent(b"    ");
    v.serialize(&mut serde_json::Serializer::with_formatter(&mut out, fmt))
        .unwrap();
    String::from_utf8(out).unwrap()
}

/// The issue's scenario: install in p1, Claude Code rewrites `~/.claude.json` (keys added,
/// reordered, another layout), install in p2, uninstall in p2. The file is never put back
/// from a copy: every byte the other program wrote stays, p1's entry with it.
#[test]
fn uninstall_never_puts_a_shared_file_back_from_a_copy() {
    let m = Machine::new();
    let (p1, p2) = (m.project("p1"), m.project("p2"));
    m.cs(&p1, &["init", "--roles", "web,api"]);
    let channel = p1.join(".countersign");
    let path = m.home().join(".claude.json");
    fs::write(&path, "{\n  \"numStartups\": 1,\n  \"projects\": {}\n}\n").unwrap();
    let (code, out) = m.cs(&p1, &["--role", "web", "install", "claude", "--apply"]);
    assert_eq!(code, 0, "{out}");
    let p1_entry = claude_entry(&m, &p1);
    assert_eq!(p1_entry["args"], json!(["mcp"]), "{out}");

    // Claude Code runs: account, trust flags, counters; keys in its own order and layout.
    let old = read_json(&path);
    let key = p1.to_str().unwrap();
    let rewritten = four_spaces(&json!({
        "oauthAccount": {"emailAddress": "me@example.org", "accountUuid": "u-1"},
        "projects": {key: {
            "allowedTools": [],
            "mcpServers": old["projects"][key]["mcpServers"],
            "hasTrustDialogAccepted": true
        }},
        "numStartups": 7,
        "tipsHistory": {"a": 1}
    }));
    fs::write(&path, &rewritten).unwrap();

    let (code, out) = m.cs(
        &p2,
        &[
            "--channel",
            channel.to_str().unwrap(),
            "--role",
            "api",
            "install",
            "claude",
            "--apply",
        ],
    );
    assert_eq!(code, 0, "{out}");
    assert_eq!(claude_entry(&m, &p2)["args"], json!(["mcp"]));
    let (code, out) = m.cs(&p2, &["uninstall", "--apply"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(fs::read_to_string(&path).unwrap(), rewritten, "{out}");

    // Then p1: only its server goes; what Claude Code wrote under p1 stays.
    let (code, out) = m.cs(&p1, &["uninstall", "--apply"]);
    assert_eq!(code, 0, "{out}");
    let mut expected: Value = serde_json::from_str(&rewritten).unwrap();
    expected["projects"][key]
        .as_object_mut()
        .unwrap()
        .remove("mcpServers");
    let left = fs::read_to_string(&path).unwrap();
    assert_eq!(serde_json::from_str::<Value>(&left).unwrap(), expected);
    assert!(
        left.starts_with("{\n    \"oauthAccount\": {\n        \"emailAddress\""),
        "{left}"
    );
}

/// Two installs, then two uninstalls in either order: each takes out its own entry and
/// leaves the other's; after both, the file is as it was, byte for byte.
#[test]
fn two_installs_then_two_uninstalls_in_either_order() {
    for first_out in [0, 1] {
        let m = Machine::new();
        let dirs = [m.project("p1"), m.project("p2")];
        m.cs(&dirs[0], &["init", "--roles", "web,api"]);
        let channel = dirs[0].join(".countersign");
        let path = m.home().join(".claude.json");
        let original = "{\n  \"numStartups\": 1,\n  \"projects\": {},\n  \"userID\": \"x\"\n}\n";
        fs::write(&path, original).unwrap();
        for (dir, role) in [(&dirs[0], "web"), (&dirs[1], "api")] {
            let (code, out) = m.cs(
                dir,
                &[
                    "--channel",
                    channel.to_str().unwrap(),
                    "--role",
                    role,
                    "install",
                    "claude",
                    "--apply",
                ],
            );
            assert_eq!(code, 0, "{out}");
        }
        let (gone, stays) = (&dirs[first_out], &dirs[1 - first_out]);
        let (code, out) = m.cs(gone, &["uninstall", "--apply"]);
        assert_eq!(code, 0, "{out}");
        assert_eq!(claude_entry(&m, gone), Value::Null, "{out}");
        assert_eq!(claude_entry(&m, stays)["args"], json!(["mcp"]), "{out}");
        let (code, out) = m.cs(stays, &["uninstall", "--apply"]);
        assert_eq!(code, 0, "{out}");
        assert_eq!(fs::read_to_string(&path).unwrap(), original, "{out}");
    }
}

/// A file install created, which someone wrote to since: only countersign's part comes
/// out, the file stays.
#[test]
fn a_file_install_created_stays_when_someone_wrote_to_it() {
    let m = Machine::new();
    let project = m.project("proj");
    m.cs(&project, &["init", "--roles", "web,api"]);
    let (code, out) = m.cs(&project, &["--role", "web", "install", "claude", "--apply"]);
    assert_eq!(code, 0, "{out}");
    let note = project.join("CLAUDE.local.md");
    let mut text = fs::read_to_string(&note).unwrap();
    text.push_str("\n## Mine\n\nKeep this.\n");
    fs::write(&note, &text).unwrap();
    let (code, out) = m.cs(&project, &["uninstall", "--apply"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        fs::read_to_string(&note).unwrap(),
        "## Mine\n\nKeep this.\n"
    );
}

/// One folder holds one role: a second role is refused with the ways to do it, and
/// `--force` replaces the binding.
#[test]
fn a_second_role_in_the_same_folder_is_refused() {
    let m = Machine::new();
    let project = m.project("proj");
    m.cs(&project, &["init", "--roles", "web,api"]);
    let (code, out) = m.cs(&project, &["--role", "web", "install", "claude", "--apply"]);
    assert_eq!(code, 0, "{out}");
    let binding = project.join(".countersign.local.json");
    let bound = fs::read(&binding).unwrap();
    let (code, out) = m.cs(&project, &["--role", "api", "install", "codex", "--apply"]);
    assert_ne!(code, 0, "{out}");
    assert!(
        out.contains("already bound to role 'web'")
            && out.contains("git worktree")
            && out.contains("--force"),
        "{out}"
    );
    assert_eq!(fs::read(&binding).unwrap(), bound);
    assert!(!m.home().join(".codex").exists(), "nothing else written");
    let (code, out) = m.cs(
        &project,
        &["--role", "api", "install", "claude", "--force", "--apply"],
    );
    assert_eq!(code, 0, "{out}");
    assert_eq!(read_json(&binding)["role"], "api");
}

/// An install whose report cannot be printed (stdout closed, as `| head` leaves it) puts
/// back every file it wrote and fails.
#[test]
fn an_install_that_cannot_print_its_report_puts_everything_back() {
    let m = Machine::new();
    let project = m.project("proj");
    m.cs(&project, &["init", "--roles", "web,api"]);
    fs::write(m.home().join(".claude.json"), "{\"numStartups\": 2}").unwrap();
    let dirs = [m.home(), project.clone()];
    let dirs: Vec<&Path> = dirs.iter().map(PathBuf::as_path).collect();
    // The countersign home's own state (its device key, index, records) is not the user's.
    let users = |snap: Vec<(PathBuf, Vec<u8>)>| -> Vec<(PathBuf, Vec<u8>)> {
        snap.into_iter()
            .filter(|(p, _)| !p.starts_with(m.home().join(".local")))
            .filter(|(p, _)| !p.starts_with(m.home().join(".config")))
            .collect()
    };
    let before = users(m.snapshot(&dirs));
    for tool in ["claude", "codex"] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = Command::new(bin())
            .args(["--role", "web", "install", tool, "--apply"])
            .current_dir(&project)
            .env_clear()
            .envs(m.env())
            .stdout(writer)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{err}");
        assert!(err.contains("put back"), "{err}");
        assert_eq!(users(m.snapshot(&dirs)), before, "{tool}: {err}");
    }
}

/// The entries run `countersign` from PATH when the one there is this binary, so an
/// upgrade in place (a new binary at the same place) needs no new install; a binary not
/// on PATH is pinned by its path, and install says why.
#[test]
fn entries_run_countersign_from_path_and_survive_an_upgrade() {
    let m = Machine::new();
    let project = m.project("proj");
    let tools = m.root().join("tools");
    fs::create_dir_all(&tools).unwrap();
    let installed = tools.join("countersign");
    fs::copy(bin(), &installed).unwrap();
    let path = |first: &Path| {
        let mut p = OsString::from(first);
        p.push(":/usr/local/bin:/usr/bin:/bin");
        p
    };
    let run = |exe: &Path, path_var: &OsString, args: &[&str]| {
        let out = Command::new(exe)
            .args(args)
            .current_dir(&project)
            .env_clear()
            .env("HOME", m.home())
            .env("PATH", path_var)
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.code(), text)
    };
    let on_path = path(&tools);
    let (code, out) = run(&installed, &on_path, &["init", "--roles", "web,api"]);
    assert_eq!(code, Some(0), "{out}");
    let (code, out) = run(
        &installed,
        &on_path,
        &["--role", "web", "install", "claude", "--apply"],
    );
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("found on PATH"), "{out}");
    assert_eq!(claude_entry(&m, &project)["command"], "countersign");
    let settings = read_json(&project.join(".claude/settings.local.json"));
    let start = countersign_hooks(&settings, "SessionStart");
    assert!(
        start[0].starts_with("countersign hook session-start"),
        "{start:?}"
    );

    // Upgraded in place: a new file at the same place (here one that says it ran).
    let marker = m.root().join("upgraded-ran");
    fs::remove_file(&installed).unwrap();
    fs::write(
        &installed,
        format!(
            "#!/bin/sh\ntouch '{}'\nexec '{}' \"$@\"\n",
            marker.display(),
            bin()
        ),
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt as _;
        fs::set_permissions(&installed, fs::Permissions::from_mode(0o755)).unwrap();
    }
    let (code, out) = run(Path::new("/bin/sh"), &on_path, &["-c", &start[0]]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("'web'"), "{out}");
    assert!(marker.exists(), "the hook ran the new binary");

    // A binary that is not on PATH is pinned, with why.
    let other = m.project("other");
    let elsewhere = m.root().join("elsewhere");
    fs::create_dir_all(&elsewhere).unwrap();
    let pinned = elsewhere.join("countersign");
    fs::copy(bin(), &pinned).unwrap();
    let no_cs = path(Path::new("/nonexistent"));
    let out = Command::new(&pinned)
        .args([
            "--channel",
            project.join(".countersign").to_str().unwrap(),
            "--role",
            "api",
            "install",
            "claude",
            "--apply",
        ])
        .current_dir(&other)
        .env_clear()
        .env("HOME", m.home())
        .env("PATH", &no_cs)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("no countersign is on PATH"), "{text}");
    assert_eq!(
        claude_entry(&m, &other)["command"],
        pinned.canonicalize().unwrap().to_str().unwrap()
    );
}

/// `install codex` leaves nothing personal in git: a committed AGENTS.md is not touched,
/// and `git status` is as clean after the install as before.
#[test]
fn install_codex_leaves_git_status_clean() {
    let m = Machine::new();
    let project = m.project("proj");
    fs::write(project.join("AGENTS.md"), "# Team rules\n").unwrap();
    m.cs(&project, &["init", "--roles", "web,api"]);
    fs::write(project.join(".gitignore"), ".countersign/\n").unwrap();
    git_ok(&project, &["add", "AGENTS.md", ".gitignore"]);
    git_ok(&project, &["commit", "-q", "-m", "rules"]);
    let status = || m.sh(&project, "git status --porcelain --untracked-files=all");
    assert_eq!(status(), "");
    let (code, out) = m.cs(&project, &["--role", "web", "install", "codex", "--apply"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(status(), "", "{out}");
    assert_eq!(
        fs::read_to_string(project.join("AGENTS.md")).unwrap(),
        "# Team rules\n"
    );
    let note = fs::read_to_string(m.home().join(".codex/AGENTS.md")).unwrap();
    assert!(note.contains("elsewhere ignore this section"), "{note}");
}

/// `init` in a project says the channel folder is not to be committed, changes nothing in
/// git unless asked, and with `--keep-out-of-git` leaves `git status` clean.
#[test]
fn init_says_the_channel_stays_out_of_git_and_keeps_it_out_when_asked() {
    let m = Machine::new();
    let status = |dir: &Path| m.sh(dir, "git status --porcelain --untracked-files=normal");
    let a = m.project("a");
    let (code, out) = m.cs(&a, &["init", "--roles", "web,api"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("git would pick it up") && out.contains("--keep-out-of-git"),
        "{out}"
    );
    assert_eq!(status(&a), "?? .countersign/\n", "nothing changed in git");

    let b = m.project("b");
    let (code, out) = m.cs(&b, &["init", "--roles", "web,api", "--keep-out-of-git"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("added /.countersign/"), "{out}");
    assert_eq!(status(&b), "", "{out}");

    let c = m.project("c");
    fs::write(c.join(".gitignore"), ".countersign/\n").unwrap();
    let (code, out) = m.cs(&c, &["init", "--roles", "web,api"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("git ignores it"), "{out}");
}
