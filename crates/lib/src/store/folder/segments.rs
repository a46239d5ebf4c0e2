//! Segment files of a feed: their names and bounds, reading their lines
//! (a torn last line waits, it is never consumed, and a gzip segment reads
//! as the plain one), the signed head beside them, and compressing the
//! sealed ones.
//!
//! A feed lives in `feeds/<role>/<device>/` as segments named by their first
//! seq (`00000001.jsonl`); the newest one grows. A segment is sealed once a
//! later one exists; a sealed segment is never rewritten, but may be replaced
//! by its gzip form (`00000001.jsonl.gz`, see [`gzip_sealed_segments`]), and
//! readers take both forms alike. Reads only what it is asked to and never
//! verifies a signature or a chain (that is `ingest`).

use std::io::Read as _;
use std::path::{Path, PathBuf};

use ed25519_dalek::VerifyingKey;

use crate::core::ids::FeedId;
use crate::core::record::{self, DecodeError, Record};
use crate::store::error::IoContext as _;
use crate::store::folder_file::{self, FolderError, Refusal};

use flate2::read::MultiGzDecoder;

/// A segment seals (the next record starts a new file) at this many records.
pub const SEGMENT_RECORDS: u64 = 500;
/// A segment seals at this many bytes.
pub const SEGMENT_BYTES: u64 = 256 * 1024;
/// The most a segment may hold, plain or decompressed: what the writer makes
/// stays under [`SEGMENT_BYTES`] plus one line of at most 1 MiB, and a repair
/// may append a few records past that. A larger file is reported and never
/// read (a sparse 8 GiB file or a gzip bomb costs one `stat`).
pub const MAX_SEGMENT_BYTES: u64 = 4 * 1024 * 1024;

/// One segment file of a feed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    /// Its path.
    pub path: PathBuf,
    /// The seq of its first record (from its name).
    pub first_seq: u64,
    /// True for a sealed segment in gzip form (`.jsonl.gz`).
    pub gz: bool,
    /// Its inode number as the folder's listing gave it (no `stat`): a file
    /// replaced under the same name (a rename over it) has another.
    pub ino: u64,
}

/// The name of the segment starting at `seq`.
pub fn segment_name(seq: u64) -> String {
    format!("{seq:08}.jsonl")
}

/// Parses a segment file name, plain (`00000001.jsonl`) or gzip
/// (`00000001.jsonl.gz`). Conflict copies (`*.sync-conflict-*`, "conflicted
/// copy"), partial and temp files (`*.partial`, `*.tmp`, `.~tmp~`) and
/// anything else are not segments: readers ignore them as paths.
pub fn parse_segment_name(name: &str) -> Option<u64> {
    parse_segment_file(name).map(|(seq, _)| seq)
}

/// Like [`parse_segment_name`], also telling whether the file is gzip.
pub fn parse_segment_file(name: &str) -> Option<(u64, bool)> {
    let (stem, gz) = match name.strip_suffix(".jsonl.gz") {
        Some(stem) => (stem, true),
        None => (name.strip_suffix(".jsonl")?, false),
    };
    (stem.len() == 8 && stem.bytes().all(|b| b.is_ascii_digit()))
        .then(|| stem.parse().ok().map(|seq| (seq, gz)))
        .flatten()
}

/// The name of a feed's signed head.
pub const HEAD_FILE: &str = "head.json";

/// The bytes of a segment as records were written: a gzip segment is
/// decompressed. A gzip file that ends early or is damaged (a copy still in
/// flight) yields what decodes before the damage; its last line is then torn
/// and waits, like a plain file's.
///
/// Bounded: a file, or a gzip file's content, larger than
/// [`MAX_SEGMENT_BYTES`] is refused without reading past the bound, and so
/// is anything but a regular file.
pub fn read_segment(path: &Path) -> Result<Vec<u8>, FolderError> {
    read_segment_from(path, 0)
}

pub(in crate::store) fn read_segment_from(
    path: &Path,
    offset: u64,
) -> Result<Vec<u8>, FolderError> {
    if !is_gz(path) {
        return folder_file::read_from(path, offset, MAX_SEGMENT_BYTES);
    }
    let (f, len) = folder_file::open_read(path)?;
    if len > MAX_SEGMENT_BYTES {
        return Err(FolderError::Refused {
            path: path.to_path_buf(),
            refusal: Refusal::TooLarge {
                len,
                limit: MAX_SEGMENT_BYTES,
            },
        });
    }
    let mut buf = Vec::new();
    // One byte past the bound tells a bomb from a segment that fills it.
    let mut decoder = MultiGzDecoder::new(std::io::BufReader::new(f)).take(MAX_SEGMENT_BYTES + 1);
    match decoder.read_to_end(&mut buf) {
        Ok(_) => {}
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::UnexpectedEof
                    | std::io::ErrorKind::InvalidInput
                    | std::io::ErrorKind::InvalidData
            ) => {}
        Err(e) => return Err(e).at(path)?,
    }
    if buf.len() as u64 > MAX_SEGMENT_BYTES {
        return Err(FolderError::Refused {
            path: path.to_path_buf(),
            refusal: Refusal::Inflates {
                limit: MAX_SEGMENT_BYTES,
            },
        });
    }
    buf.drain(..(offset as usize).min(buf.len()));
    Ok(buf)
}

/// True when `path` names a gzip segment.
pub fn is_gz(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "gz")
}

/// The most a `head.json` may hold (a signed head is a few hundred bytes).
pub const MAX_HEAD_BYTES: u64 = 64 * 1024;

/// The feed's `head.json` in `feed_dir`, if it is there and verifies with
/// `key` for `feed` (a heartbeat and a hint: never trusted over the records).
pub fn read_head(feed_dir: &Path, feed: &FeedId, key: &VerifyingKey) -> Option<record::HeadClaim> {
    let bytes = folder_file::read(&feed_dir.join(HEAD_FILE), MAX_HEAD_BYTES).ok()?;
    record::decode_head(&bytes, feed, key)
}

/// One complete line read from a file.
#[derive(Debug)]
pub struct Line {
    /// Byte offset of its first byte.
    pub offset: u64,
    /// Its length including the `\n`.
    pub len: u64,
    /// The decoded record, or why it is not one.
    pub record: Result<Record, DecodeError>,
}

/// Reads the complete lines of `path` from `offset`. A last line without its
/// `\n` is torn (a write in progress, or a crash) and is left for later.
///
/// A gzip segment is read decompressed, `offset` counting decompressed bytes.
pub fn read_lines(path: &Path, offset: u64) -> Result<Vec<Line>, FolderError> {
    read_lines_and_rest(path, offset).map(|(lines, _)| lines)
}

/// Like [`read_lines`], also giving the number of bytes after the last
/// complete line (a torn tail; 0 when the file ends with `\n`).
pub fn read_lines_and_rest(path: &Path, offset: u64) -> Result<(Vec<Line>, u64), FolderError> {
    Ok(split_lines(&read_segment_from(path, offset)?, offset))
}

/// Cuts `buf` (read from `offset`) into complete lines and the length of
/// the torn rest.
pub(in crate::store) fn split_lines(buf: &[u8], offset: u64) -> (Vec<Line>, u64) {
    let (spans, torn) = line_spans(buf);
    let lines = spans
        .into_iter()
        .map(|span| decode_line(buf, span, offset))
        .collect();
    (lines, torn)
}

/// The line of `buf` at `span` (from [`line_spans`]), decoded; `buf` was
/// read from `offset` of its file.
pub(in crate::store) fn decode_line(buf: &[u8], (at, len): (u64, u64), offset: u64) -> Line {
    Line {
        offset: offset + at,
        len,
        record: record::decode(&buf[at as usize..(at + len) as usize - 1]),
    }
}

/// Where the complete lines of `buf` are, without decoding them: each one's
/// offset in `buf` and length with its `\n`; and the length of the torn rest.
pub(in crate::store) fn line_spans(buf: &[u8]) -> (Vec<(u64, u64)>, u64) {
    let mut out = Vec::new();
    let mut start = 0usize;
    while let Some(nl) = buf[start..].iter().position(|&b| b == b'\n') {
        out.push((start as u64, nl as u64 + 1));
        start += nl + 1;
    }
    (out, (buf.len() - start) as u64)
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::io::Write as _;

    use flate2::Compression;
    use flate2::write::GzEncoder;

    use super::*;
    use crate::store::folder::survey::list_segments;
    use crate::store::writer::seal::gzip_sealed_segments;

    #[test]
    fn segment_names() {
        assert_eq!(segment_name(501), "00000501.jsonl");
        assert_eq!(parse_segment_name("00000501.jsonl"), Some(501));
        for not in [
            "00000501.jsonl.partial",
            "0000501.jsonl",
            "x.jsonl",
            "00000501 (conflicted copy).jsonl",
            "head.json",
        ] {
            assert_eq!(parse_segment_name(not), None, "{not}");
        }
    }

    #[test]
    fn a_gzip_segment_still_arriving_reads_as_far_as_it_decodes() {
        let dir = tempfile::tempdir().unwrap();
        let text: String = (0..200).map(|i| format!("line {i}\n")).collect();
        let mut enc = GzEncoder::new(Vec::new(), Compression::default());
        enc.write_all(text.as_bytes()).unwrap();
        let gz = enc.finish().unwrap();
        let p = dir.path().join("00000001.jsonl.gz");
        fs::write(&p, &gz).unwrap();
        assert_eq!(read_segment(&p).unwrap(), text.as_bytes());
        assert_eq!(read_lines(&p, 0).unwrap().len(), 200);
        assert_eq!(
            read_lines(&p, 7).unwrap()[0].offset,
            7,
            "offsets count plain bytes"
        );
        for cut in [0, 10, gz.len() / 2, gz.len() - 4] {
            fs::write(&p, &gz[..cut]).unwrap();
            let got = read_segment(&p).unwrap();
            assert!(text.as_bytes().starts_with(&got), "cut at {cut}");
            assert!(read_lines(&p, 0).unwrap().len() <= 200);
        }
        fs::write(&p, b"not gzip at all\n").unwrap();
        assert!(read_lines(&p, 0).unwrap().is_empty());
    }

    #[test]
    fn gzip_names_are_segments_and_gzip_wins_a_tie() {
        assert_eq!(parse_segment_file("00000501.jsonl.gz"), Some((501, true)));
        assert_eq!(parse_segment_file("00000501.jsonl"), Some((501, false)));
        for not in ["00000501.jsonl.gz.tmp", "00000501.gz", "x.jsonl.gz"] {
            assert_eq!(parse_segment_file(not), None, "{not}");
        }
        let dir = tempfile::tempdir().unwrap();
        // A remote that got the growing segment (two lines), then the sealed
        // gzip (four): the gzip is the one read, so nothing goes missing.
        let mut enc = GzEncoder::new(Vec::new(), Compression::default());
        enc.write_all(b"1\n2\n3\n4\n").unwrap();
        fs::write(dir.path().join("00000001.jsonl.gz"), enc.finish().unwrap()).unwrap();
        fs::write(dir.path().join("00000001.jsonl"), b"1\n2\n").unwrap();
        fs::write(dir.path().join("00000501.jsonl"), b"").unwrap();
        fs::create_dir(dir.path().join("00000601.jsonl")).unwrap();
        let segs = list_segments(dir.path()).unwrap();
        assert_eq!(
            segs.iter().map(|s| (s.first_seq, s.gz)).collect::<Vec<_>>(),
            vec![(1, true), (501, false)]
        );
        assert_eq!(read_segment(&segs[0].path).unwrap(), b"1\n2\n3\n4\n");
        // Compressing again removes the plain file a stopped run left over.
        gzip_sealed_segments(dir.path()).unwrap();
        assert!(!dir.path().join("00000001.jsonl").exists());
        assert!(dir.path().join("00000001.jsonl.gz").exists());
    }
}
