//! Applying an accepted record: its row and its effects (an admit gives a
//! feed its key, a key replacement changes one, uploads, claims, summaries,
//! notes) written through [`IndexTx`](crate::store::index::IndexTx), and the
//! messages it touched folded again at the end of the pass. It decides
//! nothing: the judge ([`super::judge`]) accepted the record.

use crate::core::chain::Head;
use crate::core::ids::{FeedId, Role};
use crate::core::memory;
use crate::core::op::{Backfill, Op, UndoBackfill};
use crate::core::record::{self, Record, parse_pubkey};
use crate::store::error::StoreResult;
use crate::store::fold::consent;
use crate::store::fold::message::refold_with;
use crate::store::fold::records::Fresh;
use crate::store::fold::upload;
use crate::store::index::ProblemKind;

use super::Ingest;

impl Ingest<'_, '_> {
    pub(super) fn accept(
        &mut self,
        feed: &FeedId,
        rec: &Record,
        op: &Op,
        rel: &str,
        offset: u64,
    ) -> StoreResult<()> {
        if !self.held.is_empty() && self.held.remove(&rec.id.hex()) {
            // Held on an earlier pass; the clock has caught up.
            self.index.clear_problems_of_record(
                &[ProblemKind::Held, ProblemKind::Clock],
                &rec.id.hex(),
            )?;
        }
        let role = self.feed_state(feed).role.clone();
        let n = self
            .index
            .insert_record(feed, rec, &role, &base64_sig(rec))?;
        self.report.accepted += 1;
        let st = self.feed_state(feed);
        st.head = Some(Head {
            seq: rec.header.seq,
            id: rec.id,
            hlc: rec.header.hlc,
        });
        st.dirty = true;
        match op {
            Op::Admit(a) => {
                self.claims_changed = true;
                let key = parse_pubkey(&a.pubkey);
                let target = self.feed_state(&a.feed);
                if let Some(first) = target.pubkey
                    && key != Some(first)
                {
                    // A feed has one key; the first admit in the owner's feed
                    // stands and a second claim is an alarm, never applied.
                    let reason = format!(
                        "second claim of feed {}: admitted with key {}…, a later admit names key \
                         {}…; the first key stands",
                        a.feed,
                        &record::pubkey_hex(&first)[..12],
                        a.pubkey.get(..12).unwrap_or(&a.pubkey)
                    );
                    let claimed = a.feed.clone();
                    self.problem(
                        ProblemKind::SecondClaim,
                        rel,
                        offset,
                        Some(rec),
                        &claimed,
                        &reason,
                    )?;
                } else if target.pubkey.is_none() {
                    target.pubkey = key;
                    target.role = a.role.to_string();
                    target.dirty = true;
                    self.index
                        .clear_problems_of_feed(ProblemKind::Unadmitted, &a.feed.to_string())?;
                }
            }
            Op::Send(send) => {
                self.touched.insert(rec.id);
                let Ok(from) = Role::new(&role) else {
                    return Ok(());
                };
                self.fresh.keep(rec.id, n, from, rec.order_key(), send);
            }
            Op::Read(_)
            | Op::Opened(_)
            | Op::Delete(_)
            | Op::Resolve(_)
            | Op::Confirm(_)
            | Op::Reopen(_)
            | Op::WorkStatus(_)
            | Op::Revise(_)
            | Op::Ack(_) => {
                for t in op.targets() {
                    self.index.add_target(t, n)?;
                    self.touched.insert(*t);
                }
                self.acting.add(n, rec.order_key(), &role, op);
            }
            Op::ReplaceKey(r) => {
                // `misplaced` made sure the record may change the key.
                let Some(key) = parse_pubkey(&r.pubkey) else {
                    return Ok(());
                };
                let target = self.feed_state(&r.feed);
                let next = target.head.map_or(1, |h| h.seq + 1);
                match r.from_seq.filter(|_| feed.is_owner()) {
                    // The owner's: from its seq on, wherever the reader is.
                    Some(from) => {
                        if from <= next {
                            target.pubkey = Some(key);
                            target.pending_key = None;
                        } else {
                            target.pending_key = Some((from, key));
                        }
                        target.dirty = true;
                        self.index.change_key(&r.feed, from, &r.pubkey)?;
                    }
                    // The feed's own, signed by the old key: from the next record on.
                    None => {
                        target.pubkey = Some(key);
                        target.dirty = true;
                    }
                }
            }
            Op::UploadChunk(c) => {
                let upload = self.index.record_chunk(n, rec.order_key(), &role, c)?;
                self.uploads.insert(upload);
            }
            Op::Seal(s) => {
                self.index.record_seal(n, rec.order_key(), &role, s)?;
                self.uploads.insert(s.upload);
            }
            Op::PinSet(ps) => {
                self.pin_keys.insert(ps.key.clone());
            }
            // A cleanup pass acts on the messages it lists (and their nudges).
            Op::Backfill(Backfill { ids, .. }) | Op::UndoBackfill(UndoBackfill { ids, .. }) => {
                self.touched.extend(ids.iter().copied());
            }
            Op::Claim(c) => {
                self.index.note_claim(rec, c, rel, offset)?;
                self.claims_changed = true;
            }
            Op::Invite(_) => self.claims_changed = true,
            Op::Summary(sm) => {
                // `misplaced` refused a summary that fails its checks.
                if let Some(line) = memory::summary::line_of(sm) {
                    self.index.record_summary(n, rec.order_key(), &line, sm)?;
                }
            }
            // `misplaced` refused a note that fails its checks.
            Op::Note(note) => {
                self.index
                    .record_note(n, rec.order_key(), role.as_str(), note)?;
            }
            Op::FeedInit(_) | Op::AddRole(_) => {}
        }
        Ok(())
    }

    pub(super) fn refold_touched(&mut self) -> StoreResult<()> {
        let mut touched = std::mem::take(&mut self.touched);
        let pin_keys = std::mem::take(&mut self.pin_keys);
        // Uploads first: a seal ingested here completes the bodies of the
        // messages that were waiting for it.
        let mut pins_wait = false;
        for id in std::mem::take(&mut self.uploads) {
            if let Some(u) = upload::refold_upload(self.index, &id)?
                && u.sealed.is_some()
            {
                touched.extend(upload::waiting_messages(self.index, &id)?);
                // Pin versions are rewritten by the consent fold.
                pins_wait |= upload::named_by_pins(self.index, &id)?;
            }
        }
        if touched.is_empty() && pin_keys.is_empty() && !pins_wait && !self.refold_all {
            // Nothing new: a read tool's catch-up stops here.
            return Ok(());
        }
        let fresh = std::mem::take(&mut self.fresh);
        for id in &touched {
            if refold_with(self.index, id, fresh.get(id), Some(&self.acting))? {
                self.report.refolded += 1;
            }
        }
        drop_aside(fresh);
        // Consent crosses messages: the scope of whatever took part runs
        // again (after the rows above exist). A very large pass (a rebuild)
        // re-folds everything at once rather than walking scope by scope.
        // So does a seal that pin versions were waiting for (their keys are
        // not known here), and a fork that took records back.
        let keys =
            (!pins_wait && !self.refold_all && touched.len() <= WALK_LIMIT).then_some(pin_keys);
        // New bodies reach the full-text index later, in one batch (see
        // `Channel::index_search_tail`): flushing FTS5 on every pass was a
        // large part of each write.
        consent::refold(self.index, &self.dir.genesis().roles, &touched, keys)
    }
}

/// Frees the decoded sends of a large pass (a rebuild's: as many as
/// [`Fresh`] keeps, with their text) on a thread of its own: freeing them one by one took a
/// tenth of the rebuild's final fold, on the thread the tools wait for.
fn drop_aside(fresh: Fresh) {
    if fresh.len() >= DROP_ASIDE_FROM {
        // With no thread to be had, the map is freed here, with the error.
        let _ = std::thread::Builder::new()
            .name("ingest-free".into())
            .spawn(move || drop(fresh));
    }
}

/// How many decoded messages make freeing them worth a thread.
const DROP_ASIDE_FROM: usize = 1000;

/// Past this many touched messages, a pass re-folds all of consent instead of
/// walking the scope of each.
const WALK_LIMIT: usize = 2000;

fn base64_sig(rec: &Record) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(rec.sig.to_bytes())
}
