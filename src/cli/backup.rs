//! `countersign backup FILE.tar.gz`: the channel folder in one archive,
//! verified before and after.
//!
//! Before: every feed is verified (as `countersign verify`, into a throwaway
//! index). The archive is written beside FILE under a temporary name, then
//! read back whole: every file compared with what was written (size and
//! SHA-256), and the channel it holds verified again into a throwaway folder
//! and index. Only then is it put in place as FILE, which must not exist: a
//! failure leaves nothing behind. git's own folder (`.git`) is left out, and
//! nothing is followed out of the channel folder (`store::archive`). The
//! keys are never in it unless `--with-keys`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, bail};

use super::Cli;
use crate::cli::output::outln;
use crate::core::peer_text::one_line;
use crate::store::archive::{self, ArchiveWriter};
use crate::store::{ChannelDir, Index};
use crate::store::{Ingest, ScanCache};

/// Arguments of `backup`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "The archive holds the channel folder (`channel/`: every feed, upload and \
    file of the channel, not git's history), readable by your user only. It is verified before and \
    after: restore it by unpacking `channel/` where the channel folder should be.
With --with-keys it also holds this device's keys for the channel and its id (`home/`): whoever \
    has the file can then sign as this device in every role it holds here. Keep such a file as \
    you keep your keys."
)]
pub struct Args {
    /// The archive to write (e.g. channel-backup.tar.gz); it must not exist yet.
    pub file: PathBuf,
    /// Also put this device's keys for the channel and its id in the archive: whoever has the
    /// file can act as this device.
    #[arg(long)]
    pub with_keys: bool,
}

/// What a verification found: records accepted, problems, waiting feeds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Verified {
    records: usize,
    problems: usize,
}

fn verify(dir: &ChannelDir) -> anyhow::Result<Verified> {
    let index = Index::in_memory(dir.id())?;
    let report = index.write(|tx| Ingest::run(tx, dir, &mut ScanCache::default()))?;
    Ok(Verified {
        records: report.accepted,
        problems: index.problems()?.len() + report.waiting.len(),
    })
}

/// Writes, checks and puts the archive in place.
pub fn run(cli: &Cli, a: &Args) -> anyhow::Result<ExitCode> {
    let dir = cli.channel_dir()?;
    let file = if a.file.is_relative() {
        std::env::current_dir()?.join(&a.file)
    } else {
        a.file.clone()
    };
    if std::fs::symlink_metadata(&file).is_ok() {
        bail!(
            "{} exists already: name a new file (a backup never writes over one)",
            file.display()
        );
    }
    let before = verify(&dir).context("verifying the channel before the backup")?;
    let parent = file.parent().unwrap_or(Path::new("."));
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let partial = parent.join(format!(".{name}.{}.partial", std::process::id()));
    let written = write_and_check(cli, &dir, &partial, a.with_keys, before);
    let (files, skipped, after) = match written {
        Ok(w) => w,
        Err(e) => {
            let _ = std::fs::remove_file(&partial);
            return Err(e);
        }
    };
    // A hard link never replaces a file that appeared meanwhile.
    let placed = std::fs::hard_link(&partial, &file)
        .with_context(|| format!("putting the backup in place as {}", file.display()));
    let _ = std::fs::remove_file(&partial);
    placed?;
    let bytes: u64 = files.iter().map(|f| f.size).sum();
    for s in &skipped {
        outln!("left out: {}", one_line(s));
    }
    outln!(
        "wrote {}: {} files, {bytes} bytes of the channel {}; verified before ({} records, {} \
         problems) and after, read back from the archive ({} records, {} problems)",
        file.display(),
        files.len(),
        one_line(&dir.genesis().name),
        before.records,
        before.problems,
        after.records,
        after.problems
    );
    if a.with_keys {
        outln!(
            "it holds this device's keys for the channel: whoever has the file can act as this \
             device. Keep it as you keep the keys"
        );
    } else {
        outln!("no keys are in it (--with-keys adds this device's)");
    }
    Ok(ExitCode::SUCCESS)
}

type Written = (Vec<archive::Archived>, Vec<String>, Verified);

fn write_and_check(
    cli: &Cli,
    dir: &ChannelDir,
    partial: &Path,
    with_keys: bool,
    before: Verified,
) -> anyhow::Result<Written> {
    let mut w = ArchiveWriter::create(partial)?;
    w.add_tree(dir.root(), "channel", &[".git"])?;
    if with_keys {
        let home = cli.home()?;
        let keys = home.keys_dir(dir.id());
        if !keys.is_dir() {
            bail!(
                "--with-keys: this device holds no keys for the channel ({} is missing); back up \
                 without --with-keys",
                keys.display()
            );
        }
        w.add_tree(&keys, &format!("home/keys/{}", dir.id()), &[])?;
        let device = home.device_file();
        let size = std::fs::metadata(&device)
            .with_context(|| format!("--with-keys: {}", device.display()))?
            .len();
        w.add_file(&device, "home/device.json", size)?;
    }
    let (files, skipped) = w.finish()?;
    let unpacked = tempfile::tempdir()?;
    let back = archive::read(partial, Some(unpacked.path())).context("reading the archive back")?;
    if back != files {
        bail!(
            "the archive read back differs from what was written ({} files of {}): the disk may be \
             failing; nothing was kept",
            back.len(),
            files.len()
        );
    }
    let copy = ChannelDir::open(&unpacked.path().join("channel"))
        .context("opening the channel the archive holds")?;
    let after = verify(&copy).context("verifying the channel the archive holds")?;
    // Writes that landed meanwhile only add records; a problem the folder
    // did not have is the archive's.
    if after.records < before.records || after.problems > before.problems {
        bail!(
            "the channel in the archive does not verify as the folder did (before: {} records, {} \
             problems; in the archive: {} records, {} problems); nothing was kept: run `countersign \
             verify`, then the backup again",
            before.records,
            before.problems,
            after.records,
            after.problems
        );
    }
    Ok((files, skipped, after))
}
