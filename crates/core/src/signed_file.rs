//! A small file one feed signs for the others to read beside its head
//! (`api.json`, `api-key.json`): `{"body":{…},"sig":"…"}` plus a newline,
//! the signature over a domain of the file's own and the body's exact bytes,
//! so that it can never pass for a head, a record or another kind of file.
//!
//! Owns the envelope only; what a body holds and which feed it must name is
//! its module's. Pure: the caller reads and writes the file.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use ed25519_dalek::{Signature, Signer as _, SigningKey, VerifyingKey};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::{signature, strict_json};

#[derive(Serialize)]
struct LineOut<'a> {
    body: &'a serde_json::value::RawValue,
    sig: String,
}

#[derive(Deserialize)]
struct LineIn<'a> {
    #[serde(borrow)]
    body: &'a serde_json::value::RawValue,
    sig: &'a str,
}

/// The file's bytes for `body`, signed with `key` under `domain`.
pub fn encode<T: Serialize>(body: &T, domain: &[u8], key: &SigningKey) -> String {
    let body = serde_json::to_string(body).expect("a file's body serializes");
    let sig = B64.encode(key.sign(&signed(domain, &body)).to_bytes());
    let raw = serde_json::value::RawValue::from_string(body).expect("valid JSON");
    let mut line = serde_json::to_string(&LineOut { body: &raw, sig }).expect("serializes");
    line.push('\n');
    line
}

/// The body of `text` if it is one strict JSON object signed by `key` under
/// `domain`; `None` for anything else.
pub fn decode<T: DeserializeOwned>(text: &[u8], domain: &[u8], key: &VerifyingKey) -> Option<T> {
    let text = std::str::from_utf8(text).ok()?.trim_end();
    strict_json::check_no_duplicate_keys(text).ok()?;
    let outer: LineIn<'_> = serde_json::from_str(text).ok()?;
    let sig = Signature::from_slice(&B64.decode(outer.sig.as_bytes()).ok()?).ok()?;
    signature::verify(key, &signed(domain, outer.body.get()), &sig).then_some(())?;
    serde_json::from_str(outer.body.get()).ok()
}

/// What is signed: the domain, then the body's bytes.
fn signed(domain: &[u8], body: &str) -> Vec<u8> {
    let mut msg = domain.to_vec();
    msg.extend_from_slice(body.as_bytes());
    msg
}
