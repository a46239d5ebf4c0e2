//! Messages as a person scans them: one line each, in aligned columns
//! (id, from, age, state, topic), as `inbox`, `view` and `status` show them.
//!
//! Every text a peer wrote (the role names included, which come from the
//! folder) goes through `core::peer_text::one_line`; the layout and colour
//! are `cli::terminal`'s.

use super::terminal::{Paint, Table, age};
use crate::app::rows::MessageView;
use crate::core::peer_text::one_line;
use crate::core::timestamp::parse_since;

/// What state a message is in, in a word or two, and its colour: a debt's
/// status (with its work status while open), else whether it was read.
pub fn state(m: &MessageView) -> (String, Paint) {
    if m.deleted_at.is_some() {
        return ("deleted".into(), Paint::Dim);
    }
    match m.status.as_deref() {
        Some("open") => {
            let work = m.work_status.as_deref().filter(|w| *w != "none");
            match work {
                Some(w) => (format!("owed, {}", one_line(w)), Paint::Red),
                None => ("owed".into(), Paint::Red),
            }
        }
        Some(s) if m.action_required => (one_line(s), Paint::Green),
        _ if m.read_at.is_none() => ("unread".into(), Paint::Yellow),
        _ => ("read".into(), Paint::Dim),
    }
}

/// The cells of one message: `#id`, from, age, state, topic.
pub fn cells(m: &MessageView, now_ms: i64) -> Vec<(String, Paint)> {
    let age = parse_since(&m.created_at)
        .map(|ms| age(ms, now_ms))
        .unwrap_or_default();
    vec![
        (format!("#{}", one_line(&m.id)), Paint::Yellow),
        (one_line(&m.from), Paint::Cyan),
        (age, Paint::Dim),
        state(m),
        (one_line(&m.topic), Paint::Plain),
    ]
}

/// The messages as a table, one line each.
pub fn table<'a>(rows: impl IntoIterator<Item = &'a MessageView>, now_ms: i64) -> Table {
    let mut t = Table::new();
    for m in rows {
        t.row(cells(m, now_ms));
    }
    t
}
