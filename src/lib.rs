//! countersign: a coordination channel for coding-agent sessions with no server.
//!
//! # Layout
//! Arrows point down only: transports ([`mcp`], [`http`], [`cli`]) → [`app`] → [`store`] → [`core`].
//! - [`core`]: pure rules (record format, signatures, chain, order, the fold).
//! - [`store`]: feeds on disk, keys, the SQLite index and ingest.
//! - [`sync`]: moving the folder between machines (git, rclone); beside `store`, under `app`.
//! - [`app`]: the use cases shared by the MCP server and the CLI.
//! - [`mcp`]: the MCP server (its tools), thin adapters over [`app`].
//! - [`http`]: `countersign serve`: the MCP tools over HTTP, the board, `/status`.
//! - [`cli`]: commands for people, hooks and scripts.
//! - `bench` (feature `bench` only): `countersign-bench`, which measures the
//!   budgets; on top, like the transports, and not in the installed binary.

pub mod app;
#[cfg(feature = "bench")]
pub mod bench;
pub mod cli;
pub mod core;
pub mod http;
pub mod mcp;
pub mod store;
pub mod sync;
