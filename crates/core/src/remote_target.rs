//! Sync targets as text: which git URLs and rclone `REMOTE:PATH`s may reach
//! git or rclone at all, and the operator's allow-list of targets that a
//! caller of the management tools may choose (`serve --allow-remote`).
//!
//! A target becomes a command-line argument of git or rclone. Whoever chose
//! it may not be whoever runs the server (an admin token's holder), so a
//! target is refused when either program could read it as anything but a
//! place: an option (`--cpuprofile=FILE`), a control character, a `..` step
//! out of an allowed folder, or git's command-running transports (`ext::`,
//! `fd::`). The allow-list then decides which places: a pattern is anchored,
//! `*` stands for any run of characters without `/`, `**` for any run at
//! all, and a target on this machine's own filesystem (a plain path,
//! `file://`, rclone's `:local:`) matches only a pattern that is itself such
//! a path, so `rclone=**` allows every configured remote and no folder of
//! the server.
//!
//! This module only judges text; running the programs is `countersign_lib::sync`'s.

use std::fmt;

/// How a channel travels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RemoteKind {
    /// A git repository at a URL.
    Git,
    /// An rclone `REMOTE:PATH`.
    Rclone,
}

impl RemoteKind {
    /// The kind's name, as `remote set` and `create_channel` take it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Git => "git",
            Self::Rclone => "rclone",
        }
    }

    /// The kind named `name`.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "git" => Some(Self::Git),
            "rclone" => Some(Self::Rclone),
            _ => None,
        }
    }
}

/// Why a target cannot be given to git or rclone.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    /// Nothing but white space.
    #[error("the target is empty")]
    Empty,
    /// It starts with `-`, so the program would read it as an option.
    #[error("the target starts with '-', which {0} would read as an option, not a place")]
    OptionLike(&'static str),
    /// A control character (a line break, an escape …).
    #[error("the target holds a control character (U+{0:04X})")]
    Control(u32),
    /// A `..` step, which leaves the folder it names.
    #[error("the target holds a '..' step, which leaves the folder it names")]
    ParentStep,
    /// One of git's transports that run a command instead of reaching a place.
    #[error("git's '{0}::' transport runs a command instead of reaching a repository")]
    CommandTransport(String),
    /// No pattern of the operator's allow-list matches it.
    #[error("{0}")]
    NotAllowed(String),
}

/// Checks that `target` can only ever be read as a place by `kind`'s program.
pub fn check(kind: RemoteKind, target: &str) -> Result<(), TargetError> {
    if target.trim().is_empty() {
        return Err(TargetError::Empty);
    }
    if target.starts_with('-') {
        return Err(TargetError::OptionLike(kind.as_str()));
    }
    if let Some(c) = target.chars().find(|c| c.is_control()) {
        return Err(TargetError::Control(c as u32));
    }
    let path = target.split(['?', '#']).next().unwrap_or(target);
    if path.split(['/', '\\', ':']).any(|step| step == "..") {
        return Err(TargetError::ParentStep);
    }
    if kind == RemoteKind::Git
        && let Some((transport, _)) = target.split_once("::")
        && ["ext", "fd"].contains(&transport.to_ascii_lowercase().as_str())
    {
        return Err(TargetError::CommandTransport(transport.to_owned()));
    }
    Ok(())
}

/// Whether `target` names a place on this machine's own filesystem rather
/// than a remote: a plain path, a `file://` URL, or rclone's `:local:`
/// backend (rclone also reads a path with no `REMOTE:` before its first `/`
/// as local).
pub fn is_local(kind: RemoteKind, target: &str) -> bool {
    let lower = target.to_ascii_lowercase();
    if lower.starts_with("file:") {
        return true;
    }
    let head = target.split('/').next().unwrap_or_default();
    match kind {
        RemoteKind::Git => {
            // `scheme://…` and scp-like `host:path` reach another machine;
            // anything else git takes as a path.
            !(target.contains("://") || head.contains(':'))
        }
        RemoteKind::Rclone => {
            lower.starts_with(":local") || !head.contains(':') || is_drive_letter(head)
        }
    }
}

/// `C:`, which rclone on Windows reads as a drive, not a remote.
fn is_drive_letter(head: &str) -> bool {
    let b = head.as_bytes();
    b.len() == 2 && b[0].is_ascii_alphabetic() && b[1] == b':'
}

/// One entry of the operator's allow-list: `KIND=PATTERN`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemotePattern {
    kind: RemoteKind,
    pattern: String,
}

impl RemotePattern {
    /// Parses `git=PATTERN` or `rclone=PATTERN`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let Some((kind, pattern)) = text.split_once('=') else {
            return Err(format!(
                "'{text}' is not KIND=PATTERN: write e.g. git=https://git.example.org/team/* or \
                 rclone=b2:channels/*"
            ));
        };
        let kind = RemoteKind::parse(kind).ok_or_else(|| {
            format!("'{kind}' is not a kind of remote: write git=PATTERN or rclone=PATTERN")
        })?;
        check(kind, pattern).map_err(|e| format!("the pattern '{pattern}': {e}"))?;
        Ok(Self {
            kind,
            pattern: pattern.to_owned(),
        })
    }

    /// Whether this pattern allows `target` of `kind`.
    pub fn allows(&self, kind: RemoteKind, target: &str) -> bool {
        self.kind == kind
            && pattern_is_local(&self.pattern) == is_local(kind, target)
            && glob(self.pattern.as_bytes(), target.as_bytes())
    }
}

impl fmt::Display for RemotePattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.kind.as_str(), self.pattern)
    }
}

/// Checks `target` and then that one of `allowed` matches it: what a
/// caller who is not the server's operator may choose.
pub fn check_allowed(
    allowed: &[RemotePattern],
    kind: RemoteKind,
    target: &str,
) -> Result<(), TargetError> {
    check(kind, target)?;
    if allowed.iter().any(|p| p.allows(kind, target)) {
        return Ok(());
    }
    let how = if allowed.is_empty() {
        "this server allows no remotes: its operator chooses them with `serve --allow-remote \
         KIND=PATTERN`"
            .to_owned()
    } else {
        let list: Vec<String> = allowed.iter().map(ToString::to_string).collect();
        format!(
            "no pattern this server allows matches it (allowed: {})",
            list.join(", ")
        )
    };
    Err(TargetError::NotAllowed(how))
}

/// Anchored match of `text` against `pat`: `**` any run, `*` any run
/// without `/`, every other byte itself. One pass over the pattern with a
/// row of booleans over the text: cost bounded by the product of the
/// lengths, whatever the pattern.
fn glob(pat: &[u8], text: &[u8]) -> bool {
    // at[j]: the pattern read so far matches text[..j].
    let mut at = vec![false; text.len() + 1];
    at[0] = true;
    let mut p = 0;
    while p < pat.len() {
        let mut next = vec![false; text.len() + 1];
        if pat[p] == b'*' && pat.get(p + 1) == Some(&b'*') {
            let mut any = false;
            for j in 0..=text.len() {
                any |= at[j];
                next[j] = any;
            }
            p += 2;
        } else if pat[p] == b'*' {
            for j in 0..=text.len() {
                next[j] = at[j] || (j > 0 && next[j - 1] && text[j - 1] != b'/');
            }
            p += 1;
        } else {
            for j in 0..text.len() {
                next[j + 1] = at[j] && text[j] == pat[p];
            }
            p += 1;
        }
        at = next;
    }
    at[text.len()]
}

/// Whether a pattern names paths of this machine: only a literal start
/// that is one (`/…`, `./…`, `~/…`, `file:…`, `:local…`), so a wildcard
/// never stands for the server's own folders.
fn pattern_is_local(pattern: &str) -> bool {
    let lower = pattern.to_ascii_lowercase();
    ["/", ".", "~", "file:", ":local"]
        .iter()
        .any(|p| lower.starts_with(p))
}

#[cfg(test)]
mod tests {
    use super::*;
    use RemoteKind::{Git, Rclone};

    #[test]
    fn a_target_that_reads_as_an_option_or_a_command_is_refused() {
        for (kind, t) in [
            (Rclone, "--cpuprofile=/tmp/x"),
            (Rclone, "--log-file=/tmp/x"),
            (Git, "--upload-pack=touch /tmp/x"),
            (Rclone, "-vv"),
        ] {
            assert!(
                matches!(check(kind, t), Err(TargetError::OptionLike(_))),
                "{t}"
            );
        }
        assert!(matches!(
            check(Git, "ext::sh -c touch% /tmp/x"),
            Err(TargetError::CommandTransport(_))
        ));
        assert!(matches!(
            check(Git, "FD::3"),
            Err(TargetError::CommandTransport(_))
        ));
        assert!(matches!(
            check(Rclone, "b2:x\nremote"),
            Err(TargetError::Control(0x0a))
        ));
        assert!(matches!(
            check(Rclone, "b2:chan/../../etc"),
            Err(TargetError::ParentStep)
        ));
        assert_eq!(check(Rclone, "  "), Err(TargetError::Empty));
        for ok in [
            (Git, "git@example.org:team/chan.git"),
            (Git, "https://example.org/team/chan.git"),
            (Rclone, "b2:team-channels/chan"),
            (Rclone, "/srv/remotes/chan"),
            (Git, "/srv/git/chan.git"),
        ] {
            assert_eq!(check(ok.0, ok.1), Ok(()), "{ok:?}");
        }
    }

    #[test]
    fn local_targets_are_told_from_remote_ones() {
        for (kind, t) in [
            (Git, "/srv/git/chan.git"),
            (Git, "../chan.git"),
            (Git, "file:///srv/chan.git"),
            (Rclone, "/srv/chan"),
            (Rclone, "chan"),
            (Rclone, ":local:/srv/chan"),
            (Rclone, "C:"),
        ] {
            assert!(is_local(kind, t), "{t}");
        }
        for (kind, t) in [
            (Git, "git@example.org:team/chan.git"),
            (Git, "ssh://example.org/chan"),
            (Rclone, "b2:bucket/chan"),
            (Rclone, "gdrive:"),
        ] {
            assert!(!is_local(kind, t), "{t}");
        }
    }

    #[test]
    fn the_allow_list_is_anchored_and_keeps_local_paths_out_of_wildcards() {
        let list = |ps: &[&str]| -> Vec<RemotePattern> {
            ps.iter()
                .map(|p| RemotePattern::parse(p).unwrap())
                .collect()
        };
        assert!(matches!(
            check_allowed(&[], Rclone, "b2:chan"),
            Err(TargetError::NotAllowed(_))
        ));
        let allowed = list(&[
            "rclone=b2:channels/*",
            "git=https://git.example.org/team/**",
        ]);
        assert!(check_allowed(&allowed, Rclone, "b2:channels/a").is_ok());
        assert!(check_allowed(&allowed, Rclone, "b2:channels/a/b").is_err());
        assert!(check_allowed(&allowed, Rclone, "xb2:channels/a").is_err());
        assert!(check_allowed(&allowed, Git, "https://git.example.org/team/x/y.git").is_ok());
        assert!(check_allowed(&allowed, Rclone, "https://git.example.org/team/x").is_err());
        // Everything remote, yet no folder of the server's own.
        let all = list(&["rclone=**", "git=**"]);
        assert!(check_allowed(&all, Rclone, "gdrive:team/chan").is_ok());
        for local in ["/tmp/x", ":local:/tmp/x", "chan"] {
            assert!(check_allowed(&all, Rclone, local).is_err(), "{local}");
        }
        assert!(check_allowed(&all, Git, "/srv/git/chan.git").is_err());
        assert!(check_allowed(&all, Rclone, "--cpuprofile=/tmp/x").is_err());
        // A local folder the operator named.
        let srv = list(&["rclone=/srv/remotes/*"]);
        assert!(check_allowed(&srv, Rclone, "/srv/remotes/chan").is_ok());
        assert!(check_allowed(&srv, Rclone, "/srv/remotes/../etc").is_err());
        assert!(check_allowed(&srv, Rclone, "/srv/other").is_err());
    }

    #[test]
    fn patterns_parse_or_say_how_to_write_them() {
        assert!(
            RemotePattern::parse("b2:x")
                .unwrap_err()
                .contains("KIND=PATTERN")
        );
        assert!(RemotePattern::parse("svn=x").unwrap_err().contains("kind"));
        assert!(RemotePattern::parse("rclone=--x").is_err());
        assert_eq!(
            RemotePattern::parse("git=https://h/*").unwrap().to_string(),
            "git=https://h/*"
        );
    }

    #[test]
    fn a_pathological_pattern_stays_cheap() {
        let p = RemotePattern::parse(&format!("rclone=b2:{}b", "**".repeat(40))).unwrap();
        let target = format!("b2:{}", "a".repeat(400));
        assert!(!p.allows(Rclone, &target));
    }
}
