//! An open channel on this device: the folder, the home, the index, and the
//! serialized write path.
//!
//! Owns the order of a write: feed lock → index write transaction → catch-up
//! ingest → the caller's validation → seq and clock → sign → journal and feed
//! append with fsync → ingest → commit. A refusal from the caller's validation
//! rolls back and writes nothing. It does not know what the ops mean.

use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use ed25519_dalek::SigningKey;
use rusqlite::OptionalExtension as _;

use super::channel_dir::ChannelDir;
use super::error::{SqlContext as _, StoreError, StoreResult};
use super::feed::FeedWriter;
use super::home::{Device, Home};
use super::index::Index;
use super::ingest::{Ingest, IngestReport, ScanCache};
use crate::core::hlc::Hlc;
use crate::core::ids::{FeedId, OWNER_FEED_ROLE, Role};
use crate::core::op::{Admit, FeedInit, Op};
use crate::core::record::{self, Header, Record};

/// The signing identity of one feed on this device.
#[derive(Clone, Debug)]
pub struct Writer {
    feed: FeedWriter,
    key: SigningKey,
}

impl Writer {
    /// The feed this writer appends to.
    pub fn feed(&self) -> &FeedId {
        self.feed.feed()
    }
}

/// An open channel.
pub struct Channel {
    dir: ChannelDir,
    home: Home,
    device: Device,
    state_dir: PathBuf,
    index: Index,
    cache: ScanCache,
}

impl Channel {
    /// Opens `dir` with this device's `home` (creating the index if needed).
    pub fn open(dir: ChannelDir, home: Home) -> StoreResult<Self> {
        let device = home.device()?;
        let state_dir = home.state_dir(dir.id());
        let index = Index::open(&Index::path_in(&state_dir), dir.id())?;
        Ok(Self { dir, home, device, state_dir, index, cache: ScanCache::default() })
    }

    /// The channel folder.
    pub fn dir(&self) -> &ChannelDir {
        &self.dir
    }

    /// The index, for queries.
    pub fn index(&self) -> &Index {
        &self.index
    }

    /// This device.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// This device's home.
    pub fn home(&self) -> &Home {
        &self.home
    }

    /// The roles of the channel, sorted.
    pub fn roster(&self) -> Vec<Role> {
        let mut r = self.dir.genesis().roles.clone();
        r.sort();
        r
    }

    /// Folds whatever changed in the folder since the last pass into the index.
    /// Cheap when nothing changed: it takes the write lock only if there is
    /// something to write.
    pub fn catch_up(&mut self) -> StoreResult<IngestReport> {
        // A failed pass rolls the index back; the cache must forget it too.
        let saved = self.cache.clone();
        let first = self.pass(false);
        match first {
            Err(StoreError::Sqlite { source, .. }) if is_busy(&source) => {
                // Another process wrote between our read and our write: redo the
                // pass under the write lock from the start.
                self.cache = saved;
                self.pass(true)
            }
            Err(e) => {
                self.cache = saved;
                Err(e)
            }
            ok => ok,
        }
    }

    fn pass(&mut self, immediate: bool) -> StoreResult<IngestReport> {
        let Self { index, dir, cache, .. } = self;
        let begin = if immediate { "BEGIN IMMEDIATE" } else { "BEGIN" };
        index.conn().execute_batch(begin).db(index.path())?;
        match Ingest::run(index, dir, cache) {
            Ok(r) => {
                index.conn().execute_batch("COMMIT").db(index.path())?;
                Ok(r)
            }
            Err(e) => {
                let _ = index.conn().execute_batch("ROLLBACK");
                Err(e)
            }
        }
    }

    /// Throws the index's derived content away and folds every feed again, in
    /// one transaction: readers see the old state until the new one is whole.
    /// `progress` is told the bytes read after each file.
    pub fn reindex(&mut self, progress: Option<&mut dyn FnMut(u64)>) -> StoreResult<IngestReport> {
        self.cache.clear();
        let Self { index, dir, cache, .. } = self;
        let result = index.write(|ix| {
            ix.clear_derived()?;
            Ingest::run_with_progress(ix, dir, cache, progress)
        });
        if result.is_err() {
            self.cache.clear();
        }
        result
    }

    /// The writer for `role` on this device, set up on first use: on the
    /// owner's machine the role key is created, admitted by the owner and
    /// announced with `feed_init`. Elsewhere a device without the role's key
    /// is refused with the way to get one.
    pub fn writer(&mut self, role: &Role) -> StoreResult<Writer> {
        let ch = self.dir.id().to_owned();
        let feed = FeedId::new(role.as_str(), &self.device.id).expect("role and device are slugs");
        let owner = self.home.load_key(&ch, "owner")?;
        let key = match self.home.load_key(&ch, role.as_str())? {
            Some(k) => k,
            None if owner.is_some() => self.home.create_key(&ch, role.as_str())?,
            None => {
                return Err(StoreError::NotAdmitted(format!(
                    "this device holds no key for role '{role}' in channel '{}' and is not the \
                     owner's machine — run `countersign invite --role {role}` on the owner's \
                     machine and `countersign join` here",
                    self.dir.genesis().name
                )));
            }
        };
        let pubkey = record::pubkey_hex(&key.verifying_key());
        let writer = Writer { feed: self.feed_writer(feed.clone()), key };
        self.catch_up()?;
        if !self.is_admitted(&feed)? {
            let Some(owner) = owner else {
                return Err(StoreError::NotAdmitted(format!(
                    "feed {feed} is not admitted yet — run `countersign admit {role} {pubkey}` on \
                     the channel owner's machine, then sync"
                )));
            };
            let owner_feed = FeedId::new(OWNER_FEED_ROLE, &self.device.id).expect("device is a slug");
            let owner_writer = Writer { feed: self.feed_writer(owner_feed), key: owner };
            let admit = Admit { feed: feed.clone(), pubkey: pubkey.clone(), role: role.clone() };
            self.append_if(&owner_writer, |ix| {
                let op = (!admitted_in(ix, &feed)?).then(|| Op::Admit(admit));
                Ok::<_, StoreError>((op, ()))
            })?;
        }
        let init = FeedInit { role: role.clone(), pubkey, device_name: self.device.name.clone() };
        self.append_if(&writer, |ix| {
            let op = (!has_records(ix, &feed)?).then(|| Op::FeedInit(init));
            Ok::<_, StoreError>((op, ()))
        })?;
        Ok(writer)
    }

    fn feed_writer(&self, feed: FeedId) -> FeedWriter {
        FeedWriter::new(&self.dir.feeds(), &self.state_dir, feed)
    }

    fn is_admitted(&self, feed: &FeedId) -> StoreResult<bool> {
        admitted_in(&self.index, feed)
    }

    /// Appends the op that `build` returns, serialized with every other write
    /// on this device. `build` sees the index after a catch-up and validates
    /// against it; an `Err` rolls everything back and nothing is written.
    pub fn append<T, E: From<StoreError>>(
        &mut self,
        writer: &Writer,
        build: impl FnOnce(&Index) -> Result<(Op, T), E>,
    ) -> Result<(Record, T), E> {
        let (rec, out) = self.append_if(writer, |ix| build(ix).map(|(op, t)| (Some(op), t)))?;
        Ok((rec.expect("an op was built"), out))
    }

    /// Like [`Self::append`], but `build` may decide to write nothing.
    pub fn append_if<T, E: From<StoreError>>(
        &mut self,
        writer: &Writer,
        build: impl FnOnce(&Index) -> Result<(Option<Op>, T), E>,
    ) -> Result<(Option<Record>, T), E> {
        let _lock = writer.feed.lock()?;
        let saved = self.cache.clone();
        let Self { index, dir, cache, .. } = self;
        let result = index.write(|ix| {
            Ingest::run(ix, dir, cache)?;
            let (op, out) = build(ix)?;
            let Some(op) = op else { return Ok((None, out)) };
            let last = writer.feed.reconcile()?;
            let seen = max_hlc(ix)?;
            let prev_hlc = last.as_ref().map_or(Hlc::default(), |r| r.header.hlc);
            let header = Header {
                ch: dir.id().to_owned(),
                feed: writer.feed.feed().clone(),
                seq: last.as_ref().map_or(1, |r| r.header.seq + 1),
                prev: last.as_ref().map(|r| r.id),
                hlc: Hlc::next(now_ms(), seen.max(prev_hlc)),
            };
            let rec = record::encode(&header, &op, &writer.key);
            writer.feed.append(&rec, &writer.key)?;
            Ingest::run(ix, dir, cache)?;
            Ok((Some(rec), out))
        });
        if result.is_err() {
            self.cache = saved;
        }
        result
    }
}

fn admitted_in(ix: &Index, feed: &FeedId) -> StoreResult<bool> {
    let key: Option<Option<String>> = ix
        .conn()
        .prepare_cached("SELECT pubkey FROM feeds WHERE feed = ?1")
        .and_then(|mut s| s.query_row([feed.to_string()], |r| r.get(0)).optional())
        .db(ix.path())?;
    Ok(matches!(key, Some(Some(_))))
}

fn has_records(ix: &Index, feed: &FeedId) -> StoreResult<bool> {
    Ok(ix
        .conn()
        .prepare_cached("SELECT 1 FROM records WHERE feed = ?1 LIMIT 1")
        .and_then(|mut s| s.query_row([feed.to_string()], |_| Ok(())).optional())
        .db(ix.path())?
        .is_some())
}

fn max_hlc(ix: &Index) -> StoreResult<Hlc> {
    let row: Option<(i64, i64)> = ix
        .conn()
        .prepare_cached("SELECT ms, c FROM records ORDER BY ms DESC, c DESC LIMIT 1")
        .and_then(|mut s| s.query_row([], |r| Ok((r.get(0)?, r.get(1)?))).optional())
        .db(ix.path())?;
    Ok(row.map_or(Hlc::default(), |(ms, c)| Hlc(ms, c as u32)))
}

/// Wall-clock milliseconds (the store may read the clock; core may not).
pub fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy) | Some(rusqlite::ErrorCode::DatabaseLocked)
    )
}
