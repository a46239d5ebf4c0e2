//! Backup archives: folders written as one gzipped tar file (ustar), and read
//! back to check them.
//!
//! What goes in is read from an untrusted folder: only directories and
//! regular files are taken, a symbolic link or any other kind of file is
//! never followed nor stored (it is listed as skipped), a path that is not
//! UTF-8 or does not fit a ustar header is skipped too, and the whole is
//! bounded in entries, depth and bytes. Each file's SHA-256 is kept while it
//! is written, so the archive can be read again and compared entry by entry.
//! Reading an archive takes only plain relative paths (no `..`, no absolute
//! path, no link) and stops at the same bounds.
//!
//! Owns the format and those bounds; must not decide what a backup holds
//! (the command does).

use std::fs::{self, File};
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use flate2::Compression;
use flate2::read::GzDecoder;
use flate2::write::GzEncoder;
use sha2::{Digest as _, Sha256};

use crate::store::error::{IoContext as _, PathError, StoreError, StoreResult};

/// The most entries one archive holds.
pub const MAX_ENTRIES: usize = 1_000_000;
/// The most bytes of files one archive holds (before compression).
pub const MAX_BYTES: u64 = 64 * 1024 * 1024 * 1024;
/// The deepest folder taken, below the folder archived.
const MAX_DEPTH: usize = 32;
const BLOCK: usize = 512;

/// One file as archived: its path in the archive, size and SHA-256.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Archived {
    /// The path in the archive (`/`-separated, relative).
    pub path: String,
    /// Its bytes.
    pub size: u64,
    /// Its SHA-256, hex.
    pub sha256: String,
}

/// A gzipped tar file being written.
pub struct ArchiveWriter {
    out: GzEncoder<BufWriter<File>>,
    path: PathBuf,
    /// What was written, in order.
    pub files: Vec<Archived>,
    /// What was left out, with why.
    pub skipped: Vec<String>,
    bytes: u64,
}

impl ArchiveWriter {
    /// Starts a new archive at `path`, which must not exist yet.
    pub fn create(path: &Path) -> StoreResult<Self> {
        use std::os::unix::fs::OpenOptionsExt as _;
        // Readable by this user only: it holds the channel (and with keys,
        // what lets anyone act as this device).
        let file = File::options()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
            .at(path)?;
        Ok(Self {
            out: GzEncoder::new(BufWriter::new(file), Compression::default()),
            path: path.to_path_buf(),
            files: Vec::new(),
            skipped: Vec::new(),
            bytes: 0,
        })
    }

    /// Adds every directory and regular file under `dir` as `prefix/…`,
    /// leaving out the top-level names in `except`.
    pub fn add_tree(&mut self, dir: &Path, prefix: &str, except: &[&str]) -> StoreResult<()> {
        self.add_dir(dir, prefix, except, 0)
    }

    fn add_dir(
        &mut self,
        dir: &Path,
        name: &str,
        except: &[&str],
        depth: usize,
    ) -> StoreResult<()> {
        if depth > MAX_DEPTH {
            self.skipped
                .push(format!("{name}: deeper than {MAX_DEPTH} folders"));
            return Ok(());
        }
        self.header(&format!("{name}/"), 0, 0o755, b'5')?;
        let mut entries: Vec<_> = fs::read_dir(dir)
            .at(dir)?
            .collect::<Result<_, _>>()
            .at(dir)?;
        entries.sort_by_key(fs::DirEntry::file_name);
        for e in entries {
            let path = e.path();
            let Some(file_name) = e.file_name().to_str().map(str::to_owned) else {
                self.skipped
                    .push(format!("{}: a name that is not UTF-8", path.display()));
                continue;
            };
            if depth == 0 && except.contains(&file_name.as_str()) {
                continue;
            }
            let inner = format!("{name}/{file_name}");
            // Never followed: the kind of the entry itself.
            let meta = fs::symlink_metadata(&path).at(&path)?;
            if meta.is_dir() {
                self.add_dir(&path, &inner, except, depth + 1)?;
            } else if meta.is_file() {
                self.add_file(&path, &inner, meta.len())?;
            } else {
                let kind = if meta.file_type().is_symlink() {
                    "a symbolic link (not followed)"
                } else {
                    "not a regular file"
                };
                self.skipped.push(format!("{inner}: {kind}"));
            }
        }
        Ok(())
    }

    /// Adds the regular file at `path` as `name`, `size` bytes of it (its
    /// size when it was listed: a feed that grows meanwhile is taken up to
    /// there).
    pub fn add_file(&mut self, path: &Path, name: &str, size: u64) -> StoreResult<()> {
        if self.files.len() >= MAX_ENTRIES || self.bytes.saturating_add(size) > MAX_BYTES {
            return Err(bad(
                path,
                format!(
                    "the backup would pass {MAX_ENTRIES} files or {} GiB",
                    MAX_BYTES >> 30
                ),
            ));
        }
        let mut file = File::open(path).at(path)?;
        if !file.metadata().at(path)?.is_file() {
            self.skipped.push(format!("{name}: not a regular file"));
            return Ok(());
        }
        if !self.header(name, size, 0o644, b'0')? {
            return Ok(());
        }
        let mut hash = Sha256::new();
        let mut left = size;
        let mut buf = vec![0u8; 64 * 1024];
        while left > 0 {
            let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
            let n = file.read(&mut buf[..want]).at(path)?;
            if n == 0 {
                return Err(bad(
                    path,
                    "the file shrank while it was read: run the backup again",
                ));
            }
            hash.update(&buf[..n]);
            self.out.write_all(&buf[..n]).at(&self.path)?;
            left -= n as u64;
        }
        self.pad(size)?;
        self.bytes += size;
        self.files.push(Archived {
            path: name.to_owned(),
            size,
            sha256: hex::encode(hash.finalize()),
        });
        Ok(())
    }

    /// Writes a header; `false` (and the entry skipped) when the name does
    /// not fit one.
    fn header(&mut self, name: &str, size: u64, mode: u32, kind: u8) -> StoreResult<bool> {
        let Some(block) = header(name, size, mode, kind) else {
            self.skipped
                .push(format!("{name}: a path too long for the archive"));
            return Ok(false);
        };
        self.out.write_all(&block).at(&self.path)?;
        Ok(true)
    }

    fn pad(&mut self, size: u64) -> StoreResult<()> {
        let rem = (size % BLOCK as u64) as usize;
        if rem != 0 {
            self.out.write_all(&[0u8; BLOCK][rem..]).at(&self.path)?;
        }
        Ok(())
    }

    /// Ends the archive and makes it durable; returns what it holds.
    pub fn finish(mut self) -> StoreResult<(Vec<Archived>, Vec<String>)> {
        self.out.write_all(&[0u8; BLOCK * 2]).at(&self.path)?;
        let buffered = self.out.finish().at(&self.path)?;
        let file = buffered.into_inner().map_err(|e| {
            StoreError::Io(PathError {
                path: self.path.clone(),
                source: e.into_error(),
            })
        })?;
        file.sync_all().at(&self.path)?;
        Ok((self.files, self.skipped))
    }
}

/// A ustar header block for `name` (split into prefix and name when longer
/// than 100 bytes), or `None` when it cannot hold it.
fn header(name: &str, size: u64, mode: u32, kind: u8) -> Option<[u8; BLOCK]> {
    let (prefix, base) = if name.len() <= 100 {
        ("", name)
    } else {
        let cut = name[..name.len().min(156)].rfind('/')?;
        (&name[..cut], &name[cut + 1..])
    };
    if base.is_empty() && kind != b'5' || base.len() > 100 || prefix.len() > 155 {
        return None;
    }
    let mut h = [0u8; BLOCK];
    h[..base.len()].copy_from_slice(base.as_bytes());
    octal(&mut h[100..108], u64::from(mode));
    octal(&mut h[108..116], 0);
    octal(&mut h[116..124], 0);
    octal(&mut h[124..136], size);
    octal(&mut h[136..148], 0);
    h[156] = kind;
    h[257..263].copy_from_slice(b"ustar\0");
    h[263..265].copy_from_slice(b"00");
    h[345..345 + prefix.len()].copy_from_slice(prefix.as_bytes());
    h[148..156].fill(b' ');
    let sum: u64 = h.iter().map(|b| u64::from(*b)).sum();
    octal(&mut h[148..155], sum);
    h[155] = b' ';
    Some(h)
}

/// Writes `v` in octal, zero-padded, NUL-terminated, into `field`.
fn octal(field: &mut [u8], v: u64) {
    let digits = field.len() - 1;
    let s = format!("{v:0digits$o}");
    field[..digits].copy_from_slice(&s.as_bytes()[s.len() - digits..]);
    field[digits] = 0;
}

fn parse_octal(field: &[u8]) -> Option<u64> {
    let s = std::str::from_utf8(field).ok()?;
    let s = s.trim_matches(|c: char| c == '\0' || c == ' ');
    if s.is_empty() {
        return Some(0);
    }
    u64::from_str_radix(s, 8).ok()
}

fn field_str(field: &[u8]) -> Option<&str> {
    let end = field.iter().position(|b| *b == 0).unwrap_or(field.len());
    std::str::from_utf8(&field[..end]).ok()
}

/// Why an archive cannot be read.
fn bad(path: &Path, why: impl Into<String>) -> StoreError {
    StoreError::Io(PathError {
        path: path.to_path_buf(),
        source: io::Error::new(io::ErrorKind::InvalidData, why.into()),
    })
}

/// Reads the archive at `path` whole, checking every header, and writes its
/// files under `into` when given; returns its files with their SHA-256.
/// Refuses an archive with anything but plain relative folders and files.
pub fn read(path: &Path, into: Option<&Path>) -> StoreResult<Vec<Archived>> {
    let file = File::open(path).at(path)?;
    let mut gz = GzDecoder::new(BufReader::new(file));
    let mut files = Vec::new();
    let mut total = 0u64;
    let mut block = [0u8; BLOCK];
    loop {
        gz.read_exact(&mut block)
            .map_err(|e| bad(path, format!("cut short: {e}")))?;
        if block.iter().all(|b| *b == 0) {
            return Ok(files);
        }
        let stored = parse_octal(&block[148..156]).ok_or_else(|| bad(path, "a bad checksum"))?;
        let mut copy = block;
        copy[148..156].fill(b' ');
        if copy.iter().map(|b| u64::from(*b)).sum::<u64>() != stored {
            return Err(bad(path, "a header whose checksum does not match"));
        }
        let (Some(base), Some(prefix)) = (field_str(&block[..100]), field_str(&block[345..500]))
        else {
            return Err(bad(path, "a name that is not UTF-8"));
        };
        let name = if prefix.is_empty() {
            base.to_owned()
        } else {
            format!("{prefix}/{base}")
        };
        let plain = !name.starts_with('/')
            && name
                .trim_end_matches('/')
                .split('/')
                .all(|p| !p.is_empty() && p != "." && p != "..");
        if !plain {
            return Err(bad(path, format!("an entry named {name:?}")));
        }
        let size = parse_octal(&block[124..136]).ok_or_else(|| bad(path, "a bad size"))?;
        total = total.saturating_add(size);
        if files.len() >= MAX_ENTRIES || total > MAX_BYTES {
            return Err(bad(path, "more than a backup may hold"));
        }
        let target = into.map(|d| d.join(name.trim_end_matches('/')));
        match block[156] {
            b'5' => {
                if let Some(t) = &target {
                    fs::create_dir_all(t).at(t)?;
                }
            }
            b'0' | 0 => {
                let mut out = match &target {
                    Some(t) => {
                        if let Some(parent) = t.parent() {
                            fs::create_dir_all(parent).at(parent)?;
                        }
                        Some(File::options().write(true).create_new(true).open(t).at(t)?)
                    }
                    None => None,
                };
                let mut hash = Sha256::new();
                let mut left = size;
                let mut buf = vec![0u8; 64 * 1024];
                while left > 0 {
                    let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
                    gz.read_exact(&mut buf[..want])
                        .map_err(|e| bad(path, format!("cut short in {name}: {e}")))?;
                    hash.update(&buf[..want]);
                    if let (Some(o), Some(t)) = (out.as_mut(), &target) {
                        o.write_all(&buf[..want]).at(t)?;
                    }
                    left -= want as u64;
                }
                let rem = (size % BLOCK as u64) as usize;
                if rem != 0 {
                    gz.read_exact(&mut block[..BLOCK - rem])
                        .map_err(|e| bad(path, format!("cut short: {e}")))?;
                }
                files.push(Archived {
                    path: name,
                    size,
                    sha256: hex::encode(hash.finalize()),
                });
            }
            other => {
                return Err(bad(
                    path,
                    format!(
                        "an entry of type {:?} ({name}): only folders and files",
                        other as char
                    ),
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tree_reads_back_as_written_without_its_links() {
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("src");
        fs::create_dir_all(src.join("feeds/a").join("x".repeat(90))).unwrap();
        fs::write(src.join("channel.json"), b"{}").unwrap();
        let deep = src
            .join("feeds/a")
            .join("x".repeat(90))
            .join("y".repeat(60));
        fs::write(&deep, vec![7u8; 1500]).unwrap();
        fs::create_dir_all(src.join(".git")).unwrap();
        fs::write(src.join(".git/HEAD"), b"ref").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", src.join("feeds/link")).unwrap();
        let out = tmp.path().join("b.tar.gz");
        let mut w = ArchiveWriter::create(&out).unwrap();
        w.add_tree(&src, "channel", &[".git"]).unwrap();
        let (files, skipped) = w.finish().unwrap();
        assert_eq!(files.len(), 2, "{files:?}");
        assert!(skipped[0].contains("symbolic link"), "{skipped:?}");
        let back = tmp.path().join("back");
        assert_eq!(read(&out, Some(&back)).unwrap(), files);
        assert_eq!(
            fs::read(
                back.join("channel/feeds/a")
                    .join("x".repeat(90))
                    .join("y".repeat(60))
            )
            .unwrap(),
            vec![7u8; 1500]
        );
        assert!(!back.join("channel/.git").exists());
        assert!(!back.join("channel/feeds/link").exists());
        // A byte changed in the archive is caught.
        let mut bytes = Vec::new();
        GzDecoder::new(File::open(&out).unwrap())
            .read_to_end(&mut bytes)
            .unwrap();
        bytes[10] ^= 1;
        let mut gz = GzEncoder::new(Vec::new(), Compression::default());
        gz.write_all(&bytes).unwrap();
        fs::write(&out, gz.finish().unwrap()).unwrap();
        assert!(read(&out, None).is_err());
    }
}
