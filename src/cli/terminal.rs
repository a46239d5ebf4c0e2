//! A person's terminal: whether one is there, colour, aligned columns, ages
//! and the pager.
//!
//! Colour goes only to a terminal, and never when `NO_COLOR` is set or
//! `TERM=dumb`: piped output (a script, a hook, `grep`) carries no escape
//! code. Long output on a terminal goes through `$PAGER` (`less -FRX` when
//! unset, which prints a short text as it is). Cells are peers' text already
//! made safe by the caller (`core::peer_text`); this module only lays them
//! out, and must not decide what a command prints.

use std::io::{IsTerminal as _, Write as _};
use std::process::{Command, Stdio};

use crate::cli::output::out;

/// Variables an agent's shell sets (Claude Code, Codex): a command run
/// there is an agent's, even in a pseudo-terminal.
const AGENT_VARS: [&str; 3] = [
    "CLAUDECODE",
    "CODEX_SANDBOX",
    "CODEX_SANDBOX_NETWORK_DISABLED",
];

/// True when stdout is a terminal.
pub fn stdout_is_terminal() -> bool {
    std::io::stdout().is_terminal()
}

/// True for a person at a terminal: stdin and stdout are terminals and no
/// agent's shell variable is set.
pub fn person_at_terminal() -> bool {
    std::io::stdin().is_terminal()
        && stdout_is_terminal()
        && !AGENT_VARS
            .iter()
            .any(|v| std::env::var_os(v).is_some_and(|x| !x.is_empty()))
}

/// True when output may carry colour: stdout is a terminal, `NO_COLOR` is
/// unset or empty, and `TERM` is not `dumb`.
pub fn colour() -> bool {
    let no_colour = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let dumb = std::env::var("TERM").is_ok_and(|t| t == "dumb");
    stdout_is_terminal() && !no_colour && !dumb
}

/// A colour for a cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Paint {
    /// As it is.
    Plain,
    /// Less important (times, counts).
    Dim,
    /// Ids.
    Yellow,
    /// Roles.
    Cyan,
    /// Something asked of the reader.
    Red,
    /// Something done.
    Green,
    /// Headings.
    Bold,
}

impl Paint {
    fn code(self) -> Option<&'static str> {
        match self {
            Self::Plain => None,
            Self::Dim => Some("2"),
            Self::Yellow => Some("33"),
            Self::Cyan => Some("36"),
            Self::Red => Some("31"),
            Self::Green => Some("32"),
            Self::Bold => Some("1"),
        }
    }
}

/// Paints text when `on`, else leaves it as it is.
pub fn paint(text: &str, how: Paint, on: bool) -> String {
    match how.code() {
        Some(code) if on && !text.is_empty() => format!("\x1b[{code}m{text}\x1b[0m"),
        _ => text.to_owned(),
    }
}

/// Rows of cells printed with aligned columns: every column but the last
/// padded to its widest cell, two spaces between columns.
#[derive(Debug, Default)]
pub struct Table {
    rows: Vec<Vec<(String, Paint)>>,
    indent: usize,
    marked: Option<usize>,
}

impl Table {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts every line with `n` spaces.
    pub fn indent(mut self, n: usize) -> Self {
        self.indent = n;
        self
    }

    /// Marks row `i` with `>` in its indent (of at least 2).
    pub fn mark(&mut self, i: Option<usize>) {
        self.marked = i;
    }

    /// Adds a row (safe text and its paint per cell).
    pub fn row(&mut self, cells: Vec<(String, Paint)>) {
        self.rows.push(cells);
    }

    /// The table as lines, painted when `on`.
    pub fn render(&self, on: bool) -> String {
        let columns = self.rows.iter().map(Vec::len).max().unwrap_or(0);
        let mut widths = vec![0usize; columns];
        for row in &self.rows {
            for (i, (cell, _)) in row.iter().enumerate() {
                widths[i] = widths[i].max(cell.chars().count());
            }
        }
        let mut text = String::new();
        for (n, row) in self.rows.iter().enumerate() {
            let mut line = " ".repeat(self.indent);
            if self.marked == Some(n) && self.indent >= 2 {
                line.replace_range(0..1, ">");
            }
            for (i, (cell, how)) in row.iter().enumerate() {
                if i > 0 {
                    line.push_str("  ");
                }
                line.push_str(&paint(cell, *how, on));
                if i + 1 < row.len() {
                    let pad = widths[i] - cell.chars().count();
                    line.extend(std::iter::repeat_n(' ', pad));
                }
            }
            text.push_str(line.trim_end());
            text.push('\n');
        }
        text
    }
}

/// How long ago `then_ms` was at `now_ms`, short: `now`, `5m`, `3h`, `4d`,
/// `7w`.
pub fn age(then_ms: i64, now_ms: i64) -> String {
    let s = (now_ms - then_ms).max(0) / 1000;
    match s {
        0..60 => "now".to_owned(),
        60..3_600 => format!("{}m", s / 60),
        3_600..86_400 => format!("{}h", s / 3_600),
        86_400..1_209_600 => format!("{}d", s / 86_400),
        _ => format!("{}w", s / 604_800),
    }
}

/// Lines from which output on a terminal goes through the pager.
const PAGE_FROM_LINES: usize = 20;

/// Prints `text`: through `$PAGER` (default `less -FRX`) when stdout is a
/// terminal and the text is long, else as it is. A pager that cannot start
/// is passed over; an empty `$PAGER` or `cat` means none.
pub fn page(text: &str) {
    if !stdout_is_terminal() || text.lines().count() < PAGE_FROM_LINES {
        out!("{text}");
        return;
    }
    let pager = std::env::var("PAGER").unwrap_or_else(|_| "less -FRX".to_owned());
    let mut words = pager.split_whitespace();
    let Some(program) = words.next().filter(|p| *p != "cat") else {
        out!("{text}");
        return;
    };
    let spawned = Command::new(program)
        .args(words)
        .env(
            "LESS",
            std::env::var("LESS").unwrap_or_else(|_| "FRX".to_owned()),
        )
        .stdin(Stdio::piped())
        .spawn();
    let Ok(mut child) = spawned else {
        out!("{text}");
        return;
    };
    if let Some(mut input) = child.stdin.take() {
        // A pager quit early (`q`) closes its input: the rest is not wanted.
        let _ = input.write_all(text.as_bytes());
    }
    let _ = child.wait();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_align_and_the_last_is_not_padded() {
        let mut t = Table::new();
        t.row(vec![("a".into(), Paint::Plain), ("x".into(), Paint::Plain)]);
        t.row(vec![
            ("long".into(), Paint::Red),
            ("y z".into(), Paint::Plain),
        ]);
        assert_eq!(t.render(false), "a     x\nlong  y z\n");
        assert_eq!(t.render(true), "a     x\n\x1b[31mlong\x1b[0m  y z\n");
    }

    #[test]
    fn ages_are_short() {
        let m = 60_000;
        assert_eq!(age(0, 59_999), "now");
        assert_eq!(age(0, 5 * m), "5m");
        assert_eq!(age(0, 3 * 60 * m), "3h");
        assert_eq!(age(0, 4 * 24 * 60 * m), "4d");
        assert_eq!(age(0, 21 * 24 * 60 * m), "3w");
        assert_eq!(age(10, 0), "now", "a clock behind gives no negative age");
    }
}
