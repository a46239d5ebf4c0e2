//! The integration suite, one test binary: each module drives the real binary,
//! the real store or real sync tools from the outside. One binary links the
//! crate once; `common` holds every helper the modules share.
//!
//! Run one module with `cargo nextest run -E 'test(/^mcp_send::/)'`.

mod common;

mod announcement;
mod board;
mod board_attention;
mod board_browser;
mod board_http;
mod cli;
mod cli_people;
mod compaction;
mod compaction_api;
mod concurrency;
mod convergence;
mod golden;
mod golden_membership;
mod heartbeat;
mod hostile;
mod import_circles;
mod invitation;
mod key_rule;
mod mcp_arguments;
mod mcp_consent;
mod mcp_electorate;
mod mcp_inbox;
mod mcp_lifecycle;
mod mcp_listing;
mod mcp_memory;
mod mcp_refusals;
mod mcp_search;
mod mcp_send;
mod mcp_server;
mod mcp_thread_delete;
mod mcp_toolsets;
mod mcp_uploads;
mod mcp_wait;
mod mcp_work_status;
mod membership;
mod memory;
mod memory_commands;
mod python_client;
mod real_clients;
mod recording;
mod recording_rules;
mod search_catch_up;
mod search_grammar;
mod search_snippet;
mod serve_admin;
mod serve_load;
mod serve_mcp;
mod serve_proxy;
mod serve_status;
mod serve_sync;
mod setups;
mod sql_op_names;
mod status_hooks;
mod store_faults;
mod store_order;
mod store_tolerant;
mod sync_git;
mod sync_mcp;
mod sync_rclone;
mod two_machines;
mod unbound;
mod upload_order;
