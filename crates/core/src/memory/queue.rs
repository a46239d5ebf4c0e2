//! The compaction queue: which lines of the tree wait for a summary that the
//! view needs, and which of them an agent can write now.
//!
//! Wanted are the lines the view shows that wait, and beneath each of them
//! the halves that wait too (a merged line is written from its two halves'
//! text, so those come first). Lines above the view are never wanted: the
//! view opens them anyway, and every new item renames the lines on its path
//! to the root, so their summaries would be read by no one and soon be stale
//! (docs/MEMORY.md, "What a compaction costs"). Lines under a line that has a
//! text already are not wanted either: the view does not read them.
//!
//! A wanted line is ready when it can be written now: an item too long to be
//! its own line always is; a merged line is once both halves have a text
//! (their own line, a summary, or two short lines joined). Ready tasks come
//! lower lines first (fewer items), then in the sequence's order, so a job
//! holds neighbours. Like the rest of `core::memory` this is a pure function
//! of the tree and the texts; leases and failures are the app's.

use super::tree::{LineText, Node, Tree, ViewLine};
use crate::ids::RecordId;

/// What a task asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskKind {
    /// Summarize one item too long to be its own line.
    Item,
    /// Merge the two halves of a line into one line.
    Merge,
}

/// One line to write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Task {
    /// The node in the tree.
    pub node: usize,
    /// The line's name.
    pub line: RecordId,
    /// What is asked.
    pub kind: TaskKind,
    /// The first item it covers.
    pub lo: usize,
    /// How many items it covers.
    pub items: usize,
}

/// The queue of one view.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Queue {
    /// The lines that can be written now, lower lines first.
    pub ready: Vec<Task>,
    /// Every wanted line (ready or waiting for its halves).
    pub wanted: usize,
    /// Items under the view's lines that wait.
    pub items_waiting: usize,
}

/// The queue of the view `view` over `tree`, with the texts `own` and
/// `summary` (as `Tree::view` takes them).
pub fn queue<'a>(
    tree: &Tree,
    view: &[ViewLine],
    own: impl Fn(usize) -> Option<&'a str>,
    summary: impl Fn(&RecordId) -> Option<&'a str>,
) -> Queue {
    let nodes = tree.nodes();
    let has_text = |n: &Node| !matches!(tree.text(n, &own, &summary), LineText::Waiting);
    let mut q = Queue::default();
    let mut stack: Vec<usize> = Vec::new();
    for l in view.iter().filter(|l| l.text.waits()) {
        q.items_waiting += l.hi - l.lo;
        stack.push(l.node);
        // Depth-first under each waiting line, through waiting lines only.
        while let Some(i) = stack.pop() {
            let node = &nodes[i];
            q.wanted += 1;
            let kind = match node.halves {
                None => TaskKind::Item,
                Some((a, b)) => {
                    let (left, right) = (has_text(&nodes[a]), has_text(&nodes[b]));
                    if !left {
                        stack.push(a);
                    }
                    if !right {
                        stack.push(b);
                    }
                    if !(left && right) {
                        continue;
                    }
                    TaskKind::Merge
                }
            };
            q.ready.push(Task {
                node: i,
                line: node.line,
                kind,
                lo: node.lo,
                items: node.items(),
            });
        }
    }
    q.ready.sort_by_key(|t| (t.items, t.lo));
    q
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::hlc::{Hlc, OrderKey};
    use crate::memory::MAX_LINE_BYTES;

    fn keys(n: u32) -> Vec<OrderKey> {
        (0..n)
            .map(|i| OrderKey {
                hlc: Hlc(1_000 + i as i64 * 1000, 0),
                id: RecordId::of_body(&i.to_be_bytes()),
            })
            .collect()
    }

    #[test]
    fn long_items_are_always_ready_and_short_ones_never_asked() {
        let t = Tree::build(keys(8));
        // Items 2 and 5 are too long to be their own lines.
        let own: Vec<Option<String>> = (0..8)
            .map(|i| (i != 2 && i != 5).then(|| format!("item {i}")))
            .collect();
        let view = t.view(1 << 20, |i| own[i].as_deref(), |_| None);
        let q = queue(&t, &view, |i| own[i].as_deref(), |_| None);
        let items: Vec<usize> = q.ready.iter().map(|t| t.lo).collect();
        assert_eq!(items, vec![2, 5]);
        assert!(q.ready.iter().all(|t| t.kind == TaskKind::Item));
        assert_eq!((q.wanted, q.items_waiting), (2, 2));
    }

    #[test]
    fn a_merge_is_ready_once_both_halves_have_text_and_lower_lines_come_first() {
        let t = Tree::build(keys(16));
        // Own lines so long that no two join: every merged line waits.
        let long = "x".repeat(MAX_LINE_BYTES / 2 + 10);
        let own: Vec<Option<String>> = (0..16).map(|_| Some(long.clone())).collect();
        // A budget that holds only the root: everything under it is wanted.
        let view = t.view(10, |i| own[i].as_deref(), |_| None);
        assert_eq!(view.len(), 1);
        let q = queue(&t, &view, |i| own[i].as_deref(), |_| None);
        assert_eq!(q.wanted, 15, "every merged line under the root");
        assert_eq!(q.items_waiting, 16);
        assert!(
            q.ready
                .iter()
                .all(|t| t.kind == TaskKind::Merge && t.items == 2)
        );
        assert_eq!(q.ready.len(), 8);
        assert!(q.ready.windows(2).all(|w| w[0].lo < w[1].lo));

        // With the pairs summarized (too long to join), the lines over them
        // are ready next.
        let summaries: HashMap<RecordId, String> =
            q.ready.iter().map(|t| (t.line, long.clone())).collect();
        let s = |l: &RecordId| summaries.get(l).map(String::as_str);
        let view = t.view(10, |i| own[i].as_deref(), s);
        let q2 = queue(&t, &view, |i| own[i].as_deref(), s);
        assert_eq!(q2.wanted, 7);
        assert!(q2.ready.iter().all(|t| t.items == 4));
        assert_eq!(q2.ready.len(), 4);

        // Short summaries join two by two: those lines need no job.
        let short: HashMap<RecordId, String> = q
            .ready
            .iter()
            .map(|t| (t.line, "pair".to_owned()))
            .collect();
        let s = |l: &RecordId| short.get(l).map(String::as_str);
        let view = t.view(10, |i| own[i].as_deref(), s);
        let q3 = queue(&t, &view, |i| own[i].as_deref(), s);
        assert_eq!(q3.wanted, 3, "the root and the two lines of 8");
        assert!(q3.ready.iter().all(|t| t.items == 8));
    }

    #[test]
    fn lines_with_text_are_not_opened() {
        let t = Tree::build(keys(4));
        let own: Vec<Option<String>> = (0..4).map(|_| None).collect();
        let root = t.root().unwrap().line;
        // The root has a summary: nothing under it is wanted.
        let s = |l: &RecordId| (*l == root).then_some("all of it");
        let view = t.view(10, |i| own[i].as_deref(), s);
        let q = queue(&t, &view, |i| own[i].as_deref(), s);
        assert_eq!(q, Queue::default());
    }
}
