//! send_message: validate, expand recipients, append a `send` record.
//!
//! Checks run in the protocol's order so the first refusal an agent sees is
//! the same as everywhere else: role, topic, body, enums, recipients, parent,
//! audience, addenda. Checks that read the channel run after the catch-up,
//! under the write lock, so what was checked is what is written.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::body::op_body;
use super::refusal::{AppError, AppResult, check_length, check_one_line};
use super::request::{NullIsAnAnswer, present, yes};
use super::session::{Session, lookup_live, roles_list};
use crate::core::ids::Role;
use crate::core::op::{Op, Send};
use crate::core::timestamp::format_rfc3339;
use crate::core::vocab::{Kind, WorkStatus};
use crate::store::{Index, fold::consent};

/// Longest topic, in characters.
pub const TOPIC_MAX: usize = 80;
/// Where a refusal of a topic's characters sends the text they carried.
pub const TOPIC_HINT: &str =
    "; it is a subject line, and line breaks and formatting belong in 'body'";
/// Longest note, reason or addendum, in characters.
pub const NOTE_MAX: usize = 4000;
pub use super::body::INLINE_BODY_MAX;

/// `to`: one role, `"*"` for every other role, or a list of roles.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum ToArg {
    /// A role, or `"*"`.
    One(String),
    /// Several roles.
    Many(Vec<String>),
}

/// What send_message was asked to do: the tool's parameters.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct SendRequest {
    /// A role, a list of roles, or "*" (every other role).
    pub to: ToArg,
    /// One plain line, at most 80 characters.
    pub topic: String,
    /// The text (non-empty unless body_ref; at most 256 KiB).
    #[serde(default)]
    pub body: String,
    /// Instead of body: a sealed upload's id.
    #[serde(default)]
    pub body_ref: Option<String>,
    /// True: a debt for the single addressee, open until resolved and confirmed.
    #[serde(default)]
    pub action_required: bool,
    /// The message this answers.
    #[serde(default)]
    pub reply_to: Option<String>,
    /// bug, feat, proc, status, question or answer.
    #[serde(default)]
    pub kind: Option<String>,
    /// Initial work status (proposed, in_progress, done_local, needs_you, done, blocked).
    #[serde(default)]
    pub work_status: Option<String>,
    /// {role: text} added to the body for that recipient.
    #[serde(default)]
    pub addenda: Option<BTreeMap<String, String>>,
    /// False: recipients owe no vote.
    #[serde(default = "yes")]
    pub decision_requested: bool,
    /// The pin key a proposal changes, or null; kind=proc must pass it.
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "NullIsAnAnswer<String>")]
    pub pin_key: Option<Option<String>>,
    /// The message this nudges, or null; kind=proc must pass it.
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "NullIsAnAnswer<String>")]
    pub about_message_id: Option<Option<String>>,
    /// With pin_key: whose agree it needs, "*" or roles.
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "NullIsAnAnswer<ToArg>")]
    pub voters: Option<Option<ToArg>>,
}

impl SendRequest {
    /// A plain message to `to` (one role, or `"*"`): no debt, no tags, no
    /// proposal answers. Set the other fields on the result as needed.
    pub fn new(to: &str, topic: impl Into<String>, body: impl Into<String>) -> Self {
        Self {
            to: ToArg::One(to.to_owned()),
            topic: topic.into(),
            body: body.into(),
            body_ref: None,
            action_required: false,
            reply_to: None,
            kind: None,
            work_status: None,
            addenda: None,
            decision_requested: true,
            pin_key: None,
            about_message_id: None,
            voters: None,
        }
    }
}

/// Longest pin key, in characters.
pub const PIN_KEY_MAX: usize = 80;

/// Sends a message as the session's role.
pub fn send_message(s: &mut Session, req: SendRequest) -> AppResult<Sent> {
    let me = s.role()?;
    let topic = req.topic.trim().to_owned();
    if topic.is_empty() {
        return Err(AppError::value(
            "'topic' is required — it is a subject line of at most 80 characters; the details go in 'body'",
        ));
    }
    let n = topic.chars().count();
    if n > TOPIC_MAX {
        return Err(AppError::value(format!(
            "'topic' must be <= {TOPIC_MAX} characters (got {n}) — it is a subject line; put the \
             details in 'body'"
        )));
    }
    check_one_line("topic", &topic, TOPIC_HINT)?;
    // A sealed upload never changes, so the body resolved here is the body
    // written. A role the owner added arrives as a record: this also folds it
    // in before the roster is read below.
    s.catch_up()?;
    let body = op_body(s.index(), req.body, req.body_ref.as_deref())?;
    let kind = req
        .kind
        .as_deref()
        .map(|k| Kind::parse_field(k, "kind"))
        .transpose()
        .map_err(value)?;
    let work_status = req
        .work_status
        .as_deref()
        .map(|w| WorkStatus::parse_field(w, "work_status"))
        .transpose()
        .map_err(value)?;
    if kind == Some(Kind::Proc) {
        if req.pin_key.is_none() {
            return Err(AppError::value(
                "kind='proc' requires an explicit 'pin_key': the pin this proposal would change, or \
                 null if it changes none (omitting it is refused so the link is never guessed)",
            ));
        }
        if req.about_message_id.is_none() {
            return Err(AppError::value(
                "kind='proc' requires an explicit 'about_message_id': the message this proposal is \
                 about (then it is a nudge and owes no decision itself), or null if it stands on \
                 its own",
            ));
        }
    }
    let pin_key = match req.pin_key.clone().flatten() {
        Some(k) if !k.trim().is_empty() => {
            let k = k.trim().to_owned();
            check_length("pin_key", &k, PIN_KEY_MAX)?;
            check_one_line("pin_key", &k, "")?;
            Some(k)
        }
        _ => None,
    };
    let roster = s.roster();
    let to = recipients(&req.to, &me, &roster)?;
    let voters = voters(req.voters.as_ref(), pin_key.as_deref(), &me, &roster)?;
    let mut send = Send {
        to,
        topic,
        body: body.body,
        body_ref: body.body_ref,
        action_required: req.action_required,
        reply_to: None,
        kind,
        work_status,
        addenda: BTreeMap::new(),
        decision_requested: req.decision_requested,
        pin_key,
        voters,
        ..Send::default()
    };
    let writer = s.announce()?;
    let reply_to = req.reply_to;
    let raw_addenda = req.addenda.unwrap_or_default();
    let about = req.about_message_id.flatten();
    let (rec, ()) = s.channel_mut().append(&writer, |ix| {
        if let Some(parent) = &reply_to {
            let id = lookup_live(ix, "reply_to", parent)?.ok_or_else(|| {
                AppError::value(format!(
                    "reply_to message {parent} not found; list_messages or \
                     search_messages shows the ids this role can see"
                ))
            })?;
            send.reply_to = Some(id);
        }
        if let Some(target) = &about {
            let id = lookup_live(ix, "about_message_id", target)?.ok_or_else(|| {
                AppError::value(format!(
                    "about_message_id {target} not found; list_messages or \
                     search_messages shows the ids this role can see"
                ))
            })?;
            send.about = Some(id);
        }
        check_audience(ix, &send)?;
        if let Some(key) = &send.pin_key {
            check_round(ix, &roster, &me, key, &send)?;
        }
        send.addenda = addenda(raw_addenda, &send.to)?;
        Ok::<_, AppError>((Op::Send(send.clone()), ()))
    })?;
    Ok(Sent {
        id: rec.id.short(),
        created_at: format_rfc3339(rec.header.hlc.ms()),
        recipients: (send.to.len() > 1).then_some(send.to),
        voters: send.voters,
    })
}

/// What send_message answers.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Sent {
    /// Short id of the new message.
    pub id: String,
    /// RFC 3339.
    pub created_at: String,
    /// The recipients, when there are several.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<Vec<String>>")]
    pub recipients: Option<Vec<Role>>,
    /// The declared electorate, when one was declared.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<Vec<String>>")]
    pub voters: Option<Vec<Role>>,
}

/// A message with a pin key opens a round on it: one open round per key, read
/// by everyone.
fn check_round(ix: &Index, roster: &[Role], me: &Role, key: &str, send: &Send) -> AppResult<()> {
    let missing: Vec<Role> = roster
        .iter()
        .filter(|r| *r != me && !send.to.contains(r))
        .cloned()
        .collect();
    if !missing.is_empty() {
        return Err(AppError::value(format!(
            "a proposal for pin '{key}' must be addressed to every other role — {} are missing; \
             pass to='*' (use 'voters' to scope whose agreement it needs)",
            roles_list(&missing)
        )));
    }
    let state = consent::load_around(ix, roster, [], [key.to_owned()])?;
    if let Some(round) = state.consent.open_round(key) {
        return Err(AppError::value(format!(
            "pin '{key}' already has an open round: #{} by '{}' ({}). Ways forward: reply in its \
             thread, finish it with pin_set, have its author delete it (delete_message) or \
             revise it, or have one of its voters acknowledge it with 'void'",
            round.id.short(),
            round.from,
            format_rfc3339(round.created.ms())
        )));
    }
    Ok(())
}

/// Expands and checks `voters` (only meaningful with a pin key).
fn voters(
    arg: Option<&Option<ToArg>>,
    pin_key: Option<&str>,
    me: &Role,
    roster: &[Role],
) -> AppResult<Option<Vec<Role>>> {
    let others = || -> Vec<Role> { roster.iter().filter(|r| *r != me).cloned().collect() };
    let Some(key) = pin_key else {
        return match arg {
            Some(Some(_)) => Err(AppError::value(
                "'voters' only means something together with 'pin_key' — it names whose \
                 agreement a pin round needs; drop it, or give the proposal a pin_key",
            )),
            _ => Ok(None),
        };
    };
    let list = match arg {
        None => {
            return Err(AppError::value(format!(
                "a proposal for pin '{key}' must declare 'voters': '*' for every other role ({}), \
                 or the list of roles whose 'agree' it needs (the others still receive it and may \
                 vote, without blocking)",
                roles_list(&others())
            )));
        }
        Some(None) => return Ok(None),
        Some(Some(ToArg::One(s))) if s.trim() == "*" => return Ok(Some(others())),
        Some(Some(ToArg::One(s))) => vec![s.clone()],
        Some(Some(ToArg::Many(v))) => v.clone(),
    };
    let mut out: Vec<Role> = Vec::new();
    for name in list {
        let name = name.trim();
        if name.is_empty() || name == me.as_str() {
            continue;
        }
        let role = Role::new(name)
            .ok()
            .filter(|r| roster.contains(r))
            .ok_or_else(|| {
                AppError::value(format!(
                    "'voters' names '{name}', which is not a role of this channel; name only its \
                     roles, {}",
                    roles_list(roster)
                ))
            })?;
        if !out.contains(&role) {
            out.push(role);
        }
    }
    if out.is_empty() {
        return Err(AppError::value(
            "'voters' cannot be empty once your own role and blank names are dropped — name the \
             roles whose agreement the round needs, or pass '*'",
        ));
    }
    out.sort();
    Ok(Some(out))
}

fn value(e: impl std::fmt::Display) -> AppError {
    AppError::value(e.to_string())
}

/// Expands and checks `to` against the roster.
fn recipients(to: &ToArg, me: &Role, roster: &[Role]) -> AppResult<Vec<Role>> {
    let names: Vec<String> = match to {
        ToArg::One(s) if s.trim() == "*" => {
            let others: Vec<Role> = roster.iter().filter(|r| *r != me).cloned().collect();
            if others.is_empty() {
                return Err(AppError::value(
                    "to='*' needs at least one other role in the channel, and there is nobody else \
                     to address; the owner adds one with `countersign add-role ROLE`",
                ));
            }
            return Ok(others);
        }
        ToArg::One(s) => vec![s.trim().to_owned()],
        ToArg::Many(v) => v.iter().map(|s| s.trim().to_owned()).collect(),
    };
    if names.is_empty() || names.iter().any(String::is_empty) {
        return Err(AppError::value(
            "'to' is required — name a role, a list of roles, or '*' for every other role",
        ));
    }
    if names.iter().any(|n| n == "*") {
        return Err(AppError::value(
            "'*' cannot appear inside a list — pass to='*' on its own to address every other role",
        ));
    }
    let mut out: Vec<Role> = Vec::new();
    for n in names {
        let role = Role::new(&n)
            .ok()
            .filter(|r| roster.contains(r))
            .ok_or_else(|| {
                AppError::value(format!(
                    "cannot address '{n}': it is not a role of this channel; address one of its \
                     roles, {}",
                    roles_list(roster)
                ))
            })?;
        if &role == me {
            return Err(AppError::value(format!(
                "cannot send to self (role='{me}'); address another role (list_roles shows them)"
            )));
        }
        if !out.contains(&role) {
            out.push(role);
        }
    }
    out.sort();
    Ok(out)
}

fn addenda(raw: BTreeMap<String, String>, to: &[Role]) -> AppResult<BTreeMap<Role, String>> {
    let strangers: Vec<String> = raw
        .keys()
        .filter(|k| !to.iter().any(|r| r.as_str() == k.trim()))
        .cloned()
        .collect();
    if !strangers.is_empty() {
        return Err(AppError::value(format!(
            "'addenda' names {strangers:?} who are not recipients; key addenda (per-recipient \
             tails) by recipients only: {}",
            roles_list(to)
        )));
    }
    let mut out = BTreeMap::new();
    for (k, v) in raw {
        check_length(&format!("addenda['{k}']"), &v, NOTE_MAX)?;
        let role = Role::new(k.trim()).map_err(value)?;
        out.insert(role, v);
    }
    Ok(out)
}

/// The multi-recipient rules: debts are never broadcast; proposals and status
/// reports may be; anything else only as a reply that keeps its parent's audience.
fn check_audience(ix: &Index, send: &Send) -> AppResult<()> {
    if send.to.len() < 2 {
        return Ok(());
    }
    if send.action_required {
        return Err(AppError::value(
            "action_required cannot be broadcast — a debt has one addressee; send one message per role",
        ));
    }
    if matches!(send.kind, Some(Kind::Proc | Kind::Status)) {
        return Ok(());
    }
    let parent = match &send.reply_to {
        Some(id) => ix.audience_of(&id.hex())?,
        None => None,
    };
    let solo = || {
        AppError::value(
            "only ['proc', 'status'] may be sent to several roles on their own; send other kinds \
             to one role, or reply (reply_to) to a multi-recipient message keeping its audience",
        )
    };
    let Some((pfrom, pto)) = parent else {
        return Err(solo());
    };
    if pto.len() < 2 {
        return Err(solo());
    }
    let outsiders: Vec<&str> = send
        .to
        .iter()
        .map(Role::as_str)
        .filter(|r| *r != pfrom && !pto.iter().any(|p| p == r))
        .collect();
    if !outsiders.is_empty() {
        return Err(AppError::value(format!(
            "{outsiders:?} were not party to it, and a reply to message {} may only address its \
             author and recipients; drop them from 'to', or send them a new proc/status message",
            send.reply_to.map(|r| r.short()).unwrap_or_default()
        )));
    }
    Ok(())
}
