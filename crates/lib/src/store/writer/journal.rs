//! The private journal of a feed: the durable copy of every record this
//! device appended, in the home's state folder, from which the published
//! feed is repaired.
//!
//! Owns appending to the journal, cutting it back when a publish fails, and
//! rebuilding it from the published feed; when to do each is the feed
//! writer's (`writer::feed`).

use std::fs::{self, File, OpenOptions};
use std::io::{Seek as _, SeekFrom, Write as _};
use std::path::Path;
use std::sync::Arc;

use crate::core::record::Record;
use crate::store::error::{IoContext as _, PathError, StoreError, StoreResult};

use crate::store::folder::segments::{Line, split_lines};
use crate::store::writer::syncer::{self, Syncing};

/// The lines of this device's private journal (in the home, not the shared
/// folder: it is as long as the role's history and is read whole).
pub(in crate::store) fn read_lines(path: &Path) -> Result<Vec<Line>, PathError> {
    Ok(split_lines(&fs::read(path).at(path)?, 0).0)
}

/// Writes the journal at `path` anew from `records` (a fresh state folder
/// whose feed was published already), replacing it atomically.
pub(in crate::store) fn rebuild<'r>(
    path: &Path,
    records: impl IntoIterator<Item = &'r Record>,
) -> StoreResult<()> {
    let parent = path.parent().expect("journal has a parent");
    fs::create_dir_all(parent).at(parent)?;
    let mut out = Vec::new();
    for rec in records {
        out.extend_from_slice(rec.to_line().as_bytes());
    }
    let tmp = path.with_extension("jsonl.tmp");
    fs::write(&tmp, &out).at(&tmp)?;
    File::open(&tmp).and_then(|f| f.sync_all()).at(&tmp)?;
    fs::rename(&tmp, path).at(path)?;
    Ok(())
}

/// Appends to the journal durably, making its folder on first use only
/// (not a `mkdir` per append). Returns the journal's length before.
///
/// This fsync is the one a write waits for: the published segment is
/// written after it without one. A journal just created also has its
/// folder synced, once, so that its name survives a crash with its bytes.
pub(in crate::store) fn append(path: &Path, bytes: &[u8]) -> StoreResult<u64> {
    let (f, offset, new) = write(path, bytes)?;
    f.sync_data().at(path)?;
    if new {
        sync_parent(path)?;
    }
    Ok(offset)
}

/// Like [`append`], but the fsync runs on the syncer thread while the
/// caller goes on: nothing may be published before [`Syncing::wait`] says
/// the bytes are durable. A journal just created is synced here, with its
/// folder, before returning. Returns the journal's length before.
/// Also returns the journal open, for [`append_in_background_through`].
pub(in crate::store) fn append_in_background(
    path: &Path,
    bytes: &[u8],
) -> StoreResult<(u64, Syncing, Arc<File>)> {
    let (f, offset, new) = write(path, bytes)?;
    if new {
        f.sync_data().at(path)?;
        sync_parent(path)?;
    }
    let f = Arc::new(f);
    Ok((offset, syncer::sync_data(Arc::clone(&f), path), f))
}

/// [`append_in_background`] through `file`, the journal at `path` as an
/// earlier append left it open (in append mode): no path to walk, no file
/// to open, no end to seek. The caller knows the length before (it checked
/// the journal's stamp, and that `file` is still what `path` names).
pub(in crate::store) fn append_in_background_through(
    file: &Arc<File>,
    path: &Path,
    bytes: &[u8],
) -> StoreResult<Syncing> {
    (&**file).write_all(bytes).at(path)?;
    Ok(syncer::sync_data(Arc::clone(file), path))
}

/// Writes `bytes` at the journal's end, not synced: the file, its length
/// before, and whether it was created.
fn write(path: &Path, bytes: &[u8]) -> StoreResult<(File, u64, bool)> {
    let parent = path.parent().expect("journal has a parent");
    let new = !path.exists();
    if new {
        fs::create_dir_all(parent).at(parent)?;
    }
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .at(path)?;
    let offset = f.seek(SeekFrom::End(0)).at(path)?;
    f.write_all(bytes).at(path)?;
    Ok((f, offset, new))
}

fn sync_parent(path: &Path) -> StoreResult<()> {
    let parent = path.parent().expect("journal has a parent");
    File::open(parent).and_then(|d| d.sync_all()).at(parent)?;
    Ok(())
}

/// Where the durable part of a journal read whole ends: before its first
/// line holding a NUL byte, or else after its last complete line. A record
/// line never holds a NUL (JSON escapes it), so one there is a write whose
/// fsync never finished when the machine stopped (its pages reached the
/// disk as zeros), and it was the last write: each earlier one was durable
/// before the next began. Nothing after it was ever acknowledged.
pub(in crate::store) fn durable_len(bytes: &[u8]) -> usize {
    let complete = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    match bytes[..complete].iter().position(|&b| b == 0) {
        Some(nul) => bytes[..nul]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1),
        None => complete,
    }
}

/// Cuts the journal at `path` to `len` bytes, durably.
pub(in crate::store) fn cut(path: &Path, len: u64) -> StoreResult<()> {
    let f = OpenOptions::new().write(true).open(path).at(path)?;
    f.set_len(len).at(path)?;
    f.sync_all().at(path)?;
    Ok(())
}

/// Takes `unpublished` back out of the journal after publishing them
/// failed with `failed`: the journal is cut to `len`, its length before
/// they were added. Returns the error to give the caller. Should the cut
/// fail too, the records stay in the journal and will be published by
/// the next write: the error says so and names them, so that a caller
/// does not write them a second time.
pub(in crate::store) fn cut_back(
    path: &Path,
    len: u64,
    unpublished: &[&Record],
    failed: StoreError,
) -> StoreError {
    let cut = OpenOptions::new().write(true).open(path).and_then(|f| {
        f.set_len(len)?;
        f.sync_all()
    });
    match cut {
        Ok(()) => failed,
        Err(source) => StoreError::Journal {
            path: path.to_path_buf(),
            source,
            failed: Box::new(failed),
            records: unpublished.iter().map(|r| r.id.short()).collect(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::durable_len;

    #[test]
    fn the_durable_part_ends_before_the_first_line_with_a_nul() {
        assert_eq!(durable_len(b""), 0);
        assert_eq!(durable_len(b"a\nb\n"), 4);
        assert_eq!(durable_len(b"a\nb\nhalf"), 4, "a torn line");
        assert_eq!(durable_len(b"a\nb\n\0\0\0\0"), 4, "zeros past the end");
        assert_eq!(
            durable_len(b"a\nb\0\0\nc\n"),
            2,
            "zeros, then a page that made it"
        );
        assert_eq!(durable_len(b"\0\0\n"), 0);
    }
}
