//! countersign: a coordination channel for coding-agent sessions with no server.
//!
//! # Layout
//! Arrows point down only: transports (`mcp`, `http`, `cli`) → [`app`] → [`store`] → [`core`].
//! Each arrow is a crate boundary (docs/ARCHITECTURE.md), so an import that
//! points up does not compile:
//! - [`core`] (`countersign-core`): pure rules (record format, signatures, chain, order, the fold).
//! - [`store`], [`sync`], [`app`] (`countersign-lib`): feeds on disk, keys, the
//!   SQLite index and ingest; moving the folder between machines; the use cases
//!   shared by every transport.
//! - `mcp`: the MCP server (its tools), thin adapters over [`app`].
//! - `http`: `countersign serve`: the MCP tools over HTTP, the board, `/status`.
//! - `cli`: commands for people, hooks and scripts.
//!
//! The transports' modules are private: the binary (`src/main.rs`), the bench
//! and the integration tests reach only what is re-exported below.
//!
//! `countersign-bench` (crates/bench), which measures the budgets, sits on top
//! like the transports and is not in the installed binary.

pub use countersign_lib::{app, core, store, sync};

mod cli;
mod http;
mod mcp;

// What the binary, the bench and the tests reach; the transports' modules
// are otherwise private to this crate.
pub use cli::{Cli, mcp_client, run, secret_in_args};
pub use http::board::page as board_page;
pub use mcp::line_transport::MAX_LINE_BYTES;
pub use mcp::schema::has_type_list;
pub use mcp::toolset::{TOOLSETS, Toolsets};
