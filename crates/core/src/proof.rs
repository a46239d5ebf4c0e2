//! What a server derives from its home's server secret: the proof that it
//! holds that home (asked by `countersign board` before it hands a server a
//! link) and the server id its board cookies are named with.
//!
//! Both are HMAC-SHA256 (RFC 2104) of a message that names its purpose, so
//! one can never stand for the other. The proof also names the address the
//! server listens on and the channel: a process on another port that relays
//! a challenge to the real server gets back a proof for the real server's
//! address, which the asker refuses. Pure: the secret, the address and the
//! challenge are passed in; keeping the secret is the store's.

use std::net::SocketAddr;

use sha2::{Digest as _, Sha256};

/// Bytes of a challenge (sent as 64 hex digits).
pub const CHALLENGE_BYTES: usize = 32;

/// Hex digits of a server id.
pub const SERVER_ID_DIGITS: usize = 12;

const BLOCK: usize = 64;

/// HMAC-SHA256 of `message` under `key` (RFC 2104).
pub fn mac(key: &[u8], message: &[u8]) -> [u8; 32] {
    let mut block = [0u8; BLOCK];
    if key.len() > BLOCK {
        block[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let pad = |byte: u8| block.map(|b| b ^ byte);
    let inner = Sha256::new()
        .chain_update(pad(0x36))
        .chain_update(message)
        .finalize();
    Sha256::new()
        .chain_update(pad(0x5c))
        .chain_update(inner)
        .finalize()
        .into()
}

/// True for a well-formed challenge: exactly 64 lowercase hex digits.
pub fn is_challenge(challenge: &str) -> bool {
    challenge.len() == 2 * CHALLENGE_BYTES
        && challenge
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The proof, in hex, that the server listening on `listen` and serving
/// channel `channel_id` holds `secret`, answering `challenge`.
pub fn board_proof(secret: &[u8], listen: SocketAddr, channel_id: &str, challenge: &str) -> String {
    let message = format!("countersign board proof\n{listen}\n{channel_id}\n{challenge}");
    hex::encode(mac(secret, message.as_bytes()))
}

/// The id of the server holding `secret` and listening on `listen`: the
/// same after a restart, different for another port or another home.
pub fn server_id(secret: &[u8], listen: SocketAddr) -> String {
    let message = format!("countersign server id\n{listen}");
    hex::encode(mac(secret, message.as_bytes()))[..SERVER_ID_DIGITS].to_owned()
}

/// True when two hex strings are equal, compared without stopping early.
pub fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mac_is_rfc_4231s() {
        // RFC 4231, test cases 2 and 6 (a key longer than a block).
        assert_eq!(
            hex::encode(mac(b"Jefe", b"what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        assert_eq!(
            hex::encode(mac(
                &[0xaa; 131],
                b"Test Using Larger Than Block-Size Key - Hash Key First"
            )),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
    }

    #[test]
    fn a_proof_names_its_address_channel_and_challenge() {
        let a: SocketAddr = "127.0.0.1:8787".parse().unwrap();
        let b: SocketAddr = "127.0.0.1:8788".parse().unwrap();
        let c = "ab".repeat(32);
        let p = board_proof(b"k", a, "chan", &c);
        assert_ne!(p, board_proof(b"k", b, "chan", &c));
        assert_ne!(p, board_proof(b"k", a, "other", &c));
        assert_ne!(p, board_proof(b"j", a, "chan", &c));
        assert_ne!(server_id(b"k", a), server_id(b"k", b));
        assert_eq!(server_id(b"k", a).len(), SERVER_ID_DIGITS);
        assert!(is_challenge(&c));
        assert!(!is_challenge(&"AB".repeat(32)));
        assert!(!is_challenge("ab"));
        assert!(same(&p, &p.clone()) && !same(&p, &p[1..]));
    }
}
