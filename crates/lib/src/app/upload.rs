//! upload_content, seal_content, get_content: documents written in pieces by
//! one role, sealed, then read back or used as a message body.
//!
//! The rules (uploader only, nothing after the seal, the 8 MiB cap) are
//! `core::upload::check`, asked here before writing and by the fold after.
//! A call with more text than one chunk record holds writes several chunk
//! records as one run: all of them or, when refused, none.

use schemars::JsonSchema;
use serde::Serialize;

use super::refusal::{AppError, AppResult, check_length, check_one_line};
use super::session::{Named, Session, lookup};
use crate::core::ids::{RecordId, Role};
use crate::core::op::{Op, UploadChunk};
use crate::core::rules::{Refusal, Verdict};
use crate::core::timestamp::format_rfc3339;
use crate::core::upload::{CHUNK_MAX_BYTES, LABEL_MAX, UPLOAD_MAX_BYTES, check, over_cap};
use crate::store::Index;
use crate::store::channel::Step;
use crate::store::fold::upload::{load_upload, upload_row, upload_text};

/// The most JSON-escaped text one chunk record carries: a record line holds
/// at most 1 MiB, and text made of control characters grows sixfold when
/// escaped, so a chunk is cut by this measure as well as by its bytes.
const CHUNK_MAX_ESCAPED: usize = 768 * 1024;

/// Finds an upload by an id prefix typed by an agent; `field` names the
/// parameter in refusals (the lookup every id parameter shares).
pub fn find_upload(ix: &Index, field: &str, raw: &str) -> AppResult<RecordId> {
    lookup(ix, Named::Upload, field, raw)?
        .map(|f| f.id)
        .ok_or_else(|| {
            AppError::value(format!(
                "upload {raw} not found; pass the upload_id that upload_content answered"
            ))
        })
}

/// What upload_content was asked to do: the tool's parameters.
#[derive(Clone, Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct UploadRequest {
    /// The text, stored exactly (an upload holds at most 8 MiB).
    pub text: String,
    /// Your unsealed upload to append to; omit to start one.
    #[serde(default)]
    pub upload_id: Option<String>,
    /// A short name for a new upload.
    #[serde(default)]
    pub label: Option<String>,
}

/// Starts an upload holding `text` (no `upload_id`), or appends `text` to
/// the caller's own unsealed upload. Returns the upload's state.
pub fn upload_content(
    s: &mut Session,
    text: &str,
    upload_id: Option<&str>,
    label: Option<&str>,
) -> AppResult<UploadState> {
    let me = s.role()?;
    if text.is_empty() {
        return Err(AppError::value(
            "'text' is required and must not be empty; pass the next part of the document",
        ));
    }
    let label = label.map(str::trim).filter(|l| !l.is_empty());
    if let Some(l) = label {
        check_length("label", l, LABEL_MAX)?;
        check_one_line("label", l, "")?;
    }
    let upload_id = upload_id.map(str::trim).filter(|u| !u.is_empty());
    if upload_id.is_none() && text.len() as u64 > UPLOAD_MAX_BYTES {
        return Err(AppError::value(format!(
            "'text' is {} bytes; one upload holds at most {UPLOAD_MAX_BYTES} bytes (8 MiB). \
             Nothing was uploaded — split the document over several uploads",
            text.len()
        )));
    }
    let pieces = split(text);
    // Checked before this role's feed is set up, so a refusal writes nothing
    // at all; checked again under the write lock below.
    if let Some(raw) = upload_id {
        s.catch_up()?;
        check_append(s.index(), &me, raw, &pieces[0], text.len())?;
    }
    let writer = s.announce()?;
    let label = label.map(str::to_owned);
    let raw = upload_id.map(str::to_owned);
    let (recs, target) = s.channel_mut().append_run(&writer, |ix| {
        let Some(raw) = raw else {
            let mut steps: Vec<Step> = Vec::new();
            for (i, piece) in pieces.into_iter().enumerate() {
                let label = if i == 0 { label.clone() } else { None };
                steps.push(Box::new(move |done| {
                    Op::UploadChunk(UploadChunk {
                        upload: done.first().map(|r| r.id),
                        text: piece,
                        label,
                    })
                }));
            }
            return Ok::<_, AppError>((steps, None));
        };
        let id = check_append(ix, &me, &raw, &pieces[0], text.len())?;
        let steps: Vec<Step> = pieces
            .into_iter()
            .map(|text| {
                let op = Op::UploadChunk(UploadChunk {
                    upload: Some(id),
                    text,
                    label: None,
                });
                Box::new(move |_: &[_]| op) as Step
            })
            .collect();
        Ok((steps, Some(id)))
    })?;
    let id = target.unwrap_or_else(|| recs[0].id);
    state(s.index(), &id, false)
}

/// Who may append to which upload, decided on the first piece of the
/// append; the cap on the whole append (`total` bytes), so the refusal names
/// the size it would reach.
fn check_append(
    ix: &Index,
    me: &Role,
    raw: &str,
    first: &str,
    total: usize,
) -> AppResult<RecordId> {
    let id = find_upload(ix, "upload_id", raw)?;
    let u = load_upload(ix, &id)?.ok_or_else(|| {
        AppError::value(format!(
            "upload {raw} not found; pass the upload_id that upload_content answered"
        ))
    })?;
    let op = Op::UploadChunk(UploadChunk {
        upload: Some(id),
        text: first.to_owned(),
        label: None,
    });
    check(&u, me, &op).map_err(refusal)?;
    let would_be = u.length_bytes + total as u64;
    if would_be > UPLOAD_MAX_BYTES {
        return Err(AppError::value(over_cap(&id, u.length_bytes, would_be)));
    }
    Ok(id)
}

/// What seal_content was asked to do: the tool's parameters.
#[derive(Clone, Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct SealRequest {
    /// Your upload.
    pub upload_id: String,
}

/// Seals the caller's upload: its bytes stop moving and its digest is final.
/// Sealing a sealed upload again writes nothing.
pub fn seal_content(s: &mut Session, upload_id: &str) -> AppResult<UploadState> {
    let me = s.role()?;
    let raw = upload_id.trim().to_owned();
    // Checked before this role's feed is set up, so a refusal writes nothing
    // at all; checked again under the write lock below.
    s.catch_up()?;
    if let (id, None) = plan_seal(s.index(), &me, &raw)? {
        return state(s.index(), &id, false);
    }
    let writer = s.announce()?;
    let (_, id) = s.channel_mut().append_if(&writer, |ix| {
        let (id, op) = plan_seal(ix, &me, &raw)?;
        Ok::<_, AppError>((op, id))
    })?;
    state(s.index(), &id, false)
}

/// The seal to write on upload `raw`, `None` when it is sealed already.
fn plan_seal(ix: &Index, me: &Role, raw: &str) -> AppResult<(RecordId, Option<Op>)> {
    let id = find_upload(ix, "upload_id", raw)?;
    let u = load_upload(ix, &id)?.ok_or_else(|| {
        AppError::value(format!(
            "upload {raw} not found; pass the upload_id that upload_content answered"
        ))
    })?;
    let seal = Op::Seal(u.seal_op());
    Ok(match check(&u, me, &seal).map_err(refusal)? {
        Verdict::Apply => (id, Some(seal)),
        Verdict::Noop => (id, None),
    })
}

/// What get_content was asked for: the tool's parameters.
#[derive(Clone, Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct ContentRequest {
    /// The upload (anyone's).
    pub upload_id: String,
    /// True: include the text as `body`.
    #[serde(default)]
    pub with_body: bool,
}

/// Any upload's state, with its text when `with_body`.
pub fn get_content(s: &mut Session, upload_id: &str, with_body: bool) -> AppResult<UploadState> {
    s.role()?;
    s.catch_up()?;
    let id = find_upload(s.index(), "upload_id", upload_id.trim())?;
    state(s.index(), &id, with_body)
}

/// The answer shared by the three tools.
fn state(ix: &Index, id: &RecordId, with_body: bool) -> AppResult<UploadState> {
    let u = upload_row(ix, id)?.ok_or_else(|| {
        AppError::value(format!(
            "upload {} not found; pass the upload_id that upload_content answered",
            id.short()
        ))
    })?;
    let short = id.short();
    let note = match u.sealed_ms {
        Some(_) => format!(
            "sealed: these bytes never change. Pass body_ref=\"{short}\" to send_message, \
             revise_message or pin_set to use them as a body"
        ),
        None => format!(
            "not sealed: sha256 and lengths cover the text so far. Append with \
             upload_content(upload_id=\"{short}\", text=...), then seal_content(\"{short}\") \
             before using it as body_ref"
        ),
    };
    Ok(UploadState {
        upload_id: short,
        uploaded_by: u.uploader,
        label: u.label,
        sealed: u.sealed_ms.is_some(),
        created_at: format_rfc3339(u.ms),
        sealed_at: u.sealed_ms.map(format_rfc3339),
        sha256: u.sha256,
        length_bytes: u.length_bytes,
        length_chars: u.length_chars,
        note,
        body: if with_body {
            Some(upload_text(ix, id)?)
        } else {
            None
        },
    })
}

/// An upload as upload_content, seal_content and get_content show it.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct UploadState {
    /// Short id.
    pub upload_id: String,
    /// The uploader's role.
    pub uploaded_by: String,
    /// Its label.
    pub label: Option<String>,
    /// True once sealed.
    pub sealed: bool,
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339, once sealed.
    pub sealed_at: Option<String>,
    /// sha256 of the text so far.
    pub sha256: String,
    /// Its length in bytes.
    pub length_bytes: i64,
    /// Its length in characters.
    pub length_chars: i64,
    /// What can be done with it next.
    pub note: String,
    /// The text (get_content with with_body).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
}

fn refusal(r: Refusal) -> AppError {
    match r {
        Refusal::Value(m) => AppError::Value(m),
        Refusal::Permission(m) => AppError::Permission(m),
    }
}

/// Cuts `text` into chunk texts, at character boundaries, each within
/// [`CHUNK_MAX_BYTES`] bytes and [`CHUNK_MAX_ESCAPED`] bytes once escaped.
fn split(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let (mut start, mut bytes, mut escaped) = (0usize, 0usize, 0usize);
    for (i, ch) in text.char_indices() {
        let len = ch.len_utf8();
        let esc = match ch {
            '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
            c if (c as u32) < 0x20 => 6,
            _ => len,
        };
        if bytes + len > CHUNK_MAX_BYTES || escaped + esc > CHUNK_MAX_ESCAPED {
            out.push(text[start..i].to_owned());
            (start, bytes, escaped) = (i, 0, 0);
        }
        bytes += len;
        escaped += esc;
    }
    out.push(text[start..].to_owned());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_keep_the_text_and_fit_a_record() {
        let text = format!(
            "{}{}{}",
            "é".repeat(200_000),
            "\u{1}".repeat(300_000),
            "x".repeat(10)
        );
        let pieces = split(&text);
        assert_eq!(pieces.concat(), text);
        assert!(pieces.len() >= 3, "{}", pieces.len());
        for p in &pieces {
            assert!(!p.is_empty() && p.len() <= CHUNK_MAX_BYTES);
            let line = serde_json::to_string(p).unwrap();
            assert!(line.len() <= CHUNK_MAX_ESCAPED + 2, "{}", line.len());
        }
        assert_eq!(split("small"), ["small"]);
    }
}
