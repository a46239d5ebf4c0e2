//! The record format: one signed JSON line per operation.
//!
//! ```text
//! {"body":{"ch":…,"feed":…,"seq":…,"prev":…,"hlc":[ms,c],"op":…,"data":{…}},"sig":"<base64>"}\n
//! ```
//!
//! Owns encoding (built once from typed structs), decoding (the body's bytes are
//! kept exactly as written and never re-serialized), signing and signature
//! checks. The id of a record is the sha256 of its body bytes. It does not read
//! files and does not check chains (see `chain`).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use ed25519_dalek::{Signature, Signer as _, SigningKey, VerifyingKey};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::hlc::{Hlc, OrderKey};
use super::ids::{FeedId, RecordId};
use super::op::Op;
use super::{signature, strict_json};

/// Domain separation prefix of every signature.
pub const SIG_DOMAIN: &[u8] = b"countersign/v1\0";
/// Longest line a reader accepts, newline included.
pub const MAX_LINE: usize = 1024 * 1024;

/// The fields every record body carries besides its op.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// Channel id.
    pub ch: String,
    /// The feed this record belongs to.
    pub feed: FeedId,
    /// 1-based position in the feed.
    pub seq: u64,
    /// Id of the previous record of the feed (`None` at seq 1).
    pub prev: Option<RecordId>,
    /// Clock stamp.
    pub hlc: Hlc,
}

#[derive(Serialize)]
struct BodyOut<'a> {
    ch: &'a str,
    feed: &'a FeedId,
    seq: u64,
    prev: Option<RecordId>,
    hlc: Hlc,
    #[serde(flatten)]
    op: &'a Op,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BodyIn<'a> {
    ch: String,
    feed: FeedId,
    seq: u64,
    prev: Option<RecordId>,
    hlc: Hlc,
    op: String,
    #[serde(borrow)]
    data: &'a RawValue,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LineIn<'a> {
    #[serde(borrow)]
    body: &'a RawValue,
    sig: String,
}

/// A record as read from a feed: exact body bytes, signature, header and op.
#[derive(Clone, Debug)]
pub struct Record {
    /// sha256 of `body`.
    pub id: RecordId,
    /// The body exactly as written.
    pub body: String,
    /// The signature over [`SIG_DOMAIN`] + body.
    pub sig: Signature,
    /// Header fields.
    pub header: Header,
    /// The op name as written (known or not).
    pub op_name: String,
    /// The decoded op, or `None` when this version does not understand it.
    pub op: Option<Op>,
}

impl Record {
    /// Place in the total order.
    pub fn order_key(&self) -> OrderKey {
        OrderKey {
            hlc: self.header.hlc,
            id: self.id,
        }
    }

    /// Checks the signature with the feed's key (ZIP-215, see [`signature`]).
    pub fn verify(&self, key: &VerifyingKey) -> bool {
        signature::verify(key, &self.signed_bytes(), &self.sig)
    }

    /// Queues the signature's check with the feed's key in `batch`.
    pub fn queue(&self, key: &VerifyingKey, batch: &mut signature::Batch) {
        // The id is the body's SHA-256, and the signed bytes are the body
        // behind a fixed prefix: it determines them.
        batch.push_digested(key, &self.signed_bytes(), self.id.as_bytes(), &self.sig);
    }

    /// What the signature signs: [`SIG_DOMAIN`] and the body's bytes.
    fn signed_bytes(&self) -> Vec<u8> {
        let mut msg = Vec::with_capacity(SIG_DOMAIN.len() + self.body.len());
        msg.extend_from_slice(SIG_DOMAIN);
        msg.extend_from_slice(self.body.as_bytes());
        msg
    }

    /// The line as it is written to a feed (with its `\n`).
    pub fn to_line(&self) -> String {
        line_of(&self.body, &self.sig)
    }
}

fn line_of(body: &str, sig: &Signature) -> String {
    format!(
        "{{\"body\":{body},\"sig\":\"{}\"}}\n",
        B64.encode(sig.to_bytes())
    )
}

/// Why a line is not a record. Chain, key and channel checks come later.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// Longer than [`MAX_LINE`].
    #[error("line of {0} bytes is longer than the 1 MiB limit")]
    TooLong(usize),
    /// Not UTF-8.
    #[error("line is not valid UTF-8")]
    NotUtf8,
    /// Not the record shape (includes duplicate keys).
    #[error("line is not a record: {0}")]
    Malformed(String),
}

/// Signs and encodes a new record.
pub fn encode(header: &Header, op: &Op, key: &SigningKey) -> Record {
    let body = serde_json::to_string(&BodyOut {
        ch: &header.ch,
        feed: &header.feed,
        seq: header.seq,
        prev: header.prev,
        hlc: header.hlc,
        op,
    })
    .expect("typed record bodies serialize");
    let mut msg = Vec::with_capacity(SIG_DOMAIN.len() + body.len());
    msg.extend_from_slice(SIG_DOMAIN);
    msg.extend_from_slice(body.as_bytes());
    let sig = key.sign(&msg);
    Record {
        id: RecordId::of_body(body.as_bytes()),
        body,
        sig,
        header: header.clone(),
        op_name: op.name().to_owned(),
        op: Some(op.clone()),
    }
}

/// Decodes one line (without its `\n`; one trailing `\r` is tolerated).
/// The signature is not checked here.
pub fn decode(line: &[u8]) -> Result<Record, DecodeError> {
    if line.len() + 1 > MAX_LINE {
        return Err(DecodeError::TooLong(line.len() + 1));
    }
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let text = std::str::from_utf8(line).map_err(|_| DecodeError::NotUtf8)?;
    let malformed = |e: serde_json::Error| DecodeError::Malformed(e.to_string());
    strict_json::check_no_duplicate_keys(text).map_err(DecodeError::Malformed)?;
    let outer: LineIn<'_> = serde_json::from_str(text).map_err(malformed)?;
    let sig_bytes = B64
        .decode(outer.sig.as_bytes())
        .map_err(|e| DecodeError::Malformed(format!("signature is not base64: {e}")))?;
    let sig = Signature::from_slice(&sig_bytes)
        .map_err(|_| DecodeError::Malformed("signature is not 64 bytes".into()))?;
    let (header, op_name, op) = decode_body(outer.body.get())?;
    Ok(Record {
        id: RecordId::of_body(outer.body.get().as_bytes()),
        body: outer.body.get().to_owned(),
        sig,
        header,
        op_name,
        op,
    })
}

/// Decodes the bytes of a body (as stored by the index) into its header, op
/// name and op (`None` for an op this version does not know).
pub fn decode_body(body: &str) -> Result<(Header, String, Option<Op>), DecodeError> {
    let malformed = |e: serde_json::Error| DecodeError::Malformed(e.to_string());
    let inner: BodyIn<'_> = serde_json::from_str(body).map_err(malformed)?;
    let op = Op::decode(&inner.op, inner.data.get()).map_err(malformed)?;
    let header = Header {
        ch: inner.ch,
        feed: inner.feed,
        seq: inner.seq,
        prev: inner.prev,
        hlc: inner.hlc,
    };
    Ok((header, inner.op, op))
}

/// Domain separation prefix of the signature on a feed's `head.json`.
pub const HEAD_DOMAIN: &[u8] = b"countersign/head/v1\0";

/// The signed `head.json` of a feed: `{"body":{feed,seq,id,hlc},"sig":…}` plus
/// a newline. It is a heartbeat and a hint; readers never trust it over the feed.
pub fn encode_head(feed: &FeedId, seq: u64, id: RecordId, hlc: Hlc, key: &SigningKey) -> String {
    encode_beat(feed, seq, id, hlc, None, key)
}

/// A head that also says when its writer last looked (`as_of`, ms since the
/// epoch): "as of then, `seq` was my last record". A long-running process
/// rewrites it while its device writes nothing, so the other machines know
/// that nothing of this feed dated before `as_of` is still on its way
/// (`store::channel::heartbeat`). Without `as_of` (`None`) it is [`encode_head`].
pub fn encode_beat(
    feed: &FeedId,
    seq: u64,
    id: RecordId,
    hlc: Hlc,
    as_of: Option<i64>,
    key: &SigningKey,
) -> String {
    let mut body = serde_json::json!({ "feed": feed, "seq": seq, "id": id, "hlc": hlc });
    if let Some(t) = as_of {
        body["as_of"] = serde_json::json!(t);
    }
    let body = body.to_string();
    let mut msg = HEAD_DOMAIN.to_vec();
    msg.extend_from_slice(body.as_bytes());
    line_of(&body, &key.sign(&msg))
}

/// What a verified `head.json` says: the feed's last record as its writer
/// published it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeadClaim {
    /// The seq of the feed's last record.
    pub seq: u64,
    /// Its id.
    pub id: RecordId,
    /// Its clock.
    pub hlc: Hlc,
    /// When its writer last said so (ms), if it was later than the record:
    /// a heartbeat written while the device wrote nothing.
    pub as_of: Option<i64>,
}

impl HeadClaim {
    /// When the writer was last heard from by this head: the later of its
    /// last record's time and `as_of`.
    pub fn heard_ms(&self) -> i64 {
        self.as_of.map_or(self.hlc.ms(), |t| t.max(self.hlc.ms()))
    }
}

/// Decodes a `head.json` line and checks it: signed by `key` for `feed`.
/// `None` for anything else (a hand edit, another feed's head, a torn
/// write): a head is a hint, and one that fails is ignored.
pub fn decode_head(text: &[u8], feed: &FeedId, key: &VerifyingKey) -> Option<HeadClaim> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct HeadBody {
        feed: FeedId,
        seq: u64,
        id: RecordId,
        hlc: Hlc,
        #[serde(default)]
        as_of: Option<i64>,
    }
    let text = std::str::from_utf8(text).ok()?.trim_end();
    strict_json::check_no_duplicate_keys(text).ok()?;
    let outer: LineIn<'_> = serde_json::from_str(text).ok()?;
    let sig = Signature::from_slice(&B64.decode(outer.sig.as_bytes()).ok()?).ok()?;
    let mut msg = HEAD_DOMAIN.to_vec();
    msg.extend_from_slice(outer.body.get().as_bytes());
    signature::verify(key, &msg, &sig).then_some(())?;
    let body: HeadBody = serde_json::from_str(outer.body.get()).ok()?;
    (&body.feed == feed).then_some(HeadClaim {
        seq: body.seq,
        id: body.id,
        hlc: body.hlc,
        as_of: body.as_of,
    })
}

/// Parses a hex ed25519 public key; `None` for one that is not usable
/// ([`signature::parse_key`] says why).
pub fn parse_pubkey(hex_key: &str) -> Option<VerifyingKey> {
    signature::parse_key(hex_key).ok()
}

/// Hex form of a public key.
pub fn pubkey_hex(key: &VerifyingKey) -> String {
    hex::encode(key.to_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::Role;
    use crate::op::{Ids, Send};

    fn key() -> SigningKey {
        SigningKey::from_bytes(&[7u8; 32])
    }

    fn header() -> Header {
        Header {
            ch: "c".repeat(64),
            feed: FeedId::new("backend", "laptop-3f9a2c").unwrap(),
            seq: 1,
            prev: None,
            hlc: Hlc(1_764_459_443_123, 0),
        }
    }

    #[test]
    fn round_trip_keeps_bytes_and_verifies() {
        let op = Op::Send(Send {
            to: vec![Role::new("frontend").unwrap()],
            topic: "hello".into(),
            body: "world".into(),
            decision_requested: true,
            ..Send::default()
        });
        let rec = encode(&header(), &op, &key());
        let line = rec.to_line();
        let back = decode(line.trim_end_matches('\n').as_bytes()).unwrap();
        assert_eq!(back.body, rec.body);
        assert_eq!(back.id, rec.id);
        assert_eq!(back.op, Some(op));
        assert!(back.verify(&key().verifying_key()));
        assert!(!back.verify(&SigningKey::from_bytes(&[8u8; 32]).verifying_key()));
    }

    #[test]
    fn tampered_body_fails_signature() {
        let rec = encode(&header(), &Op::Read(Ids { ids: vec![] }), &key());
        let line = rec.to_line().replace("\"seq\":1", "\"seq\":2");
        let back = decode(line.trim_end().as_bytes()).unwrap();
        assert!(!back.verify(&key().verifying_key()));
    }

    #[test]
    fn bad_lines_are_refused_not_panicking() {
        assert!(matches!(decode(b"\xff\xfe"), Err(DecodeError::NotUtf8)));
        assert!(matches!(
            decode(b"{\"body\":1"),
            Err(DecodeError::Malformed(_))
        ));
        assert!(matches!(decode(b"[]"), Err(DecodeError::Malformed(_))));
        let big = vec![b'a'; MAX_LINE];
        assert!(matches!(decode(&big), Err(DecodeError::TooLong(_))));
        let rec = encode(&header(), &Op::Read(Ids { ids: vec![] }), &key());
        let dup = rec
            .to_line()
            .replacen("\"seq\":1", "\"seq\":1,\"seq\":1", 1);
        assert!(matches!(
            decode(dup.trim_end().as_bytes()),
            Err(DecodeError::Malformed(_))
        ));
    }

    #[test]
    fn unknown_op_decodes_without_op() {
        let rec = encode(&header(), &Op::Read(Ids { ids: vec![] }), &key());
        let line = rec
            .to_line()
            .replace("\"op\":\"read\"", "\"op\":\"teleport\"");
        let back = decode(line.trim_end().as_bytes()).unwrap();
        assert_eq!(back.op_name, "teleport");
        assert!(back.op.is_none());
    }

    #[test]
    fn a_head_verifies_only_as_signed() {
        let feed = header().feed;
        let id = RecordId::of_body(b"x");
        let head = encode_head(&feed, 7, id, Hlc(5, 1), &key());
        let got = decode_head(head.as_bytes(), &feed, &key().verifying_key()).unwrap();
        assert_eq!((got.seq, got.id, got.hlc), (7, id, Hlc(5, 1)));
        let lie = head.replace("\"seq\":7", "\"seq\":9");
        assert_eq!(
            decode_head(lie.as_bytes(), &feed, &key().verifying_key()),
            None
        );
        let other = SigningKey::from_bytes(&[8u8; 32]).verifying_key();
        assert_eq!(decode_head(head.as_bytes(), &feed, &other), None);
        let elsewhere = FeedId::new("backend", "other-000001").unwrap();
        assert_eq!(
            decode_head(head.as_bytes(), &elsewhere, &key().verifying_key()),
            None
        );
    }

    #[test]
    fn a_heartbeat_says_when_as_signed_and_never_before_its_record() {
        let feed = header().feed;
        let id = RecordId::of_body(b"x");
        let beat = encode_beat(&feed, 7, id, Hlc(5_000, 1), Some(9_000), &key());
        let got = decode_head(beat.as_bytes(), &feed, &key().verifying_key()).unwrap();
        assert_eq!(
            (got.seq, got.as_of, got.heard_ms()),
            (7, Some(9_000), 9_000)
        );
        // A later `as_of` is a claim of its writer: changed by anyone else, it fails.
        let lie = beat.replace("\"as_of\":9000", "\"as_of\":99000");
        assert_ne!(lie, beat);
        assert_eq!(
            decode_head(lie.as_bytes(), &feed, &key().verifying_key()),
            None
        );
        // An `as_of` before the record says nothing earlier than the record.
        let early = encode_beat(&feed, 7, id, Hlc(5_000, 1), Some(1_000), &key());
        let got = decode_head(early.as_bytes(), &feed, &key().verifying_key()).unwrap();
        assert_eq!(got.heard_ms(), 5_000);
        // A plain head has none.
        let plain = encode_head(&feed, 7, id, Hlc(5_000, 1), &key());
        let got = decode_head(plain.as_bytes(), &feed, &key().verifying_key()).unwrap();
        assert_eq!((got.as_of, got.heard_ms()), (None, 5_000));
    }

    #[test]
    fn crlf_is_tolerated() {
        let rec = encode(&header(), &Op::Read(Ids { ids: vec![] }), &key());
        let line = rec.to_line().replace('\n', "\r");
        assert_eq!(decode(line.as_bytes()).unwrap().id, rec.id);
    }
}
