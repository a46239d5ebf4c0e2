//! Search query grammar (work in progress).
