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

impl From<StoreError> for AppError {
    fn from(e: StoreError) -> Self {
        match e {
            // Setup problems an agent can act on are refusals, not faults.
            StoreError::NotAdmitted(m) => Self::Permission(m),
            StoreError::ForeignWriter(m) => Self::Value(m),
            // Something of the wrong type, or too large, stands in the way in
            // the channel folder: the message names it and the way out.
            StoreError::Folder(e @ FolderError::Refused { .. }) => {
                Self::Value(format!("{e}. Nothing was written"))
            }
            other => Self::Store(other),
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
