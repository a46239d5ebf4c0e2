//! Bulk loading: the records of one feed chained and signed in memory and
//! written with one fsync per batch (the journal's). `countersign-bench` seeds its
//! channel of 100,000 messages with it, and tests use it for long or
//! past-dated histories. Not a write path for tools: nothing in the
//! `countersign` binary calls it (so it is not linked into it).
//!
//! A child of `channel`, because it chains and signs exactly as
//! [`Channel::append`] does, with the same private writer and admission
//! steps.

use super::{Channel, Writer, has_records};
use crate::core::hlc::Hlc;
use crate::core::ids::{FeedId, OWNER_FEED_ROLE, RecordId, Role};
use crate::core::op::{Admit, FeedInit, Op};
use crate::core::record::{self, Header, Record};
use crate::store::error::{StoreError, StoreResult};
use crate::store::home::KeyName;
use crate::store::home::lock::FileLock;

/// A run of new records for one feed of this device, chained and signed as
/// [`Channel::append`] chains and signs them, and written in batches with
/// [`FeedWriter::append_batch`](crate::store::writer::feed::FeedWriter::append_batch).
/// Made by [`Channel::bulk`].
///
/// Contract:
/// - it holds the feed's lock until dropped, so nothing else on this device
///   appends to the feed meanwhile (drop it before [`Channel::append`] on
///   the same role);
/// - [`Self::push`] validates nothing against the index: the caller answers
///   for the ops being ones `app` would accept (ingest still checks the
///   chain, the signature and the feed's admission, and the fold still marks
///   illegal transitions conflicted);
/// - the clock follows the same rule as `append`, `Hlc::next(now, max(seen,
///   previous))`, but `now` and `seen` come from the caller, since nothing is
///   ingested between pushes: pass the time the record is meant to carry (not
///   more than 5 minutes ahead, or readers hold it) and the highest clock its
///   author had seen;
/// - nothing is durable before [`Self::flush`] returns, and nothing is
///   ingested: call [`Channel::catch_up`] or [`Channel::reindex`] afterwards.
///   Dropping it with records pending discards them.
pub struct BulkFeed {
    writer: Writer,
    ch: String,
    last: Option<(u64, RecordId, Hlc)>,
    pending: Vec<Record>,
    _lock: FileLock,
}

impl Channel {
    /// Starts a bulk run on `role`'s feed of this device. A feed that does
    /// not exist yet is begun as `app::announcement::announce` begins one —
    /// the role key is created, the owner's `admit` is written unless the
    /// index already holds one, and `feed_init` is the run's first record —
    /// except that these records carry `start_ms`, so a seeded history can
    /// lie in the past. A new feed needs the owner key on this device
    /// ([`StoreError::NotAdmitted`] without it).
    pub fn bulk(&mut self, role: &Role, start_ms: i64) -> StoreResult<BulkFeed> {
        let ch = self.dir.id().to_owned();
        let owner = self.home.load_key(&ch, KeyName::Owner)?;
        let feed = self.own_feed(role);
        let key = match self.home.load_key(&ch, KeyName::Role(role))? {
            Some(k) => k,
            None if owner.is_some() => self.home.create_key(&ch, KeyName::Role(role))?,
            None => return Err(StoreError::NotAdmitted { feed }),
        };
        let pubkey = record::pubkey_hex(&key.verifying_key());
        self.catch_up()?;
        let mut run = self.bulk_on(Writer {
            feed: self.feed_writer(feed.clone()),
            key,
        })?;
        if run.last.is_some() || has_records(&self.index, &feed)? {
            return Ok(run);
        }
        if !self.is_admitted(&feed)? {
            let Some(owner) = owner else {
                return Err(StoreError::NotAdmitted { feed });
            };
            let owner_feed =
                FeedId::new(OWNER_FEED_ROLE, &self.device.id).expect("device is a slug");
            let mut admits = self.bulk_on(Writer {
                feed: self.feed_writer(owner_feed),
                key: owner,
            })?;
            let admit = Admit {
                feed,
                pubkey: pubkey.clone(),
                role: role.clone(),
            };
            admits.push(&Op::Admit(admit), start_ms, Hlc::default());
            admits.flush()?;
        }
        let init = FeedInit {
            role: role.clone(),
            pubkey,
            device_name: self.device.name.clone(),
        };
        run.push(&Op::FeedInit(init), start_ms, Hlc::default());
        Ok(run)
    }

    fn bulk_on(&self, writer: Writer) -> StoreResult<BulkFeed> {
        let lock = self.lock_feed(&writer.feed)?;
        let last = writer.feed.reconcile(&writer.key.verifying_key())?;
        Ok(BulkFeed {
            writer,
            ch: self.dir.id().to_owned(),
            last: last.map(|r| (r.header.seq, r.id, r.header.hlc)),
            pending: Vec::new(),
            _lock: lock,
        })
    }
}

impl BulkFeed {
    /// The feed written.
    pub fn feed(&self) -> &FeedId {
        self.writer.feed()
    }

    /// Chains and signs `op` as the next record of the feed and keeps it for
    /// [`Self::flush`]. Returns the record (its id, clock and line).
    pub fn push(&mut self, op: &Op, now_ms: i64, seen: Hlc) -> &Record {
        let prev_hlc = self.last.map_or(Hlc::default(), |(_, _, h)| h);
        let header = Header {
            ch: self.ch.clone(),
            feed: self.writer.feed.feed().clone(),
            seq: self.last.map_or(1, |(seq, _, _)| seq + 1),
            prev: self.last.map(|(_, id, _)| id),
            hlc: Hlc::next(now_ms, seen.max(prev_hlc)),
        };
        let rec = record::encode(&header, op, &self.writer.key);
        self.last = Some((rec.header.seq, rec.id, rec.header.hlc));
        self.pending.push(rec);
        self.pending.last().expect("just pushed")
    }

    /// Records pushed and not flushed yet.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Writes the pending records (journal, segments, head; one fsync, the
    /// journal's) and returns how many were written.
    pub fn flush(&mut self) -> StoreResult<usize> {
        self.writer
            .feed
            .append_batch(&self.pending, &self.writer.key)?;
        let n = self.pending.len();
        self.pending.clear();
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{fresh, send};
    use super::*;
    use crate::store::channel::now_ms;

    #[test]
    fn a_bulk_run_ingests_cleanly_and_normal_appends_continue_its_chain() {
        let tmp = tempfile::tempdir().unwrap();
        let mut ch = fresh(&tmp);
        let role = Role::new("alpha").unwrap();
        // A history that starts a day ago: admit and feed_init carry that time.
        let start = now_ms() - 86_400_000;
        let mut bulk = ch.bulk(&role, start).unwrap();
        assert_eq!(bulk.pending(), 1, "feed_init opens the run");
        let mut seen = Hlc::default();
        for i in 0..1200 {
            seen = bulk
                .push(&send(i), start + 1000 * i as i64, seen)
                .header
                .hlc;
            if i == 700 {
                assert_eq!(bulk.flush().unwrap(), 702);
            }
        }
        assert_eq!(bulk.flush().unwrap(), 499);
        drop(bulk);
        // A fresh open, as another process would read it.
        let mut ch = Channel::open(ch.dir().clone(), ch.home().clone()).unwrap();
        let report = ch.catch_up().unwrap();
        assert_eq!(
            report.accepted,
            2 + 1200,
            "admit, feed_init and the sends: {report:?}"
        );
        assert!(ch.index().problems().unwrap().is_empty());
        assert_eq!(
            seen,
            Hlc(start + 1000 * 1199, 0),
            "the caller's times stand"
        );
        // The normal writer finds the feed begun and continues its chain.
        let alpha = ch.writer(&role).unwrap().expect("the run made the key");
        let (rec, ()) = ch
            .append(&alpha, |_| Ok::<_, StoreError>((send(9999), ())))
            .unwrap();
        assert_eq!(
            rec.header.seq, 1202,
            "feed_init, 1200 bulk records, then this one"
        );
        assert!(rec.header.hlc > seen);
        let digest = ch.index().digest().unwrap();
        let rebuilt = ch.reindex(None).unwrap();
        assert_eq!(rebuilt.accepted, 1 + 1202);
        assert_eq!(ch.index().digest().unwrap(), digest);
    }
}
