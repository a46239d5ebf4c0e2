//! Recovery of this device's feeds when a process opens the channel: the
//! feed segments are written without fsync, so after the machine stopped
//! (power loss, kernel crash) a feed may have lost its last writes, and
//! every process puts it right from the journals before it reads or syncs
//! anything ([`Channel::recover_own_feeds`], called by [`Channel::open`]).
//!
//! Owns when to look, how far, and which feeds to repair; what damage is
//! and how it is cut is `store::writer::recovery`'s.

use std::collections::HashSet;
use std::time::Duration;

use crate::core::ids::FeedId;
use crate::store::channel::Channel;
use crate::store::error::StoreResult;
use crate::store::writer::tail::TAIL_WINDOW;

/// The file in a channel's state folder naming the boot of this machine in
/// which its feeds were last compared whole with their journals.
pub const RECOVERED_BOOT: &str = "recovered-boot";

/// How long before the journal's last write a segment written to counts as
/// recent after a restart: far more than the kernel keeps a page dirty.
const RECENT: Duration = Duration::from_secs(300);

/// Where Linux names the current boot: it changes with every start of the
/// kernel, so a page cache lost in a crash goes with a new one.
const BOOT_ID: &str = "/proc/sys/kernel/random/boot_id";

impl Channel {
    /// Repairs each feed this device writes whose segments do not end with
    /// the journal's last bytes, under its lock
    /// ([`crate::store::writer::feed::FeedWriter::recover`]); returns how
    /// many needed it.
    ///
    /// Only a crash of the machine loses pages of the page cache, and it
    /// changes the boot id: while the id is the one [`RECOVERED_BOOT`] names,
    /// the feeds' last [`TAIL_WINDOW`] bytes are compared (what a process
    /// that died mid-write can leave wrong:
    /// [`crate::store::writer::feed::FeedWriter::matches_journal`]); after a
    /// restart, or where no boot id is to be had, every segment written to
    /// within [`RECENT`] of the journal's last write
    /// ([`crate::store::writer::feed::FeedWriter::recent_segments_match`]).
    /// When nothing is amiss this costs a folder listing and two short reads
    /// per own feed, and no key is loaded.
    pub fn recover_own_feeds(&self) -> StoreResult<usize> {
        let journals = self.state_dir.join("journal");
        let Ok(entries) = std::fs::read_dir(&journals) else {
            return Ok(0);
        };
        let boot = std::fs::read_to_string(BOOT_ID).ok();
        let marker = self.state_dir.join(RECOVERED_BOOT);
        let same_boot =
            boot.is_some() && std::fs::read_to_string(&marker).ok().as_deref() == boot.as_deref();

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
            let whole = if same_boot {
                writer.matches_journal(TAIL_WINDOW)?
            } else {
                writer.recent_segments_match(RECENT)?
            };
            if !whole {
                amiss.insert(feed);
            }
        }
        let mut n = 0;
        if !amiss.is_empty() {
            self.each_own_feed(|writer, key| {
                if amiss.contains(writer.feed()) {
                    writer.recover(&key.verifying_key())?;
                    n += 1;
                }
                Ok(())
            })?;
        }
        if let Some(boot) = boot.filter(|_| !same_boot) {
            // Not fsynced: lost in a crash, it only costs the next open a
            // whole comparison, which that crash calls for anyway.
            if let Err(e) = std::fs::write(&marker, boot) {
                tracing::warn!("{}: {e}", marker.display());
            }
        }
        Ok(n)
    }
}
