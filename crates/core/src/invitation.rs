//! Invitations: joining a machine with one pasted code.
//!
//! The owner's `invite` record holds only a commitment to the code's secret:
//! the public key of an ed25519 key whose seed is the secret. A new machine
//! proves it holds the code by signing, with that seed, a statement binding
//! its own feed and key (the claim's `proof`); the statement names the
//! channel, the invitation, the feed and the key, so a proof copied out of
//! the folder is worth nothing to anyone else (see [`review`]). Every reader
//! can check a proof; only the owner's machine acts on it, by writing an
//! ordinary `admit`.
//!
//! This module owns the code's text form, the proof, and the rules that say
//! what a claim is worth ([`review`]). It decides nothing about when to
//! admit, and holds no randomness and no clock: the secret and the time are
//! passed in.

use std::collections::{BTreeMap, BTreeSet};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use ed25519_dalek::{Signature, Signer as _, SigningKey};
use sha2::{Digest as _, Sha256};

use super::hlc::Hlc;
use super::ids::{FeedId, RecordId, Role};
use super::record::{parse_pubkey, pubkey_hex};
use super::signature;

/// What every invitation code starts with (the format's version is its digit).
pub const CODE_PREFIX: &str = "csi1";
/// Bytes of the channel id a code carries: enough to tell channels apart.
const CHANNEL_BYTES: usize = 8;
/// Bytes of the checksum that catches a mistyped or cut code.
const CHECK_BYTES: usize = 4;
/// Domain of the code's checksum.
const CHECK_DOMAIN: &[u8] = b"countersign/invite-code/v1\0";
/// Domain of the statement a claim's proof signs.
const PROOF_DOMAIN: &[u8] = b"countersign/claim/v1\0";
/// RFC 4648 base32, lowercase: case-blind, no symbols, selectable with a double click.
const ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";

/// What an invitation code carries: which channel it is for (a prefix of
/// the channel id) and the secret. The invitation it opens is the owner's
/// `invite` record whose key is [`Self::key_hex`]; the remote is not in it
/// (the new machine has a copy of the folder already, a git clone knows its
/// origin).
#[derive(Clone, PartialEq, Eq)]
pub struct InviteCode {
    channel: [u8; CHANNEL_BYTES],
    secret: [u8; 32],
}

impl std::fmt::Debug for InviteCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the secret by accident.
        write!(f, "InviteCode({}…)", hex::encode(self.channel))
    }
}

/// Why a pasted code is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodeError {
    /// Not the shape of a code.
    #[error("not an invitation code (they start with '{CODE_PREFIX}' and are {len} characters long)", len = code_len())]
    Shape,
    /// The checksum does not match: a character changed or went missing.
    #[error("the invitation code is damaged (its checksum does not match): copy it again")]
    Checksum,
}

fn code_len() -> usize {
    CODE_PREFIX.len() + ((CHANNEL_BYTES + 32 + CHECK_BYTES) * 8).div_ceil(5)
}

impl InviteCode {
    /// The code for `secret` in the channel `channel_id` (hex).
    pub fn new(channel_id: &str, secret: [u8; 32]) -> Self {
        let mut channel = [0u8; CHANNEL_BYTES];
        let _ = hex::decode_to_slice(
            channel_id.get(..CHANNEL_BYTES * 2).unwrap_or_default(),
            &mut channel,
        );
        Self { channel, secret }
    }

    /// True if the code is for the channel `channel_id` (hex).
    pub fn is_for(&self, channel_id: &str) -> bool {
        channel_id.get(..CHANNEL_BYTES * 2) == Some(hex::encode(self.channel).as_str())
    }

    /// The first characters of the channel id the code is for.
    pub fn channel_prefix(&self) -> String {
        hex::encode(self.channel)
    }

    /// The invitation's key: its public half is the commitment in the folder.
    pub fn key(&self) -> SigningKey {
        SigningKey::from_bytes(&self.secret)
    }

    /// The hex public key an `invite` record names for this code.
    pub fn key_hex(&self) -> String {
        pubkey_hex(&self.key().verifying_key())
    }

    /// The text form: the prefix, then base32 of channel bytes, secret and checksum.
    pub fn to_text(&self) -> String {
        let mut bytes = Vec::with_capacity(CHANNEL_BYTES + 32 + CHECK_BYTES);
        bytes.extend_from_slice(&self.channel);
        bytes.extend_from_slice(&self.secret);
        bytes.extend_from_slice(&checksum(&self.channel, &self.secret));
        format!("{CODE_PREFIX}{}", base32(&bytes))
    }

    /// Reads a pasted code. Case, spaces, line breaks and dashes are ignored.
    pub fn parse(text: &str) -> Result<Self, CodeError> {
        let clean: String = text
            .chars()
            .filter(|c| !c.is_whitespace() && *c != '-')
            .map(|c| c.to_ascii_lowercase())
            .collect();
        let body = clean.strip_prefix(CODE_PREFIX).ok_or(CodeError::Shape)?;
        let bytes = unbase32(body).ok_or(CodeError::Shape)?;
        if bytes.len() != CHANNEL_BYTES + 32 + CHECK_BYTES {
            return Err(CodeError::Shape);
        }
        let mut channel = [0u8; CHANNEL_BYTES];
        channel.copy_from_slice(&bytes[..CHANNEL_BYTES]);
        let mut secret = [0u8; 32];
        secret.copy_from_slice(&bytes[CHANNEL_BYTES..CHANNEL_BYTES + 32]);
        if bytes[CHANNEL_BYTES + 32..] != checksum(&channel, &secret) {
            return Err(CodeError::Checksum);
        }
        Ok(Self { channel, secret })
    }

    /// The claim's proof: the invitation key's signature over the statement
    /// that `feed` with key `pubkey` takes invitation `invitation` in
    /// channel `channel_id`.
    pub fn prove(
        &self,
        channel_id: &str,
        invitation: &RecordId,
        feed: &FeedId,
        pubkey: &str,
    ) -> String {
        let sig = self
            .key()
            .sign(&statement(channel_id, invitation, feed, pubkey));
        B64.encode(sig.to_bytes())
    }
}

fn checksum(channel: &[u8], secret: &[u8]) -> [u8; CHECK_BYTES] {
    let mut h = Sha256::new();
    h.update(CHECK_DOMAIN);
    h.update(channel);
    h.update(secret);
    let d = h.finalize();
    let mut out = [0u8; CHECK_BYTES];
    out.copy_from_slice(&d[..CHECK_BYTES]);
    out
}

fn base32(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 8 / 5 + 1);
    let (mut acc, mut bits) = (0u32, 0u32);
    for &b in bytes {
        acc = (acc << 8) | u32::from(b);
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            out.push(ALPHABET[((acc >> bits) & 31) as usize] as char);
        }
    }
    if bits > 0 {
        out.push(ALPHABET[((acc << (5 - bits)) & 31) as usize] as char);
    }
    out
}

fn unbase32(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() * 5 / 8);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in text.bytes() {
        let v = ALPHABET.iter().position(|&a| a == c)? as u32;
        acc = ((acc << 5) | v) & 0xffff;
        bits += 5;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    // Leftover bits are padding and must be zero (one text per byte string).
    (bits < 5 && acc & ((1 << bits) - 1) == 0).then_some(out)
}

/// The bytes a claim's proof signs.
fn statement(channel_id: &str, invitation: &RecordId, feed: &FeedId, pubkey: &str) -> Vec<u8> {
    let mut m = PROOF_DOMAIN.to_vec();
    for part in [channel_id, &invitation.hex(), &feed.to_string(), pubkey] {
        m.extend_from_slice(part.as_bytes());
        m.push(0);
    }
    m
}

/// True if `proof` is the invitation key `invite_key` (hex)'s signature
/// binding `feed` and `pubkey` to `invitation` in `channel_id`.
pub fn proof_holds(
    channel_id: &str,
    invitation: &RecordId,
    invite_key: &str,
    feed: &FeedId,
    pubkey: &str,
    proof: &str,
) -> bool {
    let Some(key) = parse_pubkey(invite_key) else {
        return false;
    };
    let Some(sig) = B64
        .decode(proof)
        .ok()
        .and_then(|b| Signature::from_slice(&b).ok())
    else {
        return false;
    };
    signature::verify(&key, &statement(channel_id, invitation, feed, pubkey), &sig)
}

/// An `invite` record as [`review`] needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Invitation {
    /// The invite record's id: the invitation's id.
    pub id: RecordId,
    /// The role it admits to.
    pub role: Role,
    /// The invitation key (hex).
    pub key: String,
    /// After this (ms since the epoch) it admits nobody.
    pub expires_ms: i64,
}

/// A `claim` record as [`review`] needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Claim {
    /// The claim record's id.
    pub id: RecordId,
    /// Its place in the channel's order.
    pub hlc: Hlc,
    /// The feed it starts.
    pub feed: FeedId,
    /// The invitation it takes.
    pub invitation: RecordId,
    /// The feed's key (hex), which signed the claim.
    pub pubkey: String,
    /// The proof of the code.
    pub proof: String,
}

/// What a claim is worth, by the records and a time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Standing {
    /// An `admit` names its feed with its key: done.
    Admitted,
    /// Its invitation is not in the index (yet): nothing to say.
    Unknown,
    /// Valid and first: the owner's machine admits it.
    Admissible,
    /// Never admitted; the reason is an alarm.
    Refused(String),
}

/// What each claim is worth, given every invitation, every admit (feed and
/// key) and the time `now_ms`. A pure function of these sets, so every
/// machine says the same of the same records whatever order they came in.
///
/// A claim stands only if its proof holds for its own feed and key. A proof
/// copied out of the folder into another claim names the first claim's feed
/// and key, so it fails for any other; a claim copied whole still names the
/// first claimant's key, which only its holder can write with. Among valid
/// claims of one invitation the first in the channel's order is the one to
/// admit; once an admit names one, the invitation is used and every other
/// claim of it is an alarm, never admitted.
pub fn review(
    channel_id: &str,
    invitations: &[Invitation],
    claims: &[Claim],
    admits: &BTreeSet<(FeedId, String)>,
    now_ms: i64,
) -> Vec<(RecordId, Standing)> {
    let by_id: BTreeMap<RecordId, &Invitation> = invitations.iter().map(|i| (i.id, i)).collect();
    let admitted_feeds: BTreeSet<&FeedId> = admits.iter().map(|(f, _)| f).collect();
    let holds = |c: &Claim, inv: &Invitation| {
        c.feed.role() == inv.role.as_str()
            && proof_holds(
                channel_id,
                &c.invitation,
                &inv.key,
                &c.feed,
                &c.pubkey,
                &c.proof,
            )
    };
    // Invitations already used: a valid claim of theirs was admitted.
    let mut used: BTreeMap<RecordId, &FeedId> = BTreeMap::new();
    for c in claims {
        if let Some(inv) = by_id.get(&c.invitation)
            && admits.contains(&(c.feed.clone(), c.pubkey.clone()))
            && holds(c, inv)
        {
            used.entry(c.invitation).or_insert(&c.feed);
        }
    }
    let mut ordered: Vec<&Claim> = claims.iter().collect();
    ordered.sort_by_key(|c| (c.hlc, c.id));
    let mut first: BTreeMap<RecordId, &FeedId> = BTreeMap::new();
    let mut out = Vec::with_capacity(claims.len());
    for c in ordered {
        let standing = if admits.contains(&(c.feed.clone(), c.pubkey.clone())) {
            Standing::Admitted
        } else if let Some(inv) = by_id.get(&c.invitation) {
            let short = c.invitation.short();
            if c.feed.role() != inv.role.as_str() {
                Standing::Refused(format!(
                    "claim of feed {} takes invitation {short}, which is for role '{}': not admitted",
                    c.feed, inv.role
                ))
            } else if !holds(c, inv) {
                Standing::Refused(format!(
                    "claim of feed {} carries a proof that does not match invitation {short}: \
                     not admitted",
                    c.feed
                ))
            } else if admitted_feeds.contains(&c.feed) {
                Standing::Refused(format!(
                    "claim of feed {} for invitation {short}: the feed is already admitted with \
                     another key; not admitted",
                    c.feed
                ))
            } else if let Some(feed) = used.get(&c.invitation) {
                Standing::Refused(format!(
                    "second claim of invitation {short}: it was used by feed {feed}; feed {} is \
                     not admitted",
                    c.feed
                ))
            } else if now_ms > inv.expires_ms {
                Standing::Refused(format!(
                    "claim of feed {} for invitation {short}, which expired before the owner's \
                     machine admitted it: not admitted (the owner can invite again)",
                    c.feed
                ))
            } else if let Some(feed) = first.get(&c.invitation) {
                Standing::Refused(format!(
                    "second claim of invitation {short}: feed {feed} claimed it first; feed {} is \
                     not admitted",
                    c.feed
                ))
            } else {
                first.insert(c.invitation, &c.feed);
                Standing::Admissible
            }
        } else {
            Standing::Unknown
        };
        out.push((c.id, standing));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const CH: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    fn code(n: u8) -> InviteCode {
        InviteCode::new(CH, [n; 32])
    }

    #[test]
    fn a_code_reads_back_and_names_its_channel() {
        let c = code(7);
        let text = c.to_text();
        assert!(text.starts_with(CODE_PREFIX));
        assert_eq!(text.len(), code_len());
        assert!(text.len() < 80, "short enough to paste: {text}");
        assert_eq!(InviteCode::parse(&text).unwrap(), c);
        // Pasted in pieces, in capitals, with dashes: the same code.
        let (a, b) = text.split_at(30);
        let messy = format!("  {}-\n{} ", a.to_uppercase(), b);
        assert_eq!(InviteCode::parse(&messy).unwrap(), c);
        assert!(c.is_for(CH));
        assert!(!c.is_for(&CH.replace('0', "f")));
    }

    #[test]
    fn a_changed_character_is_caught() {
        let text = code(7).to_text();
        for i in CODE_PREFIX.len()..text.len() - 1 {
            let mut b = text.clone().into_bytes();
            b[i] = if b[i] == b'a' { b'b' } else { b'a' };
            let t = String::from_utf8(b).unwrap();
            assert!(InviteCode::parse(&t).is_err(), "changed at {i}: {t}");
        }
        assert_eq!(InviteCode::parse("csi1abc"), Err(CodeError::Shape));
        assert_eq!(InviteCode::parse("hello"), Err(CodeError::Shape));
        assert_eq!(
            InviteCode::parse(&text[..text.len() - 8]),
            Err(CodeError::Shape)
        );
    }

    fn feed(role: &str, dev: &str) -> FeedId {
        FeedId::new(role, dev).unwrap()
    }

    fn id(n: u8) -> RecordId {
        RecordId::of_body(&[n])
    }

    fn invitation(code: &InviteCode, n: u8, expires_ms: i64) -> Invitation {
        Invitation {
            id: id(n),
            role: Role::new("backend").unwrap(),
            key: code.key_hex(),
            expires_ms,
        }
    }

    fn claim(code: &InviteCode, inv: &Invitation, n: u8, f: &FeedId, ms: i64) -> Claim {
        let pubkey = pubkey_hex(&SigningKey::from_bytes(&[n; 32]).verifying_key());
        Claim {
            id: id(100 + n),
            hlc: Hlc(ms, 0),
            feed: f.clone(),
            invitation: inv.id,
            proof: code.prove(CH, &inv.id, f, &pubkey),
            pubkey,
        }
    }

    fn standings(
        invs: &[Invitation],
        claims: &[Claim],
        admits: &BTreeSet<(FeedId, String)>,
        now: i64,
    ) -> BTreeMap<RecordId, Standing> {
        review(CH, invs, claims, admits, now).into_iter().collect()
    }

    #[test]
    fn the_first_valid_claim_is_admissible_and_the_rest_alarm() {
        let c = code(1);
        let inv = invitation(&c, 1, 1000);
        let a = claim(&c, &inv, 1, &feed("backend", "a"), 10);
        let b = claim(&c, &inv, 2, &feed("backend", "b"), 20);
        let none = BTreeSet::new();
        for order in [vec![a.clone(), b.clone()], vec![b.clone(), a.clone()]] {
            let s = standings(std::slice::from_ref(&inv), &order, &none, 500);
            assert_eq!(s[&a.id], Standing::Admissible);
            assert!(matches!(&s[&b.id], Standing::Refused(r) if r.contains("claimed it first")));
        }
        // Once the owner admitted the second (its own choice), the first is the alarm.
        let admits = BTreeSet::from([(b.feed.clone(), b.pubkey.clone())]);
        let s = standings(
            std::slice::from_ref(&inv),
            &[a.clone(), b.clone()],
            &admits,
            500,
        );
        assert_eq!(s[&b.id], Standing::Admitted);
        assert!(
            matches!(&s[&a.id], Standing::Refused(r) if r.contains("it was used by feed backend/b"))
        );
        // Without its invitation, a claim is unknown.
        assert_eq!(
            standings(&[], std::slice::from_ref(&a), &none, 500)[&a.id],
            Standing::Unknown
        );
    }

    #[test]
    fn expiry_wrong_proof_and_wrong_role_refuse() {
        let c = code(1);
        let inv = invitation(&c, 1, 1000);
        let a = claim(&c, &inv, 1, &feed("backend", "a"), 10);
        let none = BTreeSet::new();
        assert!(matches!(
            &standings(std::slice::from_ref(&inv), std::slice::from_ref(&a), &none, 1001)[&a.id],
            Standing::Refused(r) if r.contains("expired")
        ));
        // A proof copied into a claim of another key does not hold.
        let mut copied = claim(&c, &inv, 2, &feed("backend", "z"), 5);
        copied.proof = a.proof.clone();
        assert!(matches!(
            &standings(std::slice::from_ref(&inv), &[a, copied.clone()], &none, 500)[&copied.id],
            Standing::Refused(r) if r.contains("does not match")
        ));
        // A proof made with another code does not hold either.
        let forged = claim(&code(9), &inv, 3, &feed("backend", "y"), 5);
        assert!(matches!(
            &standings(std::slice::from_ref(&inv), std::slice::from_ref(&forged), &none, 500)[&forged.id],
            Standing::Refused(r) if r.contains("does not match")
        ));
        let wrong_role = claim(&c, &inv, 4, &feed("frontend", "x"), 5);
        assert!(matches!(
            &standings(std::slice::from_ref(&inv), std::slice::from_ref(&wrong_role), &none, 500)[&wrong_role.id],
            Standing::Refused(r) if r.contains("for role 'backend'")
        ));
    }
}
