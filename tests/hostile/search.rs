//! Placeholder: filled by the search work.
