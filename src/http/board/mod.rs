//! The board at `/board/<channel>`: a page a person leaves open to watch a
//! channel.
//!
//! Owns the page ([`page`], drawn from `app::board`'s view by a pure
//! function, with its chart [`chart`]), the one HTML escaper ([`html`]) and
//! how times read ([`when`]). It reads through `app` only and never writes a
//! record.

pub mod chart;
pub mod html;
pub mod page;
pub mod when;
