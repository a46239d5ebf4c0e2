//! The hybrid logical clock and the total order of records.
//!
//! Owns `Hlc` and the rule for choosing the next stamp. It takes "now" as an
//! argument and never reads the wall clock itself.

use serde::{Deserialize, Serialize};

use super::ids::RecordId;

/// `[ms, counter]`: wall-clock milliseconds plus a tie-breaking counter.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
pub struct Hlc(pub i64, pub u32);

impl Hlc {
    /// Milliseconds since the Unix epoch.
    pub fn ms(self) -> i64 {
        self.0
    }

    /// The stamp a writer takes: after everything it has seen (`seen`) and not
    /// before `now`, so an operation sorts after all that its author knew.
    pub fn next(now_ms: i64, seen: Self) -> Self {
        if now_ms > seen.0 {
            Self(now_ms, 0)
        } else {
            Self(seen.0, seen.1.saturating_add(1))
        }
    }
}

/// A record's place in the channel's total order: `(hlc, id)`. A pure function
/// of record content, so every machine sorts the same records the same way.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OrderKey {
    /// The record's clock.
    pub hlc: Hlc,
    /// The record's id, breaking ties.
    pub id: RecordId,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_moves_forward() {
        assert_eq!(Hlc::next(100, Hlc(50, 3)), Hlc(100, 0));
        assert_eq!(Hlc::next(100, Hlc(100, 3)), Hlc(100, 4));
        // A clock that went backwards still sorts after what was seen.
        assert_eq!(Hlc::next(90, Hlc(100, 3)), Hlc(100, 4));
    }

    #[test]
    fn order_is_hlc_then_id() {
        let a = RecordId::of_body(b"a");
        let b = RecordId::of_body(b"b");
        let (lo, hi) = if a < b { (a, b) } else { (b, a) };
        assert!(
            OrderKey {
                hlc: Hlc(1, 0),
                id: hi
            } < OrderKey {
                hlc: Hlc(1, 1),
                id: lo
            }
        );
        assert!(
            OrderKey {
                hlc: Hlc(1, 0),
                id: lo
            } < OrderKey {
                hlc: Hlc(1, 0),
                id: hi
            }
        );
    }
}
