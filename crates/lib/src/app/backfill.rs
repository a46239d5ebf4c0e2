//! backfill_superseded and undo_backfill: the reviewed, undoable cleanup pass.
//!
//! The candidates are `core::backfill::candidates`; this module narrows the
//! preview, guards the apply (ids, an independent count, and per key the key
//! owner's word), writes one `backfill` record, and restores on request.

use std::collections::{BTreeMap, BTreeSet};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::refusal::{AppError, AppResult, check_length};
use super::request::yes;
use super::retirement::retired_by;
use super::rows::{FieldsArg, Projected, Projection, Recipients, project};
use super::send::NOTE_MAX;
use super::session::{Named, Session, lookup};
use crate::core::backfill::{Candidate, Cited, MatchKind, Settled, candidates};
use crate::core::consent::Consent;
use crate::core::ids::{IdPrefix, RecordId, Role};
use crate::core::op::{Backfill, Op, UndoBackfill};
use crate::core::timestamp::{format_rfc3339, parse_since};
use crate::store::Index;
use crate::store::channel::now_ms;
use crate::store::fold::consent;
use crate::store::index::PrefixMatch;

/// One value or a list of them (`key`, `word_message_id`).
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum OneOrMany {
    /// One value.
    One(String),
    /// Several.
    Many(Vec<String>),
}

impl OneOrMany {
    fn list(&self) -> Vec<String> {
        match self {
            Self::One(s) => vec![s.trim().to_owned()],
            Self::Many(v) => v.iter().map(|s| s.trim().to_owned()).collect(),
        }
    }
}

/// What backfill_superseded was asked to do: the tool's parameters.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
pub struct BackfillRequest {
    /// True: preview only. False: apply (needs ids, expect_count, key, word_message_id).
    #[serde(default = "yes")]
    pub dry_run: bool,
    /// The messages to retire, as reviewed in the preview.
    #[serde(default)]
    pub ids: Option<Vec<String>>,
    /// Field names of preview rows, or "headers".
    #[serde(default)]
    pub fields: Option<FieldsArg>,
    /// The pin key(s) this pass settles.
    #[serde(default)]
    pub key: Option<OneOrMany>,
    /// Per key, in order: the message where its owner agreed to this cleanup.
    #[serde(default)]
    pub word_message_id: Option<OneOrMany>,
    /// The number of ids, counted independently; a mismatch retires nothing.
    #[serde(default)]
    pub expect_count: Option<i64>,
    /// The preview's generated_at.
    #[serde(default)]
    pub snapshot_at: Option<String>,
    /// Also proposals that only cite a candidate as #id.
    #[serde(default)]
    pub include_by_reference: bool,
}

/// Every field of a preview row.
const BACKFILL_FIELDS: &[&str] = &[
    "id",
    "from",
    "to",
    "topic",
    "created_at",
    "pin_key",
    "settled_by",
    "claimed_by",
    "claim_count",
    "match_kind",
    "structural",
];

/// A preview row's headers: everything but pin_key and settled_by.
const BACKFILL_HEADERS: &[&str] = &[
    "id",
    "from",
    "to",
    "topic",
    "created_at",
    "claimed_by",
    "claim_count",
    "match_kind",
    "structural",
];

/// Previews (default) or applies the cleanup pass.
pub fn backfill_superseded(s: &mut Session, req: BackfillRequest) -> AppResult<BackfillOutcome> {
    s.role()?;
    let proj = Projection::parse(req.fields.as_ref(), BACKFILL_FIELDS, BACKFILL_HEADERS)?;
    let keys: Option<Vec<String>> = req.key.as_ref().map(OneOrMany::list);
    let snapshot = req
        .snapshot_at
        .as_deref()
        .map(|t| parse_since(t).map_err(|e| AppError::value(e.named("snapshot_at"))))
        .transpose()?;
    if !req.dry_run {
        return apply(s, &req, keys, snapshot);
    }
    s.catch_up()?;
    let roster = s.roster();
    let ix = s.index();
    let state = consent::load(ix, &roster)?.consent;
    let all = candidates(&state, &|p| cite(ix, p));
    let total = all.len();
    let mut by_reference = 0;
    let mut other_keys = 0;
    let mut rows: Vec<&Candidate> = Vec::new();
    for c in &all {
        if c.kind == MatchKind::Reference && !req.include_by_reference {
            by_reference += 1;
            continue;
        }
        if let Some(k) = &keys
            && c.kind == MatchKind::Key
            && !c.claimed_by.iter().any(|x| k.contains(x))
        {
            other_keys += 1;
            continue;
        }
        rows.push(c);
    }
    let mut not_candidates = Vec::new();
    if let Some(ids) = &req.ids {
        let wanted: Vec<(String, Option<RecordId>)> = ids
            .iter()
            .map(|raw| Ok((raw.clone(), lookup_id(ix, "ids", raw)?)))
            .collect::<AppResult<_>>()?;
        rows.retain(|c| wanted.iter().any(|(_, id)| *id == Some(c.id)));
        for (raw, id) in &wanted {
            if !all.iter().any(|c| Some(c.id) == *id) {
                not_candidates.push(raw.clone());
            }
        }
    }
    let chosen: BTreeSet<RecordId> = rows.iter().map(|c| c.id).collect();
    let cascade = cascade_of(&state, &chosen);
    let out_rows: Vec<Projected<Candidacy>> = rows
        .iter()
        .map(|c| project(proj.as_ref(), row(&state, c)))
        .collect();
    let multi: Vec<String> = rows
        .iter()
        .filter(|c| c.claimed_by.len() > 1)
        .map(|c| c.id.short())
        .collect();
    Ok(BackfillOutcome::Preview(BackfillPreview {
        dry_run: true,
        generated_at: format_rfc3339(now_ms()),
        would_retire: out_rows,
        count: rows.len(),
        would_cascade: cascade.iter().map(RecordId::short).collect(),
        cascade_count: cascade.len(),
        not_candidates,
        multi_claimed: multi,
        total_candidates: total,
        filtered_by_key: keys,
        excluded: Excluded {
            other_keys,
            by_reference,
        },
        note: "nothing was changed. To apply: pass dry_run=false with exactly these ids, \
                 expect_count (the number of ids, taken from the message carrying the key \
                 owner's agreement), key and word_message_id (one word per key, written by the \
                 role that wrote the key's current version), and snapshot_at=generated_at",
    }))
}

/// What backfill_superseded answers: a preview, or what a pass retired.
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum BackfillOutcome {
    /// `dry_run=true`.
    Preview(BackfillPreview),
    /// `dry_run=false`.
    Applied(BackfillApplied),
}

/// A cleanup pass previewed; nothing written.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct BackfillPreview {
    /// Always true.
    pub dry_run: bool,
    /// RFC 3339; pass it back as snapshot_at.
    pub generated_at: String,
    /// The candidates this pass would retire.
    pub would_retire: Vec<Projected<Candidacy>>,
    /// How many.
    pub count: usize,
    /// Short ids of the nudges that would retire with them.
    pub would_cascade: Vec<String>,
    /// How many.
    pub cascade_count: usize,
    /// Ids passed that are no candidates.
    pub not_candidates: Vec<String>,
    /// Candidates claimed by several keys.
    pub multi_claimed: Vec<String>,
    /// Every candidate, before filters.
    pub total_candidates: usize,
    /// The keys passed.
    pub filtered_by_key: Option<Vec<String>>,
    /// Candidates the filters left out.
    pub excluded: Excluded,
    /// How to apply it.
    pub note: &'static str,
}

/// Candidates a preview left out, by reason.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Excluded {
    /// Claimed by keys not passed.
    pub other_keys: usize,
    /// Only citing a candidate (include_by_reference=false).
    pub by_reference: usize,
}

/// A cleanup pass written.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct BackfillApplied {
    /// Always false.
    pub dry_run: bool,
    /// RFC 3339.
    pub applied_at: String,
    /// Messages retired.
    pub count: usize,
    /// Nudges retired with them.
    pub cascaded_count: usize,
    /// Their short ids.
    pub retired: Vec<String>,
    /// The nudges' short ids.
    pub cascaded: Vec<String>,
    /// The keys whose owners gave their word.
    pub keys: Vec<String>,
}

/// What undo_backfill answers.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Restoration {
    /// Short ids live again.
    pub restored: Vec<String>,
    /// Ids left as they were, with why.
    pub refused: Vec<String>,
}

fn apply(
    s: &mut Session,
    req: &BackfillRequest,
    keys: Option<Vec<String>>,
    snapshot: Option<i64>,
) -> AppResult<BackfillOutcome> {
    let Some(raw_ids) = &req.ids else {
        return Err(AppError::value(
            "'ids' is required when dry_run=false — pass exactly the ids you reviewed in the \
             preview",
        ));
    };
    let Some(expect) = req.expect_count else {
        return Err(AppError::value(
            "'expect_count' is required when dry_run=false — the number of messages to retire, \
             taken from the message that carries the key owner's agreement",
        ));
    };
    let words: Vec<String> = req
        .word_message_id
        .as_ref()
        .map(OneOrMany::list)
        .unwrap_or_default();
    let keys = keys.unwrap_or_default();
    if keys.is_empty() || keys.len() != words.len() {
        return Err(AppError::value(
            "pass 'key' and 'word_message_id' together, one word per key, in the same order — \
             each word is the message in which that key's owner agreed to this cleanup",
        ));
    }
    let writer = s.announce()?;
    let roster = s.roster();
    let (rec, ids) = s.channel_mut().append(&writer, |ix| {
        let state = consent::load(ix, &roster)?.consent;
        let all = candidates(&state, &|p| cite(ix, p));
        let mut ids: Vec<RecordId> = Vec::new();
        let mut problems: Vec<String> = Vec::new();
        for raw in raw_ids {
            match lookup_id(ix, "ids", raw) {
                Ok(Some(id)) if !ids.contains(&id) => ids.push(id),
                Ok(Some(_)) => {}
                Ok(None) => problems.push(format!("{raw}: never were candidates")),
                Err(AppError::Value(why)) => problems.push(format!("{raw}: {why}")),
                Err(e) => return Err(e),
            }
        }
        if expect != ids.len() as i64 {
            return Err(AppError::value(format!(
                "'expect_count' is {expect} but 'ids' names {} distinct messages — count them again \
                 from the message that carries the owner's word. Nothing was retired",
                ids.len()
            )));
        }
        let approvals: BTreeMap<RecordId, String> = state
            .pins
            .iter()
            .flat_map(|(k, v)| v.iter().filter_map(move |p| p.set.approved_by.map(|a| (a, k.clone()))))
            .collect();
        for id in &ids {
            let sid = id.short();
            if let Some(k) = approvals.get(id) {
                problems.push(format!("cannot be retired: {sid} (approval record of pin '{k}')"));
                continue;
            }
            match all.iter().find(|c| c.id == *id) {
                Some(c) => {
                    if c.kind == MatchKind::Reference && !req.include_by_reference {
                        problems.push(format!(
                            "{sid} only cites a candidate — pass include_by_reference=true to \
                             retire it"
                        ));
                    } else if c.kind == MatchKind::Key {
                        let named: Vec<&String> =
                            c.claimed_by.iter().filter(|k| keys.contains(k)).collect();
                        if named.is_empty() {
                            problems.push(format!(
                                "{sid}: these are not claimed by the key(s) this pass names \
                                 ({keys:?}) but by {:?}",
                                c.claimed_by
                            ));
                        } else if named.len() < c.claimed_by.len() {
                            let missing: Vec<&String> =
                                c.claimed_by.iter().filter(|k| !keys.contains(k)).collect();
                            problems.push(format!(
                                "{sid} is claimed by several keys; each needs its owner's word. \
                                 Missing: {missing:?}"
                            ));
                        }
                    }
                }
                None => match state.messages.get(id).and_then(|m| m.retired.clone()) {
                    Some(r) if snapshot.is_none_or(|t| r.key.hlc.ms() > t) => problems.push(
                        format!(
                            "{sid}: retired after your snapshot (by '{}' at {})",
                            r.role,
                            format_rfc3339(r.key.hlc.ms())
                        ),
                    ),
                    _ => problems.push(format!("{sid}: never were candidates")),
                },
            }
        }
        let mut word_ids = Vec::new();
        for (key, w) in keys.iter().zip(&words) {
            let id = match lookup_id(ix, "word_message_id", w) {
                Ok(Some(id)) => id,
                Ok(None) => {
                    problems.push(format!("word_message_id {w} for '{key}' not found"));
                    continue;
                }
                Err(AppError::Value(why)) => {
                    problems.push(why);
                    continue;
                }
                Err(e) => return Err(e),
            };
            word_ids.push(id);
            let owner = state.head(key).map(|h| h.role.clone());
            let author = author_of(ix, &id)?;
            if let Some(o) = owner
                && author.as_ref() != Some(&o)
            {
                problems.push(format!(
                    "the word for '{key}' (#{}) was written by '{}', but '{key}' is owned by \
                     '{o}' (who wrote its current version)",
                    id.short(),
                    author.map(|a| a.to_string()).unwrap_or_default()
                ));
            }
        }
        if !problems.is_empty() {
            return Err(AppError::value(format!(
                "nothing was retired: {}",
                problems.join("; ")
            )));
        }
        let op = Op::Backfill(Backfill {
            ids: ids.clone(),
            keys: keys.clone(),
            words: word_ids,
        });
        Ok::<_, AppError>((op, ids))
    })?;
    let all_retired = retired_by(s.index(), &rec.id)?;
    let retired: Vec<String> = ids.iter().map(RecordId::short).collect();
    let cascaded: Vec<String> = all_retired
        .into_iter()
        .filter(|i| !retired.contains(i))
        .collect();
    Ok(BackfillOutcome::Applied(BackfillApplied {
        dry_run: false,
        applied_at: format_rfc3339(rec.header.hlc.ms()),
        count: retired.len(),
        cascaded_count: cascaded.len(),
        retired,
        cascaded,
        keys,
    }))
}

/// What undo_backfill was asked to do: the tool's parameters.
#[derive(Clone, Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct UndoBackfillRequest {
    /// Messages a cleanup pass retired.
    pub ids: Vec<String>,
    /// Why.
    #[serde(default)]
    pub reason: Option<String>,
}

/// Restores messages a cleanup pass retired.
pub fn undo_backfill(
    s: &mut Session,
    ids: &[String],
    reason: Option<String>,
) -> AppResult<Restoration> {
    let me = s.role()?;
    if ids.is_empty() {
        return Err(AppError::value(
            "'ids' is required; pass the messages a cleanup pass retired that should be live \
             again",
        ));
    }
    if let Some(r) = &reason {
        check_length("reason", r, NOTE_MAX)?;
    }
    let writer = s.announce()?;
    let roster = s.roster();
    let (_, (restored, refused)) = s.channel_mut().append_if(&writer, |ix| {
        let state = consent::load(ix, &roster)?.consent;
        let mut restored: Vec<RecordId> = Vec::new();
        let mut refused: Vec<String> = Vec::new();
        let mut forbidden: Vec<String> = Vec::new();
        for raw in ids {
            let id = match lookup_id(ix, "ids", raw) {
                Ok(Some(id)) => id,
                Ok(None) => {
                    refused.push(format!("{raw}: not found"));
                    continue;
                }
                Err(AppError::Value(why)) => {
                    refused.push(format!("{raw}: {why}"));
                    continue;
                }
                Err(e) => return Err(e),
            };
            let sid = id.short();
            let Some(r) = state.messages.get(&id).and_then(|m| m.retired.clone()) else {
                refused.push(format!("{sid}: is not retired"));
                continue;
            };
            if !r.backfill {
                refused.push(format!(
                    "{sid}: retired by the live rule, not by a cleanup — it stays retired"
                ));
                continue;
            }
            let owners: Vec<Role> = r
                .pin_keys
                .iter()
                .filter_map(|k| state.head(k).map(|h| h.role.clone()))
                .collect();
            if r.role != me && !owners.contains(&me) {
                forbidden.push(format!(
                    "{sid}: only '{}' (who ran the cleanup) or the owner of {:?} may undo it",
                    r.role, r.pin_keys
                ));
                continue;
            }
            if !restored.contains(&id) {
                restored.push(id);
            }
        }
        if restored.is_empty() {
            if refused.is_empty() && !forbidden.is_empty() {
                return Err(AppError::permission(format!(
                    "nothing was restored — {}",
                    forbidden.join("; ")
                )));
            }
            refused.extend(forbidden);
            return Err(AppError::value(format!(
                "nothing was restored — {}",
                refused.join("; ")
            )));
        }
        refused.extend(forbidden);
        let op = Op::UndoBackfill(UndoBackfill {
            ids: restored.clone(),
            reason: reason.clone(),
        });
        Ok::<_, AppError>((Some(op), (restored, refused)))
    })?;
    Ok(Restoration {
        restored: restored.iter().map(RecordId::short).collect(),
        refused,
    })
}

/// The live nudges about `ids`, transitively, that are not among them.
fn cascade_of(state: &Consent, ids: &BTreeSet<RecordId>) -> Vec<RecordId> {
    let mut seen: BTreeSet<RecordId> = ids.clone();
    let mut todo: Vec<RecordId> = ids.iter().copied().collect();
    let mut out = Vec::new();
    while let Some(t) = todo.pop() {
        for m in state.messages.values() {
            if m.send.about == Some(t) && m.is_live() && seen.insert(m.id) {
                out.push(m.id);
                todo.push(m.id);
            }
        }
    }
    out.sort_by_key(|id| state.messages[id].created_key());
    out
}

fn row(state: &Consent, c: &Candidate) -> Candidacy {
    let m = &state.messages[&c.id];
    let to = if m.send.to.len() > 1 {
        Recipients::Many(m.send.to.iter().map(ToString::to_string).collect())
    } else {
        Recipients::One(m.send.to.first().map(ToString::to_string))
    };
    let settled_by = c
        .settled_by
        .iter()
        .map(|s| match s {
            Settled::Key {
                key,
                version,
                at,
                by,
                matched_by,
            } => SettledBy::Key {
                key: key.clone(),
                version: version.clone(),
                updated_at: format_rfc3339(at.hlc.ms()),
                updated_by: by.to_string(),
                matched_by,
            },
            Settled::Target {
                target,
                reason,
                matched_by,
            } => SettledBy::Target {
                matched_by,
                target_id: target.short(),
                reason,
            },
            Settled::Reference { cites } => SettledBy::Reference {
                matched_by: "reference",
                cites: cites.short(),
            },
        })
        .collect();
    Candidacy {
        id: c.id.short(),
        from: m.from.to_string(),
        to,
        topic: m.text.topic.clone(),
        created_at: format_rfc3339(m.created.ms()),
        pin_key: m.send.pin_key.clone(),
        settled_by,
        claimed_by: c.claimed_by.clone(),
        claim_count: c.claimed_by.len(),
        match_kind: c.kind.as_str(),
        structural: c.kind != MatchKind::Key,
    }
}

/// One candidate of a cleanup pass, as a preview lists it.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Candidacy {
    /// Short id.
    pub id: String,
    /// Author role.
    pub from: String,
    /// One recipient, or the sorted list of several.
    pub to: Recipients,
    /// Subject line.
    pub topic: String,
    /// RFC 3339.
    pub created_at: String,
    /// Its pin key, for a proposal.
    pub pin_key: Option<String>,
    /// What settled it.
    pub settled_by: Vec<SettledBy>,
    /// The keys whose versions claim it.
    pub claimed_by: Vec<String>,
    /// How many.
    pub claim_count: usize,
    /// `key`, `target` or `reference`.
    pub match_kind: &'static str,
    /// True unless only a key claims it.
    pub structural: bool,
}

impl super::rows::Row for Candidacy {}

/// One reason a candidate is settled.
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum SettledBy {
    /// A pin version claims it.
    Key {
        /// Pin key.
        key: String,
        /// Its current version label.
        version: String,
        /// RFC 3339.
        updated_at: String,
        /// Who wrote the version.
        updated_by: String,
        /// How the version claims it.
        matched_by: &'static str,
    },
    /// A dead message it is about or cites.
    Target {
        /// `target` or `target_text`.
        matched_by: &'static str,
        /// Short id of the dead message.
        target_id: String,
        /// Why it is dead.
        reason: &'static str,
    },
    /// A candidate it cites.
    Reference {
        /// Always `reference`.
        matched_by: &'static str,
        /// Short id of the cited candidate.
        cites: String,
    },
}

/// The message an id parameter names (tombstones included), through the
/// lookup every id parameter shares.
fn lookup_id(ix: &Index, field: &str, raw: &str) -> AppResult<Option<RecordId>> {
    Ok(lookup(ix, Named::Message, field, raw)?.map(|f| f.id))
}

/// Resolves a `#prefix` citation against the index.
fn cite(ix: &Index, prefix: &str) -> Cited {
    let p = IdPrefix::parse(prefix)?;
    let lo = p.as_str().to_owned();
    let hi = format!("{lo}g");
    let rows = ix.messages_with_prefix(&lo, &hi, 2).ok()?;
    let [
        PrefixMatch {
            id,
            deleted,
            retired,
        },
    ] = rows.as_slice()
    else {
        return None;
    };
    let reason = if *deleted {
        Some("deleted")
    } else if *retired {
        Some("superseded")
    } else {
        None
    };
    Some((RecordId::parse(id)?, reason))
}

fn author_of(ix: &Index, id: &RecordId) -> AppResult<Option<Role>> {
    let r = ix.author_of(&id.hex())?;
    Ok(r.and_then(|r| Role::new(&r).ok()))
}
