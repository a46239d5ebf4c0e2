//! The waiting tools: wait_for_reply and wait_for_mail.
//!
//! A wait looks, then sleeps until the folder watcher reports a change or its
//! poll interval passes (the rescan that covers folders without events), and
//! looks again; the session is locked only while it looks. The last look
//! happens at the deadline, never a full interval after it.

use std::time::{Duration, Instant};

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::{ErrorData as McpError, tool, tool_router};

use super::Server;
use crate::app::wait::{
    MailNews, MailSnapshot, MailWait, MailWaitRequest, ReplyWait, ReplyWaitRequest, WAIT_CAP_S,
    check_wait, mail_snapshot, reply_check, reply_target, timed_out,
};

/// Sleeps until the folder changes, `interval` passes, or `deadline` comes.
async fn nap(
    changes: &mut Option<tokio::sync::watch::Receiver<u64>>,
    interval: Duration,
    deadline: Instant,
) {
    let left = deadline.saturating_duration_since(Instant::now());
    let sleep = tokio::time::sleep(interval.min(left));
    match changes {
        Some(rx) => {
            tokio::select! {
                changed = rx.changed() => {
                    if changed.is_err() {
                        // The watcher stopped: rescans alone from now on.
                        *changes = None;
                    }
                }
                () = sleep => {}
            }
        }
        None => sleep.await,
    }
}

#[tool_router(router = wait_router, vis = "pub(super)")]
impl Server {
    /// Wait for an unread reply to your message and return it, or after at most 50 s
    /// {timed_out, retry}: call again.
    #[tool(output_schema = super::catalogued_output::<crate::app::wait::ReplyWait>(), annotations(
        title = "Wait for a reply",
        read_only_hint = true,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn wait_for_reply(
        &self,
        Parameters(p): Parameters<ReplyWaitRequest>,
    ) -> Result<CallToolResult, McpError> {
        let started = Instant::now();
        let (timeout, interval) = (p.timeout_s, p.poll_interval_s);
        let (id, after) = (p.message_id.clone(), p.after_id.clone());
        let target = self
            .blocking(move |s| {
                check_wait(timeout, interval)?;
                reply_target(s, &id, after.as_deref())
            })
            .await?;
        let (parent, after_n) = match target {
            Ok(t) => t,
            Err(e) => return self.answer::<ReplyWait>(Err(e)),
        };
        let deadline = started + Duration::from_secs_f64(timeout.min(WAIT_CAP_S));
        let mut changes = self.folder_changes();
        loop {
            let include_read = p.include_read;
            let found = self
                .blocking(move |s| reply_check(s, &parent, after_n, include_read))
                .await?;
            match found {
                Ok(Some(row)) => return self.answer(Ok(ReplyWait::Reply(Box::new(row)))),
                Ok(None) => {}
                Err(e) => return self.answer::<ReplyWait>(Err(e)),
            }
            if Instant::now() >= deadline {
                let out = timed_out(started.elapsed().as_secs_f64(), "in reply");
                return self.answer(Ok(ReplyWait::TimedOut(out)));
            }
            nap(&mut changes, Duration::from_secs_f64(interval), deadline).await;
        }
    }

    /// Wait until something NEW calls for you: returns {pending}, or after at most 50 s
    /// {timed_out, retry}: call again.
    #[tool(output_schema = super::catalogued_output::<crate::app::wait::MailWait>(), annotations(
        title = "Wait for mail",
        read_only_hint = true,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn wait_for_mail(
        &self,
        Parameters(p): Parameters<MailWaitRequest>,
    ) -> Result<CallToolResult, McpError> {
        let started = Instant::now();
        let (timeout, interval) = (p.timeout_s, p.poll_interval_s);
        let entry = self
            .blocking(move |s| {
                check_wait(timeout, interval)?;
                mail_snapshot(s)
            })
            .await?;
        let entry = match entry {
            Ok(e) => e,
            Err(e) => return self.answer::<MailWait>(Err(e)),
        };
        let pending_at_entry = entry.counts();
        let mut known = if p.ignore_backlog {
            entry.clone()
        } else {
            MailSnapshot::default()
        };
        let deadline = started + Duration::from_secs_f64(timeout.min(WAIT_CAP_S));
        let mut changes = self.folder_changes();
        let mut now = entry;
        loop {
            let news = now.news_since(&known);
            if !news.is_empty() {
                return self.answer(Ok(MailWait::News(MailNews {
                    pending: news,
                    pending_at_entry,
                    timed_out: false,
                })));
            }
            known.retain_present(&now);
            if Instant::now() >= deadline {
                let mut out = timed_out(started.elapsed().as_secs_f64(), "for you");
                out.pending_at_entry = Some(pending_at_entry);
                return self.answer(Ok(MailWait::TimedOut(out)));
            }
            nap(&mut changes, Duration::from_secs_f64(interval), deadline).await;
            now = match self.blocking(mail_snapshot).await? {
                Ok(s) => s,
                Err(e) => return self.answer::<MailWait>(Err(e)),
            };
        }
    }
}
