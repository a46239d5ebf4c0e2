//! What a process remembers between ingest passes ([`ScanCache`]), so that a
//! pass over an unchanged folder costs a few `stat` calls: the feed folders
//! as last listed, each file's size and time when last read to its end, the
//! fruitless searches for a missing record, the parsed public keys and the
//! feed folders skipped for good.
//!
//! It owns no decision and writes nothing: the scan reads and fills it, and
//! a stale entry only costs a second look (every entry is checked against a
//! fresh `stat` before it is used).

use std::collections::{HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use ed25519_dalek::VerifyingKey;

use crate::core::ids::FeedId;
use crate::core::record::parse_pubkey;
use crate::store::folder::listing::{self, Listing, Tree};
use crate::store::folder::segments::Segment;
use crate::store::folder::survey::{self, mtime_of};
use crate::store::folder::tripwire::Since;

/// A file as last seen: path, size and mtime.
pub(super) type FileStamp = (PathBuf, u64, Option<SystemTime>);

/// The most public keys [`ScanCache`] keeps parsed.
const KEYS_KEPT: usize = 4096;

/// What this process remembers between passes so that a pass over an
/// unchanged folder costs a few `stat` calls.
#[derive(Clone, Debug, Default)]
pub struct ScanCache {
    pub(super) feeds_mtime: Option<SystemTime>,
    pub(super) role_mtimes: HashMap<PathBuf, SystemTime>,
    pub(super) feeds: Arc<[(FeedId, PathBuf)]>,
    pub(super) dirs: HashMap<PathBuf, DirScan>,
    pub(super) files: HashMap<PathBuf, (u64, SystemTime)>,
    /// Per feed, the last fruitless search for a missing record: its seq and
    /// the files searched (path, size, mtime). Searched again on a change.
    pub(super) gap_searches: HashMap<FeedId, (u64, Vec<FileStamp>)>,
    /// True when the last full pass left nothing waiting or held.
    pub(super) settled: bool,
    /// Public keys as parsed before (hex → key), so that a pass does not
    /// decompress every feed's key again: a point decompression each, about
    /// 3 µs, on every write.
    pub(super) keys: HashMap<String, Option<VerifyingKey>>,
    /// True when the listing of `feeds/` and its role folders found nothing
    /// stray (it may then be kept, see [`crate::store::folder::listing`]).
    pub(super) tree_clean: bool,
    /// True when something was listed since the listing was last handed out
    /// ([`Self::take_listing`]).
    pub(super) listing_dirty: bool,
    /// Per role folder, how many of its feed folders are skipped: feeds
    /// nobody admitted whose first record was judged already (noted as a
    /// claim, or found not to be one), left out of `feeds` and so never
    /// looked at, not even by a `stat`, while the role folder keeps the time
    /// it had when they were judged (see [`Self::unskipped`]) and no feed
    /// of the role is admitted ([`super::Ingest::admitted_skipped`]).
    pub(super) skipped: HashMap<PathBuf, usize>,
    /// True once a skipped feed waited (its records wait for an admission):
    /// passes keep running as while it was read, so that the claims are
    /// reviewed as time goes by.
    pub(super) skipped_waits: bool,
}

impl ScanCache {
    /// Forgets everything (the next pass looks at every file).
    pub fn clear(&mut self) {
        *self = Self::default();
    }

    /// The public key written as `hex`, parsed once per process. The memo
    /// holds the keys of the feeds table; one past [`KEYS_KEPT`] entries
    /// starts it afresh, so a folder of endless feeds cannot grow it.
    pub(super) fn key(&mut self, hex: &str) -> Option<VerifyingKey> {
        if let Some(k) = self.keys.get(hex) {
            return *k;
        }
        if self.keys.len() >= KEYS_KEPT {
            self.keys.clear();
        }
        let k = parse_pubkey(hex);
        self.keys.insert(hex.to_owned(), k);
        k
    }

    /// True before the first pass with this cache (and after [`Self::clear`]).
    pub fn is_blank(&self) -> bool {
        self.feeds_mtime.is_none() && self.dirs.is_empty() && self.files.is_empty()
    }

    /// Takes `listing` (kept by an earlier process) as what the folders
    /// held: each entry is used only while its folder's time still matches.
    /// Its folders are treated as listed anew by the next pass, except that
    /// it does not list them (see [`DirScan::recalled`]).
    pub fn recall(&mut self, listing: Listing) {
        if let Some(tree) = listing.tree {
            self.feeds_mtime = Some(tree.root);
            self.role_mtimes = tree.roles.into_iter().collect();
            self.feeds = tree.feeds.into();
            self.skipped = tree.skipped.into_iter().filter(|(_, n)| *n > 0).collect();
            self.tree_clean = true;
        }
        for (dir, mtime, segments) in listing.dirs {
            self.dirs.insert(
                dir,
                DirScan {
                    mtime,
                    segments: segments.into(),
                    checked: 0,
                    checked_head: 0,
                    clean: true,
                    recalled: true,
                },
            );
        }
        self.listing_dirty = false;
    }

    /// The listing to keep for the next process, when something was listed
    /// since the last one was handed out: the folders whose listings found
    /// nothing stray and whose times lie [`listing::SETTLE`] before `now`.
    /// While some are left out for being too recent, the next call hands one
    /// out again.
    pub fn take_listing(&mut self, now: SystemTime) -> Option<Listing> {
        if !self.listing_dirty {
            return None;
        }
        let mut whole = true;
        let mut settled = |m: SystemTime| {
            let ok = listing::settled(m, now);
            whole &= ok;
            ok
        };
        let tree = match self.feeds_mtime {
            Some(root)
                if self.tree_clean
                    && settled(root)
                    && self.role_mtimes.values().all(|m| settled(*m)) =>
            {
                Some(Tree {
                    root,
                    roles: self
                        .role_mtimes
                        .iter()
                        .map(|(p, m)| (p.clone(), *m))
                        .collect(),
                    feeds: self.feeds.to_vec(),
                    skipped: self.skipped.iter().map(|(p, n)| (p.clone(), *n)).collect(),
                })
            }
            _ => None,
        };
        let dirs = self
            .feeds
            .iter()
            .filter_map(|(_, dir)| self.dirs.get(dir).map(|d| (dir, d)))
            .filter(|(_, d)| d.clean && settled(d.mtime))
            .map(|(dir, d)| (dir.clone(), d.mtime, d.segments.to_vec()))
            .collect();
        self.listing_dirty = !whole;
        Some(Listing { tree, dirs })
    }

    /// The feed folders of a new listing, `feeds`, less the ones still
    /// skipped. A role folder's skipped folders stay skipped while its time
    /// is the one they were judged under (`before`, as `role_mtimes` held
    /// it): no folder was added or removed there, so they are exactly its
    /// folders that the last listing kept. Otherwise (its time moved, it
    /// could not be read, or the count does not match) every one of them is
    /// looked at again.
    pub(super) fn unskipped(
        &mut self,
        before: &HashMap<PathBuf, SystemTime>,
        roles: &[(PathBuf, Option<SystemTime>)],
        feeds: Vec<survey::FeedFolder>,
    ) -> Vec<survey::FeedFolder> {
        if self.skipped.is_empty() {
            return feeds;
        }
        let listed: HashSet<&Path> = self.feeds.iter().map(|(_, d)| d.as_path()).collect();
        let mut unlisted: HashMap<&Path, usize> = HashMap::new();
        for (_, dir) in &feeds {
            if !listed.contains(dir.as_path())
                && let Some(role) = dir.parent()
            {
                *unlisted.entry(role).or_default() += 1;
            }
        }
        let standing: HashMap<PathBuf, usize> = roles
            .iter()
            .filter_map(|(role, mtime)| {
                let n = *self.skipped.get(role)?;
                let same = mtime.is_some() && before.get(role) == mtime.as_ref();
                (same && unlisted.get(role.as_path()) == Some(&n)).then(|| (role.clone(), n))
            })
            .collect();
        let kept = feeds
            .into_iter()
            .filter(|(_, dir)| {
                listed.contains(dir.as_path())
                    || !dir.parent().is_some_and(|r| standing.contains_key(r))
            })
            .collect();
        self.skipped = standing;
        kept
    }

    /// Stops looking at the feed folders `judged` (see [`Self::skipped`]).
    pub(super) fn skip(&mut self, judged: &HashSet<PathBuf>) {
        let mut kept = Vec::with_capacity(self.feeds.len());
        for (feed, dir) in self.feeds.iter() {
            let role = dir.parent().filter(|r| self.role_mtimes.contains_key(*r));
            match role {
                Some(role) if judged.contains(dir) => {
                    *self.skipped.entry(role.to_path_buf()).or_default() += 1;
                    if let Some(d) = self.dirs.remove(dir) {
                        for s in d.segments.iter() {
                            self.files.remove(&s.path);
                        }
                    }
                }
                _ => kept.push((feed.clone(), dir.clone())),
            }
        }
        if kept.len() != self.feeds.len() {
            self.feeds = kept.into();
            self.listing_dirty = true;
        }
    }

    /// Looks at the skipped feed folders of `roles` again, on the next
    /// listing (which the next pass makes).
    pub(super) fn reexamine(&mut self, roles: &[PathBuf]) {
        for r in roles {
            self.skipped.remove(r);
        }
        self.feeds_mtime = None;
        self.settled = false;
    }

    /// True when a pass would find nothing to do: the last full pass left
    /// nothing waiting or held, and the feed folders and the segments it had
    /// not finished with are as it left them. The same `stat` calls as a
    /// pass over an unchanged folder, without its transaction and queries,
    /// less those of the folders `since` vouches for (each with the
    /// segments in it): a tripwire's word that nothing changed there.
    pub fn unchanged(&self, feeds_root: &Path, since: &Since) -> bool {
        self.ready() && self.stats_unchanged(feeds_root, since)
    }

    /// True when the last full pass left nothing waiting or held and its
    /// record of the folders is whole: [`Self::unchanged`] may then be
    /// answered by looking at them.
    fn ready(&self) -> bool {
        self.settled && self.feeds_mtime.is_some()
    }

    /// The folders [`Self::unchanged`] looks at: `feeds_root`, each role
    /// folder, each feed folder.
    pub fn checked_dirs<'a>(&'a self, feeds_root: &'a Path) -> impl Iterator<Item = &'a Path> {
        std::iter::once(feeds_root)
            .chain(self.role_mtimes.keys().map(PathBuf::as_path))
            .chain(self.feeds.iter().map(|(_, dir)| dir.as_path()))
    }

    fn stats_unchanged(&self, feeds_root: &Path, since: &Since) -> bool {
        let look = |dir: &Path| since.may_have_changed(dir);
        (!look(feeds_root) || mtime_of(feeds_root) == self.feeds_mtime)
            && self
                .role_mtimes
                .iter()
                .all(|(p, m)| !look(p) || mtime_of(p).as_ref() == Some(m))
            && self.feeds.iter().all(|(_, dir)| {
                self.dirs.get(dir).is_some_and(|d| {
                    if !look(dir) {
                        return true;
                    }
                    mtime_of(dir) == Some(d.mtime)
                        && d.segments[d.checked..].iter().all(|s| {
                            let now = fs::symlink_metadata(&s.path)
                                .ok()
                                .and_then(|m| Some((m.len(), m.modified().ok()?)));
                            now.is_some() && now.as_ref() == self.files.get(&s.path)
                        })
                })
            })
    }
}

/// A feed folder as last listed.
#[derive(Clone, Debug)]
pub(super) struct DirScan {
    pub(super) mtime: SystemTime,
    pub(super) segments: Arc<[Segment]>,
    /// How many leading segments the last pass found complete and fully read
    /// (in `files`), and the feed's head seq then. While the listing stands
    /// and the head has not gone back (a fork taken back), the next pass
    /// starts after them instead of looking each one up again: a feed of
    /// hundreds of segments then costs a pass two `stat` calls, not hundreds
    /// of lookups. A folder listed again (its head replaced, a segment
    /// added) keeps as many of them as it still lists as the same files
    /// (name and inode, from the listing alone). As for an unchanged folder,
    /// a complete segment rewritten in place under the same inode is not
    /// read again until the process starts anew.
    pub(super) checked: usize,
    pub(super) checked_head: u64,
    /// True when its listing found nothing stray.
    pub(super) clean: bool,
    /// True while it comes from a listing an earlier process kept and no
    /// pass of this one has looked at the feed: the next pass treats the
    /// folder as listed anew (the feed's head checked for a cut), without
    /// listing it.
    pub(super) recalled: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::record::pubkey_hex;

    #[test]
    fn a_key_is_parsed_once_and_the_memo_stays_bounded() {
        let mut cache = ScanCache::default();
        let key = ed25519_dalek::SigningKey::from_bytes(&[7; 32]).verifying_key();
        let hex = pubkey_hex(&key);
        assert_eq!(cache.key(&hex), Some(key));
        assert_eq!(cache.keys.len(), 1);
        assert_eq!(cache.key(&hex), Some(key));
        assert_eq!(cache.keys.len(), 1);
        // Not a key: remembered as none, like any other answer.
        assert_eq!(cache.key("not hex"), None);
        assert_eq!(cache.keys.len(), 2);
        // A folder of endless feeds: the memo starts afresh at the bound.
        for i in 0..KEYS_KEPT {
            cache.key(&format!("{i:064x}"));
        }
        assert!(cache.keys.len() <= KEYS_KEPT);
        assert_eq!(cache.key(&hex), Some(key));
    }
}
