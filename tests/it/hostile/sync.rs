//! A hostile git remote: its hooks print whatever they like, and git relays
//! it (`remote: …`) into what `countersign sync` reports.

use std::fs;
use std::os::unix::fs::PermissionsExt as _;

use crate::common::machines::World;

#[test]
fn a_remote_hooks_escapes_reach_the_terminal_inert() {
    let w = World::git(1, &["a", "b"]);
    let m = &w.machines[0];
    // A pre-receive hook that retitles the terminal, clears the screen,
    // reverses the text after it and hides a word, then refuses the push.
    let hook = w.remote.join("hooks/pre-receive");
    fs::write(
        &hook,
        "#!/bin/sh\n\
         printf 'denied \\033]0;PWNED\\007\\033[2J\\342\\200\\256evil\\342\\200\\213x\\r\\n' >&2\n\
         exit 1\n",
    )
    .unwrap();
    fs::set_permissions(&hook, fs::Permissions::from_mode(0o755)).unwrap();
    m.send("a", "b", "after the hook");

    let out = m.cli(&["sync", "--budget", "0"]);
    let err = String::from_utf8(out.stderr).expect("UTF-8");
    let all = format!("{err}{}", String::from_utf8_lossy(&out.stdout));
    assert!(!out.status.success(), "{all}");
    assert!(
        err.contains("remote: denied"),
        "the remote's words are relayed: {err}"
    );
    for c in all.chars() {
        let bad = (c.is_control() && c != '\n')
            || matches!(
                c,
                '\u{200b}' | '\u{202a}'..='\u{202e}' | '\u{2028}' | '\u{2029}'
            );
        assert!(!bad, "sync printed U+{:04X}:\n{all}", c as u32);
    }
    assert!(
        err.contains("\\u{1b}]0;PWNED\\u{7}\\u{1b}[2J\\u{202e}evil\\u{200b}x"),
        "shown as escapes: {err}"
    );
}

/// A channel folder whose repository config and hooks were written by
/// someone else (a folder carried by a shared drive brings its `.git` along):
/// a sync runs none of the programs they name, and still syncs.
#[test]
fn a_planted_repository_config_runs_nothing() {
    let w = World::git(1, &["a", "b"]);
    let m = &w.machines[0];
    let ran = w.tmp.path().join("ran");
    let script = w.tmp.path().join("planted.sh");
    fs::write(
        &script,
        format!("#!/bin/sh\necho \"$0 $*\" >> '{}'\nexit 0\n", ran.display()),
    )
    .unwrap();
    fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).unwrap();
    let git_dir = m.dir.join(".git");
    let script = script.to_str().unwrap();
    crate::common::machines::git_ok(&m.dir, &["config", "core.fsmonitor", script]);
    for hook in ["pre-commit", "post-commit", "post-merge", "pre-push"] {
        let path = git_dir.join("hooks").join(hook);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::copy(script, &path).unwrap();
    }
    let commits = || {
        crate::common::machines::git_ok(&w.remote, &["rev-list", "--count", "--all"])
            .trim()
            .parse::<u32>()
            .unwrap()
    };
    let before = commits();
    m.send("a", "b", "past the planted config");

    m.sync();
    assert!(
        !ran.exists(),
        "a planted program ran: {}",
        fs::read_to_string(&ran).unwrap_or_default()
    );
    assert!(commits() > before, "the sync still pushed");
}
