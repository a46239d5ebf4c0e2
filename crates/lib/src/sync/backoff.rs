//! The pauses between the tries of one sync that lost a race with another
//! machine, within a time budget.
//!
//! Owns the clock and the randomness of retrying: a try that lost a race (a
//! git push rejected because the remote moved meanwhile, an rclone copy that
//! met a file another writer was replacing) is followed by a pause drawn at
//! random from a range that doubles with each lost race, and by another try,
//! until the budget is spent. The randomness is what makes machines that
//! collided collide no more: with a fixed schedule they would all come back
//! at the same moment. Deciding which failures are races is the caller's
//! job; this module never runs a tool.

use std::thread::sleep;
use std::time::{Duration, Instant};

/// How long one sync keeps trying while it loses races, unless told otherwise.
pub const DEFAULT_BUDGET: Duration = Duration::from_secs(60);

/// The upper end of the first pause.
const FIRST: Duration = Duration::from_millis(100);
/// The upper end of any pause: long enough for a dozen machines' pushes to
/// pass, short enough that a sync does not idle when the remote is free.
const CEILING: Duration = Duration::from_millis(3200);

/// The tries of one sync and the time they have taken.
#[derive(Debug)]
pub struct Backoff {
    budget: Duration,
    started: Instant,
    tries: u32,
}

impl Backoff {
    /// Starts counting now; tries go on while less than `budget` has passed.
    pub fn new(budget: Duration) -> Self {
        Self {
            budget,
            started: Instant::now(),
            tries: 0,
        }
    }

    /// Counts a try about to be made; returns its number (1 for the first).
    pub fn begin_try(&mut self) -> u32 {
        self.tries += 1;
        self.tries
    }

    /// How many tries were begun.
    pub fn tries(&self) -> u32 {
        self.tries
    }

    /// The time since the first try began.
    pub fn spent(&self) -> Duration {
        self.started.elapsed()
    }

    /// After a lost race: pauses (never past the end of the budget) and
    /// returns `true` for another try, or returns `false` at once when the
    /// budget is spent.
    pub fn pause(&mut self) -> bool {
        let left = self.budget.saturating_sub(self.spent());
        if left.is_zero() {
            return false;
        }
        sleep(pause_after(self.tries, random_fraction()).min(left));
        true
    }
}

/// The longest a background sync waits after failed syncs (unless its
/// period is longer).
pub const FAILURE_CEILING: Duration = Duration::from_secs(600);

/// The pause of a background sync after `failures` failed syncs in a row:
/// its `period` after the first, doubling with each further failure, up to
/// [`FAILURE_CEILING`] (never less than the period). A remote that is down
/// is then asked less and less often, not every period for ever.
pub fn after_failures(period: Duration, failures: u32) -> Duration {
    period
        .saturating_mul(1 << failures.saturating_sub(1).min(16))
        .min(FAILURE_CEILING.max(period))
}

/// The pause after `lost` lost races, for a uniform `fraction` in [0, 1):
/// somewhere in the upper half of a range that starts at [`FIRST`] and
/// doubles up to [`CEILING`] ("equal jitter": the pause grows for sure, and
/// its exact length is random).
pub fn pause_after(lost: u32, fraction: f64) -> Duration {
    let top = FIRST
        .saturating_mul(1 << lost.saturating_sub(1).min(16))
        .min(CEILING);
    let fraction = if fraction.is_finite() {
        fraction.clamp(0.0, 1.0)
    } else {
        0.5
    };
    top / 2 + (top / 2).mul_f64(fraction)
}

/// A uniform fraction in [0, 1) from the operating system's random source;
/// if that fails, from the clock's nanoseconds and the process id, which
/// still differ between machines.
fn random_fraction() -> f64 {
    let mut bytes = [0u8; 4];
    let n = if getrandom::fill(&mut bytes).is_ok() {
        u32::from_le_bytes(bytes)
    } else {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        nanos ^ std::process::id().rotate_left(16)
    };
    f64::from(n) / (f64::from(u32::MAX) + 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_double_within_a_random_upper_half_up_to_the_ceiling() {
        assert_eq!(pause_after(1, 0.0), Duration::from_millis(50));
        assert!(pause_after(1, 0.999_999) < Duration::from_millis(100));
        assert_eq!(pause_after(2, 0.0), Duration::from_millis(100));
        assert_eq!(pause_after(3, 0.5), Duration::from_millis(300));
        assert_eq!(pause_after(6, 0.0), Duration::from_millis(1600));
        assert_eq!(pause_after(7, 0.0), Duration::from_millis(1600));
        assert_eq!(pause_after(1000, 1.0), CEILING);
        assert_eq!(pause_after(0, 0.0), Duration::from_millis(50));
        assert_eq!(pause_after(2, f64::NAN), Duration::from_millis(150));
    }

    #[test]
    fn failed_background_syncs_wait_longer_each_time_up_to_the_ceiling() {
        let p = Duration::from_secs(30);
        assert_eq!(after_failures(p, 0), p);
        assert_eq!(after_failures(p, 1), p);
        assert_eq!(after_failures(p, 2), Duration::from_secs(60));
        assert_eq!(after_failures(p, 4), Duration::from_secs(240));
        assert_eq!(after_failures(p, 6), FAILURE_CEILING);
        assert_eq!(after_failures(p, u32::MAX), FAILURE_CEILING);
        let long = Duration::from_secs(3600);
        assert_eq!(after_failures(long, 5), long, "never below the period");
    }

    #[test]
    fn random_fractions_stay_in_range_and_vary() {
        let draws: Vec<f64> = (0..64).map(|_| random_fraction()).collect();
        assert!(draws.iter().all(|f| (0.0..1.0).contains(f)), "{draws:?}");
        assert!(draws.windows(2).any(|w| w[0] != w[1]), "{draws:?}");
    }

    #[test]
    fn a_spent_budget_refuses_another_try_at_once() {
        let mut b = Backoff::new(Duration::ZERO);
        assert_eq!(b.begin_try(), 1);
        assert!(!b.pause());
        assert_eq!(b.tries(), 1);
    }

    #[test]
    fn a_pause_never_runs_past_the_budget() {
        let mut b = Backoff::new(Duration::from_millis(30));
        for _ in 0..4 {
            b.begin_try();
        }
        // The fourth lost race would pause 400–800 ms; 30 ms are left at most.
        assert!(b.pause());
        assert!(!b.pause(), "the budget is spent after the capped pause");
    }
}
