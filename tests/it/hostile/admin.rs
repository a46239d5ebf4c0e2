//! The management tools and the sync remotes they set: whoever holds the
//! admin token is not the server's operator, and whatever reaches git or
//! rclone is a place, never an option. Each case is a payload that once
//! wrote files of the server's user (rclone read `--cpuprofile=FILE` as its
//! own option) or copied a folder of the server's filesystem.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::json;

use crate::common::serve::Served;
use crate::common::{TestChannel, bin};

const ADMIN: &str = "admin-token-for-hostile-tests-0123456789";

/// A server over a fresh channels folder with the admin token, syncing
/// every second, with `extra` arguments (`{tmp}` stands for its folder).
fn hosting(tmp: &Path, extra: &[&str]) -> Served {
    let channels = tmp.join("channels");
    std::fs::create_dir_all(&channels).unwrap();
    let tmp_text = tmp.to_str().unwrap();
    let extra: Vec<String> = extra.iter().map(|a| a.replace("{tmp}", tmp_text)).collect();
    let mut args = vec![
        "--channels-dir".to_owned(),
        channels.to_str().unwrap().to_owned(),
        "--sync-every".to_owned(),
        "1s".to_owned(),
    ];
    args.extend(extra);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    Served::start(
        &tmp.join("home"),
        &args,
        &[("COUNTERSIGN_ADMIN_TOKEN", ADMIN)],
    )
}

/// A folder standing for files the server's user can write, with one file.
fn decoy(tmp: &Path) -> PathBuf {
    let d = tmp.join("decoy");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("precious.txt"), "keep me").unwrap();
    d
}

/// The payloads that reached `rclone copy SRC TARGET` as options, or made
/// the channel and a folder of the server's own copy into each other, are
/// refused whatever the operator allowed of real remotes: no file appears,
/// the decoy folder is unchanged, and no channel is left half made.
#[tokio::test]
async fn create_channel_never_hands_rclone_an_option_or_a_local_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let decoy = decoy(tmp.path());
    let profile = tmp.path().join("profile.out");
    let log = tmp.path().join("rclone.log");
    // Even an operator who allows every configured rclone remote.
    let served = hosting(
        tmp.path(),
        &["--allow-remote", "rclone=**", "--allow-remote", "git=**"],
    );
    let admin = served.client(ADMIN).await;
    let payloads = [
        ("rclone", format!("--cpuprofile={}", profile.display())),
        ("rclone", format!("--log-file={}", log.display())),
        ("rclone", decoy.display().to_string()),
        ("rclone", format!(":local:{}", decoy.display())),
        ("git", decoy.display().to_string()),
        ("git", format!("file://{}", decoy.display())),
        ("git", "ext::sh -c touch% /tmp/never".to_owned()),
        ("git", "--upload-pack=touch /tmp/never".to_owned()),
    ];
    for (i, (kind, target)) in payloads.iter().enumerate() {
        let msg = admin
            .call(
                "create_channel",
                json!({"name": format!("c{i}"), "roles": ["a", "b"],
                       "remote": {"kind": kind, "target": target}}),
            )
            .await
            .value_error("'remote.target'");
        assert!(msg.contains("refused"), "{msg}");
    }
    // Give a background sync every chance to run.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(!profile.exists(), "rclone wrote its profile");
    assert!(!log.exists(), "rclone wrote its log");
    let names: Vec<_> = std::fs::read_dir(&decoy).unwrap().flatten().collect();
    assert_eq!(names.len(), 1, "the decoy folder changed");
    let channels: Vec<_> = std::fs::read_dir(tmp.path().join("channels"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(channels.is_empty(), "{channels:?}");
    admin.close().await;
}

/// With no --allow-remote, no remote at all is accepted, and the refusal
/// says how the operator allows some.
#[tokio::test]
async fn by_default_the_admin_token_can_choose_no_remote() {
    let tmp = tempfile::tempdir().unwrap();
    let served = hosting(tmp.path(), &[]);
    let admin = served.client(ADMIN).await;
    let msg = admin
        .call(
            "create_channel",
            json!({"name": "c", "roles": ["a", "b"],
                   "remote": {"kind": "git", "target": "https://git.example.org/team/c.git"}}),
        )
        .await
        .value_error("--allow-remote");
    assert!(msg.contains("'remote.target'"), "{msg}");
    admin.close().await;
}

/// A folder the operator named is allowed, and one level below it only:
/// the channel is made and syncs there.
#[tokio::test]
async fn a_local_folder_the_operator_named_is_allowed() {
    let tmp = tempfile::tempdir().unwrap();
    let remotes = tmp.path().join("remotes");
    std::fs::create_dir_all(&remotes).unwrap();
    let bare = remotes.join("c.git");
    let ok = Command::new("git")
        .args(["init", "-q", "--bare"])
        .arg(&bare)
        .status()
        .unwrap();
    assert!(ok.success());
    let served = hosting(tmp.path(), &["--allow-remote", "git={tmp}/remotes/*"]);
    let admin = served.client(ADMIN).await;
    let made = admin
        .call(
            "create_channel",
            json!({"name": "c", "roles": ["a", "b"],
                   "remote": {"kind": "git", "target": bare.to_str().unwrap()}}),
        )
        .await
        .ok();
    assert!(
        made["remote"].as_str().unwrap().starts_with("git "),
        "{made}"
    );
    admin
        .call(
            "create_channel",
            json!({"name": "d", "roles": ["a", "b"],
                   "remote": {"kind": "git",
                              "target": format!("{}/../../decoy", remotes.display())}}),
        )
        .await
        .value_error("'remote.target'");
    admin.close().await;
}

/// The CLI refuses the same targets, and a remote that an older version
/// kept in the device's preferences is refused before git or rclone runs.
#[test]
fn a_remote_that_reads_as_an_option_never_runs() {
    let tc = TestChannel::new(&["a", "b"]);
    let profile = tc.tmp.path().join("profile.out");
    let target = format!("--cpuprofile={}", profile.display());
    let out = cli(&tc, &["remote", "set", "rclone", "--", &target]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("option"), "{err}");
    // As an older version could have left it.
    let state = state_dir(&tc);
    std::fs::write(
        state.join("local.json"),
        json!({"seen_build": {}, "remote": {"kind": "rclone", "target": target}}).to_string(),
    )
    .unwrap();
    let out = cli(&tc, &["--role", "a", "sync"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("refused"), "{err}");
    assert!(!profile.exists(), "rclone ran with the target as an option");
}

/// The binary on the channel, `--channel` before `args` (which may hold `--`).
fn cli(tc: &TestChannel, args: &[&str]) -> std::process::Output {
    Command::new(bin())
        .env("COUNTERSIGN_HOME", &tc.home)
        .arg("--channel")
        .arg(&tc.dir)
        .args(args)
        .output()
        .unwrap()
}

/// The channel's state folder in the home (the one holding `local.json`).
fn state_dir(tc: &TestChannel) -> PathBuf {
    let out = cli(tc, &["remote", "set", "rclone", "placeholder:x"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let found = walk(&tc.home)
        .into_iter()
        .find(|p| p.file_name().is_some_and(|n| n == "local.json"))
        .expect("local.json in the home");
    found.parent().unwrap().to_path_buf()
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}
