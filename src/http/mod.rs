//! The HTTP transport.

pub mod board;
