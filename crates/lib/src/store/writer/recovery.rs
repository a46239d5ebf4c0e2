//! Recovery of this device's feed after the machine stopped: segments are
//! written without fsync (the journal's fsync is what makes a write
//! durable), so a power loss or a kernel crash can leave the last writes of
//! a feed short, zero-filled (the file's length kept, NUL bytes where lines
//! were), a new segment missing, or a segment ending mid-line.
//!
//! Owns the cheap check that nothing is amiss ([`FeedWriter::matches_journal`])
//! and the cut of such damage back to what the journal holds
//! ([`FeedWriter::cut_crash_damage`]). Publishing again what the cut took is
//! [`FeedWriter::reconcile`]'s, which calls both; it never touches a
//! segment whose bytes are anything but this journal's, zeros, or short.
//! When to compare whole segments (after the machine restarted) is the
//! caller's (`store::channel::recovery`).

use std::collections::HashMap;
use std::fs::{self, File};
use std::os::unix::fs::FileExt as _;
use std::time::Duration;

use crate::store::error::{IoContext as _, StoreResult};
use crate::store::folder::segments::{MAX_SEGMENT_BYTES, split_lines};
use crate::store::folder::survey::{list_segments, mtime_of};
use crate::store::folder_file::{self, FolderError};
use crate::store::writer::feed::FeedWriter;
use crate::store::writer::journal;

impl FeedWriter {
    /// True when the newest segment's last `window` bytes (all of it when it
    /// is shorter; then it must start where a journal line does) are the
    /// journal's last bytes: every record the journal holds is in the feed,
    /// and nothing a crash did is left in what was compared. Reads at most
    /// `window` bytes of each file, one `pread` each. A process that died
    /// mid-write can only leave the feed's end wrong, so [`TAIL_WINDOW`](crate::store::writer::tail::TAIL_WINDOW)
    /// tells; a crash of the machine can lose any page not yet written back,
    /// so after one [`Self::recent_segments_match`] compares more. Needs no
    /// lock: a write in progress can only make it false, and false only costs
    /// [`Self::cut_crash_damage`].
    pub fn matches_journal(&self, window: u64) -> StoreResult<bool> {
        let journal_len = match fs::metadata(&self.journal) {
            Ok(m) => m.len(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
            Err(e) => return Err(e).at(&self.journal)?,
        };
        let newest = if self.has_dir()? {
            list_segments(&self.dir)?.pop()
        } else {
            None
        };
        let Some(seg) = newest else {
            return Ok(journal_len == 0);
        };
        // The newest segment is never sealed in gzip form by this device.
        if seg.gz {
            return Ok(false);
        }
        let (seg_file, seg_len) = match folder_file::open_read(&seg.path) {
            Ok(opened) => opened,
            Err(e) if skipped(&e) => return Ok(false),
            Err(e) => return Err(e.into()),
        };
        if seg_len == 0 || seg_len > journal_len || seg_len > MAX_SEGMENT_BYTES {
            return Ok(false);
        }
        let whole = window >= seg_len;
        let n = seg_len.min(window);
        let mut bytes = vec![0; n as usize];
        seg_file
            .read_exact_at(&mut bytes, seg_len - n)
            .at(&seg.path)?;
        // With the whole segment, one byte more before it: it starts where a
        // journal line does.
        let from = if whole {
            (journal_len - n).saturating_sub(1)
        } else {
            journal_len - n
        };
        let mut tail = vec![0; (journal_len - from) as usize];
        File::open(&self.journal)
            .and_then(|f| f.read_exact_at(&mut tail, from))
            .at(&self.journal)?;
        let same = if tail.len() as u64 == n {
            tail == bytes
        } else {
            tail[0] == b'\n' && tail[1..] == bytes[..]
        };
        Ok(same)
    }

    /// After a restart of the machine: true when the feed's recent plain
    /// segments, read in order and joined, are the journal's last bytes from
    /// the start of a line. Recent means the newest one, and each before it
    /// written to within `within` of the journal's last write (its mtime):
    /// pages older than that had long been written back when the machine
    /// stopped (Linux writes a dirty page back within about 30 seconds).
    /// Reads those segments whole and as many bytes of the journal.
    pub fn recent_segments_match(&self, within: Duration) -> StoreResult<bool> {
        let journal_meta = match fs::metadata(&self.journal) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return self.matches_journal(u64::MAX);
            }
            Err(e) => return Err(e).at(&self.journal)?,
        };
        let journal_len = journal_meta.len();
        let since = journal_meta
            .modified()
            .ok()
            .and_then(|m| m.checked_sub(within));
        if !self.has_dir()? {
            return Ok(journal_len == 0);
        }
        let segments = list_segments(&self.dir)?;
        let mut recent = Vec::new();
        for seg in segments.iter().rev() {
            if seg.gz {
                break;
            }
            if !recent.is_empty() {
                let modified = mtime_of(&seg.path);
                if since.is_none_or(|since| modified.is_none_or(|m| m < since)) {
                    break;
                }
            }
            recent.push(seg);
        }
        if recent.is_empty() {
            return Ok(segments.is_empty() && journal_len == 0);
        }
        let mut joined = Vec::new();
        for seg in recent.iter().rev() {
            match folder_file::read_from(&seg.path, 0, MAX_SEGMENT_BYTES) {
                Ok(b) => joined.extend_from_slice(&b),
                Err(e) if skipped(&e) => return Ok(false),
                Err(e) => return Err(e.into()),
            }
        }
        let n = joined.len() as u64;
        if n == 0 || n > journal_len {
            return Ok(false);
        }
        let from = (journal_len - n).saturating_sub(1);
        let mut tail = vec![0; (journal_len - from) as usize];
        File::open(&self.journal)
            .and_then(|f| f.read_exact_at(&mut tail, from))
            .at(&self.journal)?;
        Ok(if journal_len == n {
            tail == joined
        } else {
            tail[0] == b'\n' && tail[1..] == joined[..]
        })
    }

    /// Cuts what a crash of the machine left in the journal and the feed back
    /// to what the journal holds durably. Call under [`Self::lock`].
    ///
    /// - the journal is cut where its durable part ends
    ///   ([`journal::durable_len`]): a last write that never became durable
    ///   was never acknowledged, and never reached the feed (it is published
    ///   only after the journal's fsync returns);
    /// - each plain segment is compared with the journal's lines from its
    ///   first seq to the next segment's. Crash damage has one shape: every
    ///   byte that differs from the journal's at the same place is NUL, and
    ///   the segment is no longer than the journal's lines for it. Such a
    ///   segment is cut after its last line that agrees with the journal;
    ///   one that has a successor is then written on to its end from the
    ///   journal, so it ends where a clean run ended it. The newest one's
    ///   missing lines are left to [`Self::reconcile`], which publishes
    ///   them with the same rules a clean run followed (a new segment where
    ///   the newest is full).
    ///
    /// A segment with any other difference (a line someone slipped in, a
    /// copy of another history) is left as it is, for reconcile's checks and
    /// ingest's reports.
    pub(super) fn cut_crash_damage(&self) -> StoreResult<()> {
        let mut journal = match fs::read(&self.journal) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e).at(&self.journal)?,
        };
        let durable = journal::durable_len(&journal);
        if durable < journal.len() {
            if journal[durable..].contains(&0) {
                tracing::warn!(
                    "journal {}: a write that never became durable cut off ({} bytes)",
                    self.journal.display(),
                    journal.len() - durable
                );
            }
            journal::cut(&self.journal, durable as u64)?;
            journal.truncate(durable);
        }
        if !self.has_dir()? {
            return Ok(());
        }
        // Where each seq's line starts in the journal.
        let mut starts: HashMap<u64, usize> = HashMap::new();
        for line in split_lines(&journal, 0).0 {
            if let Ok(rec) = line.record {
                starts.entry(rec.header.seq).or_insert(line.offset as usize);
            }
        }
        let segments = list_segments(&self.dir)?;
        for (i, seg) in segments.iter().enumerate() {
            let Some(&from) = starts.get(&seg.first_seq) else {
                continue;
            };
            let to = match segments.get(i + 1) {
                None => journal.len(),
                Some(next) => match starts.get(&next.first_seq) {
                    Some(&to) if to >= from => to,
                    _ => continue,
                },
            };
            if seg.gz {
                continue;
            }
            let want = &journal[from..to];
            let have = match folder_file::read_from(&seg.path, 0, MAX_SEGMENT_BYTES) {
                Ok(b) => b,
                Err(e) if skipped(&e) => continue,
                Err(e) => return Err(e.into()),
            };
            let crash_shaped =
                have.len() <= want.len() && have.iter().zip(want).all(|(h, w)| h == w || *h == 0);
            if have == want || !crash_shaped {
                continue;
            }
            let same = have.iter().zip(want).take_while(|(h, w)| h == w).count();
            let keep = have[..same]
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |i| i + 1);
            let last = i + 1 == segments.len();
            if last && keep == have.len() {
                // Short by whole lines: reconcile publishes the rest.
                continue;
            }
            tracing::warn!(
                "feed segment {}: {} bytes a crash left cut back to the journal's",
                seg.path.display(),
                have.len() - keep
            );
            let f = folder_file::open_write(&seg.path)?;
            f.set_len(keep as u64).at(&seg.path)?;
            if !last {
                f.write_all_at(&want[keep..], keep as u64).at(&seg.path)?;
            }
        }
        Ok(())
    }
}

/// A segment this device cannot have written (of the wrong type, too large)
/// or gone since the listing: left to ingest, which reports it.
fn skipped(e: &FolderError) -> bool {
    e.refusal().is_some() || e.is_not_found()
}
