//! Operations: the typed payload (`op` + `data`) of a record.
//!
//! Ops hold normalized intent only (who was addressed, what was said), never
//! derived effects such as cascades or counters: the fold computes those, so a
//! late record still triggers them. This module owns the op names and the
//! shape of each op's data; it must not decide whether an op is allowed (the
//! app validates before writing, the fold decides at its place in the order).

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::ids::{FeedId, RecordId, Role};
use super::vocab::{Decision, Kind, NoteKind, WorkStatus};

/// One operation. The serialized form is `"op":"<name>","data":{...}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", content = "data", rename_all = "snake_case")]
pub enum Op {
    /// First record of every role feed: who writes here, with which key.
    FeedInit(FeedInit),
    /// Owner feed only: grants `pubkey` the right to write `feed` as `role`.
    Admit(Admit),
    /// Owner feed only: an invitation to join as a role, holding a
    /// commitment to the code's secret (never the secret).
    Invite(Invite),
    /// First record of a feed that joins by invitation (in place of
    /// `feed_init`): the feed's key and the proof of the code.
    Claim(Claim),
    /// A message.
    Send(Send),
    /// First delivery of messages to the author's role (read_inbox).
    Opened(Ids),
    /// Messages marked read by the author's role (mark_read).
    Read(Ids),
    /// Soft delete of a message.
    Delete(Target),
    /// A party resolves a debt.
    Resolve(Note),
    /// The other party confirms a resolution.
    Confirm(Note),
    /// A party reopens a resolved debt (`note` is the reason).
    Reopen(Note),
    /// A party moves a message's work status.
    WorkStatus(WorkStatusMove),
    /// Owner feed only: adds a role to the roster.
    AddRole(AddRole),
    /// A feed's key changes: in the feed itself, signed by the old key; or in
    /// the owner's feed, when the old key is lost.
    ReplaceKey(ReplaceKey),
    /// The author re-issues a message's body (and maybe its topic).
    Revise(Revise),
    /// A role's decision on a message.
    Ack(Ack),
    /// A new version of a pin.
    PinSet(PinSet),
    /// A cleanup pass retiring messages settled before the rules existed.
    Backfill(Backfill),
    /// Restores messages a cleanup pass retired.
    UndoBackfill(UndoBackfill),
    /// A piece of an upload (the first piece starts it).
    UploadChunk(UploadChunk),
    /// Seals an upload: its bytes stop moving.
    Seal(Seal),
    /// A line of the memory's summary tree (`core::memory`).
    Summary(Summary),
    /// A note of the memory (`core::memory::note`): a prompt, a final reply,
    /// a turn's tool calls, or a note by hand.
    Note(MemoryNote),
}

/// The kind of an op, without its data: the `op` word of a record, and of
/// the index's `op` column. Every match on it is exhaustive, so a new op
/// does not compile until each place that sorts ops by kind (the memory's
/// `memory::sequence::memory_effect`, …) says what it does with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum OpKind {
    /// [`Op::FeedInit`].
    FeedInit,
    /// [`Op::Admit`].
    Admit,
    /// [`Op::Invite`].
    Invite,
    /// [`Op::Claim`].
    Claim,
    /// [`Op::Send`].
    Send,
    /// [`Op::Opened`].
    Opened,
    /// [`Op::Read`].
    Read,
    /// [`Op::Delete`].
    Delete,
    /// [`Op::Resolve`].
    Resolve,
    /// [`Op::Confirm`].
    Confirm,
    /// [`Op::Reopen`].
    Reopen,
    /// [`Op::WorkStatus`].
    WorkStatus,
    /// [`Op::AddRole`].
    AddRole,
    /// [`Op::ReplaceKey`].
    ReplaceKey,
    /// [`Op::Revise`].
    Revise,
    /// [`Op::Ack`].
    Ack,
    /// [`Op::PinSet`].
    PinSet,
    /// [`Op::Backfill`].
    Backfill,
    /// [`Op::UndoBackfill`].
    UndoBackfill,
    /// [`Op::UploadChunk`].
    UploadChunk,
    /// [`Op::Seal`].
    Seal,
    /// [`Op::Summary`].
    Summary,
    /// [`Op::Note`].
    Note,
}

impl OpKind {
    /// Every kind, in the order of [`Op`]'s variants.
    pub const ALL: [Self; 23] = [
        Self::FeedInit,
        Self::Admit,
        Self::Invite,
        Self::Claim,
        Self::Send,
        Self::Opened,
        Self::Read,
        Self::Delete,
        Self::Resolve,
        Self::Confirm,
        Self::Reopen,
        Self::WorkStatus,
        Self::AddRole,
        Self::ReplaceKey,
        Self::Revise,
        Self::Ack,
        Self::PinSet,
        Self::Backfill,
        Self::UndoBackfill,
        Self::UploadChunk,
        Self::Seal,
        Self::Summary,
        Self::Note,
    ];

    /// The wire name (`"feed_init"`, `"send"` …), as records and the
    /// index's `op` column hold it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::FeedInit => "feed_init",
            Self::Admit => "admit",
            Self::Invite => "invite",
            Self::Claim => "claim",
            Self::Send => "send",
            Self::Opened => "opened",
            Self::Read => "read",
            Self::Delete => "delete",
            Self::Resolve => "resolve",
            Self::Confirm => "confirm",
            Self::Reopen => "reopen",
            Self::WorkStatus => "work_status",
            Self::AddRole => "add_role",
            Self::ReplaceKey => "replace_key",
            Self::Revise => "revise",
            Self::Ack => "ack",
            Self::PinSet => "pin_set",
            Self::Backfill => "backfill",
            Self::UndoBackfill => "undo_backfill",
            Self::UploadChunk => "upload_chunk",
            Self::Seal => "seal",
            Self::Summary => "summary",
            Self::Note => "note",
        }
    }

    /// The kind named `name` on the wire; `None` for a name this version
    /// does not know (a newer version's op, or junk).
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == name)
    }
}

impl fmt::Display for OpKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Op {
    /// What kind of op this is.
    pub fn kind(&self) -> OpKind {
        match self {
            Self::FeedInit(_) => OpKind::FeedInit,
            Self::Admit(_) => OpKind::Admit,
            Self::Invite(_) => OpKind::Invite,
            Self::Claim(_) => OpKind::Claim,
            Self::Send(_) => OpKind::Send,
            Self::Opened(_) => OpKind::Opened,
            Self::Read(_) => OpKind::Read,
            Self::Delete(_) => OpKind::Delete,
            Self::Resolve(_) => OpKind::Resolve,
            Self::Confirm(_) => OpKind::Confirm,
            Self::Reopen(_) => OpKind::Reopen,
            Self::WorkStatus(_) => OpKind::WorkStatus,
            Self::AddRole(_) => OpKind::AddRole,
            Self::ReplaceKey(_) => OpKind::ReplaceKey,
            Self::Revise(_) => OpKind::Revise,
            Self::Ack(_) => OpKind::Ack,
            Self::PinSet(_) => OpKind::PinSet,
            Self::Backfill(_) => OpKind::Backfill,
            Self::UndoBackfill(_) => OpKind::UndoBackfill,
            Self::UploadChunk(_) => OpKind::UploadChunk,
            Self::Seal(_) => OpKind::Seal,
            Self::Summary(_) => OpKind::Summary,
            Self::Note(_) => OpKind::Note,
        }
    }

    /// The wire name of this op.
    pub fn name(&self) -> &'static str {
        self.kind().as_str()
    }

    /// Decodes the `data` of an op named `name`; `Ok(None)` for a name this
    /// version does not know.
    pub fn decode(name: &str, data: &str) -> Result<Option<Self>, serde_json::Error> {
        use serde_json::from_str;
        let Some(kind) = OpKind::parse(name) else {
            return Ok(None);
        };
        Ok(Some(match kind {
            OpKind::FeedInit => Self::FeedInit(from_str(data)?),
            OpKind::Admit => Self::Admit(from_str(data)?),
            OpKind::Invite => Self::Invite(from_str(data)?),
            OpKind::Claim => Self::Claim(from_str(data)?),
            OpKind::Send => Self::Send(from_str(data)?),
            OpKind::Opened => Self::Opened(from_str(data)?),
            OpKind::Read => Self::Read(from_str(data)?),
            OpKind::Delete => Self::Delete(from_str(data)?),
            OpKind::Resolve => Self::Resolve(from_str(data)?),
            OpKind::Confirm => Self::Confirm(from_str(data)?),
            OpKind::Reopen => Self::Reopen(from_str(data)?),
            OpKind::WorkStatus => Self::WorkStatus(from_str(data)?),
            OpKind::AddRole => Self::AddRole(from_str(data)?),
            OpKind::ReplaceKey => Self::ReplaceKey(from_str(data)?),
            OpKind::Revise => Self::Revise(from_str(data)?),
            OpKind::Ack => Self::Ack(from_str(data)?),
            OpKind::PinSet => Self::PinSet(from_str(data)?),
            OpKind::Backfill => Self::Backfill(from_str(data)?),
            OpKind::UndoBackfill => Self::UndoBackfill(from_str(data)?),
            OpKind::UploadChunk => Self::UploadChunk(from_str(data)?),
            OpKind::Seal => Self::Seal(from_str(data)?),
            OpKind::Summary => Self::Summary(from_str(data)?),
            OpKind::Note => Self::Note(from_str(data)?),
        }))
    }

    /// The one-line fields this op carries, by their wire names: text shown
    /// as one line wherever it appears, so it holds no line break, control,
    /// bidirectional or invisible character (`core::peer_text`), at write
    /// and at ingest. Bodies, notes and addenda are not among them.
    pub fn one_line_fields(&self) -> Vec<(&'static str, &str)> {
        let mut out = Vec::new();
        match self {
            Self::FeedInit(f) => out.push(("device_name", f.device_name.as_str())),
            Self::Claim(c) => out.push(("device_name", c.device_name.as_str())),
            Self::Send(s) => {
                out.push(("topic", s.topic.as_str()));
                if let Some(k) = &s.pin_key {
                    out.push(("pin_key", k.as_str()));
                }
            }
            Self::Revise(r) => {
                if let Some(t) = &r.topic {
                    out.push(("topic", t.as_str()));
                }
            }
            Self::PinSet(p) => {
                out.push(("key", p.key.as_str()));
                out.push(("title", p.title.as_str()));
                out.push(("version", p.version.as_str()));
            }
            Self::UploadChunk(u) => {
                if let Some(l) = &u.label {
                    out.push(("label", l.as_str()));
                }
            }
            _ => {}
        }
        out
    }

    /// The existing messages this op acts on (none for creation ops, and
    /// none for the channel-wide consent ops, whose effects the consent fold
    /// computes).
    pub fn targets(&self) -> &[RecordId] {
        match self {
            Self::Delete(t) => std::slice::from_ref(&t.id),
            Self::Resolve(n) | Self::Confirm(n) | Self::Reopen(n) => std::slice::from_ref(&n.id),
            Self::WorkStatus(w) => std::slice::from_ref(&w.id),
            Self::Revise(r) => std::slice::from_ref(&r.id),
            Self::Ack(a) => std::slice::from_ref(&a.id),
            Self::Opened(ids) | Self::Read(ids) => &ids.ids,
            Self::FeedInit(_)
            | Self::Admit(_)
            | Self::Invite(_)
            | Self::Claim(_)
            | Self::Send(_)
            | Self::AddRole(_)
            | Self::ReplaceKey(_)
            | Self::PinSet(_)
            | Self::Backfill(_)
            | Self::UndoBackfill(_)
            | Self::UploadChunk(_)
            | Self::Seal(_)
            | Self::Summary(_)
            | Self::Note(_) => &[],
        }
    }
}

/// Data of `feed_init`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FeedInit {
    /// The role this feed writes as.
    pub role: Role,
    /// Hex ed25519 public key of the feed.
    pub pubkey: String,
    /// A free-form device label (host name), informative.
    pub device_name: String,
}

/// Data of `admit`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Admit {
    /// The feed being admitted.
    pub feed: FeedId,
    /// Its hex ed25519 public key.
    pub pubkey: String,
    /// The role it may write as (the feed's role part).
    pub role: Role,
}

/// Data of `invite`: what the owner's machine needs to admit the first
/// valid claim, and nothing that lets a reader of the folder claim.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Invite {
    /// The role a machine joins as.
    pub role: Role,
    /// Hex ed25519 public key of the invitation key, whose seed is the code's
    /// secret: the commitment a claim's proof is checked against.
    pub key: String,
    /// After this time (ms since the Unix epoch) the invitation admits nobody.
    pub expires_ms: i64,
}

/// Data of `claim`: the first record of a feed joining by invitation,
/// signed by the feed's own key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Claim {
    /// The invitation taken (full id of the owner's `invite` record).
    pub invitation: RecordId,
    /// The role this feed writes as.
    pub role: Role,
    /// Hex ed25519 public key of the feed.
    pub pubkey: String,
    /// A free-form device label (host name), informative.
    pub device_name: String,
    /// Base64 signature by the invitation key binding channel, invitation,
    /// feed and `pubkey` (`core::invitation`): proves the code without
    /// revealing it.
    pub proof: String,
}

/// Data of `add_role`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AddRole {
    /// The new role.
    pub role: Role,
}

/// Data of `replace_key`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplaceKey {
    /// The feed whose key changes.
    pub feed: FeedId,
    /// Its new hex ed25519 public key: every later record of the feed is signed by it.
    pub pubkey: String,
    /// In the owner's feed only: the first seq of `feed` signed by the new
    /// key (in the feed itself, the change starts with the next record).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_seq: Option<u64>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_true(b: &bool) -> bool {
    *b
}

fn yes() -> bool {
    true
}

/// Data of `send`: a message, with recipients already expanded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Send {
    /// Recipients, sorted and distinct, never the author. One element is
    /// point-to-point; more is a multi-recipient message.
    pub to: Vec<Role>,
    /// Subject line, stripped, at most 80 characters.
    pub topic: String,
    /// The shared body (non-empty).
    pub body: String,
    /// True when the message is a debt.
    #[serde(default, skip_serializing_if = "is_false")]
    pub action_required: bool,
    /// Parent message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_to: Option<RecordId>,
    /// Message kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<Kind>,
    /// Work status set at send time (an audited transition by the sender).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_status: Option<WorkStatus>,
    /// Per-recipient tails of the body.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub addenda: BTreeMap<Role, String>,
    /// False when the author asks for no decision.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub decision_requested: bool,
    /// The pin key a proposal would change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pin_key: Option<String>,
    /// The message this one is about (a nudge).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub about: Option<RecordId>,
    /// The declared electorate of a pin round, sorted, without the author.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub voters: Option<Vec<Role>>,
    /// The sealed upload that is the body (then `body` is empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_ref: Option<BodyRef>,
}

/// A body kept in a sealed upload rather than inline.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BodyRef {
    /// The upload (full id of its first chunk record).
    pub upload: RecordId,
    /// Hex sha256 of the sealed upload's bytes.
    pub sha256: String,
}

/// A list of messages (by full record id of their `send`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ids {
    /// The messages.
    pub ids: Vec<RecordId>,
}

/// One message (by full record id of its `send`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Target {
    /// The message.
    pub id: RecordId,
}

/// A lifecycle step on one message with an optional note.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Note {
    /// The message.
    pub id: RecordId,
    /// Free text (at most 4000 characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Data of `work_status`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkStatusMove {
    /// The message.
    pub id: RecordId,
    /// The new value.
    pub value: WorkStatus,
    /// The debt this work waits for (only with `blocked`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked_by: Option<RecordId>,
    /// Free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The record of the latest work-status move its author had seen (`None`
    /// if none). A move whose base is no longer the latest was made without
    /// seeing a concurrent one, and loses to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<RecordId>,
}

/// Data of `revise`: the new text of a message, under the same id.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Revise {
    /// The message.
    pub id: RecordId,
    /// The new topic, when it changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topic: Option<String>,
    /// The new body (empty with `body_ref`).
    pub body: String,
    /// The sealed upload that is the new body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_ref: Option<BodyRef>,
    /// Why (at most 4000 characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Data of `ack`: a decision bound to the bytes it was cast on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ack {
    /// The message.
    pub id: RecordId,
    /// The decision.
    pub decision: Decision,
    /// Free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Hex sha256 of the body the vote was cast on.
    pub body_sha256: String,
    /// The current version of the proposal's pin key when the vote was cast.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pin_head: Option<RecordId>,
}

/// Data of `pin_set`: one version of a pin.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PinSet {
    /// The key.
    pub key: String,
    /// Title of the version.
    pub title: String,
    /// Free-form version label.
    pub version: String,
    /// The text (empty with `body_ref`).
    pub body: String,
    /// The sealed upload that is the text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_ref: Option<BodyRef>,
    /// The proposal whose agreement allows this version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved_by: Option<RecordId>,
    /// The version this one replaces (`None` for the first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<RecordId>,
}

/// Data of `backfill`: a reviewed cleanup pass.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Backfill {
    /// The messages retired (without their cascaded nudges).
    pub ids: Vec<RecordId>,
    /// The keys the pass names, each with its owner's word.
    pub keys: Vec<String>,
    /// One message per key: the key owner's go-ahead.
    pub words: Vec<RecordId>,
}

/// Data of `undo_backfill`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UndoBackfill {
    /// The messages to restore.
    pub ids: Vec<RecordId>,
    /// Why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Data of `upload_chunk`: a piece of a document.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UploadChunk {
    /// The upload appended to (`None`: this chunk starts a new upload, whose
    /// id is this record's id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upload: Option<RecordId>,
    /// The text of this piece.
    pub text: String,
    /// A label, on the first piece only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
}

/// Data of `seal`: fixes an upload's bytes and publishes their digest.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Seal {
    /// The upload.
    pub upload: RecordId,
    /// Hex sha256 of the whole document.
    pub sha256: String,
    /// Its length in bytes.
    pub length_bytes: u64,
    /// Its length in characters.
    pub length_chars: u64,
    /// How many chunks it holds.
    pub chunks: u64,
}

/// Data of `summary`: the text of one line of the memory, naming exactly
/// what it covers (`core::memory::summary` checks it, at write and at read).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Summary {
    /// One item's record id (a line of one long item), or the names of the
    /// two neighbouring lines it merges, in order.
    pub covers: Vec<RecordId>,
    /// The line: one line of text, at most 512 bytes.
    pub text: String,
}

/// Data of `note`: one note of the memory, in its writer's feed
/// (`core::memory::note` checks it, at write and at read).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryNote {
    /// What it records.
    pub kind: NoteKind,
    /// The text, word for word (at most 64 KiB).
    pub text: String,
    /// The recorded event it came from, so a second delivery adds nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    /// The agent that recorded it (`claude`, `codex`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// A short hash of the agent's session id (never the id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// The folder the session worked in, relative to the project root (`.`
    /// for the root); absent in notes written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub folder: Option<String>,
    /// A short hash of that folder's absolute path (never the path).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub folder_hash: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The op names serde knows, from its refusal of an unknown one.
    fn serde_names() -> Vec<String> {
        let err = serde_json::from_str::<Op>(r#"{"op":"no-such-op","data":{}}"#)
            .expect_err("an unknown op is refused")
            .to_string();
        let expected = err
            .split_once("expected one of ")
            .expect("serde lists the ops")
            .1;
        expected
            .split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn every_kind_is_one_serde_op_name_and_parses_back() {
        let names: Vec<&str> = OpKind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(names, serde_names());
        for k in OpKind::ALL {
            assert_eq!(OpKind::parse(k.as_str()), Some(k));
            assert_eq!(k.to_string(), k.as_str());
        }
        assert_eq!(OpKind::parse("teleport"), None);
        assert_eq!(OpKind::parse("Send"), None);
    }

    #[test]
    fn a_decoded_op_is_of_the_kind_it_was_named() {
        let op = Op::decode("read", r#"{"ids":[]}"#).unwrap().unwrap();
        assert_eq!(op.kind(), OpKind::Read);
        assert_eq!(op.name(), "read");
        assert_eq!(Op::decode("teleport", "{}").unwrap(), None);
        for k in OpKind::ALL {
            // Every kind's name is known to decode: its data decodes to an op
            // of that kind, or is refused for a missing field.
            match Op::decode(k.as_str(), "{}") {
                Ok(Some(op)) => assert_eq!(op.kind(), k),
                Ok(None) => panic!("decode does not know {k}"),
                Err(_) => {}
            }
        }
    }
}
