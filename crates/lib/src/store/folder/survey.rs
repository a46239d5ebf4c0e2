//! The survey of `feeds/`: which feed folders and segment files stand
//! there, and what does not belong (a [`Stray`]), as one listing of each
//! folder gives them (`lstat` types, no symlink followed).
//!
//! Owns telling a segment from anything else by name and type; it reads no
//! file's content (that is `segments`).

use std::fs::{self};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::core::ids::FeedId;
use crate::store::error::{IoContext as _, PathError};
use crate::store::folder_file::FileKind;

use crate::store::folder::segments::{HEAD_FILE, Segment, parse_segment_file};

/// Something under `feeds/` that is not part of a well-formed feed. It is
/// never read, written, moved or deleted: it is reported (by ingest, so by
/// `verify`, `channel_status` and `status`) and left for a person.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stray {
    /// Its path.
    pub path: PathBuf,
    /// What is wrong with it.
    pub what: StrayKind,
}

/// What makes a [`Stray`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StrayKind {
    /// A symlink, FIFO, socket or device, or a directory where a feed file
    /// belongs (or a file where a folder belongs): an alarm.
    WrongType(FileKind),
    /// A regular file or folder with a name no feed uses (a conflict copy
    /// left by a sync tool, a note): reported by `verify`, harmless.
    Unknown,
}

impl Stray {
    fn wrong(path: PathBuf, kind: FileKind) -> Self {
        Self {
            path,
            what: StrayKind::WrongType(kind),
        }
    }

    fn unknown(path: PathBuf) -> Self {
        Self {
            path,
            what: StrayKind::Unknown,
        }
    }

    /// Why it is reported, in words.
    pub fn reason(&self) -> String {
        match self.what {
            StrayKind::WrongType(kind) => format!(
                "{kind} in the feeds folder, where only regular files and folders belong: never \
                 followed or read, left untouched; remove it"
            ),
            StrayKind::Unknown => {
                "not part of any feed (a copy left by a sync tool, or a file put there by hand): \
                 ignored, its content is not read"
                    .to_owned()
            }
        }
    }
}

/// The entries of a folder with their types as `lstat` gives them (no
/// symlink followed) and their inode numbers, both from the listing itself;
/// names that are not UTF-8 kept lossily.
pub(in crate::store) fn entries(
    dir: &Path,
) -> Result<Vec<(String, PathBuf, FileKind, u64)>, PathError> {
    use std::os::unix::fs::DirEntryExt as _;
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).at(dir)? {
        let entry = entry.at(dir)?;
        let path = entry.path();
        let kind = match entry.file_type() {
            Ok(t) => FileKind::of(t),
            // Gone between the listing and the look (a checkout, a rename).
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e).at(&path),
        };
        let name = entry.file_name().to_string_lossy().into_owned();
        out.push((name, path, kind, entry.ino()));
    }
    Ok(out)
}

/// A feed and its folder.
pub type FeedFolder = (FeedId, PathBuf);

/// Every feed folder under `feeds/`, sorted by feed id; the owner's feeds first.
pub fn list_feeds(feeds: &Path) -> Result<Vec<FeedFolder>, PathError> {
    survey_feeds(feeds).map(|s| s.feeds)
}

/// What [`survey_feeds`] found under `feeds/`.
#[derive(Clone, Debug, Default)]
pub struct FeedsSurvey {
    /// The feed folders, sorted by feed id, the owner's first.
    pub feeds: Vec<FeedFolder>,
    /// What does not belong at the two levels of folders above the feed files.
    pub strays: Vec<Stray>,
    /// Every role folder listed, with its modification time as it stood
    /// just before the listing (`None` when it could not be read): a device
    /// folder added later changes it, even in a role folder that held none.
    pub roles: Vec<(PathBuf, Option<SystemTime>)>,
}

/// Like [`list_feeds`], also giving what does not belong at the two levels
/// of folders above the feed files: a role or device folder that is a
/// symlink or a file, a folder whose name is no role or device.
pub fn survey_feeds(feeds: &Path) -> Result<FeedsSurvey, PathError> {
    let mut survey = FeedsSurvey::default();
    let FeedsSurvey {
        feeds: out,
        strays,
        roles: role_dirs,
    } = &mut survey;
    // `feeds` itself must be a real folder: a link would make another folder
    // this channel's.
    match FileKind::at(feeds)? {
        Some(FileKind::Directory) | None => {}
        Some(other) => {
            strays.push(Stray::wrong(feeds.to_path_buf(), other));
            return Ok(survey);
        }
    }
    let roles = match entries(feeds) {
        Ok(r) => r,
        Err(e) if e.source.kind() == std::io::ErrorKind::NotFound => return Ok(survey),
        Err(e) => return Err(e),
    };
    for (role_name, role_path, kind, _) in roles {
        match kind {
            FileKind::Directory => {}
            FileKind::Regular => {
                strays.push(Stray::unknown(role_path));
                continue;
            }
            other => {
                strays.push(Stray::wrong(role_path, other));
                continue;
            }
        }
        if FeedId::new(&role_name, "device").is_none() {
            strays.push(Stray::unknown(role_path));
            continue;
        }
        let mtime = mtime_of(&role_path);
        let devices = match entries(&role_path) {
            Ok(d) => d,
            Err(e) if e.source.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        role_dirs.push((role_path, mtime));
        for (dev_name, dev_path, kind, _) in devices {
            match (kind, FeedId::new(&role_name, &dev_name)) {
                (FileKind::Directory, Some(feed)) => out.push((feed, dev_path)),
                (FileKind::Directory | FileKind::Regular, _) => {
                    strays.push(Stray::unknown(dev_path));
                }
                (other, _) => strays.push(Stray::wrong(dev_path, other)),
            }
        }
    }
    out.sort_by(|a, b| (!a.0.is_owner(), &a.0).cmp(&(!b.0.is_owner(), &b.0)));
    strays.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(survey)
}

/// The segments of one feed folder as its writer sees them, by first seq.
/// When a segment is present in both forms, only the gzip file is listed: it
/// is written only for a sealed segment and renamed into place once whole,
/// while the plain file beside it may be an older copy that stopped growing
/// before the segment was full (a remote that got the growing segment, then
/// the sealed gzip, keeps both: copies never delete).
///
/// Readers of other feeds use [`survey_segments`], which lists both forms: a
/// gzip file planted beside a plain segment must not hide its records.
pub fn list_segments(dir: &Path) -> Result<Vec<Segment>, PathError> {
    let (mut segments, _) = survey_segments(dir)?;
    segments.dedup_by_key(|s| s.first_seq);
    Ok(segments)
}

/// Every segment file of one feed folder, both forms of a segment when both
/// stand (gzip first), and what does not belong there. Only regular files
/// with a segment's name are segments; anything else with that name (a
/// folder, a symlink, a FIFO) is of the wrong type, and so is a `head.json`
/// that is not a regular file. Temporary files of a write or a copy in
/// flight (`*.tmp`, `*.partial`) are passed over in silence; every other
/// name is reported as unknown. Readers find every record by id, so reading
/// both forms of a segment applies nothing twice.
pub fn survey_segments(dir: &Path) -> Result<(Vec<Segment>, Vec<Stray>), PathError> {
    let mut out = Vec::new();
    let mut strays = Vec::new();
    for (name, path, kind, ino) in entries(dir)? {
        let segment = parse_segment_file(&name);
        let known = segment.is_some()
            || name == HEAD_FILE
            || name == crate::core::api_presence::API_FILE
            || name == crate::core::sealed_key::KEY_FILE;
        match (kind, segment) {
            (FileKind::Regular, Some((first_seq, gz))) => out.push(Segment {
                path,
                first_seq,
                gz,
                ino,
            }),
            (FileKind::Regular, None) if known || is_in_flight(&name) => {}
            (FileKind::Regular, None) => strays.push(Stray::unknown(path)),
            (FileKind::Directory, _) if !known => strays.push(Stray::unknown(path)),
            (other, _) => strays.push(Stray::wrong(path, other)),
        }
    }
    // Gzip before plain for one first seq.
    out.sort_by_key(|s| (s.first_seq, !s.gz));
    strays.sort_by(|a, b| a.path.cmp(&b.path));
    Ok((out, strays))
}

/// True for the name of a file being written or copied: a temporary file of
/// this program or of a sync tool.
fn is_in_flight(name: &str) -> bool {
    name.ends_with(".tmp") || name.ends_with(".partial") || name.starts_with(".~tmp~")
}

/// The modification time of `p` itself, never of what a link there names:
/// the folder is peer-controlled, and a link planted where a feed folder
/// stood must not send a check (the change check runs at every call) to
/// stat another path, such as a mount that hangs.
pub fn mtime_of(p: &Path) -> Option<SystemTime> {
    fs::symlink_metadata(p).and_then(|m| m.modified()).ok()
}
