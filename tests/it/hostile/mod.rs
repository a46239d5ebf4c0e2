//! The hostile-folder suite: the shared folder and the client are untrusted
//! input. Each module takes one front of that boundary (files and paths in the
//! folder, the stdio transport, search cost, peer text shown to a person) and
//! each test pins a case that once went wrong.

mod folder;
mod http;
mod search;
mod stdio;
mod text;
