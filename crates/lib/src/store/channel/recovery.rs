//! Recovery of this device's feeds when a process opens the channel: the
//! feed segments are written without fsync, so after the machine stopped
//! (power loss, kernel crash) a feed may have lost its last writes, and
//! every process puts it right from the journals before it reads or syncs
//! anything ([`Channel::recover_own_feeds`], called by [`Channel::open`]).
//!
//! Owns only when to look and which feeds to repair; what damage is and how
//! it is cut is `store::writer::recovery`'s.

use std::collections::HashSet;

use crate::core::ids::FeedId;
use crate::store::channel::Channel;
use crate::store::error::StoreResult;

impl Channel {
    /// Repairs each feed this device writes whose newest segment is not the
    /// journal's last bytes ([`crate::store::writer::feed::FeedWriter::matches_journal`]),
    /// under its lock, with [`Self::reconcile_own_feeds`]'s repair; returns
    /// how many needed it. When nothing is amiss this costs, per own feed, a
    /// folder listing and two reads of at most a segment, and no key is loaded.
    pub fn recover_own_feeds(&self) -> StoreResult<usize> {
        let journals = self.state_dir.join("journal");
        let Ok(entries) = std::fs::read_dir(&journals) else {
            return Ok(0);
        };
        let mut amiss: HashSet<FeedId> = HashSet::new();
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(feed) = name
                .to_str()
                .and_then(|n| n.strip_suffix(".jsonl"))
                .and_then(|role| FeedId::new(role, &self.device.id))
            else {
                continue;
            };
            let writer = self.feed_writer(feed.clone());
            if !writer.matches_journal()? {
                amiss.insert(feed);
            }
        }
        if amiss.is_empty() {
            return Ok(0);
        }
        let mut n = 0;
        self.each_own_feed(|writer, key| {
            if amiss.contains(writer.feed()) {
                writer.reconcile(&key.verifying_key())?;
                n += 1;
            }
            Ok(())
        })?;
        Ok(n)
    }
}
