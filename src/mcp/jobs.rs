//! The job tools of compaction (toolset `jobs`, served only with
//! `countersign mcp --tools jobs`): compact_next, compact_read,
//! compact_submit, compact_release, compact_resume. Thin adapters over
//! `app::compaction`; the compaction clock is read here, once per call.

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::{ErrorData as McpError, tool, tool_router};

use super::Server;
use crate::app::compaction::{
    self, JobAnswer, JobPage, NextRequest, ReadRequest, ReleaseRequest, Released, ResumeRequest,
    Resumed, SubmitRequest, Submitted,
};

#[tool_router(router = jobs_router, vis = "pub(super)")]
impl Server {
    #[tool(output_schema = super::catalogued_output::<JobAnswer>(), description = concat!(
        "Start (no worker) or continue a compaction worker: returns a job of up to 10 lines of \
         the channel's memory to summarize, its first page in text. status job: read every other \
         page (compact_read with next_offset until it is null; `pages` says how many), then \
         compact_submit (a refused submit gives the job back); done: stop; busy: retry after retry_after_s \
         or stop; paused: stop and report the paused lines. ", super::provenance!()),
        annotations(title = "Next compaction job", read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = false))]
    async fn compact_next(
        &self,
        Parameters(p): Parameters<NextRequest>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |s| compaction::compact_next(s, p.worker.as_deref(), compaction::now_ms()))
            .await
    }

    #[tool(output_schema = super::catalogued_output::<JobPage>(), description = concat!(
        "Read the page of a job at offset (next_offset of the last answer). ", super::provenance!()),
        annotations(title = "Read a job page", read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false))]
    async fn compact_read(
        &self,
        Parameters(p): Parameters<ReadRequest>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |s| compaction::compact_read(s, &p.job, p.offset, compaction::now_ms()))
            .await
    }

    #[tool(output_schema = super::catalogued_output::<Submitted>(), description = concat!(
        "Send a job's lines once every page was read: writes the summaries and returns the next \
         job in `next` (same statuses as compact_next). ", super::provenance!()),
        annotations(title = "Submit a compaction job", read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = false))]
    async fn compact_submit(
        &self,
        Parameters(p): Parameters<SubmitRequest>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |s| compaction::compact_submit(s, &p.job, &p.lines, compaction::now_ms()))
            .await
    }

    /// Give a job back unfinished (failed=true when its tasks cannot be done, line= the one
    /// task that cannot; a line that fails 3 times pauses).
    #[tool(output_schema = super::catalogued_output::<Released>(), annotations(
        title = "Release a compaction job",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = false,
        open_world_hint = false
    ))]
    async fn compact_release(
        &self,
        Parameters(p): Parameters<ReleaseRequest>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |s| {
            compaction::compact_release(
                s,
                &p.job,
                &p.reason,
                p.failed,
                p.line.as_deref(),
                compaction::now_ms(),
            )
        })
        .await
    }

    /// Offer a paused line to workers again.
    #[tool(output_schema = super::catalogued_output::<Resumed>(), annotations(
        title = "Resume a paused line",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn compact_resume(
        &self,
        Parameters(p): Parameters<ResumeRequest>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |s| compaction::compact_resume(s, &p.line))
            .await
    }
}
