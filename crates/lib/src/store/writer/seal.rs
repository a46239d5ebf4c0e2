//! Compressing this device's sealed segments ([`gzip_sealed_segments`]):
//! each replaced by its gzip form, atomically for readers.

use std::fs::{self};
use std::io::Write as _;
use std::path::{Path, PathBuf};

use flate2::Compression;
use flate2::write::GzEncoder;

use crate::store::error::{IoContext as _, StoreResult};
use crate::store::folder::segments::{read_segment, segment_name};
use crate::store::folder::survey::list_segments;
use crate::store::folder_file::{self, FileKind};
use crate::store::writer::feed::sync_dir;

/// Replaces every sealed plain segment of the feed folder `feed_dir` by its
/// gzip form and returns the files written. A segment is sealed once a later
/// one exists (only the newest grows), so the newest is always left plain.
///
/// Each replacement is atomic for readers: the gzip is written to a
/// temporary file (not a segment name, so ignored), fsynced, renamed into
/// place, and only then is the plain file removed. A reader that sees both
/// reads the gzip one ([`list_segments`]); one that read the plain file before
/// and the gzip file after finds the same records by id and applies nothing
/// twice. Safe to repeat after a crash at any step.
///
/// Compress only this device's own feeds: another writer's files belong to it.
pub fn gzip_sealed_segments(feed_dir: &Path) -> StoreResult<Vec<PathBuf>> {
    let segments = list_segments(feed_dir)?;
    let mut written = Vec::new();
    for seg in segments.iter().take(segments.len().saturating_sub(1)) {
        if seg.gz {
            // A run stopped after the rename: the gzip is whole, the plain
            // file is left over.
            let plain = feed_dir.join(segment_name(seg.first_seq));
            if FileKind::at(&plain)? == Some(FileKind::Regular) {
                fs::remove_file(&plain).at(&plain)?;
                sync_dir(feed_dir)?;
            }
            continue;
        }
        let plain = read_segment(&seg.path)?;
        let gz_path = feed_dir.join(format!("{}.gz", segment_name(seg.first_seq)));
        // A gzip form left by an interrupted run is kept only if it is whole.
        let whole = FileKind::at(&gz_path)? == Some(FileKind::Regular)
            && read_segment(&gz_path).is_ok_and(|b| b == plain);
        if !whole {
            let mut enc = GzEncoder::new(Vec::new(), Compression::default());
            enc.write_all(&plain).at(&gz_path)?;
            let gz = enc.finish().at(&gz_path)?;
            folder_file::replace(&gz_path, &gz, true)?;
            written.push(gz_path);
        }
        fs::remove_file(&seg.path).at(&seg.path)?;
        sync_dir(feed_dir)?;
    }
    Ok(written)
}
