//! The summary tree over the memory sequence, and the view of it that fits a
//! byte budget.
//!
//! The tree's shape is a pure function of the items' places in the total
//! order: it is the crit-bit tree of their order keys (time, counter, id, as
//! one string of bits). A line covering several items splits where their keys
//! first differ, so every inner line is made of exactly two neighbouring
//! lines, and the items of one burst stay under one line. Adding an item, at
//! the end or late in the middle, changes only the lines on its path from the
//! root; every other line keeps its name (`summary::merged`) and so its
//! summary. The depth is at most the number of bits of a key (352), whatever
//! a peer writes.
//!
//! The view starts from the root, one line for everything, and opens the line
//! that is youngest for its size (fewest items after it per item it covers)
//! into its two halves, again and again, until the next opening would pass
//! the budget. Recent items thus get lines of their own and older lines cover
//! more: detail fades with age. It reads only the lines it shows and their
//! parents, never the whole sequence.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BinaryHeap};

use super::MAX_LINE_BYTES;
use super::summary::merged;
use crate::hlc::OrderKey;
use crate::ids::RecordId;
use crate::timestamp::format_rfc3339;

/// The default byte budget of a view.
pub const DEFAULT_BUDGET: usize = 128 * 1024;

/// Bits in a key: 64 of time, 32 of counter, 256 of id.
const KEY_BYTES: usize = 8 + 4 + 32;

/// One line of the tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    /// Its name: the item's record id for one item, else the digest of its
    /// two halves' names.
    pub line: RecordId,
    /// The first item it covers (an index into the sequence).
    pub lo: usize,
    /// One past the last item it covers.
    pub hi: usize,
    /// Its two halves (indexes into the nodes), `None` for one item.
    pub halves: Option<(usize, usize)>,
}

impl Node {
    /// How many items it covers.
    pub fn items(&self) -> usize {
        self.hi - self.lo
    }
}

/// The tree over one sequence.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tree {
    keys: Vec<OrderKey>,
    nodes: Vec<Node>,
    root: Option<usize>,
}

fn key_bytes(k: &OrderKey) -> [u8; KEY_BYTES] {
    let mut b = [0u8; KEY_BYTES];
    // Flipping the sign bit makes the byte order the numeric order.
    b[..8].copy_from_slice(&((k.hlc.0 as u64) ^ (1 << 63)).to_be_bytes());
    b[8..12].copy_from_slice(&k.hlc.1.to_be_bytes());
    b[12..].copy_from_slice(k.id.as_bytes());
    b
}

fn bit(b: &[u8; KEY_BYTES], i: usize) -> bool {
    b[i / 8] & (0x80 >> (i % 8)) != 0
}

fn first_difference(a: &[u8; KEY_BYTES], b: &[u8; KEY_BYTES]) -> Option<usize> {
    a.iter()
        .zip(b)
        .position(|(x, y)| x != y)
        .map(|i| i * 8 + (a[i] ^ b[i]).leading_zeros() as usize)
}

impl Tree {
    /// The tree over `keys`, which are sorted and distinct (as
    /// `sequence::sequence` returns them); unsorted input is sorted first.
    pub fn build(mut keys: Vec<OrderKey>) -> Self {
        if !keys.is_sorted_by(|a, b| a < b) {
            keys.sort();
            keys.dedup();
        }
        let bytes: Vec<[u8; KEY_BYTES]> = keys.iter().map(key_bytes).collect();
        let mut tree = Self {
            keys,
            nodes: Vec::new(),
            root: None,
        };
        if !bytes.is_empty() {
            tree.root = Some(tree.grow(&bytes, 0, bytes.len()));
        }
        tree
    }

    // Recursion depth is bounded by the key's bits: each level splits at a
    // later bit than its parent.
    fn grow(&mut self, bytes: &[[u8; KEY_BYTES]], lo: usize, hi: usize) -> usize {
        let halves = (hi - lo > 1).then(|| {
            let crit =
                first_difference(&bytes[lo], &bytes[hi - 1]).expect("distinct sorted keys differ");
            let mid = lo + bytes[lo..hi].partition_point(|b| !bit(b, crit));
            (self.grow(bytes, lo, mid), self.grow(bytes, mid, hi))
        });
        let line = match halves {
            Some((l, r)) => merged(&self.nodes[l].line, &self.nodes[r].line),
            None => self.keys[lo].id,
        };
        self.nodes.push(Node {
            line,
            lo,
            hi,
            halves,
        });
        self.nodes.len() - 1
    }

    /// The items, in order.
    pub fn keys(&self) -> &[OrderKey] {
        &self.keys
    }

    /// Every line of the tree (children before parents).
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// The line covering everything.
    pub fn root(&self) -> Option<&Node> {
        self.root.map(|r| &self.nodes[r])
    }

    /// The index of the line covering everything.
    pub fn root_index(&self) -> Option<usize> {
        self.root
    }

    /// The line named `line`, if the tree has one.
    pub fn find(&self, line: &RecordId) -> Option<&Node> {
        self.nodes.iter().find(|n| &n.line == line)
    }

    /// The names a summary of `node` lists: the item, or its two halves.
    pub fn covers(&self, node: &Node) -> Vec<RecordId> {
        match node.halves {
            None => vec![node.line],
            Some((l, r)) => vec![self.nodes[l].line, self.nodes[r].line],
        }
    }

    /// The view within `budget` bytes (never less than the root's line).
    /// `own` gives an item's own line (by its index in the sequence), when it
    /// has one; `summary` a line's standing summary, when there is one.
    pub fn view<'a>(
        &self,
        budget: usize,
        own: impl Fn(usize) -> Option<&'a str>,
        summary: impl Fn(&RecordId) -> Option<&'a str>,
    ) -> Vec<ViewLine> {
        let Some(root) = self.root else {
            return Vec::new();
        };
        let line = |i: usize| self.line_at(i, &own, &summary);
        let n = self.keys.len();
        let mut shown: BTreeMap<usize, ViewLine> = BTreeMap::new();
        let mut open = BinaryHeap::new();
        let first = line(root);
        let mut total = first.bytes();
        shown.insert(first.lo, first);
        open.push(Opening::of(&self.nodes[root], root, n));
        while let Some(o) = open.pop() {
            let Some((l, r)) = self.nodes[o.node].halves else {
                continue;
            };
            let (left, right) = (line(l), line(r));
            let was = shown[&self.nodes[o.node].lo].bytes();
            let next = total - was + left.bytes() + right.bytes();
            if next > budget {
                break;
            }
            total = next;
            open.push(Opening::of(&self.nodes[l], l, n));
            open.push(Opening::of(&self.nodes[r], r, n));
            shown.insert(left.lo, left);
            shown.insert(right.lo, right);
        }
        shown.into_values().collect()
    }

    /// Node `i` as a line of a view, with `own` and `summary` as for
    /// [`Self::view`]: what a line opened on its own shows.
    pub fn line_at<'a>(
        &self,
        i: usize,
        own: &impl Fn(usize) -> Option<&'a str>,
        summary: &impl Fn(&RecordId) -> Option<&'a str>,
    ) -> ViewLine {
        let node = &self.nodes[i];
        let text = self.text(node, own, summary);
        let shown = render(node, self.keys[node.lo], &text);
        ViewLine {
            node: i,
            line: node.line,
            lo: node.lo,
            hi: node.hi,
            text,
            shown,
        }
    }

    /// What `node` says: an item's own line, the line's summary, its two
    /// halves joined when they fit, or nothing yet.
    pub fn text<'a>(
        &self,
        node: &Node,
        own: &impl Fn(usize) -> Option<&'a str>,
        summary: &impl Fn(&RecordId) -> Option<&'a str>,
    ) -> LineText {
        let settled = |n: &Node| -> Option<&'a str> {
            match n.halves {
                None => own(n.lo).or_else(|| summary(&n.line)),
                Some(_) => summary(&n.line),
            }
        };
        if node.halves.is_none()
            && let Some(t) = own(node.lo)
        {
            return LineText::Own(t.to_owned());
        }
        if let Some(t) = summary(&node.line) {
            return LineText::Summary(t.to_owned());
        }
        if let Some((l, r)) = node.halves
            && let (Some(a), Some(b)) = (settled(&self.nodes[l]), settled(&self.nodes[r]))
        {
            let joined = format!("{a} | {b}");
            if joined.len() <= MAX_LINE_BYTES {
                return LineText::Joined(joined);
            }
        }
        LineText::Waiting
    }
}

/// What a line of the view says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LineText {
    /// One item short enough to be its own line.
    Own(String),
    /// The standing summary of the line.
    Summary(String),
    /// Two short lines side by side, short enough together: no job needed.
    Joined(String),
    /// No summary yet: the line waits for a compaction.
    Waiting,
}

impl LineText {
    /// True when the line still needs a summary.
    pub fn waits(&self) -> bool {
        matches!(self, Self::Waiting)
    }
}

/// One line of a view.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ViewLine {
    /// The node in the tree.
    pub node: usize,
    /// Its name.
    pub line: RecordId,
    /// The first item it covers.
    pub lo: usize,
    /// One past the last.
    pub hi: usize,
    /// What it says.
    pub text: LineText,
    /// The line as shown, without its newline.
    pub shown: String,
}

impl ViewLine {
    /// What the line costs in the budget: its shown bytes and a newline.
    pub fn bytes(&self) -> usize {
        self.shown.len() + 1
    }
}

/// A line as shown: `<line id>+<items>|<date of its first item>: <text>`;
/// a line with no summary yet says how many items it covers and that it
/// waits for a compaction.
pub fn render(node: &Node, first: OrderKey, text: &LineText) -> String {
    let date = format_rfc3339(first.hlc.ms());
    let head = format!("{}+{}|{date}", node.line.short(), node.items());
    match text {
        LineText::Own(t) | LineText::Summary(t) | LineText::Joined(t) => format!("{head}: {t}"),
        LineText::Waiting => format!(
            "{head}: [{} item{} not summarized yet: waits for a compaction]",
            node.items(),
            if node.items() == 1 { "" } else { "s" }
        ),
    }
}

/// A line that may be opened, ranked so that the youngest for its size
/// opens first (ties: the later line).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Opening {
    node: usize,
    lo: usize,
    after: usize,
    items: usize,
}

impl Opening {
    fn of(node: &Node, i: usize, n: usize) -> Self {
        Self {
            node: i,
            lo: node.lo,
            after: n - node.hi,
            items: node.items(),
        }
    }
}

impl Ord for Opening {
    fn cmp(&self, o: &Self) -> Ordering {
        // Higher ranks pop first: fewer items after it per item covered.
        let mine = self.after as u128 * o.items as u128;
        let theirs = o.after as u128 * self.items as u128;
        theirs.cmp(&mine).then(self.lo.cmp(&o.lo))
    }
}

impl PartialOrd for Opening {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use proptest::prelude::*;

    use super::*;
    use crate::hlc::Hlc;
    use crate::memory::sequence::sequence;

    fn key(ms: i64, counter: u32, tag: u32) -> OrderKey {
        OrderKey {
            hlc: Hlc(ms, counter),
            id: RecordId::of_body(&tag.to_be_bytes()),
        }
    }

    /// Items with texts of the given lengths (`None`: too long for a line).
    fn texts(n: usize, len: impl Fn(usize) -> Option<usize>) -> Vec<Option<String>> {
        (0..n).map(|i| len(i).map(|l| "x".repeat(l))).collect()
    }

    fn check_cover(tree: &Tree, view: &[ViewLine]) {
        let mut next = 0;
        for l in view {
            assert_eq!(l.lo, next, "lines follow each other");
            assert!(l.hi > l.lo);
            assert_eq!(tree.nodes()[l.node].line, l.line);
            next = l.hi;
        }
        assert_eq!(next, tree.keys().len(), "the view covers every item");
    }

    #[test]
    fn an_empty_sequence_has_an_empty_view() {
        let t = Tree::build(Vec::new());
        assert!(t.root().is_none());
        assert!(t.view(DEFAULT_BUDGET, |_| None, |_| None).is_empty());
    }

    #[test]
    fn short_items_are_their_own_lines_and_old_ones_fade() {
        let keys: Vec<OrderKey> = (0..1000)
            .map(|i| key(1_000 + i * 10, 0, i as u32))
            .collect();
        let t = Tree::build(keys);
        let own = texts(1000, |_| Some(40));
        let v = t.view(8 * 1024, |i| own[i].as_deref(), |_| None);
        check_cover(&t, &v);
        assert!(v.iter().map(ViewLine::bytes).sum::<usize>() <= 8 * 1024);
        // The newest item has a line of its own, the oldest line covers more.
        let last = v.last().unwrap();
        assert_eq!(last.hi - last.lo, 1);
        assert!(matches!(last.text, LineText::Own(_)));
        assert!(v[0].hi - v[0].lo > 1);
        // The older half of the items is shown in fewer lines than the newer.
        let older = v.iter().filter(|l| l.hi <= 500).count();
        let newer = v.iter().filter(|l| l.lo >= 500).count();
        assert!(
            older * 2 < newer,
            "{older} lines for the older half, {newer} for the newer"
        );
        // Old lines with nothing written wait for a compaction.
        assert!(
            v[0].shown.contains("waits for a compaction"),
            "{}",
            v[0].shown
        );
    }

    #[test]
    fn two_short_lines_join_and_a_summary_is_used() {
        let keys = vec![key(1, 0, 1), key(2, 0, 2)];
        let t = Tree::build(keys);
        let root = t.root().unwrap().clone();
        let own = ["a".to_owned(), "b".to_owned()];
        let v = t.view(10, |i| Some(own[i].as_str()), |_| None);
        assert_eq!(v.len(), 1, "the budget holds only the root");
        assert_eq!(v[0].text, LineText::Joined("a | b".into()));
        let s = "both".to_owned();
        let v = t.view(
            10,
            |i| Some(own[i].as_str()),
            |l| (*l == root.line).then_some(s.as_str()),
        );
        assert_eq!(v[0].text, LineText::Summary("both".into()));
        assert_eq!(t.covers(&root), vec![key(1, 0, 1).id, key(2, 0, 2).id]);
    }

    #[test]
    fn a_late_item_renames_only_the_lines_above_it() {
        let keys: Vec<OrderKey> = (0..512).map(|i| key(i * 1000, 0, i as u32)).collect();
        let before = Tree::build(keys.clone());
        let mut with_late = keys;
        with_late.push(key(100_500, 0, 9999));
        let after = Tree::build(with_late);
        let names = |t: &Tree| {
            t.nodes()
                .iter()
                .map(|n| n.line)
                .collect::<std::collections::HashSet<_>>()
        };
        let (b, a) = (names(&before), names(&after));
        let lost = b.difference(&a).count();
        // Only the lines on the late item's path were renamed.
        assert!(lost <= 11, "{lost} lines renamed");
        assert_eq!(a.len(), b.len() + 2);
    }

    #[test]
    fn hostile_keys_keep_the_depth_bounded() {
        // Keys that differ one bit further each time: a chain, as deep as a
        // key has bits, never deeper.
        let keys: Vec<OrderKey> = (0..62).map(|i| key(1i64 << i, 0, 0)).collect();
        let t = Tree::build(keys);
        assert_eq!(t.keys().len(), 62);
        let v = t.view(DEFAULT_BUDGET, |_| Some("x"), |_| None);
        check_cover(&t, &v);
    }

    /// Items as (ms, counter, tag), which lines have a summary, item text
    /// lengths, and a budget.
    type History = (Vec<(i64, u32, u32)>, Vec<bool>, Vec<u16>, usize);

    fn history() -> impl Strategy<Value = History> {
        (
            prop::collection::vec((0i64..5_000, 0u32..3, 0u32..400), 0..200),
            prop::collection::vec(any::<bool>(), 0..400),
            prop::collection::vec(0u16..700, 200),
            256usize..20_000,
        )
    }

    proptest! {
        #[test]
        fn the_view_covers_every_item_once_in_order_within_its_size(
            (raw, summarized, lens, budget) in history(),
            shuffle in any::<u64>(),
        ) {
            let items: Vec<OrderKey> = raw.iter().map(|&(ms, c, t)| key(ms, c, t)).collect();
            let seq = sequence(&items, |k| *k, None);
            let tree = Tree::build(seq.clone());
            // Any set of summaries: some lines of the tree have one.
            let summaries: HashMap<RecordId, String> = tree
                .nodes()
                .iter()
                .zip(summarized.iter().cycle())
                .filter(|(_, s)| **s)
                .map(|(n, _)| (n.line, format!("summary of {}", n.items())))
                .collect();
            let own: Vec<Option<String>> = (0..seq.len())
                .map(|i| {
                    let l = lens[i % lens.len()] as usize;
                    (l <= MAX_LINE_BYTES).then(|| "y".repeat(l))
                })
                .collect();
            let view = tree.view(
                budget,
                |i| own[i].as_deref(),
                |l| summaries.get(l).map(String::as_str),
            );
            check_cover(&tree, &view);
            let bytes: usize = view.iter().map(ViewLine::bytes).sum();
            prop_assert!(bytes <= budget || view.len() == 1, "{bytes} > {budget}");
            for l in &view {
                prop_assert!(l.shown.len() <= MAX_LINE_BYTES + 64, "{}", l.shown.len());
            }

            // The same records in another order give the same tree and view.
            let mut shuffled = items;
            let mut state = shuffle | 1;
            for i in (1..shuffled.len()).rev() {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                shuffled.swap(i, (state % (i as u64 + 1)) as usize);
            }
            let again = Tree::build(sequence(&shuffled, |k| *k, None));
            prop_assert_eq!(&again, &tree);
            let view2 = again.view(
                budget,
                |i| own[i].as_deref(),
                |l| summaries.get(l).map(String::as_str),
            );
            prop_assert_eq!(view2, view);
        }
    }
}
