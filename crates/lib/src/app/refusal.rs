//! Errors of the app layer: the two kinds of refusal an agent sees, and faults.
//!
//! A refusal (`ValueError`, `PermissionError`) is an answer: the agent reads it
//! and acts on it, and nothing was written. A fault is ours (I/O, SQLite) and
//! surfaces as a protocol error in MCP and exit code 2 in the CLI.

use crate::core::peer_text::{describe, first_hazard};
use crate::store::StoreError;
use crate::store::folder_file::FolderError;
use crate::sync::SyncError;

/// What a use case can fail with.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// Bad input or a refused state change.
    #[error("{0}")]
    Value(String),
    /// Acting outside one's role.
    #[error("{0}")]
    Permission(String),
    /// A fault below the app layer.
    #[error(transparent)]
    Store(StoreError),
    /// The remote could not be synced with (the local channel is untouched).
    #[error(transparent)]
    Sync(SyncError),
}

impl AppError {
    /// A `ValueError` refusal.
    pub fn value(msg: impl Into<String>) -> Self {
        Self::Value(msg.into())
    }

    /// A `PermissionError` refusal.
    pub fn permission(msg: impl Into<String>) -> Self {
        Self::Permission(msg.into())
    }

    /// The refusal kind as agents know it, `None` for a fault.
    pub fn kind(&self) -> Option<&'static str> {
        match self {
            Self::Value(_) => Some("ValueError"),
            Self::Permission(_) => Some("PermissionError"),
            Self::Store(_) | Self::Sync(_) => None,
        }
    }
}

/// The one place that decides whether a store error is a refusal (the caller
/// can act on it: a bad argument, a setup step not taken, a file of the wrong
/// kind in the channel folder) or a fault (ours: the disk, the database, a
/// damaged local file, a journal that could not be cut back). The match is
/// exhaustive so that a new variant is decided here, not defaulted.
impl From<StoreError> for AppError {
    fn from(e: StoreError) -> Self {
        use StoreError as S;
        match e {
            S::InvalidArgument { .. } | S::ForeignWriter { .. } => Self::Value(e.to_string()),
            S::NotAdmitted { .. } => Self::Permission(e.to_string()),
            // Something of the wrong type, or too large, stands in the way in
            // the channel folder: the message names it and the way out.
            S::Folder(FolderError::Refused { .. }) => {
                Self::Value(format!("{e}. Nothing was written"))
            }
            S::Io(_)
            | S::Folder(FolderError::Io(_))
            | S::Sqlite { .. }
            | S::CorruptColumn { .. }
            | S::CorruptFile { .. }
            | S::Unreadable { .. }
            | S::Journal { .. }
            | S::Watch { .. }
            | S::NoChannel { .. }
            | S::NotAChannel { .. }
            | S::NoHome
            | S::TrackedBinding { .. }
            | S::ChannelExists { .. }
            | S::BadGenesis { .. }
            | S::BadKey { .. }
            | S::FtsLayout { .. } => Self::Store(e),
        }
    }
}

impl From<SyncError> for AppError {
    fn from(e: SyncError) -> Self {
        match e {
            SyncError::Store(s) => s.into(),
            other => Self::Sync(other),
        }
    }
}

/// Result alias of the app layer.
pub type AppResult<T> = Result<T, AppError>;

/// Refuses a text longer than `max` characters, naming the field.
pub fn check_length(field: &str, value: &str, max: usize) -> AppResult<()> {
    let n = value.chars().count();
    if n > max {
        return Err(AppError::value(format!(
            "'{field}' must be <= {max} characters (got {n})"
        )));
    }
    Ok(())
}

/// Refuses a `limit` outside 1..=1000.
pub fn check_limit(limit: i64) -> AppResult<usize> {
    if !(1..=1000).contains(&limit) {
        return Err(AppError::value(format!(
            "'limit' must be between 1 and 1000 (got {limit})"
        )));
    }
    Ok(limit as usize)
}

/// Refuses a one-line field (a topic, a title, a key) holding a line break,
/// a tab, a control or a bidirectional control character: such a field is
/// shown as one line wherever it appears, so it must be plain text
/// (`core::peer_text`). `hint` says where richer text belongs.
pub fn check_one_line(field: &str, value: &str, hint: &str) -> AppResult<()> {
    if let Some((at, c)) = first_hazard(value) {
        return Err(AppError::value(format!(
            "'{field}' must be one line of plain text, but it holds {} (U+{:04X}) at character \
             {at} — remove line breaks, tabs and control characters from '{field}'{hint}",
            describe(c),
            c as u32
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::io;
    use std::path::PathBuf;

    use super::*;
    use crate::core::ids::FeedId;
    use crate::store::error::PathError;
    use crate::store::folder_file::Refusal;

    fn io_error(path: &str) -> PathError {
        PathError {
            path: PathBuf::from(path),
            source: io::Error::other("disk full"),
        }
    }

    /// What the agent sees: the refusal kind and the message, or `None` for a fault.
    fn seen(e: StoreError) -> (Option<&'static str>, String) {
        let e = AppError::from(e);
        (e.kind(), e.to_string())
    }

    #[test]
    fn what_the_caller_can_fix_is_a_refusal_naming_it() {
        let (kind, msg) = seen(StoreError::InvalidArgument {
            field: "device",
            reason: "must be a device id, got 'Bad Id'".into(),
        });
        assert_eq!(kind, Some("ValueError"));
        assert_eq!(msg, "'device' must be a device id, got 'Bad Id'");

        let (kind, msg) = seen(StoreError::NotAdmitted {
            feed: FeedId::new("a", "d1").unwrap(),
        });
        assert_eq!(kind, Some("PermissionError"));
        assert!(msg.starts_with("feed a/d1 is not admitted"), "{msg}");

        let (kind, msg) = seen(StoreError::ForeignWriter {
            feed: FeedId::new("a", "d1").unwrap(),
            published: 5,
            journal: 3,
        });
        assert_eq!(kind, Some("ValueError"));
        assert!(msg.starts_with("feed a/d1 holds records"), "{msg}");

        let (kind, msg) = seen(StoreError::Folder(FolderError::Refused {
            path: PathBuf::from("/c/feeds/a"),
            refusal: Refusal::TooLarge { len: 9, limit: 8 },
        }));
        assert_eq!(kind, Some("ValueError"));
        assert!(msg.starts_with("/c/feeds/a ") && msg.ends_with(". Nothing was written"));
    }

    #[test]
    fn what_only_we_can_fix_is_a_fault_naming_the_path() {
        let faults = [
            StoreError::Io(io_error("/h/state/x")),
            StoreError::Folder(FolderError::Io(io_error("/c/feeds/a"))),
            StoreError::CorruptFile {
                path: PathBuf::from("/h/device.json"),
                reason: "not a valid device file".into(),
            },
            StoreError::Unreadable {
                path: PathBuf::from("/h/backups/1.json"),
                source: FolderError::Io(io_error("/h/backups/1.json")),
                fix: "move it away",
            },
            StoreError::Journal {
                path: PathBuf::from("/h/journal/a.jsonl"),
                source: io::Error::other("read-only file system"),
                failed: Box::new(StoreError::Io(io_error("/c/feeds/a/d1/000001.jsonl"))),
                records: vec!["abc123".into()],
            },
            StoreError::Watch {
                path: PathBuf::from("/c/feeds"),
                source: notify::Error::generic("too many watches"),
            },
        ];
        for e in faults {
            let (kind, msg) = seen(e);
            assert_eq!(kind, None, "a fault, not a refusal: {msg}");
            assert!(
                msg.contains("/h/") || msg.contains("/c/"),
                "names the path: {msg}"
            );
        }
    }

    /// A disk failure while cutting the journal back stays a fault even when
    /// what failed first was a refusal: records are left behind in the journal.
    #[test]
    fn a_journal_that_cannot_be_cut_back_is_a_fault_whatever_failed_first() {
        let (kind, msg) = seen(StoreError::Journal {
            path: PathBuf::from("/h/journal/a.jsonl"),
            source: io::Error::other("read-only file system"),
            failed: Box::new(StoreError::Folder(FolderError::Refused {
                path: PathBuf::from("/c/feeds/a/d1"),
                refusal: Refusal::TooLarge { len: 9, limit: 8 },
            })),
            records: vec!["abc123".into(), "def456".into()],
        });
        assert_eq!(kind, None, "{msg}");
        assert!(
            msg.contains("the journal /h/journal/a.jsonl could not be cut back")
                && msg.contains("abc123, def456"),
            "{msg}"
        );
    }
}
