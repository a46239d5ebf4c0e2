//! What this device is writing, folded while its journal syncs.
//!
//! A write's record is judged and applied before it is published, at the
//! place the feed writer says it will land (`FeedWriter::lands_at`), inside
//! the write's transaction: should the fsync fail, the transaction rolls
//! back with it. Once the record is published, its segment's cursor moves
//! past its line as a pass reading it would have left it, without reading
//! the file again. Anything out of the ordinary (a judgment other than a
//! plain accept, an admit, a cursor that was not at the line's start) is
//! left to the ordinary pass over the file ([`Ingest::run_own`]), which
//! finds the record applied or applies it.
//!
//! Owns those two steps; when to take them is `Channel::append_run`'s.

use std::collections::HashSet;
use std::path::Path;
use std::time::SystemTime;

use super::cursor::Cursor;
use super::judge::Judgment;
use super::scan::nanos;
use super::{Ingest, ScanCache, Vouch};
use crate::core::ids::{FeedId, sha256_hex};
use crate::core::op::Op;
use crate::core::record::Record;
use crate::store::error::StoreResult;
use crate::store::folder::layout::ChannelDir;
use crate::store::index::IndexTx;

impl<'a> Ingest<'a, '_> {
    /// Applies `rec`, this device's next record of `feed`, as read at
    /// `offset` of `segment`, before it is there: true when it was a plain
    /// accept and is applied, false (nothing done) otherwise.
    #[allow(clippy::too_many_arguments)] // the pass's context, then where the record goes
    pub fn fold_own_ahead(
        index: &'a IndexTx<'a>,
        dir: &'a ChannelDir,
        cache: &mut ScanCache,
        feed: &FeedId,
        rec: &Record,
        segment: &Path,
        offset: u64,
        vouched: HashSet<Vouch>,
    ) -> StoreResult<bool> {
        let mut me = Self::for_own_write(index, dir, cache, vouched)?;
        let rel = me.rel(segment);
        // An admit also reviews claims and the folders it lets in: the
        // ordinary pass does that.
        let plain = |j: &Judgment<'_>| matches!(j, Judgment::Accept { op, .. } if !matches!(op, Op::Admit(_)));
        if me
            .judge_and_act(feed, &rel, offset, rec, None, plain)?
            .is_none()
        {
            return Ok(false);
        }
        cache.settled &= me.quiet();
        me.finish()?;
        Ok(true)
    }

    /// Moves the cursor of `segment` past `line`, published at `offset`
    /// after [`Self::fold_own_ahead`] applied its record; the segment now
    /// has `stamp` (size and mtime). False, with nothing done, unless the
    /// cursor stood at `offset` with the segment read to its end and the
    /// line is the segment's last: the caller then runs the ordinary pass.
    pub fn pass_own_line(
        index: &'a IndexTx<'a>,
        dir: &'a ChannelDir,
        cache: &mut ScanCache,
        segment: &Path,
        offset: u64,
        line: &[u8],
        stamp: (u64, Option<SystemTime>),
    ) -> StoreResult<bool> {
        let (len, Some(mtime)) = stamp else {
            return Ok(false);
        };
        let end = offset + line.len() as u64;
        let mut me = Self::new(index, dir, None, 0, HashSet::new());
        let rel = me.rel(segment);
        let read_to_line = me
            .cursor(&rel)?
            .is_some_and(|c| c.offset == offset && c.size == offset as i64);
        if !read_to_line || len != end {
            return Ok(false);
        }
        me.save_cursor(
            &rel,
            &Cursor {
                size: len as i64,
                mtime_ns: nanos(mtime),
                offset: end,
                tail_len: line.len() as u64,
                tail_hash: sha256_hex(line),
            },
        )?;
        cache.files.insert(segment.to_path_buf(), (len, mtime));
        Ok(true)
    }
}
