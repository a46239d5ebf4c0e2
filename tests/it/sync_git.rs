//! `countersign sync` through a real bare git repository on local disk, with
//! machines that are separate homes and separate clones, driven through the
//! real binary.

use crate::common;
use std::fs;

use crate::common::machines::{TWELVE, World, git, git_ok};

const ROLES: [&str; 2] = ["frontend", "backend"];

#[test]
fn a_send_on_one_machine_reaches_the_other_after_both_sync() {
    let w = World::git(2, &ROLES);
    let (a, b) = (&w.machines[0], &w.machines[1]);
    assert!(
        b.inbox_topics("backend")
            .contains(&"hello from the owner".to_owned())
    );
    a.send("frontend", "backend", "the login API");
    assert!(
        !b.inbox_topics("backend")
            .contains(&"the login API".to_owned())
    );
    a.sync();
    b.sync();
    assert!(
        b.inbox_topics("backend")
            .contains(&"the login API".to_owned())
    );
    b.send("backend", "frontend", "answer");
    b.sync();
    a.sync();
    assert!(a.inbox_topics("frontend").contains(&"answer".to_owned()));
    // Reading the inbox records delivery: one more round carries it over.
    w.settle();
}

#[test]
fn both_write_before_either_syncs_and_both_converge() {
    let w = World::git(2, &ROLES);
    let (a, b) = (&w.machines[0], &w.machines[1]);
    for i in 0..3 {
        a.send("frontend", "backend", &format!("from a {i}"));
        b.send("backend", "frontend", &format!("from b {i}"));
    }
    // Neither has seen the other: the second sync merges, then the first
    // machine picks the merge up.
    a.sync();
    b.sync();
    a.sync();
    assert_eq!(a.digest(), b.digest(), "one round of syncs converges");
    let a_inbox = a.inbox_topics("frontend");
    let b_inbox = b.inbox_topics("backend");
    for i in 0..3 {
        assert!(a_inbox.contains(&format!("from b {i}")), "{a_inbox:?}");
        assert!(b_inbox.contains(&format!("from a {i}")), "{b_inbox:?}");
    }
    // Nothing is left unmerged; what is uncommitted is only A's own feed (the
    // inbox reads above recorded deliveries after the last sync).
    let own = format!("feeds/frontend/{}/", a.device());
    for line in git_ok(&a.dir, &["status", "--porcelain"]).lines() {
        assert!(line.starts_with(" M ") && line.contains(&own), "{line}");
    }
}

#[test]
fn a_push_rejected_because_the_remote_moved_is_retried_and_lands() {
    let w = World::git(2, &ROLES);
    let (a, b) = (&w.machines[0], &w.machines[1]);
    let branch = git_ok(&w.remote, &["symbolic-ref", "--short", "HEAD"])
        .trim()
        .to_owned();
    // B's new records reach the remote on a side branch only.
    b.send("backend", "frontend", "landed meanwhile");
    git_ok(&b.dir, &["add", "-A", "feeds"]);
    git_ok(&b.dir, &["commit", "-q", "-m", "side"]);
    git_ok(&b.dir, &["push", "-q", "origin", "HEAD:refs/heads/side"]);
    // The remote moves the branch while A's first push is being received, so
    // that push is rejected.
    let hook = w.remote.join("hooks").join("pre-receive");
    fs::write(
        &hook,
        format!(
            "#!/bin/sh\nif [ ! -e \"$GIT_DIR/moved\" ]; then\n  touch \"$GIT_DIR/moved\"\n  \
             env -u GIT_QUARANTINE_PATH -u GIT_OBJECT_DIRECTORY -u GIT_ALTERNATE_OBJECT_DIRECTORIES \
             git update-ref refs/heads/{branch} refs/heads/side\nfi\nexit 0\n"
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    fs::set_permissions(&hook, fs::Permissions::from_mode(0o755)).unwrap();

    a.send("frontend", "backend", "sent by a");
    let out = a.sync();
    assert!(w.remote.join("moved").exists(), "the hook ran");
    assert!(out.contains("after 2 attempts"), "{out}");
    // Both machines' records are on the remote branch now.
    let log = git_ok(&w.remote, &["log", "--format=%s", "--name-only", &branch]);
    assert!(
        log.contains(&format!("feeds/frontend/{}", a.device())),
        "{log}"
    );
    assert!(log.contains("side"), "{log}");
    b.sync();
    assert!(b.inbox_topics("backend").contains(&"sent by a".to_owned()));
    assert!(
        a.inbox_topics("frontend")
            .contains(&"landed meanwhile".to_owned())
    );
    w.settle();
}

#[test]
fn an_unreachable_remote_is_reported_and_the_channel_keeps_working() {
    let w = World::git(2, &ROLES);
    let (a, b) = (&w.machines[0], &w.machines[1]);
    let gone = w.tmp.path().join("moved-away.git");
    fs::rename(&w.remote, &gone).unwrap();
    a.send("frontend", "backend", "written while offline");
    let out = a.cli(&["sync"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(w.remote.to_str().unwrap()),
        "names the remote: {err}"
    );
    assert!(
        err.contains("does not appear to be a git repository") || err.contains("fatal"),
        "carries git's words: {err}"
    );
    // Locally nothing is lost and writing goes on.
    a.send("frontend", "backend", "still writing");
    assert!(a.cli(&["--role", "frontend", "status"]).status.code() != Some(2));
    assert_eq!(a.cli(&["verify"]).status.code(), Some(0));
    // The remote comes back: the next sync publishes everything.
    fs::rename(&gone, &w.remote).unwrap();
    a.sync();
    b.sync();
    let topics = b.inbox_topics("backend");
    assert!(
        topics.contains(&"written while offline".to_owned()),
        "{topics:?}"
    );
    assert!(topics.contains(&"still writing".to_owned()), "{topics:?}");
}

#[test]
fn sync_commits_only_this_devices_feeds() {
    let w = World::git(2, &ROLES);
    let (a, b) = (&w.machines[0], &w.machines[1]);
    b.send("backend", "frontend", "b has a feed");
    b.sync();
    a.sync();
    let b_feed = format!("feeds/backend/{}", b.device());
    // Stray files: in the folder, inside another device's feed, and a stray
    // temporary file inside this device's own feed.
    fs::write(a.dir.join("notes.txt"), "mine").unwrap();
    fs::write(a.dir.join(&b_feed).join("00000099.jsonl"), "{}\n").unwrap();
    let a_feed = a.dir.join("feeds/frontend").join(a.device());
    fs::write(a_feed.join("head.json.tmp"), "partial").unwrap();
    // And something already staged by hand.
    fs::write(a.dir.join("staged.txt"), "staged").unwrap();
    git_ok(&a.dir, &["add", "staged.txt"]);
    a.send("frontend", "backend", "only mine");
    a.sync();

    let device = a.device();
    let grep = format!("--grep=records of {device}$");
    let files = git_ok(&w.remote, &["log", "--format=", "--name-only", &grep]);
    assert!(files.contains("head.json"), "{files}");
    for f in files.lines().filter(|l| !l.is_empty()) {
        let own = f.starts_with("feeds/") && f.split('/').nth(2) == Some(device.as_str());
        assert!(
            own && !f.ends_with(".tmp"),
            "A's syncs committed {f}:\n{files}"
        );
    }
    let status = git_ok(&a.dir, &["status", "--porcelain"]);
    assert!(status.contains("?? notes.txt"), "{status}");
    assert!(
        status.contains("A  staged.txt"),
        "left staged, not committed: {status}"
    );
    // The index and keys live in the home, never in the folder.
    let tracked = git_ok(&a.dir, &["ls-files"]);
    assert!(
        !tracked.contains("sqlite") && !tracked.contains(".key"),
        "{tracked}"
    );
    // A never force-pushes: B's history is all still there.
    b.sync();
    assert!(b.inbox_topics("backend").contains(&"only mine".to_owned()));
}

#[test]
fn a_channel_inside_a_project_gets_a_repository_of_its_own() {
    let tmp = tempfile::tempdir().unwrap();
    let project = tmp.path().join("project");
    fs::create_dir(&project).unwrap();
    git_ok(&project, &["init", "-q"]);
    fs::write(project.join("main.rs"), "fn main() {}").unwrap();
    let remote = tmp.path().join("remote.git");
    git_ok(
        tmp.path(),
        &["init", "-q", "--bare", remote.to_str().unwrap()],
    );
    let home = tmp.path().join("home");
    let run = |args: &[&str]| {
        std::process::Command::new(common::bin())
            .env("COUNTERSIGN_HOME", &home)
            .env_remove("COUNTERSIGN_CHANNEL")
            .current_dir(&project)
            .args(args)
            .output()
            .unwrap()
    };
    // The usual way: init inside the project, the default folder .countersign/.
    let out = run(&[
        "init",
        "--roles",
        "a,b",
        "--git-remote",
        remote.to_str().unwrap(),
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains(".gitignore"),
        "asks to ignore it in the project: {text}"
    );
    let chan = project.join(".countersign");
    assert!(chan.join(".git").is_dir(), "a repository of its own");
    assert!(
        git(&project, &["log"]).stdout.is_empty(),
        "no commit in the project's repository"
    );
    assert!(
        run(&[
            "--role", "a", "send", "--to", "b", "--topic", "t", "--body", "b"
        ])
        .status
        .success()
    );
    let out = run(&["sync"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let files = git_ok(&remote, &["log", "--format=", "--name-only"]);
    assert!(
        files.contains("channel.json") && !files.contains("main.rs"),
        "{files}"
    );
    // A channel the project itself tracks, without a repository of its own,
    // is refused rather than synced through the project's branch.
    fs::remove_dir_all(chan.join(".git")).unwrap();
    let out = run(&["sync"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("remote set git"),
        "{err}"
    );
}

#[test]
fn a_remote_that_refuses_the_push_is_reported_and_nothing_is_lost() {
    let w = World::git(2, &ROLES);
    let (a, b) = (&w.machines[0], &w.machines[1]);
    let hook = w.remote.join("hooks").join("pre-receive");
    fs::write(
        &hook,
        "#!/bin/sh\necho 'pushes are closed today' >&2\nexit 1\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    fs::set_permissions(&hook, fs::Permissions::from_mode(0o755)).unwrap();
    a.send("frontend", "backend", "held back");
    let out = a.cli(&["sync"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("pushes are closed today"),
        "carries the remote's words: {err}"
    );
    assert!(
        err.contains(w.remote.to_str().unwrap()),
        "names the remote: {err}"
    );
    a.send("frontend", "backend", "written after the refusal");
    fs::remove_file(&hook).unwrap();
    a.sync();
    b.sync();
    let topics = b.inbox_topics("backend");
    assert!(topics.contains(&"held back".to_owned()), "{topics:?}");
    assert!(
        topics.contains(&"written after the refusal".to_owned()),
        "{topics:?}"
    );
}

#[test]
fn machines_that_sync_at_the_same_moment_all_land() {
    let w = World::git(3, &["frontend", "backend", "infra"]);
    let roles = ["frontend", "backend", "infra"];
    for round in 0..3 {
        for (m, role) in w.machines.iter().zip(roles) {
            m.send(
                role,
                if role == "frontend" {
                    "backend"
                } else {
                    "frontend"
                },
                &format!("{role} {round}"),
            );
        }
        // All three push at once: the ones that lose the race are rejected,
        // merge and push again.
        std::thread::scope(|s| {
            for m in &w.machines {
                s.spawn(move || m.sync());
            }
        });
    }
    w.settle();
    let topics = w.machines[0].inbox_topics("frontend");
    for round in 0..3 {
        for role in ["backend", "infra"] {
            assert!(topics.contains(&format!("{role} {round}")), "{topics:?}");
        }
    }
}

#[test]
fn two_syncs_of_one_channel_on_one_machine_take_turns() {
    let w = World::git(2, &ROLES);
    let a = &w.machines[0];
    let device = a.device();
    let own_commits = || {
        git_ok(&w.remote, &["log", "--format=%s"])
            .lines()
            .filter(|l| l.ends_with(device.as_str()))
            .count()
    };
    let before = own_commits();
    a.send("frontend", "backend", "once");
    std::thread::scope(|s| {
        let runs: Vec<_> = (0..3).map(|_| s.spawn(|| a.cli(&["sync"]))).collect();
        for r in runs {
            let out = r.join().unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    });
    assert_eq!(
        own_commits(),
        before + 1,
        "one commit for the send, whoever made it"
    );
}

#[test]
fn the_users_git_hooks_never_run_or_block_a_sync() {
    let w = World::git(2, &ROLES);
    let a = &w.machines[0];
    use std::os::unix::fs::PermissionsExt as _;
    let hooks = a.dir.join(".git").join("hooks");
    for name in [
        "pre-commit",
        "commit-msg",
        "post-commit",
        "post-merge",
        "pre-push",
    ] {
        let hook = hooks.join(name);
        fs::write(
            &hook,
            format!("#!/bin/sh\ntouch \"{}.ran\"\nexit 1\n", hook.display()),
        )
        .unwrap();
        fs::set_permissions(&hook, fs::Permissions::from_mode(0o755)).unwrap();
    }
    a.send("frontend", "backend", "past the hooks");
    a.sync();
    let ran: Vec<_> = fs::read_dir(&hooks)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".ran"))
        .map(|e| e.file_name())
        .collect();
    assert!(ran.is_empty(), "hooks ran: {ran:?}");
    w.machines[1].sync();
    assert!(
        w.machines[1]
            .inbox_topics("backend")
            .contains(&"past the hooks".to_owned())
    );
}

#[test]
fn a_git_clone_of_a_channel_syncs_through_its_origin_and_says_so_once() {
    let tmp = tempfile::tempdir().unwrap();
    let remote = tmp.path().join("remote.git");
    git_ok(
        tmp.path(),
        &["init", "-q", "--bare", remote.to_str().unwrap()],
    );
    let (dir_a, dir_b) = (tmp.path().join("a"), tmp.path().join("b"));
    let run = |home: &str, dir: &std::path::Path, args: &[&str]| {
        let out = std::process::Command::new(common::bin())
            .env("COUNTERSIGN_HOME", tmp.path().join(home))
            .env_remove("COUNTERSIGN_CHANNEL")
            .current_dir(tmp.path())
            .arg("--channel")
            .arg(dir)
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let url = remote.to_str().unwrap();
    let a = dir_a.to_str().unwrap();
    run(
        "home_a",
        &dir_a,
        &["init", a, "--roles", "a,b", "--git-remote", url],
    );
    run("home_a", &dir_a, &["sync"]);
    git_ok(
        tmp.path(),
        &[
            "clone",
            "-q",
            "-c",
            "core.symlinks=false",
            url,
            dir_b.to_str().unwrap(),
        ],
    );
    let send = [
        "--role",
        "a",
        "send",
        "--to",
        "b",
        "--topic",
        "t",
        "--body",
        "after the clone",
    ];
    run("home_a", &dir_a, &send);
    run("home_a", &dir_a, &["sync"]);

    // No `remote set` on the clone: its origin is the remote, and it is said.
    let first = run("home_b", &dir_b, &["sync"]);
    assert!(first.contains("origin") && first.contains(url), "{first}");
    assert!(first.contains("received new records"), "{first}");
    let lines = fs::read_dir(dir_b.join("feeds/a"))
        .unwrap()
        .flatten()
        .flat_map(|d| fs::read_dir(d.path()).unwrap().flatten())
        .filter(|f| f.file_name().to_string_lossy().ends_with(".jsonl"))
        .map(|f| fs::read_to_string(f.path()).unwrap())
        .collect::<String>();
    assert!(lines.contains("after the clone"), "the new record arrived");
    // Kept: the next sync uses it without a word about it.
    let second = run("home_b", &dir_b, &["sync"]);
    assert!(!second.contains("origin"), "{second}");
    assert!(second.contains(url), "{second}");

    // A folder that is no git clone still asks for a remote.
    let plain = tmp.path().join("plain");
    crate::common::copy_dir(&dir_a, &plain);
    fs::remove_dir_all(plain.join(".git")).unwrap();
    let out = std::process::Command::new(common::bin())
        .env("COUNTERSIGN_HOME", tmp.path().join("home_c"))
        .env_remove("COUNTERSIGN_CHANNEL")
        .arg("--channel")
        .arg(&plain)
        .arg("sync")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("remote set"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn twelve_machines_writing_and_syncing_at_once_all_land_and_converge() {
    let w = World::git(TWELVE.len(), &TWELVE);
    // Every machine sends and syncs at the same moments as the others: most
    // pushes lose the race at first, and each one must still land.
    w.assert_contention_lands(&TWELVE, 3);
}

#[test]
fn a_sync_that_keeps_losing_past_its_budget_says_so_and_loses_nothing() {
    let w = World::git(2, &ROLES);
    let (a, b) = (&w.machines[0], &w.machines[1]);
    let branch = git_ok(&w.remote, &["symbolic-ref", "--short", "HEAD"])
        .trim()
        .to_owned();
    // Another machine's commit lands while each push is received: every push
    // loses the race.
    let hook = w.remote.join("hooks").join("pre-receive");
    fs::write(
        &hook,
        format!(
            "#!/bin/sh\nunset GIT_QUARANTINE_PATH GIT_OBJECT_DIRECTORY GIT_ALTERNATE_OBJECT_DIRECTORIES\n\
             export GIT_AUTHOR_NAME=x GIT_AUTHOR_EMAIL=x@x GIT_COMMITTER_NAME=x GIT_COMMITTER_EMAIL=x@x\n\
             tip=$(git rev-parse refs/heads/{branch})\n\
             new=$(git commit-tree -p \"$tip\" -m 'landed first' \"$tip^{{tree}}\")\n\
             git update-ref refs/heads/{branch} \"$new\"\nexit 0\n"
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    fs::set_permissions(&hook, fs::Permissions::from_mode(0o755)).unwrap();
    a.send("frontend", "backend", "held back by the race");
    let out = a.cli(&["sync", "--budget", "1s"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("gave up after"), "{err}");
    assert!(
        err.contains(" tries in "),
        "names the tries and the time: {err}"
    );
    assert!(err.contains("nothing is lost"), "{err}");
    assert!(
        err.contains(w.remote.to_str().unwrap()),
        "names the remote: {err}"
    );
    assert!(
        git_ok(&w.remote, &["log", "--format=%s", &branch]).contains("landed first"),
        "the hook made the pushes lose"
    );
    // Locally the record is there; the remote frees up and it goes out.
    assert!(
        a.verified_topics()
            .contains(&"held back by the race".to_owned())
    );
    fs::remove_file(&hook).unwrap();
    a.sync();
    b.sync();
    assert!(
        b.inbox_topics("backend")
            .contains(&"held back by the race".to_owned())
    );
}
