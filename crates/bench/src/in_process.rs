//! The read tools' app functions called in this process, without MCP or JSON
//! text: what the server adds is the difference with the same calls over stdio.

use std::time::{Duration, Instant};

use super::sampler::{MIN_CALLS, Sampler};
use super::seed::Seeded;
use super::{RARE_TERM, SERVER_ROLE};
use countersign::app::Session;
use countersign::app::budget::Budget;
use countersign::app::listing::{ListFilter, list_messages};
use countersign::app::search::{SearchFilter, search_messages};
use countersign::core::ids::Role;
use countersign::store::Channel;

/// Times calls of a function in this process, as the server section times
/// tool calls (see [`Sampler`]); returns the samples and the size of the last
/// answer as JSON text.
fn timed_local<T: serde::Serialize>(
    calls: usize,
    mut f: impl FnMut() -> anyhow::Result<T>,
) -> anyhow::Result<(Vec<Duration>, usize)> {
    let mut sampler = Sampler::new(calls, MIN_CALLS / 2);
    let mut bytes = 0;
    while sampler.more() {
        let t = Instant::now();
        let v = f()?;
        sampler.record(t.elapsed());
        bytes = serde_json::to_string(&v).map_or(0, |s| s.len());
    }
    Ok((sampler.into_samples(), bytes))
}

/// The read tools' app functions timed in this process: what MCP adds is the
/// difference with the same calls over stdio.
pub struct InProcess {
    pub inbox: Vec<Duration>,
    pub list: Vec<Duration>,
    pub search: Vec<Duration>,
    pub inbox_bytes: usize,
    pub list_bytes: usize,
    pub search_bytes: usize,
}

impl InProcess {
    /// `search_messages` for `query` as the MCP section calls it, in this
    /// process; the samples and the answer's size as JSON text.
    pub fn search(
        seeded: &Seeded,
        calls: usize,
        query: &str,
    ) -> anyhow::Result<(Vec<Duration>, usize)> {
        let channel = Channel::open(seeded.dir.clone(), seeded.home.clone())?;
        let mut s = Session::new(channel, Some(Role::new(SERVER_ROLE)?))?;
        let never = || false;
        let filter = SearchFilter::default();
        timed_local(calls, || {
            let mut budget = Budget::search(&never);
            search_messages(&mut s, query, &filter, 50, None, &mut budget)
                .map_err(|e| anyhow::anyhow!("{e}"))
        })
    }

    pub fn measure(seeded: &Seeded, calls: usize) -> anyhow::Result<Self> {
        let channel = Channel::open(seeded.dir.clone(), seeded.home.clone())?;
        let mut s = Session::new(channel, Some(Role::new(SERVER_ROLE)?))?;
        let err = |e: countersign::app::AppError| anyhow::anyhow!("{e}");
        let (inbox, inbox_bytes) = timed_local(calls, || {
            countersign::app::inbox::read_inbox(&mut s, true, 50, None).map_err(err)
        })?;
        let (list, list_bytes) = timed_local(calls, || {
            list_messages(&mut s, &ListFilter::default(), 50, None).map_err(err)
        })?;
        let (search, search_bytes) = timed_local(calls, || {
            let never = || false;
            let mut budget = Budget::search(&never);
            let filter = SearchFilter::default();
            search_messages(&mut s, RARE_TERM, &filter, 50, None, &mut budget).map_err(err)
        })?;
        Ok(Self {
            inbox,
            list,
            search,
            inbox_bytes,
            list_bytes,
            search_bytes,
        })
    }
}
