//! The ZIP-215 test vectors through the one signature rule: single checks and
//! batch checks give the same answer on each of the 196 cases (all valid),
//! and the keys they use, all of small order, are refused where a key enters.

use countersign_core::record::parse_pubkey;
use countersign_core::signature::{self, Batch, KeyError};
use ed25519_dalek::{Signature, VerifyingKey};

const VECTORS: &str = include_str!("zip215-vectors.txt");

/// The cases: key bytes and signature, message "Zcash".
fn cases() -> Vec<([u8; 32], Signature)> {
    VECTORS
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let (k, s) = l.split_once(' ').expect("key, space, signature");
            let mut key = [0u8; 32];
            let mut sig = [0u8; 64];
            hex::decode_to_slice(k, &mut key).expect("key hex");
            hex::decode_to_slice(s, &mut sig).expect("signature hex");
            (key, Signature::from_bytes(&sig))
        })
        .collect()
}

/// The key as ZIP-215 decodes it: any encoding of a point, canonical or not.
fn decoded(bytes: &[u8; 32]) -> VerifyingKey {
    let key = VerifyingKey::from_bytes(bytes).expect("every vector key is a point");
    assert_eq!(&key.to_bytes(), bytes, "the key keeps its encoding");
    key
}

#[test]
fn all_196_vectors_hold_alone_and_batched() {
    let cases = cases();
    assert_eq!(cases.len(), 196);
    let mut all = Batch::new();
    for (i, (bytes, sig)) in cases.iter().enumerate() {
        let key = decoded(bytes);
        assert!(signature::verify(&key, b"Zcash", sig), "case {i} alone");
        let mut one = Batch::new();
        one.push(&key, b"Zcash", sig);
        assert!(one.holds(), "case {i} as a batch of one");
        assert_eq!(one.verdicts(), vec![true], "case {i}");
        all.push(&key, b"Zcash", sig);
    }
    assert_eq!(all.len(), 196);
    assert!(all.holds(), "the 196 cases as one batch");
    assert_eq!(all.verdicts(), vec![true; 196]);
}

#[test]
fn a_spoiled_vector_fails_alone_and_batched_alike() {
    // s = 1 instead of 0: [8]B is not the sum of small-order points.
    for (i, (bytes, sig)) in cases().iter().enumerate() {
        let key = decoded(bytes);
        let mut raw = sig.to_bytes();
        raw[32] = 1;
        let sig = Signature::from_bytes(&raw);
        let single = signature::verify(&key, b"Zcash", &sig);
        assert!(!single, "case {i} with s = 1");
        let mut one = Batch::new();
        one.push(&key, b"Zcash", &sig);
        assert_eq!(one.holds(), single, "case {i}");
    }
}

#[test]
fn every_vector_key_is_refused_where_keys_enter() {
    // Under a small-order key a signature made for nothing holds for any
    // message: why such keys never enter a channel.
    let (bytes, sig) = cases()[0];
    assert!(signature::verify(
        &decoded(&bytes),
        b"a message nobody signed",
        &sig
    ));
    let mut seen = std::collections::BTreeSet::new();
    for (bytes, _) in cases() {
        if !seen.insert(bytes) {
            continue;
        }
        let why = signature::check_key(&bytes).expect_err("a small-order key");
        assert!(
            matches!(why, KeyError::SmallOrder | KeyError::NonCanonical),
            "{}: {why}",
            hex::encode(bytes)
        );
        assert!(parse_pubkey(&hex::encode(bytes)).is_none());
    }
    assert_eq!(seen.len(), 14);
}
