//! Tools that read the memory (toolset `memory`): memory_view, memory_zoom,
//! memory_read, memory_search, memory_thread, memory_date, memory_status.
//! Thin adapters over `app::memory` (and `app::backlog`); they never write.
//! docs/MEMORY.md says how to read it.
//!
//! Every session pays for these in tools/list (the default list must stay
//! within its budget with them), so they say only what the protocol needs:
//! their one annotation is `readOnlyHint` (MCP gives the destructive and
//! idempotent hints meaning only for tools that write), their descriptions
//! say in two short sentences what each is for and when to use it, and a
//! parameter whose name says it has no description; the refusals teach the
//! rest (`app::memory`).

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, tool, tool_router};

use super::Server;
use crate::app::backlog::{self, Backlog};
use crate::app::budget::Budget;
use crate::app::memory::{self, Dated, ItemLines, MemoryPage, Original, Zoomed};
use crate::app::memory_request::{
    DateRequest, ReadRequest, SearchRequest, ThreadRequest, ViewRequest, ZoomRequest,
};

#[tool_router(router = memory_router, vis = "pub(super)")]
impl Server {
    #[tool(output_schema = super::catalogued_output::<MemoryPage>(), description = concat!("The history as one-line summaries, oldest first. For an overview; to find something, memory_search first. ", super::provenance!()),
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true))]
    async fn memory_view(
        &self,
        Parameters(p): Parameters<ViewRequest>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |s| memory::memory_view_page(s, p.offset))
            .await
    }

    #[tool(output_schema = super::catalogued_output::<Zoomed>(), description = concat!("Opens line id+n into its two halves, or an item's text (n=1). For a line too vague to use. ", super::provenance!()),
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true))]
    async fn memory_zoom(
        &self,
        Parameters(p): Parameters<ZoomRequest>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |s| memory::memory_zoom(s, &p.id, p.n)).await
    }

    #[tool(output_schema = super::catalogued_output::<Original>(), description = concat!("An item's full text in pages, for an original memory_zoom cut. ", super::provenance!()),
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true))]
    async fn memory_read(
        &self,
        Parameters(p): Parameters<ReadRequest>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |s| memory::memory_read(s, &p.id, p.offset))
            .await
    }

    #[tool(output_schema = super::catalogued_output::<ItemLines>(), description = concat!("Finds items of the memory by words, best first. Start here when the task needs history. ", super::provenance!()),
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true))]
    async fn memory_search(
        &self,
        Parameters(p): Parameters<SearchRequest>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let ct = context.ct;
        self.run(move |s| {
            let cancelled = || ct.is_cancelled();
            let mut budget = Budget::search(&cancelled);
            memory::memory_search(s, &p.query, p.limit, &mut budget)
        })
        .await
    }

    #[tool(output_schema = super::catalogued_output::<ItemLines>(), description = concat!("The n items after line id, to read on from a hit; after a note, its session's. ", super::provenance!()),
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true))]
    async fn memory_thread(
        &self,
        Parameters(p): Parameters<ThreadRequest>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |s| memory::memory_thread(s, &p.id, p.n))
            .await
    }

    /// When a line's first and last items were written. For a line whose date matters
    /// beyond the one the view shows.
    #[tool(output_schema = super::catalogued_output::<Dated>(), annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true))]
    async fn memory_date(
        &self,
        Parameters(p): Parameters<DateRequest>,
    ) -> Result<CallToolResult, McpError> {
        self.run(move |s| memory::memory_date(s, &p.id)).await
    }

    /// How much of the memory waits for summaries: items, waiting lines, tasks ready, lines
    /// being written and paused, and from when items are still tentative. To decide whether
    /// a compaction is worth running; reading the memory never needs it.
    #[tool(output_schema = super::catalogued_output::<Backlog>(), annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true))]
    async fn memory_status(&self) -> Result<CallToolResult, McpError> {
        self.run(backlog::backlog).await
    }
}
