//! The index's writes: [`IndexTx`], the only way to change a row.
//!
//! [`super::Index::write`] opens a write transaction and hands the closure
//! an `IndexTx`; every INSERT, UPDATE, DELETE and upsert on the index is a
//! method of it, in the child module of the noun it writes (`messages`,
//! `records`, `feeds`, `problems`, `uploads`, `consent`, `invitations`,
//! `memory`, `notes`, `search` for the full-text upkeep …). An `IndexTx`
//! cannot be made outside this module, so a write outside a transaction
//! does not compile. It reads through [`Index`] (it derefs to it) where a
//! writer must read in its own transaction.
//!
//! Owns the statements that change rows; must not decide what to write
//! (ingest and the folds do) nor read anything a reader could not.
//!
//! A write runs on the `IndexTx` that [`Index::write`] hands out:
//!
//! ```
//! # fn rebuild(ix: &countersign_lib::store::Index) -> countersign_lib::store::StoreResult<()> {
//! ix.write(|tx| tx.clear_derived())
//! # }
//! ```
//!
//! and on nothing else: the same write on the index outside a transaction
//! does not compile.
//!
//! ```compile_fail,E0599
//! # fn rebuild(ix: &countersign_lib::store::Index) -> countersign_lib::store::StoreResult<()> {
//! ix.clear_derived()
//! # }
//! ```

mod consent;
mod derived;
mod feeds;
mod files;
mod invitations;
mod memory;
mod messages;
mod notes;
mod problems;
mod records;
mod search;
mod uploads;

pub use feeds::FeedRow;
pub use messages::ShownBody;

use std::ops::Deref;

use super::Index;

/// The index inside one write transaction ([`Index::write`]): the reads of
/// [`Index`], and the writes.
pub struct IndexTx<'a> {
    ix: &'a Index,
}

impl<'a> IndexTx<'a> {
    /// Only [`Index::write`] (and its kin) make one, once the transaction
    /// has begun.
    pub(super) fn begun(ix: &'a Index) -> Self {
        Self { ix }
    }
}

impl Deref for IndexTx<'_> {
    type Target = Index;

    fn deref(&self) -> &Index {
        self.ix
    }
}
