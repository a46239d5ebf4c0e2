//! The closed vocabularies of the protocol: message kinds, work statuses,
//! decisions and what a memory note records.
//!
//! Owns their wire names and the refusal text for a value outside the set.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A value outside an enumeration; the text names the field and the allowed values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{field}' must be one of {allowed} (got '{got}')")]
pub struct NotInEnum {
    /// The parameter name.
    pub field: &'static str,
    /// The allowed values, formatted as a list.
    pub allowed: String,
    /// What was passed.
    pub got: String,
}

macro_rules! vocabulary {
    ($(#[$doc:meta])* $name:ident, $field:literal, { $($(#[$vdoc:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        pub enum $name {
            $($(#[$vdoc])* #[serde(rename = $text)] $variant),+
        }

        impl $name {
            /// Every value, in the protocol's order.
            pub const ALL: &'static [Self] = &[$(Self::$variant),+];

            /// The wire name.
            pub fn as_str(self) -> &'static str {
                match self { $(Self::$variant => $text),+ }
            }

            /// Parses a value of parameter `field`, with the protocol's refusal text.
            pub fn parse_field(s: &str, field: &'static str) -> Result<Self, NotInEnum> {
                match s {
                    $($text => Ok(Self::$variant),)+
                    _ => Err(NotInEnum {
                        field,
                        allowed: format!("{:?}", [$($text),+]),
                        got: s.to_owned(),
                    }),
                }
            }
        }

        impl FromStr for $name {
            type Err = NotInEnum;
            fn from_str(s: &str) -> Result<Self, NotInEnum> {
                Self::parse_field(s, $field)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

vocabulary!(
    /// What a message is.
    Kind, "kind", {
        /// A defect report.
        Bug = "bug",
        /// A feature request.
        Feat = "feat",
        /// A proposal (procedure) that collects votes.
        Proc = "proc",
        /// A status report.
        Status = "status",
        /// A question.
        Question = "question",
        /// An answer.
        Answer = "answer",
    }
);

vocabulary!(
    /// Where the work behind a message stands.
    WorkStatus, "work_status", {
        /// Suggested, not started.
        Proposed = "proposed",
        /// Being worked on by whoever set it.
        InProgress = "in_progress",
        /// Finished on the executor's side, awaiting the other side.
        DoneLocal = "done_local",
        /// The ball is with the other participant.
        NeedsYou = "needs_you",
        /// Finished and confirmed by the other side.
        Done = "done",
        /// Waiting on something else.
        Blocked = "blocked",
    }
);

vocabulary!(
    /// A role's decision on a message (acknowledge).
    Decision, "decision", {
        /// For the text as it stands.
        Agree = "agree",
        /// Against it.
        Reject = "reject",
        /// Not as it stands; asks for a revision.
        NeedsChanges = "needs_changes",
        /// The subject is gone: declares the round dead.
        Void = "void",
    }
);

/// What a note records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoteKind {
    /// A prompt the user submitted.
    Prompt,
    /// The agent's final reply of a turn.
    Reply,
    /// The tool calls of one turn, in one short record (files changed,
    /// commands that failed).
    Turn,
    /// A note added by hand (`countersign note`).
    Note,
    /// The user's answers to the agent's questions (Claude Code's
    /// AskUserQuestion), in full.
    Answer,
    /// A subagent's report to the session (a background one's too), cut at
    /// [`MAX_KEPT_CHARS`](crate::memory::note::MAX_KEPT_CHARS).
    Report,
    /// A plan the user approved (Claude Code's ExitPlanMode), cut at
    /// [`MAX_KEPT_CHARS`](crate::memory::note::MAX_KEPT_CHARS).
    Plan,
    /// A message another agent session sent this one, cut at
    /// [`MAX_KEPT_CHARS`](crate::memory::note::MAX_KEPT_CHARS).
    Peer,
}

impl NoteKind {
    /// The word of the wire and of a note's line.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Prompt => "prompt",
            Self::Reply => "reply",
            Self::Turn => "turn",
            Self::Note => "note",
            Self::Answer => "answer",
            Self::Report => "report",
            Self::Plan => "plan",
            Self::Peer => "peer",
        }
    }

    /// The kind named `s`.
    pub fn parse(s: &str) -> Option<Self> {
        [
            Self::Prompt,
            Self::Reply,
            Self::Turn,
            Self::Note,
            Self::Answer,
            Self::Report,
            Self::Plan,
            Self::Peer,
        ]
        .into_iter()
        .find(|k| k.as_str() == s)
    }
}

/// The debt status filter (`status`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DebtStatus {
    /// Not yet resolved.
    Open,
    /// Resolved (confirmed or not).
    Resolved,
}

impl DebtStatus {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Open => "open",
            Self::Resolved => "resolved",
        }
    }

    /// Parses the `status` filter.
    pub fn parse_field(s: &str, field: &'static str) -> Result<Self, NotInEnum> {
        match s {
            "open" => Ok(Self::Open),
            "resolved" => Ok(Self::Resolved),
            _ => Err(NotInEnum {
                field,
                allowed: "[\"open\", \"resolved\"]".into(),
                got: s.into(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusal_names_field_and_values() {
        let e = Kind::parse_field("nope", "kind").unwrap_err().to_string();
        assert_eq!(
            e,
            "'kind' must be one of [\"bug\", \"feat\", \"proc\", \"status\", \"question\", \"answer\"] (got 'nope')"
        );
        assert_eq!(
            "done_local".parse::<WorkStatus>().unwrap(),
            WorkStatus::DoneLocal
        );
        assert!(DebtStatus::parse_field("closed", "status").is_err());
    }
}
