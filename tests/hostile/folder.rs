//! Placeholder: filled by the folder work.
