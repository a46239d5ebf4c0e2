//! What one call may spend before it answers with what it has found, and
//! whether its caller still waits for the answer.
//!
//! Bodies are written by peers, and a search must not run for as long as
//! they make it (a 256 KiB run of one character, thousands of matches in one
//! row): the session answers nothing else meanwhile. A [`Budget`] counts the
//! work a call does in steps, about one byte of text looked at once, and
//! refuses a step past its cap; the call then answers with what it found so
//! far and says so. It also carries the caller's cancellation (an MCP client
//! gave up), checked at every step taken, so a cancelled call ends soon.

/// The work one `search_messages` call may do: 64 Mi steps, a few tenths of
/// a second of text examined on a release build, a few seconds unoptimized.
pub const SEARCH_STEPS: u64 = 64 << 20;

/// Why a [`Budget`] refused a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// Not enough is left: answer with what was found.
    Exhausted,
    /// The caller no longer wants the answer.
    Cancelled,
}

/// A cap on the steps of one call, and its caller's cancellation.
pub struct Budget<'c> {
    left: u64,
    cap: u64,
    exhausted: bool,
    cancelled: &'c dyn Fn() -> bool,
}

impl<'c> Budget<'c> {
    /// `steps` to spend; `cancelled` says when the caller gave up.
    pub fn new(steps: u64, cancelled: &'c dyn Fn() -> bool) -> Self {
        Self {
            left: steps,
            cap: steps,
            exhausted: false,
            cancelled,
        }
    }

    /// The budget of one search ([`SEARCH_STEPS`]).
    pub fn search(cancelled: &'c dyn Fn() -> bool) -> Self {
        Self::new(SEARCH_STEPS, cancelled)
    }

    /// Spends `steps`, or refuses (spending nothing) when fewer are left or the
    /// caller cancelled. Once refused for want of steps, it stays exhausted.
    pub fn take(&mut self, steps: u64) -> Result<(), Stop> {
        if (self.cancelled)() {
            return Err(Stop::Cancelled);
        }
        if self.exhausted || steps > self.left {
            self.exhausted = true;
            return Err(Stop::Exhausted);
        }
        self.left -= steps;
        Ok(())
    }

    /// True when `steps` could be spent now (nothing is spent).
    pub fn affords(&self, steps: u64) -> bool {
        !self.exhausted && steps <= self.left
    }

    /// True once a step was refused for want of steps.
    pub fn exhausted(&self) -> bool {
        self.exhausted
    }

    /// The cap this budget started with.
    pub fn cap(&self) -> u64 {
        self.cap
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;

    #[test]
    fn spends_up_to_the_cap_then_stays_exhausted() {
        let never = || false;
        let mut b = Budget::new(10, &never);
        assert!(b.affords(10));
        assert_eq!(b.take(6), Ok(()));
        assert!(!b.affords(5));
        assert_eq!(b.take(5), Err(Stop::Exhausted));
        assert!(b.exhausted());
        // A smaller step no longer goes through: the answer is already cut.
        assert_eq!(b.take(1), Err(Stop::Exhausted));
        assert_eq!(b.cap(), 10);
    }

    #[test]
    fn cancellation_wins_over_what_is_left() {
        let flag = Cell::new(false);
        let cancelled = || flag.get();
        let mut b = Budget::search(&cancelled);
        assert_eq!(b.take(1), Ok(()));
        flag.set(true);
        assert_eq!(b.take(0), Err(Stop::Cancelled));
        assert!(!b.exhausted());
    }
}
