//! The batch append, [`FeedWriter::append_batch`]: a run of records with one
//! write per file and one fsync (the journal's) instead of one per record. It seeds
//! large channels (benchmarks, imports) and writes the records of one tool
//! call that must land together (a large upload's chunks): it writes exactly
//! the bytes that record-by-record appends would (same journal lines, same
//! segment splits, same `head.json`), and the whole run becomes durable at
//! once, with the journal's fsync, so a write through it is acknowledged
//! only once it returns.

use std::fs;
use std::path::PathBuf;

use ed25519_dalek::SigningKey;

use crate::core::record::Record;
use crate::store::error::StoreResult;
use crate::store::folder::segments::{SEGMENT_BYTES, SEGMENT_RECORDS, segment_name};
use crate::store::folder_file::{FileKind, FolderError, Refusal};
use crate::store::writer::feed::{FeedWriter, NewestSegment, append_to};
use crate::store::writer::journal;

impl FeedWriter {
    /// Appends a run of new records as if [`Self::append`] had been called
    /// on each in turn, but with one write per file touched and one fsync,
    /// the journal's.
    ///
    /// Contract:
    /// - call under [`Self::lock`] after [`Self::reconcile`], like `append`;
    ///   `records[0]` continues the feed that `reconcile` returned and each
    ///   record continues the one before it (consecutive `seq`, `prev` = the
    ///   previous id). The records come from the same chain and signing code
    ///   (`record::encode`); this function only places bytes;
    /// - the bytes on disk are exactly those of record-by-record appends: the
    ///   same lines in the journal, the same segment boundaries (a segment
    ///   seals at [`SEGMENT_RECORDS`] records or [`SEGMENT_BYTES`], measured
    ///   before each record), and `head.json` naming the last record;
    /// - durability comes from the journal alone: it is written and fsynced
    ///   first, then each segment the run touches is written, without fsync
    ///   (nor of the folder for a new segment), as `append` does. A crash
    ///   part-way, or before the page cache reached the disk, leaves a torn,
    ///   short or zero-filled feed that [`Self::reconcile`] repairs from the
    ///   journal, as after a crash in `append`;
    /// - every segment path is checked before anything is written; when a
    ///   segment write fails anyway, the journal is cut back to the records
    ///   already published, so what the caller was told failed is never
    ///   published later;
    /// - readers may see the run arrive in pieces, as with repeated appends;
    ///   nothing is ingested here.
    ///
    /// # Panics
    ///
    /// If the records do not form one consecutive chain.
    pub fn append_batch(&self, records: &[Record], key: &SigningKey) -> StoreResult<()> {
        let Some(last) = records.last() else {
            return Ok(());
        };
        for pair in records.windows(2) {
            assert!(
                pair[1].header.seq == pair[0].header.seq + 1
                    && pair[1].header.prev == Some(pair[0].id),
                "append_batch: record seq {} does not continue seq {}",
                pair[1].header.seq,
                pair[0].header.seq
            );
        }
        let lines: Vec<String> = records.iter().map(Record::to_line).collect();

        // 1. Where each record goes, split exactly where `publish` would
        //    split, with every path checked before anything is written.
        self.make_dir()?;
        let mut current: Option<NewestSegment> = match self.newest_segment()? {
            Some((_, true)) | None => None,
            Some((seg, false)) => Some(seg),
        };
        // Consecutive runs of lines, one per segment file, in order, with
        // how many records each holds.
        let mut runs: Vec<(PathBuf, Vec<u8>, usize)> = Vec::new();
        for (rec, line) in records.iter().zip(&lines) {
            let seq = rec.header.seq;
            let full = current.as_ref().is_none_or(|(_, first, size)| {
                seq.saturating_sub(*first) >= SEGMENT_RECORDS || *size >= SEGMENT_BYTES
            });
            if full {
                let path = self.dir.join(segment_name(seq));
                let size = match fs::symlink_metadata(&path) {
                    Ok(m) if m.is_file() => m.len(),
                    Ok(m) => {
                        return Err(FolderError::Refused {
                            path,
                            refusal: Refusal::WrongType {
                                found: FileKind::of(m.file_type()),
                                expected: FileKind::Regular,
                            },
                        }
                        .into());
                    }
                    Err(_) => 0,
                };
                current = Some((path, seq, size));
            }
            let (path, _, size) = current.as_mut().expect("a segment was chosen");
            match runs.last_mut() {
                Some((p, buf, n)) if p == path => {
                    buf.extend_from_slice(line.as_bytes());
                    *n += 1;
                }
                _ => runs.push((path.clone(), line.as_bytes().to_vec(), 1)),
            }
            *size += line.len() as u64;
        }

        // 2. The journal, whole, fsynced before anything is published.
        let before = journal::append(&self.journal, lines.concat().as_bytes())?;

        // 3. The segments, not fsynced: the journal holds the run durably.
        let mut published = 0;
        for (path, bytes, n) in &runs {
            if let Err(e) = append_to(path, bytes) {
                let kept: u64 = lines[..published].iter().map(|l| l.len() as u64).sum();
                let rest: Vec<&Record> = records[published..].iter().collect();
                return Err(journal::cut_back(&self.journal, before + kept, &rest, e));
            }
            published += n;
        }

        // 4. The head hint, once, for the last record.
        self.write_head(&self.head_text(last, None, key));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use std::path::Path;

    use super::*;
    use crate::core::genesis::{FORMAT, Genesis};
    use crate::core::hlc::Hlc;
    use crate::core::ids::FeedId;
    use crate::core::ids::{OWNER_FEED_ROLE, Role};
    use crate::core::op::{Admit, FeedInit, Op, Send, Target};
    use crate::core::record::{Header, encode, pubkey_hex};
    use crate::store::folder::layout::ChannelDir;
    use crate::store::folder::survey::list_segments;
    use crate::store::index::Index;
    use crate::store::ingest::{Ingest, ScanCache};

    /// Chains `ops` onto a new feed the way `Channel::append` does: seq from
    /// 1, prev = the previous id, a strictly increasing clock.
    fn chain(ch: &str, feed: &FeedId, key: &SigningKey, ops: &[Op]) -> Vec<Record> {
        let mut out: Vec<Record> = Vec::new();
        for (i, op) in ops.iter().enumerate() {
            let last = out.last();
            let header = Header {
                ch: ch.to_owned(),
                feed: feed.clone(),
                seq: i as u64 + 1,
                prev: last.map(|r| r.id),
                hlc: Hlc::next(
                    1_700_000_000_000 + i as i64 / 3,
                    last.map_or(Hlc::default(), |r| r.header.hlc),
                ),
            };
            out.push(encode(&header, op, key));
        }
        out
    }

    /// Every file under `root`, relative path → bytes.
    fn tree(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
        fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
            for e in fs::read_dir(dir).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    walk(root, &p, out);
                } else {
                    out.insert(
                        p.strip_prefix(root).unwrap().to_path_buf(),
                        fs::read(&p).unwrap(),
                    );
                }
            }
        }
        let mut out = BTreeMap::new();
        walk(root, root, &mut out);
        out
    }

    #[test]
    fn a_bulk_written_feed_is_byte_identical_and_ingests_identically() {
        let owner = SigningKey::from_bytes(&[1u8; 32]);
        let alpha_key = SigningKey::from_bytes(&[2u8; 32]);
        let genesis = Genesis {
            format: FORMAT.to_owned(),
            name: "bulk".into(),
            created_at: "2023-11-14T22:13:20Z".into(),
            roles: vec![Role::new("alpha").unwrap(), Role::new("beta").unwrap()],
            owner_pubkey: pubkey_hex(&owner.verifying_key()),
            nonce: "00".repeat(16),
        };
        let tmp = tempfile::tempdir().unwrap();
        let (one, bulk) = (tmp.path().join("one"), tmp.path().join("bulk"));
        let dir_one = ChannelDir::create(&one.join("channel"), &genesis).unwrap();
        let dir_bulk = ChannelDir::create(&bulk.join("channel"), &genesis).unwrap();
        assert_eq!(dir_one.id(), dir_bulk.id());
        let ch = dir_one.id().to_owned();

        let owner_feed = FeedId::new(OWNER_FEED_ROLE, "dev-000001").unwrap();
        let alpha = FeedId::new("alpha", "dev-000001").unwrap();
        let admit = Op::Admit(Admit {
            feed: alpha.clone(),
            pubkey: pubkey_hex(&alpha_key.verifying_key()),
            role: Role::new("alpha").unwrap(),
        });
        let owner_recs = chain(&ch, &owner_feed, &owner, &[admit]);
        let mut ops = vec![Op::FeedInit(FeedInit {
            role: Role::new("alpha").unwrap(),
            pubkey: pubkey_hex(&alpha_key.verifying_key()),
            device_name: "dev".into(),
        })];
        // Small bodies first (a segment seals at 500 records), then large ones
        // (it seals at 256 KiB): both rules must split where `append` splits.
        for i in 0..720 {
            let len = if i < 520 { 40 + i % 60 } else { 1500 + i % 500 };
            ops.push(Op::Send(Send {
                to: vec![Role::new("beta").unwrap()],
                topic: format!("topic {}", i % 17),
                body: format!("message {i} ").repeat(len / 12 + 1),
                decision_requested: true,
                ..Send::default()
            }));
        }
        let first_send = chain(&ch, &alpha, &alpha_key, &ops)[1].id;
        ops.push(Op::Delete(Target { id: first_send }));
        let alpha_recs = chain(&ch, &alpha, &alpha_key, &ops);

        // Record by record, through `append`.
        for (feed, key, recs) in [
            (&owner_feed, &owner, &owner_recs),
            (&alpha, &alpha_key, &alpha_recs),
        ] {
            let w = FeedWriter::new(&dir_one.feeds(), &one.join("state"), feed.clone());
            let _lock = w.lock().unwrap();
            assert!(w.reconcile(&key.verifying_key()).unwrap().is_none());
            for r in recs {
                w.append(r, key, None).unwrap();
            }
        }
        // In bulk, split into uneven batches so runs start inside segments.
        for (feed, key, recs) in [
            (&owner_feed, &owner, &owner_recs),
            (&alpha, &alpha_key, &alpha_recs),
        ] {
            let w = FeedWriter::new(&dir_bulk.feeds(), &bulk.join("state"), feed.clone());
            let _lock = w.lock().unwrap();
            for part in recs.chunks(333) {
                let last = w.reconcile(&key.verifying_key()).unwrap();
                assert_eq!(
                    last.map(|r| r.header.seq + 1).unwrap_or(1),
                    part[0].header.seq
                );
                w.append_batch(part, key).unwrap();
            }
        }

        let files_one = tree(&one);
        let files_bulk = tree(&bulk);
        assert_eq!(
            files_one.keys().collect::<Vec<_>>(),
            files_bulk.keys().collect::<Vec<_>>()
        );
        for (path, bytes) in &files_one {
            assert!(bytes == &files_bulk[path], "{} differs", path.display());
        }
        let alpha_dir = dir_one.feeds().join("alpha").join("dev-000001");
        let segments = list_segments(&alpha_dir).unwrap();
        assert!(
            segments.len() >= 3,
            "both sealing rules are exercised ({} segments)",
            segments.len()
        );
        assert_eq!(segments[1].first_seq, SEGMENT_RECORDS + 1);

        let ingest = |dir: &ChannelDir| {
            let ix = Index::in_memory(dir.id()).unwrap();
            let report = ix
                .write(|ix| Ingest::run(ix, dir, &mut ScanCache::default()))
                .unwrap();
            (report, ix.digest().unwrap(), ix.problems().unwrap())
        };
        let (report_one, digest_one, problems_one) = ingest(&dir_one);
        let (report_bulk, digest_bulk, problems_bulk) = ingest(&dir_bulk);
        assert_eq!(report_one.accepted, 1 + alpha_recs.len());
        assert!(problems_one.is_empty(), "{problems_one:?}");
        assert_eq!(report_one, report_bulk);
        assert_eq!(digest_one, digest_bulk);
        assert_eq!(problems_one, problems_bulk);
    }
}
