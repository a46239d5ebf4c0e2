//! The hash chain of one feed: where a new record fits.
//!
//! Owns the rule that `seq` counts from 1 without gaps, `prev` names the
//! previous record and `hlc` strictly increases. It decides, it does not store:
//! the index keeps each feed's head and acts on the verdict.

use super::hlc::Hlc;
use super::ids::RecordId;
use super::record::Header;

/// The last accepted record of a feed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Head {
    /// Its seq.
    pub seq: u64,
    /// Its id.
    pub id: RecordId,
    /// Its clock.
    pub hlc: Hlc,
}

/// Where a record fits in its feed's chain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fit {
    /// The next record: append it.
    Next,
    /// Already accepted (same seq, same id): nothing to do.
    Known,
    /// Ahead of the head: records are missing; wait for them.
    Gap {
        /// The seq that must come first.
        expected: u64,
    },
    /// A different record at a seq already taken: a fork, kept as proof.
    Fork {
        /// The record already accepted at that seq.
        existing: RecordId,
    },
    /// Claims to be next but does not link to the head, or its clock goes back.
    Broken(String),
}

/// Judges `header` (of record `id`) against the feed's `head` (`None` for an
/// empty feed). `known_at` looks up the accepted record at an earlier seq; its
/// error is returned as is, never taken for "nothing there" (which would let a
/// fork pass as a record already seen).
pub fn fit<E>(
    head: Option<Head>,
    header: &Header,
    id: RecordId,
    known_at: impl FnOnce(u64) -> Result<Option<RecordId>, E>,
) -> Result<Fit, E> {
    let head_seq = head.map_or(0, |h| h.seq);
    if header.seq == 0 {
        return Ok(Fit::Broken("seq must start at 1".into()));
    }
    if header.seq <= head_seq {
        return Ok(match known_at(header.seq)? {
            Some(existing) if existing == id => Fit::Known,
            Some(existing) => Fit::Fork { existing },
            // The earlier record is unknown to the caller: treat as already seen.
            None => Fit::Known,
        });
    }
    if header.seq > head_seq + 1 {
        return Ok(Fit::Gap {
            expected: head_seq + 1,
        });
    }
    Ok(match head {
        None if header.prev.is_some() => Fit::Broken("seq 1 must have prev null".into()),
        None => Fit::Next,
        Some(h) if header.prev != Some(h.id) => Fit::Broken(format!(
            "prev does not name record {} at seq {}",
            h.id.short(),
            h.seq
        )),
        Some(h) if header.hlc <= h.hlc => Fit::Broken(format!(
            "hlc {:?} does not increase past {:?}",
            header.hlc, h.hlc
        )),
        Some(_) => Fit::Next,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::FeedId;

    fn hdr(seq: u64, prev: Option<RecordId>, ms: i64) -> Header {
        Header {
            ch: String::new(),
            feed: FeedId::new("a", "d").unwrap(),
            seq,
            prev,
            hlc: Hlc(ms, 0),
        }
    }

    #[test]
    fn verdicts() {
        let a = RecordId::of_body(b"a");
        let b = RecordId::of_body(b"b");
        let head = Some(Head {
            seq: 1,
            id: a,
            hlc: Hlc(10, 0),
        });
        assert_eq!(
            fit(None, &hdr(1, None, 1), a, |_| Ok::<_, ()>(None)).unwrap(),
            Fit::Next
        );
        assert!(matches!(
            fit(None, &hdr(1, Some(a), 1), a, |_| Ok::<_, ()>(None)).unwrap(),
            Fit::Broken(_)
        ));
        assert_eq!(
            fit(None, &hdr(3, Some(a), 1), a, |_| Ok::<_, ()>(None)).unwrap(),
            Fit::Gap { expected: 1 }
        );
        assert_eq!(
            fit(head, &hdr(2, Some(a), 11), b, |_| Ok::<_, ()>(None)).unwrap(),
            Fit::Next
        );
        assert!(matches!(
            fit(head, &hdr(2, Some(b), 11), b, |_| Ok::<_, ()>(None)).unwrap(),
            Fit::Broken(_)
        ));
        assert!(matches!(
            fit(head, &hdr(2, Some(a), 10), b, |_| Ok::<_, ()>(None)).unwrap(),
            Fit::Broken(_)
        ));
        assert_eq!(
            fit(head, &hdr(1, None, 10), a, |_| Ok::<_, ()>(Some(a))).unwrap(),
            Fit::Known
        );
        assert_eq!(
            fit(head, &hdr(1, None, 10), b, |_| Ok::<_, ()>(Some(a))).unwrap(),
            Fit::Fork { existing: a }
        );
    }

    #[test]
    fn a_failed_lookup_is_an_error_not_a_record_already_seen() {
        let a = RecordId::of_body(b"a");
        let head = Some(Head {
            seq: 1,
            id: a,
            hlc: Hlc(10, 0),
        });
        let b = RecordId::of_body(b"b");
        assert_eq!(
            fit(head, &hdr(1, None, 10), b, |_| Err::<Option<RecordId>, _>(
                "disk"
            )),
            Err("disk")
        );
    }
}
