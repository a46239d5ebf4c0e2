//! What `countersign serve` keeps of its own: the access database (tokens,
//! board sessions) and the lease database of hosted channels.
//!
//! Owns those two SQLite files; it never touches a channel's index.

pub mod access;
pub mod leases;
