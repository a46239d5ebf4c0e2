//! Files of the shared folder, opened only as what they claim to be.
//!
//! The channel folder is untrusted input: whoever can push to its remote (or
//! any careless tool on a teammate's machine) controls every path, file type
//! and byte in it. Every read or write of a file under `feeds/` and of
//! `channel.json` goes through this module, which owns three guarantees:
//!
//! - no symlink is followed: the last component is opened with `O_NOFOLLOW`,
//!   and the folders above it inside the channel are checked with `lstat`
//!   ([`real_dir`], [`ensure_real_dirs`]) before a write;
//! - nothing but a regular file is read or written: the open never blocks
//!   (`O_NONBLOCK`, so a FIFO cannot hang a reader) and what was opened is
//!   checked with `fstat` before a byte moves;
//! - every read has a bound, given by the caller from the format's limits,
//!   checked against the opened file's size and enforced while reading (a
//!   file that grows under the reader is cut at the bound, not followed).
//!
//! It decides nothing about what the bytes mean (that is `feed` and ingest),
//! and it never touches the home, which is this machine's own.

use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read as _, Seek as _, SeekFrom, Write as _};
use std::os::unix::fs::{FileTypeExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

use crate::store::path_error::{IoContext as _, PathError};

/// What a path in the folder turned out to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FileKind {
    /// A regular file: the only kind that is ever read or written.
    Regular,
    /// A directory.
    Directory,
    /// A symbolic link (never followed).
    Symlink,
    /// A named pipe.
    Fifo,
    /// A Unix socket.
    Socket,
    /// A block or character device.
    Device,
}

impl FileKind {
    /// The kind of a file type as `lstat` reports it.
    pub fn of(t: fs::FileType) -> Self {
        if t.is_symlink() {
            Self::Symlink
        } else if t.is_dir() {
            Self::Directory
        } else if t.is_fifo() {
            Self::Fifo
        } else if t.is_socket() {
            Self::Socket
        } else if t.is_block_device() || t.is_char_device() {
            Self::Device
        } else {
            Self::Regular
        }
    }

    /// The kind of `path` itself (a symlink is reported, not followed);
    /// `None` when nothing is there.
    pub fn at(path: &Path) -> Result<Option<Self>, PathError> {
        match fs::symlink_metadata(path) {
            Ok(m) => Ok(Some(Self::of(m.file_type()))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e).at(path),
        }
    }
}

impl fmt::Display for FileKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Regular => "a regular file",
            Self::Directory => "a directory",
            Self::Symlink => "a symbolic link",
            Self::Fifo => "a named pipe",
            Self::Socket => "a socket",
            Self::Device => "a device",
        })
    }
}

/// Why a file of the folder was not read or written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// It is not what it claims to be (`expected` names what was needed).
    WrongType {
        /// What stands at the path.
        found: FileKind,
        /// What the path must be.
        expected: FileKind,
    },
    /// It holds more than the format allows there.
    TooLarge {
        /// Its size in bytes.
        len: u64,
        /// The most the format allows.
        limit: u64,
    },
    /// Its gzip content decompresses past what the format allows (a bomb).
    Inflates {
        /// The most the format allows, decompressed.
        limit: u64,
    },
    /// It has other names besides this one (hard links): writing it in
    /// place would change them too.
    Linked {
        /// How many names it has.
        links: u64,
    },
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::WrongType { found, expected } => write!(
                f,
                "is {found}, not {expected}: it was left untouched; remove it if nobody needs it"
            ),
            Self::TooLarge { len, limit } => write!(
                f,
                "holds {len} bytes, more than the {limit} the channel format allows there: it \
                 was not read"
            ),
            Self::Inflates { limit } => write!(
                f,
                "decompresses to more than the {limit} bytes the channel format allows: it was \
                 not read"
            ),
            Self::Linked { links } => write!(
                f,
                "has {links} names (hard links), so writing it would change the other names too: \
                 nothing was written; give it a name of its own (copy it, then move the copy over \
                 it) if its content is this channel's, else remove it"
            ),
        }
    }
}

/// An error reading or writing a file of the folder.
#[derive(Debug, thiserror::Error)]
pub enum FolderError {
    /// The file system said no.
    #[error(transparent)]
    Io(#[from] PathError),
    /// The path is not what it must be, or is too large: nothing was done.
    #[error("{} {refusal}", path.display())]
    Refused {
        /// The path.
        path: PathBuf,
        /// Why.
        refusal: Refusal,
    },
}

impl FolderError {
    /// True when nothing stands at the path.
    pub fn is_not_found(&self) -> bool {
        matches!(self, Self::Io(e) if e.source.kind() == io::ErrorKind::NotFound)
    }

    /// The refusal, when the path was refused rather than unreadable.
    pub fn refusal(&self) -> Option<&Refusal> {
        match self {
            Self::Refused { refusal, .. } => Some(refusal),
            Self::Io(_) => None,
        }
    }

    fn refused(path: &Path, refusal: Refusal) -> Self {
        Self::Refused {
            path: path.to_path_buf(),
            refusal,
        }
    }

    fn wrong_type(path: &Path, found: FileKind, expected: FileKind) -> Self {
        Self::refused(path, Refusal::WrongType { found, expected })
    }
}

/// Open flags of every file of the folder: never follow a final symlink,
/// never block on a FIFO or a device.
const FLAGS: i32 = libc::O_NOFOLLOW | libc::O_NONBLOCK;

/// Turns an open error into a refusal where the error says what stood there
/// (`ELOOP`: a symlink under `O_NOFOLLOW`; `ENXIO`: a socket or a FIFO with no
/// reader, opened for writing; `EISDIR`: a directory).
fn open_error(path: &Path, e: io::Error) -> FolderError {
    let found = match e.raw_os_error() {
        Some(libc::ELOOP) => Some(FileKind::Symlink),
        Some(libc::ENXIO) | Some(libc::EISDIR) => FileKind::at(path).ok().flatten(),
        _ => None,
    };
    match found {
        Some(found) if found != FileKind::Regular => {
            FolderError::wrong_type(path, found, FileKind::Regular)
        }
        _ => FolderError::Io(PathError {
            path: path.to_path_buf(),
            source: e,
        }),
    }
}

/// Checks that an opened file is a regular file and returns its length.
fn regular_len(f: &File, path: &Path) -> Result<u64, FolderError> {
    let m = f.metadata().at(path)?;
    match FileKind::of(m.file_type()) {
        FileKind::Regular => Ok(m.len()),
        found => Err(FolderError::wrong_type(path, found, FileKind::Regular)),
    }
}

/// Opens `path` with `options` plus [`FLAGS`], and only if it is a regular
/// file; returns it and its length.
fn open_regular(path: &Path, options: &mut OpenOptions) -> Result<(File, u64), FolderError> {
    let f = options
        .custom_flags(FLAGS)
        .open(path)
        .map_err(|e| open_error(path, e))?;
    let len = regular_len(&f, path)?;
    Ok((f, len))
}

/// Opens a regular file of the folder for reading; returns it and its length.
pub fn open_read(path: &Path) -> Result<(File, u64), FolderError> {
    open_regular(path, OpenOptions::new().read(true))
}

/// The bytes of a regular file from `offset` on, refused when the whole file
/// is larger than `limit`. At most `limit` bytes are read even if the file
/// grows meanwhile.
pub fn read_from(path: &Path, offset: u64, limit: u64) -> Result<Vec<u8>, FolderError> {
    let (mut f, len) = open_read(path)?;
    if len > limit {
        return Err(FolderError::refused(path, Refusal::TooLarge { len, limit }));
    }
    f.seek(SeekFrom::Start(offset)).at(path)?;
    let mut buf = Vec::with_capacity(len.saturating_sub(offset) as usize);
    f.take(limit.saturating_sub(offset))
        .read_to_end(&mut buf)
        .at(path)?;
    Ok(buf)
}

/// The whole of a regular file of at most `limit` bytes.
pub fn read(path: &Path, limit: u64) -> Result<Vec<u8>, FolderError> {
    read_from(path, 0, limit)
}

/// Opens a regular file of the folder for appending, creating it (mode 0644)
/// when missing. The caller has checked the folders above it ([`ensure_real_dirs`]).
/// Refused, with nothing written, for a file with other names: a hard link
/// planted at a segment's name would carry the appended bytes to its other
/// name, anywhere on the same file system.
pub fn open_append(path: &Path) -> Result<File, FolderError> {
    let (f, _) = open_regular(path, OpenOptions::new().append(true).create(true))?;
    only_name(&f, path)?;
    Ok(f)
}

/// Opens an existing regular file of the folder for writing in place (to cut
/// a torn tail off). Refused for a file with other names, like [`open_append`].
pub fn open_write(path: &Path) -> Result<File, FolderError> {
    let (f, _) = open_regular(path, OpenOptions::new().write(true))?;
    only_name(&f, path)?;
    Ok(f)
}

/// Refused unless the open file `f` (opened at `path`) has one name
/// (`fstat`'s link count). Checked again before each write through a file
/// kept open across writes: a second name made since would carry the bytes
/// out of the folder.
pub fn only_name(f: &File, path: &Path) -> Result<(), FolderError> {
    only_name_len(f, path).map(|_| ())
}

/// [`only_name`], and the file's length.
fn only_name_len(f: &File, path: &Path) -> Result<u64, FolderError> {
    use std::os::unix::fs::MetadataExt as _;
    let m = f.metadata().at(path)?;
    match m.nlink() {
        1 => Ok(m.len()),
        links => Err(FolderError::refused(path, Refusal::Linked { links })),
    }
}

/// Writes `bytes` over the regular file at `path`, in place: from its start,
/// then cut to their length. Not atomic (a reader may meet the old bytes, the
/// new ones or a mix), so only for a file whose readers check what they read
/// and ignore what fails (a signed hint). Refused, with nothing written, for
/// anything [`open_write`] refuses and for a file with other names (a hard
/// link would carry the bytes beyond the folder): [`replace`] is the way then.
pub fn rewrite(path: &Path, bytes: &[u8]) -> Result<File, FolderError> {
    let (f, _) = open_regular(path, OpenOptions::new().write(true))?;
    overwrite(&f, path, bytes)?;
    Ok(f)
}

/// Writes `bytes` over the file `f` (opened at `path` by [`open_write`])
/// from its start, then cuts it to their length, as [`rewrite`] does.
/// Refused, with nothing written, once the file has another name
/// ([`only_name`], checked again: a file kept open across writes may have
/// gained one since).
pub fn overwrite(f: &File, path: &Path, bytes: &[u8]) -> Result<(), FolderError> {
    use std::os::unix::fs::FileExt as _;
    let was = only_name_len(f, path)?;
    f.write_all_at(bytes, 0).at(path)?;
    // Cut only when the old bytes reach past the new: a cut to the length
    // the file has still changes its inode and wakes every watcher of the
    // folder, on a durable write's answer path.
    let len = bytes.len() as u64;
    if was > len {
        f.set_len(len).at(path)?;
    }
    Ok(())
}

/// Replaces `path` with `bytes` atomically: a temporary file beside it
/// (created new, so nothing planted there is written through), then a rename
/// over the old name, which replaces whatever stood there as a name (a
/// symlink is replaced, never followed). A directory in the way is refused.
/// With `durable`, the data and the folder are fsynced.
pub fn replace(path: &Path, bytes: &[u8], durable: bool) -> Result<(), FolderError> {
    match FileKind::at(path)? {
        None | Some(FileKind::Regular) | Some(FileKind::Symlink) => {}
        Some(found) => return Err(FolderError::wrong_type(path, found, FileKind::Regular)),
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let mut rnd = [0u8; 6];
    getrandom::fill(&mut rnd).expect("the OS random source works");
    let tmp = dir.join(format!(".{name}.{}.tmp", hex::encode(rnd)));
    let written = (|| {
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .custom_flags(FLAGS)
            .open(&tmp)
            .map_err(|e| open_error(&tmp, e))?;
        f.write_all(bytes).at(&tmp)?;
        if durable {
            f.sync_data().at(&tmp)?;
        }
        fs::rename(&tmp, path).at(path)?;
        Ok::<_, FolderError>(())
    })();
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    written?;
    if durable {
        File::open(dir).and_then(|d| d.sync_all()).at(dir)?;
    }
    Ok(())
}

/// True when `path` is a real directory, false when nothing is there; a
/// refusal when something else stands there (a symlink to a directory too).
pub fn real_dir(path: &Path) -> Result<bool, FolderError> {
    match FileKind::at(path)? {
        None => Ok(false),
        Some(FileKind::Directory) => Ok(true),
        Some(found) => Err(FolderError::wrong_type(path, found, FileKind::Directory)),
    }
}

/// Makes sure every folder from `root` (excluded: the user chose it) down to
/// `dir` is a real directory, creating the missing ones. Returns true when
/// `dir` itself was created. A symlink or a file in the way is refused and
/// left untouched.
pub fn ensure_real_dirs(root: &Path, dir: &Path) -> Result<bool, FolderError> {
    let Ok(rel) = dir.strip_prefix(root) else {
        return Err(FolderError::Io(PathError {
            path: dir.to_path_buf(),
            source: io::Error::other("not inside the channel folder"),
        }));
    };
    let mut at = root.to_path_buf();
    let mut created = false;
    for part in rel.components() {
        at.push(part);
        created = false;
        if !real_dir(&at)? {
            match fs::create_dir(&at) {
                Ok(()) => created = true,
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    // Made by a racing writer, or planted: check again.
                    real_dir(&at)?;
                }
                Err(e) => return Err(e).at(&at)?,
            }
        }
    }
    Ok(created)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn a_symlink_is_never_read_or_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target");
        fs::write(&target, b"secret\n").unwrap();
        let link = dir.path().join("link");
        symlink(&target, &link).unwrap();
        for err in [
            read(&link, 1 << 20).unwrap_err(),
            open_append(&link).map(|_| ()).unwrap_err(),
            open_write(&link).map(|_| ()).unwrap_err(),
            rewrite(&link, b"new\n").unwrap_err(),
        ] {
            assert_eq!(
                err.refusal(),
                Some(&Refusal::WrongType {
                    found: FileKind::Symlink,
                    expected: FileKind::Regular
                }),
                "{err}"
            );
        }
        // Replacing the link swaps the name and leaves the target alone.
        replace(&link, b"new\n", false).unwrap();
        assert_eq!(fs::read(&target).unwrap(), b"secret\n");
        assert_eq!(fs::read(&link).unwrap(), b"new\n");
        assert_eq!(FileKind::at(&link).unwrap(), Some(FileKind::Regular));
    }

    #[test]
    fn a_rewrite_is_in_place_and_never_through_another_name() {
        use std::os::unix::fs::MetadataExt as _;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("head.json");
        fs::write(&file, b"a longer first version\n").unwrap();
        let inode = fs::metadata(&file).unwrap().ino();
        rewrite(&file, b"shorter\n").unwrap();
        assert_eq!(fs::read(&file).unwrap(), b"shorter\n");
        assert_eq!(fs::metadata(&file).unwrap().ino(), inode);
        // Through the file kept open: longer, as long, shorter.
        let kept = rewrite(&file, b"shorter\n").unwrap();
        for bytes in [
            &b"much longer again\n"[..],
            b"eighteen bytes ok\n",
            b"cut\n",
        ] {
            overwrite(&kept, &file, bytes).unwrap();
            assert_eq!(fs::read(&file).unwrap(), bytes);
        }
        // A second name: refused, both names keep their bytes, whether the
        // file is opened again or written through the one kept open.
        let other = dir.path().join("elsewhere");
        fs::hard_link(&file, &other).unwrap();
        let err = rewrite(&file, b"new\n").unwrap_err();
        assert_eq!(err.refusal(), Some(&Refusal::Linked { links: 2 }), "{err}");
        let err = overwrite(&kept, &file, b"a much longer head\n").unwrap_err();
        assert_eq!(err.refusal(), Some(&Refusal::Linked { links: 2 }), "{err}");
        assert_eq!(fs::read(&other).unwrap(), b"cut\n");
        // Nothing there: an error, and nothing made.
        let missing = dir.path().join("missing");
        assert!(rewrite(&missing, b"x").is_err());
        assert!(!missing.exists());
    }

    #[test]
    fn an_append_or_a_cut_never_goes_through_another_name() {
        let dir = tempfile::tempdir().unwrap();
        let seg = dir.path().join("00000001.jsonl");
        fs::write(&seg, b"line\n").unwrap();
        // One name: appended to as before.
        use std::io::Write as _;
        open_append(&seg).unwrap().write_all(b"more\n").unwrap();
        let other = dir.path().join("victim");
        fs::hard_link(&seg, &other).unwrap();
        for err in [
            open_append(&seg).map(|_| ()).unwrap_err(),
            open_write(&seg).map(|_| ()).unwrap_err(),
        ] {
            assert_eq!(err.refusal(), Some(&Refusal::Linked { links: 2 }), "{err}");
            assert!(err.to_string().contains("nothing was written"), "{err}");
        }
        assert_eq!(fs::read(&other).unwrap(), b"line\nmore\n");
        // A missing file is still created, with one name.
        let new = dir.path().join("00000501.jsonl");
        open_append(&new).unwrap();
        assert!(new.is_file());
    }

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("00000001.jsonl");
        let status = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(status.success());
        let err = read(&fifo, 1 << 20).unwrap_err();
        assert!(
            matches!(
                err.refusal(),
                Some(Refusal::WrongType {
                    found: FileKind::Fifo,
                    ..
                })
            ),
            "{err}"
        );
        // Opening a FIFO with no reader for writing fails at once (ENXIO).
        let err = open_append(&fifo).map(|_| ()).unwrap_err();
        assert!(err.refusal().is_some(), "{err}");
    }

    #[test]
    fn reads_are_bounded_by_the_callers_limit() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("big");
        let f = File::create(&p).unwrap();
        f.set_len(8 << 30).unwrap(); // sparse: costs nothing on disk
        let err = read(&p, 4 << 20).unwrap_err();
        assert_eq!(
            err.refusal(),
            Some(&Refusal::TooLarge {
                len: 8 << 30,
                limit: 4 << 20
            })
        );
        fs::write(&p, b"0123456789").unwrap();
        assert_eq!(read_from(&p, 4, 10).unwrap(), b"456789");
    }

    #[test]
    fn directories_in_the_way_are_refused_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let elsewhere = tempfile::tempdir().unwrap();
        fs::create_dir(root.join("feeds")).unwrap();
        symlink(elsewhere.path(), root.join("feeds/a")).unwrap();
        let err = ensure_real_dirs(root, &root.join("feeds/a/dev")).unwrap_err();
        assert!(matches!(
            err.refusal(),
            Some(Refusal::WrongType {
                found: FileKind::Symlink,
                expected: FileKind::Directory
            })
        ));
        assert!(fs::read_dir(elsewhere.path()).unwrap().next().is_none());
        assert!(ensure_real_dirs(root, &root.join("feeds/b/dev")).unwrap());
        assert!(!ensure_real_dirs(root, &root.join("feeds/b/dev")).unwrap());
        fs::create_dir(root.join("head.json")).unwrap();
        assert!(replace(&root.join("head.json"), b"x", false).is_err());
        assert!(root.join("head.json").is_dir());
    }
}
