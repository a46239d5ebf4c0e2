//! The ingest of one new record: written by a writer that did not ingest it
//! (as one arrives from another machine after a sync), or through the normal
//! path by another process of this device, then caught up.

use std::time::{Duration, Instant};

use anyhow::ensure;

use super::SERVER_ROLE;
use super::corpus::{Rng, body};
use countersign::app::announcement::announce;
use countersign::core::hlc::Hlc;
use countersign::core::ids::Role;
use countersign::core::op::{Op, Send};
use countersign::store::Channel;
use countersign::store::StoreError;
use countersign::store::now_ms;

/// Repetitions of the incremental ingest.
const INGEST_REPS: usize = 50;

pub struct Incremental {
    /// catch_up of one record nobody on this device had ingested.
    pub fresh: Vec<Duration>,
    /// catch_up of one record its writer (another Channel) already ingested.
    pub known: Vec<Duration>,
    /// The bulk write of that one record (the journal fsynced, the feed written).
    pub fs_append: Vec<Duration>,
    /// Channel::append of one record (the writer's whole store path).
    pub append: Vec<Duration>,
}

impl Incremental {
    pub fn measure(channel: &mut Channel) -> anyhow::Result<Self> {
        let mut rng = Rng(42);
        let to = Role::new(SERVER_ROLE)?;
        let mut next_send = |i: usize| {
            let len = 200 + rng.below(800) as usize;
            Op::Send(Send {
                to: vec![to.clone()],
                topic: format!("incremental {i}"),
                body: body(&mut rng, len, false),
                decision_requested: true,
                ..Send::default()
            })
        };
        let mut me = Self {
            fresh: Vec::new(),
            known: Vec::new(),
            fs_append: Vec::new(),
            append: Vec::new(),
        };

        // A record written by a writer that did not ingest it (as from another
        // machine after a sync): this process verifies, inserts and folds it.
        let mut run = channel.bulk(&Role::new("qa")?, now_ms())?;
        for i in 0..INGEST_REPS + 3 {
            run.push(&next_send(i), now_ms(), Hlc::default());
            let t = Instant::now();
            run.flush()?;
            let fs_t = t.elapsed();
            let t = Instant::now();
            let r = channel.catch_up()?;
            let ingest_t = t.elapsed();
            ensure!(r.accepted == 1, "expected one new record, ingest saw {r:?}");
            if i >= 3 {
                me.fs_append.push(fs_t);
                me.fresh.push(ingest_t);
            }
        }
        drop(run);

        // A record written through the normal path by another process on this
        // device, which ingested it into the shared index itself.
        let mut other = Channel::open(channel.dir().clone(), channel.home().clone())?;
        let writer = announce(&mut other, &Role::new("infra")?)?;
        for i in 0..INGEST_REPS + 3 {
            let op = next_send(1000 + i);
            let t = Instant::now();
            other.append(&writer, |_| Ok::<_, StoreError>((op, ())))?;
            let append_t = t.elapsed();
            let t = Instant::now();
            channel.catch_up()?;
            let ingest_t = t.elapsed();
            if i >= 3 {
                me.append.push(append_t);
                me.known.push(ingest_t);
            }
        }
        Ok(me)
    }
}
