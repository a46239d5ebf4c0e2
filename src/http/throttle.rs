//! Slowing down an address that keeps presenting wrong secrets.
//!
//! Secrets are 256-bit random, so guessing is hopeless anyway; the pause
//! makes trying cost the one who tries. It is the failing request that
//! waits, after its secret was checked and before its refusal: a good
//! secret from the same address is never held up (a reverse proxy, a
//! shared machine), and a prober gets its answers one pause apart on each
//! connection it may hold (`connections` bounds those). The first few
//! failures are free (a mistyped token), then each further one waits twice
//! as long as the one before, up to a cap; ten quiet minutes forget them.
//! The table is bounded: past its size the oldest entries go.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Failures an address may have before it is slowed down.
const FREE: u32 = 5;
/// The first pause, doubled with each further failure.
const FIRST: Duration = Duration::from_millis(250);
/// The longest pause.
const CAP: Duration = Duration::from_secs(8);
/// How long failures are remembered.
const WINDOW: Duration = Duration::from_secs(600);
/// The most addresses remembered.
const MAX_ADDRESSES: usize = 4096;

/// Failed authentications per address.
#[derive(Debug, Default)]
pub struct Throttle {
    failures: Mutex<HashMap<IpAddr, (u32, Instant)>>,
}

impl Throttle {
    /// How long the latest failure of `ip` waited (nothing while its
    /// failures are free, or forgotten).
    #[cfg(test)]
    pub fn pause(&self, ip: IpAddr) -> Duration {
        let map = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        match map.get(&ip) {
            Some(&(n, at)) if at.elapsed() < WINDOW => wait(n),
            _ => Duration::ZERO,
        }
    }

    /// Records a wrong secret from `ip` and waits out its pause: only the
    /// failing request waits, after its check, never a good one from the
    /// same address.
    pub async fn refuse_after_pause(&self, ip: IpAddr) {
        let pause = self.failed(ip);
        if !pause.is_zero() {
            tokio::time::sleep(pause).await;
        }
    }

    /// Records a wrong secret from `ip`; returns how long its refusal
    /// waits.
    pub fn failed(&self, ip: IpAddr) -> Duration {
        let mut map = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        if map.len() >= MAX_ADDRESSES && !map.contains_key(&ip) {
            map.retain(|_, (_, at)| at.elapsed() < WINDOW);
            if map.len() >= MAX_ADDRESSES
                && let Some(oldest) = map.iter().min_by_key(|(_, (_, at))| *at).map(|(k, _)| *k)
            {
                map.remove(&oldest);
            }
        }
        let entry = map.entry(ip).or_insert((0, Instant::now()));
        if entry.1.elapsed() >= WINDOW {
            entry.0 = 0;
        }
        entry.0 = entry.0.saturating_add(1);
        entry.1 = Instant::now();
        wait(entry.0)
    }

    /// Forgets the failures of `ip`. The `/mcp` and `/status` routes do not
    /// call it: another caller's good secret at the same address must not
    /// give a prober its free failures back.
    pub fn succeeded(&self, ip: IpAddr) {
        let mut map = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        map.remove(&ip);
    }
}

/// The pause after the `n`th failure in a row.
fn wait(n: u32) -> Duration {
    if n <= FREE {
        return Duration::ZERO;
    }
    let doublings = (n - FREE - 1).min(16);
    (FIRST * 2u32.pow(doublings)).min(CAP)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_past_the_free_ones_pause_longer_each_time_until_a_success() {
        let t = Throttle::default();
        let ip: IpAddr = "10.0.0.1".parse().unwrap();
        let other: IpAddr = "10.0.0.2".parse().unwrap();
        for _ in 0..FREE {
            assert_eq!(t.failed(ip), Duration::ZERO);
        }
        assert_eq!(t.pause(ip), Duration::ZERO);
        assert_eq!(t.failed(ip), FIRST);
        assert_eq!(t.pause(ip), FIRST);
        assert_eq!(t.failed(ip), FIRST * 2);
        assert_eq!(t.pause(ip), FIRST * 2);
        for _ in 0..40 {
            t.failed(ip);
        }
        assert_eq!(t.pause(ip), CAP);
        assert_eq!(t.pause(other), Duration::ZERO);
        t.succeeded(ip);
        assert_eq!(t.pause(ip), Duration::ZERO);
    }

    #[test]
    fn the_table_stays_bounded() {
        let t = Throttle::default();
        for i in 0..(MAX_ADDRESSES as u32 + 100) {
            t.failed(IpAddr::from(i.to_be_bytes()));
        }
        assert!(t.failures.lock().unwrap().len() <= MAX_ADDRESSES);
    }
}
