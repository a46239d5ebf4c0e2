//! The pages of a compaction job: how a job's text is cut for a worker that
//! reads it a page at a time.
//!
//! A page breaks only between lines, so every source line a page shows
//! starts with its mark (`| `) and no part of peer text can stand at the top
//! of a page looking like the job's own words. A single line longer than a
//! page is the one exception: it is cut, and each page it runs on to starts
//! with the mark again when the line had it. Offsets count characters of the
//! job's text (the mark put back is not part of it). Pure: it owns the cut
//! and nothing else; what a job says is `app::compaction`'s.

/// The mark every line of peer text in a job starts with.
pub const MARK: &str = "| ";

/// One page of a job's text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Page {
    /// Where the page starts in the job's text (characters).
    pub start: usize,
    /// Where it ends, exclusive (characters).
    pub end: usize,
    /// Whether it starts inside a marked line, so it shows [`MARK`] first.
    pub remark: bool,
}

/// `text` cut into pages of at most `limit` characters each as shown
/// ([`page_text`]), breaking only after a line break unless one line alone
/// is longer than a page. At least one page, even for an empty text.
/// `limit` is raised to a few characters past the mark if smaller.
pub fn pages(text: &str, limit: usize) -> Vec<Page> {
    let mark = MARK.chars().count();
    let limit = limit.max(mark + 1);
    let mut out = Vec::new();
    // The page being filled: where it starts, whether it shows the mark
    // first, and the characters it shows so far.
    let mut start = 0usize;
    let mut remark = false;
    let mut used = 0usize;
    let mut at = 0usize;
    for line in text.split_inclusive('\n') {
        let len = line.chars().count();
        if used + len <= limit {
            used += len;
            at += len;
            continue;
        }
        if used > 0 {
            out.push(Page {
                start,
                end: at,
                remark,
            });
            start = at;
            remark = false;
            used = 0;
        }
        if len <= limit {
            used = len;
            at += len;
            continue;
        }
        // One line longer than a page: cut it, marking each further piece
        // when the line is marked.
        let marked = line.starts_with(MARK);
        let mut left = len;
        let mut first = true;
        while left > 0 {
            // A further piece of a marked line shows the mark first.
            let again = !first && marked;
            let room = if again { limit - mark } else { limit };
            if left <= room {
                start = at;
                remark = again;
                used = if again { mark } else { 0 } + left;
                at += left;
                left = 0;
            } else {
                out.push(Page {
                    start: at,
                    end: at + room,
                    remark: again,
                });
                at += room;
                left -= room;
            }
            first = false;
        }
    }
    if used > 0 || out.is_empty() {
        out.push(Page {
            start,
            end: at,
            remark,
        });
    }
    out
}

/// What page `page` of `text` shows: its characters, after [`MARK`] when it
/// starts inside a marked line.
pub fn page_text(text: &str, page: &Page) -> String {
    let body = text.chars().skip(page.start).take(page.end - page.start);
    if page.remark {
        MARK.chars().chain(body).collect()
    } else {
        body.collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(text: &str, limit: usize) -> Vec<String> {
        pages(text, limit)
            .iter()
            .map(|p| page_text(text, p))
            .collect()
    }

    #[test]
    fn pages_break_between_lines_and_cover_the_text() {
        let text = "head\n| one one\n| two two\nend\n";
        let ps = pages(text, 12);
        assert_eq!(ps.first().map(|p| p.start), Some(0));
        assert_eq!(ps.last().map(|p| p.end), Some(text.chars().count()));
        for w in ps.windows(2) {
            assert_eq!(w[0].end, w[1].start, "no gap, no overlap");
        }
        let got = shown(text, 12);
        assert_eq!(got, ["head\n", "| one one\n", "| two two\n", "end\n"]);
        assert_eq!(shown(text, 100), [text]);
        assert_eq!(shown("", 10), [""]);
        assert_eq!(shown("no break at the end", 100), ["no break at the end"]);
    }

    #[test]
    fn a_line_longer_than_a_page_is_marked_on_every_page_it_spans() {
        let long = format!("| {}\n", "x".repeat(25));
        let text = format!("own\n{long}after\n");
        let got = shown(&text, 10);
        assert!(got.iter().all(|p| p.chars().count() <= 10), "{got:?}");
        assert_eq!(got[0], "own\n");
        for p in &got[1..got.len() - 1] {
            assert!(p.starts_with(MARK), "{got:?}");
        }
        // The cut pieces put back together are the line.
        let joined: String = got[1..]
            .iter()
            .enumerate()
            .map(|(i, p)| if i == 0 { p.as_str() } else { &p[2..] })
            .collect();
        assert!(joined.starts_with(&long), "{joined}");
        // An unmarked long line is cut without a mark.
        let got = shown(&"y".repeat(25), 10);
        assert_eq!(got, ["y".repeat(10), "y".repeat(10), "y".repeat(5)]);
    }
}
