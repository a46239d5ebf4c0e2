//! The hostile-folder suite: the shared folder and the client are untrusted
//! input. Each module takes one front of that boundary (files and paths in the
//! folder, the stdio transport, search cost, peer text shown to a person,
//! compaction jobs read by pages, the recording hooks, the management tools'
//! sync remotes, board access) and each test pins a case that once went wrong.

mod admin;
mod board;
mod feeds;
mod folder;
mod http;
mod memory;
mod memory_jobs;
mod recording;
mod search;
mod stdio;
mod sync;
mod text;
