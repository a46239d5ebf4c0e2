//! Placeholder: filled by the stdio work.
