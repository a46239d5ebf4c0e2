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
