//! The memory: the channel's history as one sequence of items, folded into a
//! binary tree of one-line summaries, and the view of that tree that fits a
//! byte budget (docs/MEMORY.md says it for users).
//!
//! Like the message fold, everything here is a pure function of records and
//! of the times passed in: the same records give the same sequence, tree and
//! view on every machine. It owns the sequence rule and what each op does to
//! the items (`sequence`), the shape of
//! the tree and the choice of the view (`tree`), and what a summary may hold
//! (`summary`) and a note (`note`), where an item came from (`provenance`),
//! and the pages a compaction job is read
//! in (`page`). It must not read files, the index or the clock, and it never
//! writes summaries: agents do, through the app.

pub mod import;
pub mod note;
pub mod notice;
pub mod page;
pub mod provenance;
pub mod queue;
pub mod sequence;
pub mod summary;
pub mod tree;

/// The most bytes one line of the memory holds (an item's own line, a
/// summary, two short lines joined).
pub const MAX_LINE_BYTES: usize = 512;
