//! The signature rule: ZIP-215, one rule for a signature checked alone and
//! for signatures checked as a batch.
//!
//! Every check of an ed25519 signature goes through here: records, heads,
//! the signed files beside them (`api.json`, `api-key.json`) and the proofs
//! of invitation claims. ZIP-215 (Zcash's consensus rule) settles what RFC
//! 8032 leaves to each library: the cofactored equation
//! `[8][s]B = [8]R + [8][k]A`, `s` below the group order, and `A` and `R`
//! decoded as any point encoding, canonical or not. Under it a batch check
//! accepts exactly what single checks accept, so a machine that checks a
//! thousand records at once and one that checks them one by one agree on
//! every record; under `verify_strict` (the rule before) they need not.
//!
//! ZIP-215 accepts almost any signature under a key of small order, so such
//! keys, and keys written in a non-canonical encoding, are refused where a key
//! enters ([`parse_key`], [`check_key`]): genesis, `admit`, `claim`,
//! `feed_init`, `replace_key` and invitation keys. Signing stays with
//! ed25519-dalek (the same key bytes); its signatures pass this rule.
//!
//! Pure: a batch's random weights come from a hash of the whole batch, not
//! from the system, so no writer can know them before its records are
//! written, and a batch of valid signatures holds wherever it is checked.

use ed25519_dalek::{Signature, VerifyingKey};
use ed25519_zebra::batch;
use ed25519_zebra::{VerificationKey, VerificationKeyBytes};
use sha2::{Digest as _, Sha512};

use curve25519_dalek::edwards::CompressedEdwardsY;

/// Why 32 bytes are not a usable public key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// Not 64 hex digits.
    #[error("a public key is 64 hex digits")]
    NotHex,
    /// Not the encoding of a curve point.
    #[error("the key is not a point of the ed25519 curve")]
    NotOnCurve,
    /// A point, but not written the one way ed25519 writes it.
    #[error("the key is not in canonical encoding")]
    NonCanonical,
    /// A point of small order: a signature under it proves nothing.
    #[error("the key is of small order, under which any signature would pass")]
    SmallOrder,
}

/// The public key written as 64 hex digits, if it is usable ([`check_key`]).
pub fn parse_key(hex_key: &str) -> Result<VerifyingKey, KeyError> {
    let mut b = [0u8; 32];
    hex::decode_to_slice(hex_key, &mut b).map_err(|_| KeyError::NotHex)?;
    check_key(&b)
}

/// The public key of `bytes` if it is usable: a point of the curve, written
/// canonically, and not of small order.
pub fn check_key(bytes: &[u8; 32]) -> Result<VerifyingKey, KeyError> {
    let point = CompressedEdwardsY(*bytes)
        .decompress()
        .ok_or(KeyError::NotOnCurve)?;
    if point.compress().as_bytes() != bytes {
        return Err(KeyError::NonCanonical);
    }
    if point.is_small_order() {
        return Err(KeyError::SmallOrder);
    }
    Ok(VerifyingKey::from(point))
}

/// True if `sig` is `key`'s signature of `msg` under ZIP-215.
pub fn verify(key: &VerifyingKey, msg: &[u8], sig: &Signature) -> bool {
    VerificationKey::try_from(key.to_bytes()).is_ok_and(|k| k.verify(sig, msg).is_ok())
}

/// Domain of the hash that draws a batch's weights.
const WEIGHTS_DOMAIN: &[u8] = b"countersign/batch-weights/v1\0";

/// Signatures checked together: one multi-scalar multiplication for all of
/// them, about half the work of checking each alone. The answer is the one
/// single checks give ([`verify`]), signature by signature.
pub struct Batch {
    items: Vec<batch::Item>,
    /// Hash of everything queued, keys, signatures and messages, whence the
    /// weights: fixed by the batch, unknown to whoever wrote it until it is
    /// written whole.
    transcript: Sha512,
}

impl Default for Batch {
    fn default() -> Self {
        Self::new()
    }
}

impl Batch {
    /// An empty batch.
    pub fn new() -> Self {
        Self {
            items: Vec::new(),
            transcript: Sha512::new_with_prefix(WEIGHTS_DOMAIN),
        }
    }

    /// Queues `key`'s signature `sig` of `msg`.
    pub fn push(&mut self, key: &VerifyingKey, msg: &[u8], sig: &Signature) {
        self.bind(key, sig, Bound::Message(msg));
        self.queue(key, msg, sig);
    }

    /// Queues `key`'s signature `sig` of `msg`, where `digest` is a SHA-256
    /// digest that determines `msg` (a record's id, the hash of the body the
    /// signed bytes hold): the weights are then drawn from the digest, not
    /// from a second pass of SHA-512 over every message (a sixth of a
    /// record's check). A digest that does not determine `msg` lets whoever
    /// chose it know the weights in advance; never pass one from the input.
    pub fn push_digested(
        &mut self,
        key: &VerifyingKey,
        msg: &[u8],
        digest: &[u8; 32],
        sig: &Signature,
    ) {
        self.bind(key, sig, Bound::Digest(digest));
        self.queue(key, msg, sig);
    }

    /// Writes the key, the signature and what stands for the message into
    /// the transcript, the two kinds of message told apart.
    fn bind(&mut self, key: &VerifyingKey, sig: &Signature, msg: Bound<'_>) {
        self.transcript.update(key.to_bytes());
        self.transcript.update(sig.to_bytes());
        match msg {
            Bound::Message(m) => {
                self.transcript.update([0]);
                self.transcript.update((m.len() as u64).to_le_bytes());
                self.transcript.update(m);
            }
            Bound::Digest(d) => {
                self.transcript.update([1]);
                self.transcript.update(d);
            }
        }
    }

    fn queue(&mut self, key: &VerifyingKey, msg: &[u8], sig: &Signature) {
        self.items.push(batch::Item::from((
            VerificationKeyBytes::from(key.to_bytes()),
            *sig,
            msg,
        )));
    }

    /// How many signatures are queued.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// True when nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// True if every queued signature holds (true for an empty batch).
    pub fn holds(&self) -> bool {
        let mut v = batch::Verifier::new();
        for item in &self.items {
            v.queue(item.clone());
        }
        v.verify(Weights::new(self.transcript.clone())).is_ok()
    }

    /// One verdict per queued signature, in the order queued: the batch
    /// equation once and, when it fails, each signature alone.
    pub fn verdicts(self) -> Vec<bool> {
        if self.holds() {
            return vec![true; self.items.len()];
        }
        self.items
            .into_iter()
            .map(|item| item.verify_single().is_ok())
            .collect()
    }
}

/// What binds a message in a batch's transcript.
enum Bound<'a> {
    /// The message itself.
    Message(&'a [u8]),
    /// A digest that determines it.
    Digest(&'a [u8; 32]),
}

/// The batch's weights: SHA-512 of the batch's transcript and a counter,
/// as many bytes as asked for. Bound to every key, signature and message of
/// the batch, so a writer cannot choose signatures that cancel out under
/// weights it knows beforehand (a bad signature slips through a batch with
/// odds of about 2^-128, as with weights from the system).
struct Weights {
    seed: [u8; 64],
    counter: u64,
}

impl Weights {
    fn new(transcript: Sha512) -> Self {
        Self {
            seed: transcript.finalize().into(),
            counter: 0,
        }
    }
}

impl rand_core::TryRng for Weights {
    type Error = core::convert::Infallible;

    fn try_next_u32(&mut self) -> Result<u32, Self::Error> {
        let mut b = [0u8; 4];
        self.try_fill_bytes(&mut b)?;
        Ok(u32::from_le_bytes(b))
    }

    fn try_next_u64(&mut self) -> Result<u64, Self::Error> {
        let mut b = [0u8; 8];
        self.try_fill_bytes(&mut b)?;
        Ok(u64::from_le_bytes(b))
    }

    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Self::Error> {
        for part in dst.chunks_mut(64) {
            let block = Sha512::new()
                .chain_update(self.seed)
                .chain_update(self.counter.to_le_bytes())
                .finalize();
            self.counter += 1;
            part.copy_from_slice(&block[..part.len()]);
        }
        Ok(())
    }
}

impl rand_core::TryCryptoRng for Weights {}

#[cfg(test)]
mod tests {
    use ed25519_dalek::{Signer as _, SigningKey};
    use proptest::prelude::*;

    use super::*;

    fn signed(seed: u8, msg: &[u8]) -> (VerifyingKey, Signature) {
        let k = SigningKey::from_bytes(&[seed; 32]);
        (k.verifying_key(), k.sign(msg))
    }

    #[test]
    fn a_signature_holds_for_its_key_and_message_only() {
        let (key, sig) = signed(1, b"hello");
        assert!(verify(&key, b"hello", &sig));
        assert!(!verify(&key, b"hellp", &sig));
        assert!(!verify(&signed(2, b"").0, b"hello", &sig));
    }

    #[test]
    fn a_batch_names_the_signatures_that_fail() {
        let mut b = Batch::new();
        assert!(b.holds(), "an empty batch holds");
        for i in 0..10u8 {
            let (key, sig) = signed(i, &[i]);
            // Every third is checked against another message.
            let msg = if i % 3 == 0 { [i, 0] } else { [i, i] };
            b.push(&key, &msg[..1 + usize::from(i % 3 == 0)], &sig);
        }
        assert_eq!(b.len(), 10);
        assert!(!b.holds());
        let want: Vec<bool> = (0..10).map(|i| i % 3 != 0).collect();
        assert_eq!(b.verdicts(), want);
    }

    #[test]
    fn usable_keys_are_canonical_points_of_large_order() {
        let (key, _) = signed(3, b"");
        assert_eq!(check_key(&key.to_bytes()), Ok(key));
        assert_eq!(parse_key(&hex::encode(key.to_bytes())), Ok(key));
        assert_eq!(parse_key("xyz"), Err(KeyError::NotHex));
        assert_eq!(parse_key(&"ab".repeat(31)), Err(KeyError::NotHex));
        // The identity, and the point of order 4 whose y is 0.
        let mut identity = [0u8; 32];
        identity[0] = 1;
        assert_eq!(check_key(&identity), Err(KeyError::SmallOrder));
        assert_eq!(check_key(&[0; 32]), Err(KeyError::SmallOrder));
        // y = p + 1 is the identity again, written with y ≥ p.
        let mut high = [0xff; 32];
        high[0] = 0xee;
        high[31] = 0x7f;
        assert_eq!(check_key(&high), Err(KeyError::NonCanonical));
        // y = 2 has no x on the curve.
        let mut two = [0u8; 32];
        two[0] = 2;
        assert_eq!(check_key(&two), Err(KeyError::NotOnCurve));
        assert!(KeyError::SmallOrder.to_string().contains("small order"));
    }

    #[test]
    fn the_weights_are_fixed_by_the_batch() {
        let draw = |msg: &[u8]| {
            let mut b = Batch::new();
            let (key, sig) = signed(4, msg);
            b.push(&key, msg, &sig);
            let mut w = Weights::new(b.transcript.clone());
            let mut out = [0u8; 80];
            rand_core::TryRng::try_fill_bytes(&mut w, &mut out).unwrap();
            out
        };
        assert_eq!(draw(b"a"), draw(b"a"));
        assert_ne!(draw(b"a"), draw(b"b"));
    }

    fn sha256(msg: &[u8]) -> [u8; 32] {
        sha2::Sha256::digest(msg).into()
    }

    #[test]
    fn a_digest_fixes_the_weights_as_the_message_does() {
        let draw = |msg: &[u8], digest: Option<[u8; 32]>| {
            let mut b = Batch::new();
            let (key, sig) = signed(4, msg);
            match digest {
                Some(d) => b.push_digested(&key, msg, &d, &sig),
                None => b.push(&key, msg, &sig),
            }
            Weights::new(b.transcript.clone()).seed
        };
        let d = sha256(b"a");
        assert_eq!(draw(b"a", Some(d)), draw(b"a", Some(d)));
        assert_ne!(draw(b"a", Some(d)), draw(b"a", Some(sha256(b"b"))));
        // A digest never stands for a message that happens to have its bytes.
        assert_ne!(draw(b"a", Some(d)), draw(b"a", None));
        assert_ne!(draw(&d, Some(d)), draw(&d, None));
    }

    /// How a case is spoiled before it is checked.
    #[derive(Clone, Debug)]
    enum Spoil {
        None,
        SigBit(usize),
        MsgBit(usize),
        KeyBit(usize),
        Random([u8; 32], [u8; 32]),
    }

    fn spoil() -> impl Strategy<Value = Spoil> {
        prop_oneof![
            Just(Spoil::None),
            (0..512usize).prop_map(Spoil::SigBit),
            (0..64usize).prop_map(Spoil::MsgBit),
            (0..256usize).prop_map(Spoil::KeyBit),
            (any::<[u8; 32]>(), any::<[u8; 32]>()).prop_map(|(r, s)| Spoil::Random(r, s)),
        ]
    }

    /// A key, a message and a signature, spoiled as told. A flipped key bit
    /// that leaves no curve point keeps the key as it was.
    fn case(seed: [u8; 32], mut msg: Vec<u8>, how: &Spoil) -> (VerifyingKey, Vec<u8>, Signature) {
        let signer = SigningKey::from_bytes(&seed);
        let mut sig = signer.sign(&msg).to_bytes();
        let mut key = signer.verifying_key();
        match *how {
            Spoil::None => {}
            Spoil::SigBit(i) => sig[i / 8] ^= 1 << (i % 8),
            Spoil::MsgBit(i) if !msg.is_empty() => {
                let at = (i / 8) % msg.len();
                msg[at] ^= 1 << (i % 8);
            }
            Spoil::MsgBit(_) => msg.push(1),
            Spoil::KeyBit(i) => {
                let mut b = key.to_bytes();
                b[i / 8] ^= 1 << (i % 8);
                key = VerifyingKey::from_bytes(&b).unwrap_or(key);
            }
            Spoil::Random(r, s) => {
                sig[..32].copy_from_slice(&r);
                sig[32..].copy_from_slice(&s);
            }
        }
        (key, msg, Signature::from_bytes(&sig))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// A batch of one says what a single check says, on signatures
        /// good and spoiled.
        #[test]
        fn one_signature_batched_is_one_signature_checked(
            seed in any::<[u8; 32]>(),
            msg in proptest::collection::vec(any::<u8>(), 0..64),
            how in spoil(),
        ) {
            let (key, msg, sig) = case(seed, msg, &how);
            let single = verify(&key, &msg, &sig);
            let mut b = Batch::new();
            b.push(&key, &msg, &sig);
            prop_assert_eq!(b.holds(), single);
            prop_assert_eq!(b.verdicts(), vec![single]);
            if matches!(how, Spoil::None) {
                prop_assert!(single);
            }
        }

        /// A mixed batch gives each signature the single check's verdict,
        /// and holds exactly when every single check does.
        #[test]
        fn a_batch_agrees_with_single_checks(
            cases in proptest::collection::vec(
                (any::<[u8; 32]>(), proptest::collection::vec(any::<u8>(), 0..32), spoil()),
                1..12,
            ),
        ) {
            let mut b = Batch::new();
            let mut singles = Vec::new();
            for (i, (seed, msg, how)) in cases.into_iter().enumerate() {
                let (key, msg, sig) = case(seed, msg, &how);
                singles.push(verify(&key, &msg, &sig));
                // Every other one bound by its digest, as records are.
                if i % 2 == 0 {
                    b.push(&key, &msg, &sig);
                } else {
                    b.push_digested(&key, &msg, &sha256(&msg), &sig);
                }
            }
            prop_assert_eq!(b.holds(), singles.iter().all(|&v| v));
            prop_assert_eq!(b.verdicts(), singles);
        }
    }
}
