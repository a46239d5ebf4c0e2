//! The scan: finding what to read (the feed folders, their segments, each
//! file from its cursor) and handing each line to the judge, in order.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use super::cache::{DirScan, FileStamp, ScanCache};
use super::cursor::{Cursor, hash_range};
use super::read_ahead::{ReadAhead, verify_lines};
use super::{FOLDER_SCOPE, Ingest, Verdict};
use crate::core::ids::FeedId;
use crate::core::record::MAX_LINE;
use crate::store::error::{IoContext as _, StoreResult};
use crate::store::folder::listing;
use crate::store::folder::segments;
use crate::store::folder::segments::{Line, Segment};
use crate::store::folder::survey::{self, mtime_of};
use crate::store::folder_file::{FolderError, Refusal};
use crate::store::index::ProblemKind;

/// At most this many missing records of one feed are looked for further on
/// in the feed in one pass (the rest wait for the next).
const MAX_GAP_FILLS: usize = 64;

impl Ingest<'_, '_> {
    pub(super) fn feed_dirs(
        &mut self,
        cache: &mut ScanCache,
    ) -> StoreResult<Arc<[(FeedId, PathBuf)]>> {
        let root = self.dir.feeds();
        let root_mtime = mtime_of(&root);
        let unchanged = root_mtime.is_some()
            && cache.feeds_mtime == root_mtime
            && cache
                .role_mtimes
                .iter()
                .all(|(p, m)| mtime_of(p).as_ref() == Some(m));
        if !unchanged {
            let survey = survey::survey_feeds(&root)?;
            self.report_strays(FOLDER_SCOPE, &survey.strays)?;
            let before = std::mem::take(&mut cache.role_mtimes);
            cache.feeds = cache.unskipped(&before, &survey.roles, survey.feeds).into();
            // A role folder whose time could not be read cannot vouch for
            // its listing: the next pass lists everything again.
            let timed = survey.roles.iter().all(|(_, m)| m.is_some());
            cache.feeds_mtime = root_mtime.filter(|_| timed);
            cache.role_mtimes = survey
                .roles
                .into_iter()
                .filter_map(|(p, m)| Some((p, m?)))
                .collect();
            cache.tree_clean = survey.strays.is_empty();
            cache.listing_dirty = true;
        }
        Ok(Arc::clone(&cache.feeds))
    }

    pub(super) fn ingest_feed(
        &mut self,
        feed: &FeedId,
        dir: &Path,
        cache: &mut ScanCache,
    ) -> StoreResult<()> {
        let dir_mtime = mtime_of(dir);
        self.report.looked += 1;
        let head = self.feed_state(feed).head.map_or(0, |h| h.seq);
        let mut recalled = false;
        let (segments, listed_again, skip) = match (dir_mtime, cache.dirs.get_mut(dir)) {
            (Some(m), Some(d)) if d.mtime == m => {
                let skip = if head >= d.checked_head { d.checked } else { 0 };
                recalled = std::mem::take(&mut d.recalled);
                (Arc::clone(&d.segments), false, skip)
            }
            _ => {
                let before = cache.dirs.get(dir).cloned();
                let (segs, strays) = match survey::survey_segments(dir) {
                    Ok(survey) => survey,
                    // Gone since the feeds were listed (a checkout): nothing to read.
                    Err(e) if e.source.kind() == std::io::ErrorKind::NotFound => {
                        (Vec::new(), Vec::new())
                    }
                    Err(e) => return Err(e.into()),
                };
                self.report_strays(&feed.to_string(), &strays)?;
                self.forget_oversize(feed, &segs)?;
                let segs: Arc<[Segment]> = segs.into();
                // The leading segments listed as before, each the same file
                // (name and inode), that the last pass found complete and
                // read: the folder changed elsewhere (its head replaced, a
                // segment added), so they are not looked at again.
                let skip = before.map_or(0, |d| {
                    let same = segs
                        .iter()
                        .zip(d.segments.iter())
                        .take_while(|(now, then)| now.path == then.path && now.ino == then.ino)
                        .count();
                    if head >= d.checked_head {
                        d.checked.min(same)
                    } else {
                        0
                    }
                });
                cache.listing_dirty = true;
                self.report.listed += 1;
                match dir_mtime {
                    Some(m) => {
                        cache.dirs.insert(
                            dir.to_path_buf(),
                            DirScan {
                                mtime: m,
                                segments: Arc::clone(&segs),
                                checked: 0,
                                checked_head: 0,
                                clean: strays.is_empty(),
                                recalled: false,
                            },
                        );
                    }
                    None => {
                        cache.dirs.remove(dir);
                    }
                }
                (segs, true, skip)
            }
        };
        // While the folder is unchanged only the newest segment can grow. Once
        // it changed (a new segment, a replaced file), every segment past the
        // ones still known complete is looked at: the previous newest may have
        // grown before the next one started.
        // An older segment whose records are not all in yet is looked at too:
        // its rest may be written in place (a copy in flight, `cp`), which
        // leaves the folder unchanged.
        let last = segments.len().saturating_sub(1);
        let done = |i: usize, head: u64, cache: &ScanCache| {
            let complete = segments
                .get(i + 1)
                .is_some_and(|next| head + 1 >= next.first_seq);
            i < last && complete && cache.files.contains_key(&segments[i].path)
        };
        // The files this pass reads whole (none has a cursor yet: a rebuild,
        // or files new to this process's first pass) are read ahead.
        let plan: Vec<PathBuf> = match &self.cursors {
            Some(all) => segments[skip..]
                .iter()
                .filter(|s| !all.contains_key(&self.rel(&s.path)))
                .map(|s| s.path.clone())
                .collect(),
            None => Vec::new(),
        };
        let (key, head_seq) = {
            let st = self.feed_state(feed);
            (st.pubkey, st.head.map_or(0, |h| h.seq))
        };
        let mut waits = false;
        self.torn = false;
        let mut first_judged = None;
        std::thread::scope(|scope| -> StoreResult<()> {
            let mut ahead = ReadAhead::start(scope, plan, key, head_seq, self.later.clone());
            let mut filled = 0;
            let mut i = skip;
            while let Some(seg) = segments.get(i) {
                if !listed_again && done(i, head, cache) {
                    i += 1;
                    continue;
                }
                self.gap = None;
                let waited = self.ingest_file(feed, &seg.path, cache, &mut ahead)?;
                if i == 0 {
                    first_judged = self.judged;
                }
                if let Some(reason) = waited {
                    // A record missing here may stand further on in the feed (put
                    // back by hand at the end, say): apply it, then read on.
                    if let Some(expected) = self.gap.take()
                        && filled < MAX_GAP_FILLS
                        && self.fill_gap(feed, &segments[i..], expected, cache)?
                    {
                        filled += 1;
                        continue;
                    }
                    self.report.waiting.push(format!("{feed}: {reason}"));
                    waits = true;
                    break;
                }
                i += 1;
            }
            Ok(())
        })?;
        // Remember how far the segments are complete and read, for the next pass.
        let before = head;
        let head = self.feed_state(feed).head.map_or(0, |h| h.seq);
        if listed_again || recalled || head != before {
            // A torn tail is a record on its way: not a cut.
            let waits = waits || self.torn;
            self.check_cut(feed, dir, waits)?;
        }
        let mut checked = if head >= before { skip } else { 0 };
        while checked < segments.len() && done(checked, head, cache) {
            checked += 1;
        }
        if let Some(d) = cache.dirs.get_mut(dir) {
            d.checked = checked;
            d.checked_head = head;
        }
        // A folder nobody admitted whose first record is judged (a claim
        // noted, or found not to be one) is not looked at again until its
        // role folder changes or a feed of the role is admitted. Not while
        // its folder or first segment may still be written (a time too
        // recent), nor with a torn first segment (a device mid-sync): see
        // [`ScanCache::skipped`].
        let now = SystemTime::now();
        if let (Some(seg_mtime), Some(dir_mtime)) = (first_judged, dir_mtime)
            && !self.own_write
            && !feed.is_owner()
            && self.feed_state(feed).is_blank()
            && listing::settled(seg_mtime, now)
            && listing::settled(dir_mtime, now)
        {
            self.to_skip
                .insert(dir.to_path_buf(), (feed.clone(), waits));
        }
        Ok(())
    }

    /// Looks for the record at `expected` (the seq a line waits for) further
    /// on in `segments`, and applies it if one fits. Its place in the files
    /// does not matter, only its chain and signature. A search that found
    /// nothing is not repeated until one of the files changes, unless it met
    /// the record held for being dated ahead (held records are looked at on
    /// every pass).
    pub(super) fn fill_gap(
        &mut self,
        feed: &FeedId,
        segments: &[Segment],
        expected: u64,
        cache: &mut ScanCache,
    ) -> StoreResult<bool> {
        let files: Vec<FileStamp> = segments
            .iter()
            .map(|s| {
                let meta = fs::symlink_metadata(&s.path).ok();
                (
                    s.path.clone(),
                    meta.as_ref().map_or(0, |m| m.len()),
                    meta.and_then(|m| m.modified().ok()),
                )
            })
            .collect();
        let searched = (expected, files);
        if cache.gap_searches.get(feed) == Some(&searched) {
            return Ok(false);
        }
        let mut again = false;
        for seg in segments {
            let lines = match segments::read_lines(&seg.path, 0) {
                Ok(lines) => lines,
                Err(e) if e.is_not_found() || e.refusal().is_some() => continue,
                Err(e) => return Err(e.into()),
            };
            let rel = self.rel(&seg.path);
            for line in lines {
                let fits = line
                    .record
                    .as_ref()
                    .is_ok_and(|r| r.header.seq == expected && &r.header.feed == feed);
                if !fits {
                    continue;
                }
                if let Verdict::Wait(_) = self.handle(feed, &rel, line, None)? {
                    // Held (dated ahead): looked at again on the next pass.
                    again = true;
                }
                if self.feed_state(feed).head.map_or(0, |h| h.seq) >= expected {
                    cache.gap_searches.remove(feed);
                    return Ok(true);
                }
            }
        }
        if !again {
            cache.gap_searches.insert(feed.clone(), searched);
        }
        Ok(false)
    }

    /// Reads one segment from its cursor. `Some(reason)` when reading stopped
    /// at a record that has to wait.
    pub(super) fn ingest_file(
        &mut self,
        feed: &FeedId,
        path: &Path,
        cache: &mut ScanCache,
        ahead: &mut ReadAhead,
    ) -> StoreResult<Option<String>> {
        self.judged = None;
        let meta = match fs::symlink_metadata(path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e).at(path)?,
        };
        if !meta.is_file() {
            // Swapped for something else since the listing: the folder
            // changed, so the next pass lists it again and reports it.
            return Ok(None);
        }
        let len = meta.len();
        let mtime = meta.modified().at(path)?;
        // Known read to its end with nothing torn or waiting: judged.
        let whole = (len > 0).then_some(mtime);
        if cache.files.get(path) == Some(&(len, mtime)) {
            self.judged = whole;
            return Ok(None);
        }
        let rel = self.rel(path);
        let mtime_ns = nanos(mtime);
        let known = self.cursors.as_ref().map(|all| all.get(&rel));
        let cursor = match known {
            Some(None) => None,
            Some(Some(&(size, m))) if size == len as i64 && m == mtime_ns => {
                cache.files.insert(path.to_path_buf(), (len, mtime));
                self.judged = whole;
                return Ok(None);
            }
            _ => self.cursor(&rel)?,
        };
        if cursor.as_ref().is_some_and(|c| c.stamp_is(len, mtime_ns)) {
            cache.files.insert(path.to_path_buf(), (len, mtime));
            self.judged = whole;
            return Ok(None);
        }
        // A gzip segment is sealed: once read it never grows, so a change
        // means a rewrite and it is read again from the start (its records
        // are known by id and cost a lookup each).
        let gz = segments::is_gz(path);
        let start = match &cursor {
            Some(c) if !gz => c.resume_at(path, len),
            _ => 0,
        };
        // Read ahead as this pass would read it, or read now.
        let ahead = (start == 0)
            .then(|| ahead.take(path))
            .flatten()
            .filter(|a| a.stamp == (len, mtime));
        let (read, checked) = match ahead {
            Some(a) => (Ok((a.lines, a.torn)), Some((a.key, a.verified))),
            None => (segments::read_lines_and_rest(path, start), None),
        };
        let (lines, torn) = match read {
            Ok(read) => read,
            // Gone between the listing and the read (a segment replaced by
            // its gzip form, a checkout): the folder changed, so the next
            // pass lists it again.
            Err(e) if e.is_not_found() => return Ok(None),
            // Too large for a segment, or swapped for something that is not
            // a file: reported once and remembered by size and time, so no
            // later pass reads it again until it changes.
            Err(FolderError::Refused { refusal, .. }) => {
                if matches!(refusal, Refusal::WrongType { .. }) {
                    return Ok(None);
                }
                self.problem(
                    ProblemKind::Oversize,
                    &rel,
                    0,
                    None,
                    feed,
                    &refusal.to_string(),
                )?;
                self.save_cursor(&rel, &Cursor::bare(len as i64, mtime_ns, 0))?;
                cache.files.insert(path.to_path_buf(), (len, mtime));
                // Too large to be a claim, or any record.
                self.judged = Some(mtime);
                return Ok(None);
            }
            Err(e) => return Err(e.into()),
        };
        let long_tail = torn > MAX_LINE as u64;
        let long_tail_at = long_tail.then(|| lines.last().map_or(start, |l| l.offset + l.len));
        if let Some(at) = long_tail_at {
            // A line with no newline past the line limit can never become a
            // record: reported once at its offset. The file is then taken
            // as read up to its current size, so it is not read again until
            // it changes.
            let reason = format!(
                "{torn} bytes with no newline, more than the {MAX_LINE} a record's line may hold: \
                 not a record, not read again until the file changes"
            );
            self.problem(ProblemKind::Garbage, &rel, at, None, feed, &reason)?;
        }
        // A file read before and read again from its start (its bytes were
        // rewritten: a repair, a checkout): its garbage problems are made
        // what this read finds, so one a repair undid does not stand.
        let rescan = (cursor.is_some() && start == 0).then(|| {
            let mut garbage: Vec<u64> = lines
                .iter()
                .filter(|l| l.record.is_err())
                .map(|l| l.offset)
                .collect();
            garbage.extend(long_tail_at);
            garbage
        });
        if let Some(p) = self.progress.as_mut() {
            p(len.saturating_sub(start));
        }
        let verified = match checked {
            // Checked with the key the feed has now.
            Some((key, verified)) if key.is_some() && key == self.feed_state(feed).pubkey => {
                self.ahead_key = key;
                verified
            }
            _ => self.verify_ahead(feed, &lines),
        };
        let mut consumed = start;
        let mut last_len = 0u64;
        let mut waited = None;
        // Its first line was decided, in this pass or (read past) an earlier one.
        let first_decided = start > 0 || !lines.is_empty();
        for (i, line) in lines.into_iter().enumerate() {
            let (offset, line_len) = (line.offset, line.len);
            match self.handle(feed, &rel, line, verified.get(i).copied().flatten())? {
                Verdict::Consumed => {
                    consumed = offset + line_len;
                    last_len = line_len;
                }
                Verdict::Wait(reason) => {
                    waited = Some(reason);
                    break;
                }
            }
        }
        if let Some(garbage) = rescan {
            // Past a wait the lines were not looked at: their problems stay.
            let below = if waited.is_some() { consumed } else { u64::MAX };
            self.index.clear_garbage_gone(&rel, below, &garbage)?;
        }
        let (tail_len, tail_hash) = if gz {
            (0, String::new())
        } else if consumed == start {
            match &cursor {
                Some(c) if start > 0 => (c.tail_len, c.tail_hash.clone()),
                _ => (0, String::new()),
            }
        } else {
            (last_len, hash_range(path, consumed - last_len, last_len)?)
        };
        // A file that had to wait, or that ends in a torn line, is looked at
        // again on the next pass.
        let torn = if long_tail { 0 } else { torn };
        self.torn |= torn > 0;
        if first_decided && torn == 0 {
            self.judged = Some(mtime);
        }
        let size = if waited.is_some() || torn > 0 {
            -1
        } else {
            len as i64
        };
        let cursor = Cursor {
            size,
            mtime_ns,
            offset: consumed,
            tail_len,
            tail_hash,
        };
        self.save_cursor(&rel, &cursor)?;
        // A file left with a torn tail, like one that waits, is looked at on
        // every pass: the rest may be written in place (a copy in flight, a
        // plain `cp`), which changes neither the folder nor, for an older
        // segment, what the pass otherwise looks at.
        if waited.is_none() && torn == 0 {
            cache.files.insert(path.to_path_buf(), (len, mtime));
        } else {
            cache.files.remove(path);
        }
        Ok(waited)
    }

    /// Checks the signatures of a run of lines on all cores before the
    /// sequential pass, which then only reads the verdicts. Small runs (the
    /// usual incremental pass) are left to the sequential pass.
    pub(super) fn verify_ahead(&mut self, feed: &FeedId, lines: &[Line]) -> Vec<Option<bool>> {
        const PARALLEL_FROM: usize = 64;
        let state = self.feed_state(feed);
        let (key, head_seq) = (state.pubkey, state.head.map_or(0, |h| h.seq));
        let Some(key) = key.filter(|_| lines.len() >= PARALLEL_FROM) else {
            return Vec::new();
        };
        self.ahead_key = Some(key);
        // Records at or below the head are known: the chain check skips them.
        verify_lines(lines, &key, head_seq)
    }
}

pub(super) fn nanos(t: SystemTime) -> i64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}
