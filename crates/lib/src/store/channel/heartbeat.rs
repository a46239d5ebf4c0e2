//! Heartbeats: this device's feeds saying "nothing more from me up to now"
//! while it writes nothing.
//!
//! The other machines hold an item out of the memory (and call the order
//! tentative) until every device they wait for was heard from after it. A
//! device is heard from by its records and its signed `head.json`, which
//! every record rewrites; a device that writes nothing would keep its peers
//! waiting until it writes again, or until it counts as away. So the
//! long-running processes (`mcp`, `serve`: their sync loop) rewrite the head
//! of each feed this device writes, naming the same last record and the time
//! they looked (`as_of`), and the sync carries it like any file of the feed.
//!
//! Owns when a beat is due and writing it under the feed's lock (so no
//! record is appended between reading the last one and naming it). Writes no
//! record; must not decide what a head means to a reader (`app::presence`).

use std::time::Duration;

use crate::store::channel::{Channel, now_ms};
use crate::store::error::StoreResult;
use crate::store::folder::segments::read_head;

/// How often at most a device that writes nothing goes unheard while one of
/// its long-running processes runs: well within the memory's 10 minutes
/// after which a device counts as away.
pub const KEEP_ALIVE: Duration = Duration::from_secs(120);

impl Channel {
    /// Rewrites the head of each feed this device writes (the owner's feed
    /// aside: nothing waits for it) as a heartbeat, when one is due
    /// ([`due`]); `next_in` is how long until the caller looks again.
    /// Reads what the index holds: catch it up first. Returns how many heads
    /// were rewritten (0: nothing was due, or this device writes no feed).
    pub fn beat(&self, next_in: Duration) -> StoreResult<usize> {
        let now = now_ms();
        let newest = self.index().newest_record_ms()?;
        let dir = self.dir().clone();
        let mut beats = 0;
        self.each_own_feed(|writer, key| {
            if writer.feed().is_owner() {
                return Ok(());
            }
            let public = key.verifying_key();
            let Some(last) = writer.reconcile(&public)? else {
                return Ok(());
            };
            // A head that names an older record (a torn write, a copy) says
            // nothing about this one: heard at the record itself.
            let heard = read_head(&dir.feed_dir(writer.feed()), writer.feed(), &public)
                .filter(|h| h.seq == last.header.seq && h.id == last.id)
                .map_or(last.header.hlc.ms(), |h| h.heard_ms());
            if !due(heard, newest, now, next_in) {
                return Ok(());
            }
            // Never before its own record: a clock stepped back would
            // otherwise claim less than the feed already says.
            writer.beat(&last, now.max(last.header.hlc.ms()), key)?;
            beats += 1;
            Ok(())
        })?;
        Ok(beats)
    }
}

/// Whether a feed last heard at `heard` (ms) beats now: when the channel
/// holds a record at least as new (the other machines wait for this device
/// to be heard after it), or when the next look, `next_in` from `now`, would
/// leave it unheard for [`KEEP_ALIVE`] or longer.
pub fn due(heard: i64, newest: Option<i64>, now: i64, next_in: Duration) -> bool {
    let ms = |d: Duration| i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
    newest.is_some_and(|n| n >= heard)
        || now.saturating_sub(heard).saturating_add(ms(next_in)) >= ms(KEEP_ALIVE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_beat_is_due_for_a_newer_record_or_before_the_keep_alive_runs_out() {
        let s = Duration::from_secs(1);
        let now = 1_000_000;
        // Heard after the newest record, recently: nothing to say.
        assert!(!due(now - 5_000, Some(now - 6_000), now, s));
        // A record as new as the last word (its own, or a peer's): due.
        assert!(due(now - 5_000, Some(now - 5_000), now, s));
        assert!(due(now - 5_000, Some(now - 1_000), now, s));
        // Quiet, but the next look would come too late: due.
        assert!(due(now - 119_500, None, now, s));
        assert!(!due(now - 100_000, None, now, s));
        assert!(due(now - 100_000, None, now, Duration::from_secs(30)));
        // A period of 2 minutes or more: every look beats.
        assert!(due(now, None, now, KEEP_ALIVE));
    }
}
