//! Placeholder: filled by the text work.
