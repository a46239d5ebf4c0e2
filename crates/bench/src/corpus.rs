//! The text the bench writes: a deterministic generator and a technical
//! vocabulary (file paths, ticket ids, function names), so every run seeds the
//! same channel and sends the same bodies.

use super::RARE_TERM;

/// A tiny deterministic generator (splitmix64): the same channel every run.
pub struct Rng(pub u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    pub fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    pub fn pick<'a>(&mut self, list: &[&'a str]) -> &'a str {
        list[self.below(list.len() as u64) as usize]
    }
}

const AREAS: &[&str] = &[
    "auth",
    "billing",
    "search",
    "ingest",
    "sync",
    "the board",
    "the CLI",
    "onboarding",
    "payments",
    "the API gateway",
    "notifications",
    "the scheduler",
    "exports",
    "the admin panel",
    "rate limits",
    "session storage",
    "the web client",
    "mobile",
    "CI",
    "the staging cluster",
];
const HEADS: &[&str] = &[
    "flaky test in",
    "schema change for",
    "review request:",
    "deploy plan for",
    "question about",
    "regression in",
    "perf budget for",
    "refactor of",
    "incident follow-up:",
    "API contract for",
    "rollout of",
    "design note:",
    "cleanup in",
    "bug in",
    "docs for",
];
const WORDS: &[&str] = &[
    "the",
    "a",
    "we",
    "it",
    "this",
    "that",
    "should",
    "could",
    "will",
    "now",
    "after",
    "before",
    "because",
    "and",
    "but",
    "or",
    "not",
    "only",
    "still",
    "again",
    "first",
    "then",
    "also",
    "maybe",
    "schema",
    "migration",
    "endpoint",
    "cache",
    "latency",
    "deploy",
    "rollback",
    "retry",
    "token",
    "session",
    "index",
    "query",
    "review",
    "build",
    "pipeline",
    "flaky",
    "test",
    "fixture",
    "config",
    "timeout",
    "header",
    "payload",
    "client",
    "server",
    "queue",
    "worker",
    "lock",
    "transaction",
    "commit",
    "branch",
    "release",
    "feature",
    "flag",
    "metric",
    "dashboard",
    "alert",
    "log",
    "trace",
    "error",
    "panic",
    "crash",
    "memory",
    "leak",
    "thread",
    "async",
    "handler",
    "route",
    "request",
    "response",
    "field",
    "column",
    "table",
    "row",
    "batch",
    "job",
    "cron",
    "backfill",
    "replica",
    "primary",
    "failover",
    "quota",
    "limit",
    "budget",
    "p99",
    "regression",
    "benchmark",
    "profile",
    "allocation",
    "buffer",
    "stream",
    "socket",
    "reconnect",
    "backoff",
    "jitter",
    "version",
    "upgrade",
    "dependency",
    "lockfile",
    "vendor",
    "license",
    "audit",
    "permission",
    "role",
    "scope",
    "secret",
    "rotation",
    "certificate",
    "expiry",
    "staging",
    "production",
    "canary",
    "rollout",
    "percent",
    "users",
    "tenant",
    "region",
    "latency",
    "is",
    "was",
    "looks",
    "broken",
    "fixed",
    "green",
    "red",
    "blocked",
    "done",
    "pending",
    "merged",
    "reverted",
    "landed",
];
const VERBS: &[&str] = &[
    "parse", "load", "flush", "retry", "open", "sync", "verify", "fold", "render", "spawn",
];
const NOUNS: &[&str] = &[
    "config", "session", "segment", "token", "batch", "inbox", "cursor", "thread", "index", "head",
];

pub fn topic(rng: &mut Rng, prefix: &str) -> String {
    let head = if prefix.is_empty() {
        rng.pick(HEADS)
    } else {
        prefix
    };
    let mut t = format!("{head} {}", rng.pick(AREAS));
    if rng.chance(0.3) {
        t.push_str(&format!(" (CS-{})", 1000 + rng.below(9000)));
    }
    t
}

/// Prose of exactly `len` characters: sentences of the common vocabulary with
/// file paths, ticket numbers and function names mixed in; `planted` puts the
/// rare search term in.
pub fn body(rng: &mut Rng, len: usize, planted: bool) -> String {
    let mut out = String::with_capacity(len + 120);
    let mut plant = planted;
    while out.len() < len {
        let words = 6 + rng.below(11);
        for w in 0..words {
            let word = match rng.below(40) {
                0 => format!("src/{}/{}.rs", rng.pick(NOUNS), rng.pick(VERBS)),
                1 => format!("CS-{}", 1000 + rng.below(9000)),
                2 => format!("{}_{}()", rng.pick(VERBS), rng.pick(NOUNS)),
                _ => rng.pick(WORDS).to_owned(),
            };
            if w == 0 {
                let mut c = word.chars();
                let first = c.next().map(|f| f.to_ascii_uppercase()).unwrap_or(' ');
                out.push(first);
                out.push_str(c.as_str());
            } else {
                out.push(' ');
                out.push_str(&word);
            }
            if plant && w == 2 {
                out.push(' ');
                out.push_str(RARE_TERM);
                plant = false;
            }
        }
        out.push_str(if rng.chance(0.2) { ".\n" } else { ". " });
    }
    if planted && !out[..len.min(out.len())].contains(RARE_TERM) {
        // Keep the term whole inside the cut.
        out = format!("{RARE_TERM} {out}");
    }
    out.truncate(len);
    out.trim_end().to_owned() + "."
}
