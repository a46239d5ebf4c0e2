//! The printed table: one row per measured budget, aligned, with a verdict.

use std::time::Duration;

#[derive(Default)]
pub struct Table {
    rows: Vec<[String; 5]>,
}

impl Table {
    /// `ratio` is how far inside the budget the value is (> 1 inside).
    pub fn row(
        &mut self,
        metric: &str,
        value: String,
        p99: impl Into<String>,
        budget: &str,
        ok: Option<bool>,
        ratio: f64,
    ) {
        let verdict = match ok {
            None => String::new(),
            Some(true) => "ok".to_owned(),
            Some(false) => format!("MISSED ({:.1}× over)", 1.0 / ratio.max(1e-9)),
        };
        self.rows.push([
            metric.to_owned(),
            value,
            p99.into(),
            budget.to_owned(),
            verdict,
        ]);
    }

    pub fn print(&self) {
        let head = ["metric", "measured (p50)", "p99", "budget", "verdict"];
        let mut w = head.map(|h| h.chars().count());
        for r in &self.rows {
            for (i, c) in r.iter().enumerate() {
                w[i] = w[i].max(c.chars().count());
            }
        }
        let fmt = |cells: [&str; 5]| {
            let mut s = String::new();
            for (i, c) in cells.iter().enumerate() {
                let pad = w[i] - c.chars().count();
                if i == 1 || i == 2 {
                    s.push_str(&" ".repeat(pad));
                    s.push_str(c);
                } else {
                    s.push_str(c);
                    s.push_str(&" ".repeat(pad));
                }
                s.push_str(" | ");
            }
            format!("| {}", s.trim_end())
        };
        println!("{}", fmt(head));
        println!(
            "|{}|",
            w.iter()
                .map(|n| "-".repeat(n + 2))
                .collect::<Vec<_>>()
                .join("|")
        );
        for r in &self.rows {
            println!("{}", fmt([&r[0], &r[1], &r[2], &r[3], &r[4]]));
        }
    }
}

pub fn fmt_ms_list(v: &[Duration]) -> String {
    v.iter()
        .map(|d| format!("{:.1}", d.as_secs_f64() * 1e3))
        .collect::<Vec<_>>()
        .join(", ")
}
