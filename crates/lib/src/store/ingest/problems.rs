//! The problems a pass records and clears: what the listings find (stray
//! files, wrong types, oversize segments, a cut feed), and the problem of one
//! line or record (garbage, quarantine, hold, fork…) that the judge decided.

use std::collections::HashMap;
use std::path::Path;

use super::Ingest;
use super::Verdict;
use crate::core::ids::FeedId;
use crate::core::record::Record;
use crate::store::error::StoreResult;
use crate::store::folder::segments;
use crate::store::folder::segments::Segment;
use crate::store::folder::survey;
use crate::store::index::ProblemKind;

/// The `feed` column of problems about the role and device folders
/// themselves (files of one feed folder carry that feed's id).
pub(super) const FOLDER_SCOPE: &str = "feeds";

/// The kinds of problem a listing of the folders finds or clears (see
/// [`Ingest::may_stand`]).
pub(super) const FOLDER_KINDS: [ProblemKind; 4] = [
    ProblemKind::WrongType,
    ProblemKind::Stray,
    ProblemKind::Oversize,
    ProblemKind::Cut,
];

impl Ingest<'_, '_> {
    pub(super) fn load_folder_problems(&mut self) -> StoreResult<()> {
        let mut all: HashMap<String, Vec<ProblemKind>> = HashMap::new();
        for (scope, kind) in self.index.feeds_with_problems(&FOLDER_KINDS)? {
            all.entry(scope).or_default().push(kind);
        }
        self.folder_problems = Some(all);
        Ok(())
    }

    /// False when no problem of `kinds` can stand for `scope`, as read at
    /// the start of this pass and noted since ([`Self::note_standing`]):
    /// the listing then has nothing to clear and needs no query.
    pub(super) fn may_stand(&self, kinds: &[ProblemKind], scope: &str) -> bool {
        self.folder_problems.as_ref().is_none_or(|all| {
            all.get(scope)
                .is_some_and(|ks| ks.iter().any(|k| kinds.contains(k)))
        })
    }

    /// Notes that a problem of `kind` may now stand for `scope`.
    pub(super) fn note_standing(&mut self, kind: ProblemKind, scope: &str) {
        if let Some(all) = self.folder_problems.as_mut()
            && FOLDER_KINDS.contains(&kind)
        {
            all.entry(scope.to_owned()).or_default().push(kind);
        }
    }

    pub(super) fn load_held(&mut self) -> StoreResult<()> {
        self.held
            .extend(self.index.problem_records(ProblemKind::Held)?);
        Ok(())
    }

    /// Makes the `wrong_type` and `stray` problems of one listing (`scope`:
    /// [`FOLDER_SCOPE`] for the role and device folders, a feed id for the
    /// files of one feed folder) what it found now: new ones are added, the
    /// ones no longer there (removed by a person) go.
    pub(super) fn report_strays(
        &mut self,
        scope: &str,
        strays: &[survey::Stray],
    ) -> StoreResult<()> {
        let found: Vec<(ProblemKind, String, String)> = strays
            .iter()
            .map(|s| {
                let kind = match s.what {
                    survey::StrayKind::WrongType(_) => ProblemKind::WrongType,
                    survey::StrayKind::Unknown => ProblemKind::Stray,
                };
                (kind, self.rel(&s.path), s.reason())
            })
            .collect();
        let kinds = [ProblemKind::WrongType, ProblemKind::Stray];
        if found.is_empty() && !self.may_stand(&kinds, scope) {
            return Ok(());
        }
        let standing = self.index.problems_of_feed(&kinds, scope)?;
        for (kind, path) in standing {
            if !found.iter().any(|(k, fp, _)| *k == kind && *fp == path) {
                self.index.clear_problems_at(kind, &path)?;
            }
        }
        for (kind, path, reason) in found {
            self.note_standing(kind, scope);
            let n = self
                .index
                .record_problem(kind, &path, 0, None, scope, &reason)?;
            self.report.new_problems += n;
        }
        Ok(())
    }

    /// Drops the `oversize` problems of `feed` whose file is no longer one
    /// of its segments (removed, or renamed away).
    pub(super) fn forget_oversize(
        &mut self,
        feed: &FeedId,
        segments: &[Segment],
    ) -> StoreResult<()> {
        let scope = feed.to_string();
        if !self.may_stand(&[ProblemKind::Oversize], &scope) {
            return Ok(());
        }
        let standing = self
            .index
            .problems_of_feed(&[ProblemKind::Oversize], &scope)?;
        for (kind, path) in standing {
            if !segments.iter().any(|s| self.rel(&s.path) == path) {
                self.index.clear_problems_at(kind, &path)?;
            }
        }
        Ok(())
    }

    /// Compares the records applied of `feed` with its signed `head.json`: a
    /// head that verifies and names a later seq than the feed's files hold,
    /// once the feed was read to its end with nothing waiting, means records
    /// were cut off the end or the feed was rolled back to an older copy (a
    /// `cut` problem, which goes once the records are back). A feed that
    /// waits is reported as waiting already.
    pub(super) fn check_cut(&mut self, feed: &FeedId, dir: &Path, waits: bool) -> StoreResult<()> {
        let state = self.feed_state(feed);
        let (applied, frozen, pubkey) = (
            state.head.map_or(0, |h| h.seq),
            state.frozen.is_some(),
            state.pubkey,
        );
        let claim = match (waits, frozen, pubkey) {
            // Right after this device's own append, the head is the one it
            // just signed for the record it just applied: reading the file
            // back and checking its signature would only cost time.
            (false, false, Some(_)) if self.own_write => None,
            (false, false, Some(key)) => segments::read_head(dir, feed, &key),
            _ => None,
        };
        // The problem stands for the feed as it is now: cleared, then
        // written again while the head still names a later seq.
        let scope = feed.to_string();
        if self.may_stand(&[ProblemKind::Cut], &scope) {
            self.index
                .clear_problems_of_feed(ProblemKind::Cut, &scope)?;
        }
        if let Some(head) = claim.filter(|h| h.seq > applied) {
            let rel = self.rel(&dir.join(segments::HEAD_FILE));
            let reason = format!(
                "feed {feed} ends at seq {applied} but its signed head names seq {}: its last \
                 records were cut off, or the folder holds an older copy of the feed. The \
                 writing device republishes them on its next write (or `countersign repair` \
                 there)",
                head.seq
            );
            self.problem(ProblemKind::Cut, &rel, 0, None, feed, &reason)?;
        }
        Ok(())
    }

    /// Records `rec` as quarantined (never applied) and consumes its line.
    pub(super) fn quarantine(
        &mut self,
        rel: &str,
        offset: u64,
        rec: &Record,
        feed: &FeedId,
        reason: &str,
    ) -> StoreResult<Verdict> {
        self.problem(
            ProblemKind::Quarantine,
            rel,
            offset,
            Some(rec),
            feed,
            reason,
        )?;
        Ok(Verdict::Consumed)
    }

    pub(super) fn problem(
        &mut self,
        kind: ProblemKind,
        path: &str,
        offset: u64,
        rec: Option<&Record>,
        feed: &FeedId,
        reason: &str,
    ) -> StoreResult<()> {
        let scope = feed.to_string();
        self.note_standing(kind, &scope);
        let n = self.index.record_problem(
            kind,
            path,
            offset,
            rec.map(|r| r.id.hex()).as_deref(),
            &scope,
            reason,
        )?;
        self.report.new_problems += n;
        Ok(())
    }
}
