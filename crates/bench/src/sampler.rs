//! Which calls are timed (a warm-up, then a number of calls under a time cap)
//! and the percentiles of what they gave.

use std::time::{Duration, Instant};

/// Calls per tool before timing starts.
pub const WARMUP: usize = 5;
/// A tool stops being timed after this long (with at least `MIN_CALLS` samples),
/// so a slow query cannot make the bench run for hours.
const TIME_CAP: Duration = Duration::from_secs(20);
/// Fewest timed calls per tool, whatever the time cap.
pub const MIN_CALLS: usize = 10;
/// A call this slow ends the warm-up: one untimed call is enough for it.
const SLOW_CALL: Duration = Duration::from_millis(200);

/// Decides which calls are timed: up to [`WARMUP`] untimed calls first (only
/// one when calls are slow), then `calls` timed ones — fewer, but at least
/// `min`, once the timed ones have taken [`TIME_CAP`].
pub struct Sampler {
    calls: usize,
    min: usize,
    warm: usize,
    started: Option<Instant>,
    out: Vec<Duration>,
}

impl Sampler {
    pub fn new(calls: usize, min: usize) -> Self {
        Self {
            calls,
            min,
            warm: 0,
            started: None,
            out: Vec::with_capacity(calls),
        }
    }

    pub fn more(&self) -> bool {
        let capped = self.started.is_some_and(|t| t.elapsed() > TIME_CAP);
        self.out.len() < self.calls && !(capped && self.out.len() >= self.min)
    }

    pub fn record(&mut self, d: Duration) {
        if self.warm < WARMUP && (self.warm == 0 || d < SLOW_CALL) {
            self.warm += 1;
            return;
        }
        self.started.get_or_insert_with(Instant::now);
        self.out.push(d);
    }

    /// The timed samples.
    pub fn into_samples(self) -> Vec<Duration> {
        self.out
    }
}

/// Nearest-rank percentile.
pub fn p(samples: &[Duration], pct: usize) -> Duration {
    if samples.is_empty() {
        return Duration::ZERO;
    }
    let mut v = samples.to_vec();
    v.sort_unstable();
    let rank = (pct * v.len()).div_ceil(100).max(1);
    v[rank - 1]
}

pub fn median(samples: &[Duration]) -> Duration {
    p(samples, 50)
}
