//! A file's cursor: how far a pass read it, so that the next one continues
//! there while the line ending there still matches (whatever the inode: git
//! rewrites files on pull), and rescans the file otherwise.

use std::collections::HashMap;
use std::io::{Read as _, Seek as _, SeekFrom};
use std::path::Path;

use rusqlite::OptionalExtension as _;

use super::Ingest;
use crate::core::ids::sha256_hex;
use crate::store::error::{IoContext as _, SqlContext as _, StoreResult};

/// A file's cursor row: its size and time when last read, the offset read
/// to, and the length and hash of the line ending there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Cursor {
    /// The file's size when last read; -1 makes the next pass look at it
    /// again whatever its stamp (it waited, or ends in a torn line).
    pub size: i64,
    /// Its modification time then, in ns since the epoch.
    pub mtime_ns: i64,
    /// How far its records were consumed.
    pub offset: u64,
    /// The length of the line ending at `offset` (0 when none)…
    pub tail_len: u64,
    /// …and the hash of its bytes: while they still match, reading goes on
    /// from `offset`.
    pub tail_hash: String,
}

impl Cursor {
    /// A file read to `offset`, with no line to recognise it by (a file
    /// not read, or a sealed one, which is read again whole on a change).
    pub(super) fn bare(size: i64, mtime_ns: i64, offset: u64) -> Self {
        Self {
            size,
            mtime_ns,
            offset,
            tail_len: 0,
            tail_hash: String::new(),
        }
    }

    fn from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            size: r.get(0)?,
            mtime_ns: r.get(1)?,
            offset: r.get::<_, i64>(2)? as u64,
            tail_len: r.get::<_, i64>(3)? as u64,
            tail_hash: r.get(4)?,
        })
    }

    /// True when the file is as it was when last read (`len` bytes, time
    /// `mtime_ns`).
    pub(super) fn stamp_is(&self, len: u64, mtime_ns: i64) -> bool {
        self.size == len as i64 && self.mtime_ns == mtime_ns
    }

    /// Where to go on reading `path`, now `len` bytes: the offset read to
    /// while the line ending there is still the same, else its start.
    pub(super) fn resume_at(&self, path: &Path, len: u64) -> u64 {
        if len >= self.offset && tail_matches(path, self.offset, self.tail_len, &self.tail_hash) {
            self.offset
        } else {
            0
        }
    }
}

impl Ingest<'_, '_> {
    pub(super) fn load_cursors(&mut self) -> StoreResult<()> {
        let p = self.index.path();
        let mut st = self
            .index
            .conn()
            .prepare_cached("SELECT path, size, mtime_ns FROM files")
            .db(p)?;
        let all = st
            .query_map([], |r| Ok((r.get::<_, String>(0)?, (r.get(1)?, r.get(2)?))))
            .and_then(|rows| rows.collect::<Result<HashMap<_, _>, _>>())
            .db(p)?;
        self.cursors = Some(all);
        Ok(())
    }

    /// The cursor of the file at `rel` (relative to the channel folder).
    pub(super) fn cursor(&self, rel: &str) -> StoreResult<Option<Cursor>> {
        self.index
            .conn()
            .prepare_cached(
                "SELECT size, mtime_ns, offset, tail_len, tail_hash FROM files WHERE path = ?1",
            )
            .and_then(|mut s| s.query_row([rel], Cursor::from_row).optional())
            .db(self.index.path())
    }

    /// Records how far the file at `rel` was read.
    pub(super) fn save_cursor(&mut self, rel: &str, cursor: &Cursor) -> StoreResult<()> {
        let Cursor {
            size,
            mtime_ns,
            offset,
            tail_len,
            ref tail_hash,
        } = *cursor;
        self.index
            .save_cursor(rel, size, mtime_ns, offset, tail_len, tail_hash)?;
        if let Some(all) = self.cursors.as_mut() {
            all.insert(rel.to_owned(), (size, mtime_ns));
        }
        Ok(())
    }
}

pub(super) fn hash_range(path: &Path, start: u64, len: u64) -> StoreResult<String> {
    let (mut f, _) = crate::store::folder_file::open_read(path)?;
    f.seek(SeekFrom::Start(start)).at(path)?;
    let mut buf = vec![0u8; len as usize];
    f.read_exact(&mut buf).at(path)?;
    Ok(sha256_hex(&buf))
}

fn tail_matches(path: &Path, offset: u64, tail_len: u64, tail_hash: &str) -> bool {
    if offset == 0 {
        return true;
    }
    if tail_len == 0 || tail_len > offset {
        return false;
    }
    hash_range(path, offset - tail_len, tail_len).is_ok_and(|h| h == tail_hash)
}
