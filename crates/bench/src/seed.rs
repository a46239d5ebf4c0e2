//! The bench's throwaway channel: a scratch folder with its own home, and a
//! channel of four roles seeded with N messages through the store's bulk
//! path ([`BulkFeed`]): records chained and signed exactly as a normal append
//! makes them, with one fsync (the journal's) per batch.

use std::collections::VecDeque;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use indicatif::{ProgressBar, ProgressStyle};

use super::ROLES;
use super::corpus::{Rng, body, topic};
use countersign::app::init::create_channel;
use countersign::core::hlc::Hlc;
use countersign::core::ids::{RecordId, Role};
use countersign::core::op::{Ids, Op, Send};
use countersign::core::vocab::{Kind, WorkStatus};
use countersign::store::survey;
use countersign::store::{BulkFeed, now_ms};
use countersign::store::{Channel, ChannelDir, Home};

/// Records per bulk write (one fsync each, the journal's).
const BATCH: usize = 2048;

/// The throwaway folder; removed on drop unless kept.
pub struct Scratch {
    pub root: PathBuf,
    keep: bool,
}

impl Scratch {
    pub fn new(base: Option<&Path>, keep: bool) -> anyhow::Result<Self> {
        let base = base.map_or_else(std::env::temp_dir, Path::to_path_buf);
        let root = base.join(format!(
            "countersign-bench-{}-{}",
            std::process::id(),
            now_ms()
        ));
        fs::create_dir_all(&root).with_context(|| format!("creating {}", root.display()))?;
        Ok(Self { root, keep })
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if !self.keep {
            let _ = fs::remove_dir_all(&self.root);
        }
    }
}

/// What setup made.
pub struct Seeded {
    pub dir: ChannelDir,
    pub home: Home,
    pub home_path: PathBuf,
    pub messages: usize,
    pub records: usize,
    pub replies: usize,
    pub multi: usize,
    pub rare: usize,
    pub reads: usize,
    pub feed_bytes: u64,
    pub segments: usize,
}

/// A message the generator remembers, to reply to it.
struct Recent {
    id: RecordId,
    from: usize,
    to: Vec<usize>,
    topic: String,
    kind: Option<Kind>,
}

/// Creates the channel and writes `n` messages over 45 days ending ten
/// minutes ago, with replies, status broadcasts and read state.
pub fn seed(root: &Path, n: usize) -> anyhow::Result<Seeded> {
    let home_path = root.join("home");
    let home = Home::at(home_path.clone());
    let dir = create_channel(&root.join("channel"), &ROLES, "bench", &home)?;
    let mut channel = Channel::open(dir.clone(), home.clone())?;
    let roles: Vec<Role> = ROLES
        .iter()
        .map(|r| Role::new(r))
        .collect::<Result<_, _>>()?;
    let span: i64 = 45 * 86_400_000;
    let t0 = now_ms() - 600_000 - span;
    let step = (span / n as i64).max(1);
    let mut runs: Vec<BulkFeed> = Vec::new();
    for r in &roles {
        runs.push(channel.bulk(r, t0 - 60_000)?);
    }
    let bar = progress_bar(n, "seeding", "messages");
    let mut rng = Rng(0x5eed_cafe);
    let mut seen = Hlc::default();
    let mut recent: VecDeque<Recent> = VecDeque::with_capacity(64);
    let mut inbox: Vec<Vec<RecordId>> = vec![Vec::new(); roles.len()];
    let (mut records, mut replies, mut multi, mut rare, mut reads) = (0, 0, 0, 0, 0);
    // The last 3% of the history stays unread, as a live inbox would.
    let reads_until = n - n * 3 / 100;
    for i in 0..n {
        let now = t0 + i as i64 * step + rng.below(step as u64) as i64;
        let from = rng.below(roles.len() as u64) as usize;
        let run = &mut runs[from];

        // Now and then the author catches up on its mail: delivery, then reads.
        if i < reads_until && rng.chance(0.2) && !inbox[from].is_empty() {
            let ids = std::mem::take(&mut inbox[from]);
            let read: Vec<RecordId> = ids.iter().copied().filter(|_| rng.chance(0.85)).collect();
            seen = run.push(&Op::Opened(Ids { ids }), now, seen).header.hlc;
            reads += 1;
            if !read.is_empty() {
                seen = run.push(&Op::Read(Ids { ids: read }), now, seen).header.hlc;
                reads += 1;
            }
        }

        let roll = rng.below(100);
        let parent = if roll < 25 {
            recent.iter().rev().find(|m| m.to.contains(&from))
        } else {
            None
        };
        let (to, topic, kind, reply_to, work_status, decision) = if let Some(m) = parent {
            replies += 1;
            let to: Vec<usize> = if m.to.len() > 1 && rng.chance(0.5) {
                let mut aud: Vec<usize> =
                    m.to.iter()
                        .copied()
                        .chain([m.from])
                        .filter(|r| *r != from)
                        .collect();
                aud.sort_unstable();
                aud.dedup();
                aud
            } else {
                vec![m.from]
            };
            let topic: String = if m.topic.starts_with("Re: ") {
                m.topic.clone()
            } else {
                format!("Re: {}", m.topic)
            };
            let kind = (m.kind == Some(Kind::Question)).then_some(Kind::Answer);
            (
                to,
                topic.chars().take(80).collect(),
                kind,
                Some(m.id),
                None,
                true,
            )
        } else if roll < 33 {
            let to: Vec<usize> = (0..roles.len()).filter(|r| *r != from).collect();
            let ws = [
                None,
                Some(WorkStatus::InProgress),
                Some(WorkStatus::DoneLocal),
                Some(WorkStatus::Blocked),
            ];
            (
                to,
                topic(&mut rng, "status:"),
                Some(Kind::Status),
                None,
                ws[rng.below(4) as usize],
                false,
            )
        } else {
            let mut to = rng.below(roles.len() as u64 - 1) as usize;
            if to >= from {
                to += 1;
            }
            let kinds = [
                None,
                None,
                Some(Kind::Bug),
                Some(Kind::Feat),
                Some(Kind::Question),
                Some(Kind::Question),
            ];
            let kind = kinds[rng.below(kinds.len() as u64) as usize];
            (vec![to], topic(&mut rng, ""), kind, None, None, true)
        };
        if to.len() > 1 {
            multi += 1;
        }
        let planted = rng.chance(0.002);
        rare += usize::from(planted);
        let len = 50 + (1950.0 * rng.unit().powi(2)) as usize;
        let send = Send {
            to: to.iter().map(|r| roles[*r].clone()).collect(),
            topic: topic.clone(),
            body: body(&mut rng, len, planted),
            action_required: kind.is_some() && to.len() == 1 && rng.chance(0.1),
            reply_to,
            kind,
            work_status,
            addenda: Default::default(),
            decision_requested: decision,
            ..Send::default()
        };
        let rec = run.push(&Op::Send(send), now, seen);
        seen = rec.header.hlc;
        let id = rec.id;
        for r in &to {
            inbox[*r].push(id);
        }
        if recent.len() == 64 {
            recent.pop_front();
        }
        recent.push_back(Recent {
            id,
            from,
            to,
            topic,
            kind,
        });
        if run.pending() >= BATCH {
            records += run.flush()?;
        }
        bar.inc(1);
    }
    for run in &mut runs {
        records += run.flush()?;
    }
    bar.finish_and_clear();
    drop(runs);
    let (mut feed_bytes, mut segments) = (0, 0);
    for (_, path) in survey::list_feeds(&dir.feeds())? {
        for seg in survey::list_segments(&path)? {
            feed_bytes += fs::metadata(&seg.path)?.len();
            segments += 1;
        }
    }
    // The owner's admits (one per role) were written by `bulk` itself.
    records += roles.len();
    Ok(Seeded {
        dir,
        home,
        home_path,
        messages: n,
        records,
        replies,
        multi,
        rare,
        reads,
        feed_bytes,
        segments,
    })
}

/// A progress bar of `len` steps, labelled `what`, counting `unit`.
pub(super) fn progress_bar(len: usize, what: &str, unit: &str) -> ProgressBar {
    let template = format!("{{spinner}} {what} [{{bar:40}}] {{pos}}/{{len}} {unit} ({{eta}})");
    ProgressBar::new(len as u64).with_style(
        ProgressStyle::with_template(&template)
            .expect("the template is valid")
            .progress_chars("=> "),
    )
}
