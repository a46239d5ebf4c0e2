//! Running git and rclone: captured output, no prompts, errors that name the
//! remote and carry the tool's own words.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use super::SyncError;
use crate::core::peer_text;

/// Git settings that run a program of the config's choosing on the commands
/// a sync uses, each pinned to its harmless value: a file system monitor,
/// hooks, a pager, and the `ext::` transport (a URL that is a command line).
const PINNED_GIT_CONFIG: [(&str, &str); 4] = [
    ("core.fsmonitor", "false"),
    ("core.hooksPath", "/dev/null"),
    ("core.pager", "cat"),
    ("protocol.ext.allow", "never"),
];

/// One external program run in one folder on behalf of one remote.
pub(super) struct Tool {
    program: &'static str,
    cwd: PathBuf,
    remote: String,
}

impl Tool {
    pub(super) fn new(program: &'static str, cwd: &Path, remote: String) -> Self {
        Self {
            program,
            cwd: cwd.to_path_buf(),
            remote,
        }
    }

    /// Runs the program; a non-zero exit is the caller's to judge.
    pub(super) fn output(&self, args: &[&str]) -> Result<Output, SyncError> {
        let mut command = Command::new(self.program);
        if self.program == "git" {
            // The repository's own config is a file in the channel folder,
            // and a folder carried by a shared drive can arrive with one
            // written by someone else: these keys would run their command at
            // the next `git status` or commit. Settings given here outrank
            // every config file, so a planted one cannot turn them back on.
            command.env("GIT_CONFIG_COUNT", PINNED_GIT_CONFIG.len().to_string());
            for (i, (key, value)) in PINNED_GIT_CONFIG.iter().enumerate() {
                command.env(format!("GIT_CONFIG_KEY_{i}"), key);
                command.env(format!("GIT_CONFIG_VALUE_{i}"), value);
            }
        }
        command
            .args(args)
            .current_dir(&self.cwd)
            // Never wait for a password prompt nobody will answer; keep the
            // messages in one language so they read the same in reports.
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("LC_ALL", "C")
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|source| SyncError::Missing {
                tool: self.program.to_owned(),
                remote: self.remote.clone(),
                source,
            })
    }

    /// Runs the program and returns its stdout; a non-zero exit is an error
    /// naming `action`, the remote and the program's stderr.
    pub(super) fn ok(&self, action: &str, args: &[&str]) -> Result<String, SyncError> {
        let out = self.output(args)?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(self.failure(action, &out))
        }
    }

    /// The error for a failed run.
    pub(super) fn failure(&self, action: &str, out: &Output) -> SyncError {
        let mut detail = words(&out.stderr);
        if detail.is_empty() {
            detail = words(&out.stdout);
        }
        if detail.is_empty() {
            detail = format!("{} exited with {}", self.program, out.status);
        }
        SyncError::Remote {
            remote: self.remote.clone(),
            action: action.to_owned(),
            detail,
        }
    }
}

/// What a tool wrote, made fit to relay: decoded (bad bytes replaced),
/// trimmed, and inert. It carries the remote's words (a git server's hooks
/// print whatever they like, prefixed `remote: `), which reach a terminal
/// and a model: every control, bidirectional, invisible or separator
/// character is shown as a visible escape (`core::peer_text`), line breaks
/// kept.
pub(super) fn words(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim();
    if text.is_empty() {
        return String::new();
    }
    peer_text::block(text, "")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_remote_cannot_drive_the_terminal_through_its_words() {
        let hook = b"remote: \x1b]0;PWNED\x07\x1b[2J\nremote: \xe2\x80\xaeok\r\n\n";
        assert_eq!(
            words(hook),
            "remote: \\u{1b}]0;PWNED\\u{7}\\u{1b}[2J\nremote: \\u{202e}ok"
        );
        assert_eq!(words(b"  \n"), "");
    }
}
