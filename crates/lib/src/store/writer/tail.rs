//! The tail of one of this device's own files (its journal, its newest
//! segment): the last complete line, read without reading the whole file,
//! and cutting a torn line off after a crash.

use std::io::{Read as _, Seek as _, SeekFrom};
use std::path::Path;

use crate::core::record::{self, MAX_LINE, Record};
use crate::store::error::{IoContext as _, StoreError, StoreResult};
use crate::store::folder_file::{self, FolderError, Refusal};

/// How many bytes of the feed's end `FeedWriter::matches_journal` compares
/// when the machine has not restarted since the feed was last found whole:
/// more than a torn line or a journal ahead of the feed can hide in.
pub const TAIL_WINDOW: u64 = 4096;

/// The last complete line of a file and where the file's complete part ends.
pub(in crate::store) struct Tail {
    /// The last complete line (without `\n`), if any.
    pub(super) line: Option<Vec<u8>>,
    /// Length of the file up to and including the last `\n`.
    pub(super) complete_len: u64,
    /// Actual length (larger when the tail is torn).
    pub(super) len: u64,
}

/// Reads the tail of `path` (a journal, or a segment of at most `limit`
/// bytes), never more than twice the line limit of it.
pub(in crate::store) fn read_tail(path: &Path, limit: u64) -> Result<Option<Tail>, FolderError> {
    let (mut f, len) = match folder_file::open_read(path) {
        Ok(opened) => opened,
        Err(e) if e.is_not_found() => return Ok(None),
        Err(e) => return Err(e),
    };
    if len > limit {
        return Err(FolderError::Refused {
            path: path.to_path_buf(),
            refusal: Refusal::TooLarge { len, limit },
        });
    }
    let mut window = 4096u64;
    loop {
        let start = len.saturating_sub(window);
        f.seek(SeekFrom::Start(start)).at(path)?;
        let mut buf = Vec::with_capacity((len - start) as usize);
        (&mut f).take(len - start).read_to_end(&mut buf).at(path)?;
        // The complete part ends after the last '\n'.
        let Some(last_nl) = buf.iter().rposition(|&b| b == b'\n') else {
            if start == 0 || window > MAX_LINE as u64 * 2 {
                return Ok(Some(Tail {
                    line: None,
                    complete_len: 0,
                    len,
                }));
            }
            window *= 4;
            continue;
        };
        let complete_len = start + last_nl as u64 + 1;
        match buf[..last_nl].iter().rposition(|&b| b == b'\n') {
            Some(prev_nl) => {
                let line = buf[prev_nl + 1..last_nl].to_vec();
                return Ok(Some(Tail {
                    line: Some(line),
                    complete_len,
                    len,
                }));
            }
            None if start == 0 => {
                let line = buf[..last_nl].to_vec();
                return Ok(Some(Tail {
                    line: Some(line),
                    complete_len,
                    len,
                }));
            }
            None if window > MAX_LINE as u64 * 2 => {
                return Ok(Some(Tail {
                    line: None,
                    complete_len,
                    len,
                }));
            }
            None => window *= 4,
        }
    }
}

/// Cuts a torn last line off (a crash mid-write), so the next append starts
/// on a line of its own.
pub(in crate::store) fn truncate_torn(path: &Path, tail: &Tail) -> Result<(), FolderError> {
    if tail.len > tail.complete_len {
        let f = folder_file::open_write(path)?;
        f.set_len(tail.complete_len).at(path)?;
        f.sync_all().at(path)?;
    }
    Ok(())
}

pub(in crate::store) fn decode_tail(
    path: &Path,
    tail: Option<&Tail>,
) -> StoreResult<Option<Record>> {
    let Some(line) = tail.and_then(|t| t.line.as_ref()) else {
        return Ok(None);
    };
    record::decode(line)
        .map(Some)
        .map_err(|e| StoreError::CorruptFile {
            path: path.to_path_buf(),
            reason: format!(
                "the last line is not a record ({e}); this feed cannot be appended to until it \
                 is repaired"
            ),
        })
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;
    use crate::store::folder::segments::{MAX_SEGMENT_BYTES, read_lines};

    #[test]
    fn torn_last_line_waits() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f.jsonl");
        fs::write(&p, b"garbage\n{\"half").unwrap();
        let lines = read_lines(&p, 0).unwrap();
        assert_eq!(lines.len(), 1);
        assert!(lines[0].record.is_err());
        let tail = read_tail(&p, MAX_SEGMENT_BYTES).unwrap().unwrap();
        assert_eq!(tail.complete_len, 8);
        assert_eq!(tail.line.as_deref(), Some(&b"garbage"[..]));
    }
}
