//! `countersign serve`'s management tools over real HTTP: a real server
//! process, rmcp's client over streamable HTTP, real tokens.

use serde_json::json;

use crate::common::TestChannel;
use crate::common::serve::Served;

/// The shared helpers work: a server on a port of its own, a role token from
/// `token create`, and an MCP session over HTTP acting as that role.
#[tokio::test]
async fn a_role_token_reaches_its_role_over_http() {
    let ch = TestChannel::new(&["frontend", "backend"]);
    let out = ch.cli(&["--role", "frontend", "token", "create"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let token = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    let dir = ch.dir.to_str().unwrap();
    let served = Served::start(&ch.home, &["--channel", dir], &[]);
    assert_eq!(served.get("/healthz", None).0, 200);
    let client = served.client(&token).await;
    let roles = client.call("list_roles", json!({})).await.ok();
    assert_eq!(roles["you"], "frontend", "{roles}");
    client.close().await;
    assert!(served.try_client("cst_not-a-token").await.is_err());
    assert_eq!(served.request("POST", "/mcp", None, Some("{}")).0, 401);
}

const ADMIN: &str = "admin-token-for-tests-0123456789abcdef";

/// A server over a fresh channels folder, with the admin token set.
struct Hosting {
    tmp: tempfile::TempDir,
    served: Served,
}

impl Hosting {
    fn start() -> Self {
        Self::start_with(&[])
    }

    fn start_with(extra: &[&str]) -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let channels = tmp.path().join("channels");
        std::fs::create_dir(&channels).unwrap();
        // `{tmp}` in an argument stands for the server's temporary folder.
        let tmp_text = tmp.path().to_str().unwrap().to_owned();
        let extra: Vec<String> = extra
            .iter()
            .map(|a| a.replace("{tmp}", &tmp_text))
            .collect();
        let mut args = vec!["--channels-dir", channels.to_str().unwrap()];
        args.extend(extra.iter().map(String::as_str));
        let served = Served::start(
            &tmp.path().join("home"),
            &args,
            &[("COUNTERSIGN_ADMIN_TOKEN", ADMIN)],
        );
        Self { tmp, served }
    }

    fn channels(&self) -> std::path::PathBuf {
        self.tmp.path().join("channels")
    }

    /// The names in the channels folder, sorted.
    fn entries(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(self.channels())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        v.sort();
        v
    }

    /// `countersign token list` of the server's home, one line per token.
    fn token_lines(&self) -> Vec<String> {
        let out = std::process::Command::new(crate::common::bin())
            .args(["token", "list"])
            .env("COUNTERSIGN_HOME", self.tmp.path().join("home"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .filter(|l| !l.starts_with("no tokens"))
            .map(str::to_owned)
            .collect()
    }

    /// The keys folders in the server's home (one per channel it owns).
    fn key_folders(&self) -> usize {
        std::fs::read_dir(self.tmp.path().join("home").join("keys"))
            .map(|d| d.count())
            .unwrap_or(0)
    }
}

async fn tool_names(client: &crate::common::Client) -> Vec<String> {
    client
        .inner
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect()
}

/// True when the token no longer opens an MCP session.
async fn refused(served: &Served, token: &str) -> bool {
    served.try_client(token).await.is_err()
        && served.request("POST", "/mcp", Some(token), Some("{}")).0 == 401
}

#[test]
fn channels_dir_without_the_admin_token_refuses_to_start() {
    let tmp = tempfile::tempdir().unwrap();
    let channels = tmp.path().join("channels");
    std::fs::create_dir(&channels).unwrap();
    let out = crate::common::serve::serve_output(
        &tmp.path().join("home"),
        &[
            "--channels-dir",
            channels.to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
        ],
        &[],
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("COUNTERSIGN_ADMIN_TOKEN"), "{err}");
}

#[tokio::test]
async fn the_admin_token_reaches_the_management_tools_only_and_makes_working_channels() {
    let h = Hosting::start();
    let admin = h.served.client(ADMIN).await;
    assert_eq!(
        tool_names(&admin).await,
        [
            "create_channel",
            "list_channels",
            "rotate_token",
            "add_role",
            "board_link",
            "revoke_board_access",
            "delete_channel"
        ]
    );
    // Published as the mailbox tools are: lean schemas, no type lists.
    for t in admin.inner.list_all_tools().await.unwrap() {
        let input = serde_json::Value::Object((*t.input_schema).clone());
        assert!(!countersign::has_type_list(&input), "{}", t.name);
        let output = serde_json::Value::Object((*t.output_schema.clone().unwrap()).clone());
        assert!(!countersign::has_type_list(&output), "{}", t.name);
    }
    let made = admin
        .call(
            "create_channel",
            json!({"name": "team", "roles": ["frontend", "backend"]}),
        )
        .await
        .ok();
    assert_eq!(made["name"], "team");
    assert_eq!(made["roles"], json!(["backend", "frontend"]));
    assert!(
        crate::common::is_rfc3339_ms(made["created_at"].as_str().unwrap()),
        "{made}"
    );
    let fe_token = made["tokens"]["frontend"].as_str().unwrap().to_owned();
    let be_token = made["tokens"]["backend"].as_str().unwrap().to_owned();
    assert!(fe_token.starts_with("cst_") && be_token.starts_with("cst_"));
    assert!(h.channels().join("team").join("channel.json").is_file());

    // The tokens act as their roles: one sends, the other reads it.
    let fe = h.served.client(&fe_token).await;
    let be = h.served.client(&be_token).await;
    let id = fe.send("backend", "hello over http", "first").await;
    let inbox = be.call("read_inbox", json!({})).await.rows();
    assert_eq!(inbox.len(), 1, "{inbox:?}");
    assert_eq!(inbox[0]["id"], id.as_str());
    assert_eq!(inbox[0]["from"], "frontend");

    // A role's service: the mailbox tools and board_link, no other management tool.
    let role_tools = tool_names(&fe).await;
    assert_eq!(role_tools.len(), 40, "{role_tools:?}");
    assert!(role_tools.contains(&"board_link".to_owned()));
    assert!(!role_tools.contains(&"create_channel".to_owned()));
    fe.call("create_channel", json!({"name": "x", "roles": ["a", "b"]}))
        .await
        .permission_error("admin token");
    fe.call("delete_channel", json!({"name": "team"}))
        .await
        .permission_error("management tool");
    // The admin token reaches no mailbox tool.
    admin
        .call(
            "send_message",
            json!({"to": "backend", "topic": "t", "body": "b"}),
        )
        .await
        .permission_error("role token");
    admin
        .call("read_inbox", json!({}))
        .await
        .permission_error("not a management tool");

    let listed = admin.call("list_channels", json!({})).await.ok();
    assert_eq!(
        listed["result"],
        json!([{"name": "team", "roles": ["backend", "frontend"],
                "created_at": made["created_at"]}])
    );
    assert_eq!(h.token_lines().len(), 2);
    for c in [fe, be, admin] {
        c.close().await;
    }
    assert!(h.served.stop().success());
}

#[tokio::test]
async fn refused_creates_write_nothing() {
    let h = Hosting::start();
    let admin = h.served.client(ADMIN).await;
    admin
        .call(
            "create_channel",
            json!({"name": "team", "roles": ["a", "b"]}),
        )
        .await
        .ok();
    admin
        .call(
            "create_channel",
            json!({"name": "gone", "roles": ["a", "b"]}),
        )
        .await
        .ok();
    admin
        .call("delete_channel", json!({"name": "gone"}))
        .await
        .ok();
    std::fs::write(h.channels().join("stray"), "not a channel").unwrap();
    let (entries, tokens, keys) = (h.entries(), h.token_lines(), h.key_folders());
    let thirteen: Vec<String> = (0..13).map(|i| format!("r{i}")).collect();
    for (args, needle) in [
        (
            json!({"name": "Team", "roles": ["a", "b"]}),
            "lowercase slug",
        ),
        (json!({"name": "../x", "roles": ["a", "b"]}), "'name'"),
        (
            json!({"name": "new", "roles": ["a", "Bad Role"]}),
            "not a valid role",
        ),
        (json!({"name": "new", "roles": ["a"]}), "at least two roles"),
        (
            json!({"name": "new", "roles": thirteen}),
            "at most 12 roles",
        ),
        (
            json!({"name": "new", "roles": ["a", "b", "a"]}),
            "DIFFERENT",
        ),
        (json!({"name": "new", "roles": ["a", "owner"]}), "reserved"),
        (
            json!({"name": "team", "roles": ["a", "b"]}),
            "already exists (active)",
        ),
        (
            json!({"name": "gone", "roles": ["a", "b"]}),
            "already exists (deleted)",
        ),
        (
            json!({"name": "new", "roles": ["a", "b"], "remote": {"kind": "git", "target": " "}}),
            "'remote'",
        ),
    ] {
        admin.call("create_channel", args).await.value_error(needle);
    }
    admin
        .call(
            "create_channel",
            json!({"name": "new", "roles": ["a", "b"], "remote": {"kind": "ftp", "target": "x"}}),
        )
        .await
        .value_error("'remote.kind'");
    assert_eq!(h.entries(), entries);
    assert_eq!(h.token_lines(), tokens);
    assert_eq!(h.key_folders(), keys);
    admin.close().await;
}

#[tokio::test]
async fn roles_tokens_and_deletion() {
    let h = Hosting::start();
    let admin = h.served.client(ADMIN).await;
    let made = admin
        .call(
            "create_channel",
            json!({"name": "team", "roles": ["frontend", "backend"]}),
        )
        .await
        .ok();
    let be_token = made["tokens"]["backend"].as_str().unwrap().to_owned();

    // add_role: a token acting as the new role.
    let added = admin
        .call("add_role", json!({"channel": "team", "role": "infra"}))
        .await
        .ok();
    assert_eq!(added["roles"], json!(["backend", "frontend", "infra"]));
    let infra = h.served.client(added["token"].as_str().unwrap()).await;
    let roles = infra.call("list_roles", json!({})).await.ok();
    assert_eq!(roles["you"], "infra", "{roles}");
    infra.send("backend", "from infra", "hi").await;
    infra.close().await;
    admin
        .call("add_role", json!({"channel": "team", "role": "infra"}))
        .await
        .value_error("already has role");
    admin
        .call("add_role", json!({"channel": "nope", "role": "x"}))
        .await
        .value_error("channel 'nope' not found");
    for i in 3..12 {
        admin
            .call(
                "add_role",
                json!({"channel": "team", "role": format!("r{i}")}),
            )
            .await
            .ok();
    }
    admin
        .call("add_role", json!({"channel": "team", "role": "r12"}))
        .await
        .value_error("at most 12 roles");

    // rotate_token: the old token stops, the new one works.
    let old = h.served.client(&be_token).await;
    let rotated = admin
        .call(
            "rotate_token",
            json!({"channel": "team", "role": "backend"}),
        )
        .await
        .ok();
    assert_eq!(rotated["role"], "backend");
    let new_token = rotated["token"].as_str().unwrap().to_owned();
    assert_ne!(new_token, be_token);
    assert!(refused(&h.served, &be_token).await);
    // An open session of the old token is refused too: every request is checked.
    assert!(old.inner.list_all_tools().await.is_err());
    let be = h.served.client(&new_token).await;
    let inbox = be.call("read_inbox", json!({})).await.rows();
    assert_eq!(inbox[0]["from"], "infra");
    admin
        .call(
            "rotate_token",
            json!({"channel": "nope", "role": "backend"}),
        )
        .await
        .value_error("channel 'nope' not found");
    admin
        .call("rotate_token", json!({"channel": "team", "role": "ops"}))
        .await
        .value_error("has roles [");

    // Board links: the admin names the channel; a role gets its own only.
    admin
        .call("board_link", json!({}))
        .await
        .value_error("'channel' is required");
    let link = admin
        .call("board_link", json!({"channel": "team"}))
        .await
        .ok();
    assert!(
        link["url"]
            .as_str()
            .unwrap()
            .starts_with("/board/team?n=csn_"),
        "{link}"
    );
    assert_eq!(link["expires_in_s"], 60);
    assert_eq!(link["label"], "board");
    let own = be.call("board_link", json!({"label": "laptop"})).await.ok();
    assert_eq!(own["channel"], "team");
    be.call("board_link", json!({"channel": "other"}))
        .await
        .permission_error("its own channel");
    be.call("board_link", json!({"label": "Not A Slug"}))
        .await
        .value_error("'label'");
    let revoked = admin
        .call("revoke_board_access", json!({"channel": "team"}))
        .await
        .ok();
    assert_eq!(revoked["revoked"], 2, "{revoked}");
    let issuers: Vec<&str> = revoked["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["issued_by_role"].as_str().unwrap())
        .collect();
    assert_eq!(issuers, ["admin", "backend"]);

    // delete_channel: every token ends, the channel is no longer served,
    // its folder is kept.
    let deleted = admin
        .call("delete_channel", json!({"name": "team"}))
        .await
        .ok();
    assert_eq!(deleted["deleted"], true);
    let kept = std::path::PathBuf::from(deleted["path"].as_str().unwrap());
    assert!(kept.join("channel.json").is_file());
    assert!(!h.channels().join("team").exists());
    assert!(refused(&h.served, &new_token).await);
    let listed = admin.call("list_channels", json!({})).await.ok();
    assert_eq!(listed["result"], json!([]));
    admin
        .call("delete_channel", json!({"name": "team"}))
        .await
        .value_error("not found");
    admin.close().await;
}

/// create_channel with a remote sets it as `countersign remote set` does:
/// the new channel syncs with it at once (real git, a bare repository).
#[tokio::test]
async fn a_created_channel_syncs_through_its_remote() {
    let h = Hosting::start_with(&["--allow-remote", "git={tmp}/*"]);
    let bare = h.tmp.path().join("remote.git");
    let git = std::process::Command::new("git")
        .args(["init", "-q", "--bare"])
        .arg(&bare)
        .status()
        .expect("git runs");
    assert!(git.success());
    let admin = h.served.client(ADMIN).await;
    let made = admin
        .call(
            "create_channel",
            json!({"name": "synced", "roles": ["a", "b"],
                   "remote": {"kind": "git", "target": bare.to_str().unwrap()}}),
        )
        .await
        .ok();
    assert!(
        made["remote"].as_str().unwrap().starts_with("git "),
        "{made}"
    );
    let a = h.served.client(made["tokens"]["a"].as_str().unwrap()).await;
    a.send("b", "over git", "hi").await;
    a.close().await;
    let dir = h.channels().join("synced");
    let sync = std::process::Command::new(crate::common::bin())
        .arg("--channel")
        .arg(&dir)
        .arg("sync")
        .env("COUNTERSIGN_HOME", h.tmp.path().join("home"))
        .output()
        .unwrap();
    assert!(
        sync.status.success(),
        "{}{}",
        String::from_utf8_lossy(&sync.stdout),
        String::from_utf8_lossy(&sync.stderr)
    );
    let log = std::process::Command::new("git")
        .arg("--git-dir")
        .arg(&bare)
        .args(["log", "--oneline", "--all"])
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&log.stdout).trim().is_empty());
    admin.close().await;
}

/// A channel created on a server with --sync-every is synced in the
/// background like the ones it started with: what a role sends reaches the
/// remote with nobody running `countersign sync`.
#[tokio::test]
async fn a_created_channel_is_synced_in_the_background() {
    let h = Hosting::start_with(&["--sync-every", "1", "--allow-remote", "git={tmp}/*"]);
    let bare = h.tmp.path().join("remote.git");
    let git = std::process::Command::new("git")
        .args(["init", "-q", "--bare"])
        .arg(&bare)
        .status()
        .expect("git runs");
    assert!(git.success());
    let admin = h.served.client(ADMIN).await;
    let made = admin
        .call(
            "create_channel",
            json!({"name": "bg", "roles": ["a", "b"],
                   "remote": {"kind": "git", "target": bare.to_str().unwrap()}}),
        )
        .await
        .ok();
    let a = h.served.client(made["tokens"]["a"].as_str().unwrap()).await;
    a.send("b", "in the background", "hi").await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let tree = std::process::Command::new("git")
            .arg("--git-dir")
            .arg(&bare)
            .args(["log", "--all", "--name-only", "--format="])
            .output()
            .unwrap();
        if String::from_utf8_lossy(&tree.stdout).contains("feeds/a/") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "role a's feed never reached the remote: {}",
            h.served.stderr()
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    a.close().await;
    admin.close().await;
}
