//! The first block of `status --text`: what is stuck in the whole channel
//! and who must move, one line per item (`app::attention`, the same fold
//! the board's strip draws).
//!
//! Owns the text form of the block only; the status counters below it are
//! `cli::status`'s. Topics and notes are peers' text: shown on one line,
//! escaped (`core::peer_text`).

use super::Cli;
use super::remote_channel::RemoteChannel;
use crate::app::attention::{Attention, PER_KIND, Subject, Who, attention};
use crate::cli::output::out;
use crate::core::peer_text::one_line;
use crate::store::now_ms;

/// Prints the block for the channel `cli` points at. Through a server
/// (`COUNTERSIGN_URL`) the folder is not here and the server's status
/// report is all there is: no block (the server's board shows it). The
/// session is opened as `status` opens it, so a status that cannot run (no
/// role, a stranger, an unreadable channel) prints nothing at all.
pub fn print_block(cli: &Cli) -> anyhow::Result<()> {
    if RemoteChannel::from_env()?.is_some() {
        return Ok(());
    }
    let mut s = cli.session_with_role()?;
    let now = now_ms();
    out!("{}", block(&attention(&mut s, now)?, now));
    Ok(())
}

/// `needs attention (N):` then one line per item, `  what  #id topic → who,
/// for 3 d: note`, then a blank line; nothing at all when the channel holds
/// nothing stuck (a calm channel's status reads as it always did).
pub fn block(a: &Attention, now: i64) -> String {
    if a.items.is_empty() {
        return String::new();
    }
    let total = a.items.len() + a.left_out.iter().map(|(_, n)| n - PER_KIND).sum::<usize>();
    let width = a
        .items
        .iter()
        .map(|i| i.kind.label().len())
        .max()
        .unwrap_or(0);
    let mut t = format!("needs attention ({total}):\n");
    for i in &a.items {
        let subject = match &i.subject {
            Subject::Message(id) => format!("#{id} {}", one_line(&i.topic)),
            Subject::Alarms => format!("{} (countersign verify lists them)", one_line(&i.topic)),
        };
        let who = match &i.who {
            Who::Roles(r) if r.is_empty() => "nobody named".to_owned(),
            Who::Roles(r) => r.join(", "),
            Who::Person => "a person (the note says who)".to_owned(),
            Who::Keeper => "whoever keeps the folder".to_owned(),
        };
        let held = i
            .held_by
            .as_deref()
            .map(|h| format!(", held by {}", one_line(h)))
            .unwrap_or_default();
        let age = if i.since_ms < now {
            format!(", for {}", span(now - i.since_ms))
        } else {
            String::new()
        };
        let note = i
            .note
            .as_deref()
            .map(|n| format!(": {}", one_line(n)))
            .unwrap_or_default();
        t.push_str(&format!(
            "  {:<width$}  {subject} → {}{held}{age}{note}\n",
            i.kind.label(),
            one_line(&who)
        ));
    }
    for (kind, n) in &a.left_out {
        t.push_str(&format!(
            "  … {n} {} in all, the first {PER_KIND} shown\n",
            kind.label()
        ));
    }
    t.push('\n');
    t
}

/// A span of time in one unit: `12 min`, `3 h`, `5 d`.
fn span(ms: i64) -> String {
    let secs = ms / 1000;
    match secs {
        ..60 => "under a minute".to_owned(),
        60..3_600 => format!("{} min", secs / 60),
        3_600..86_400 => format!("{} h", secs / 3_600),
        _ => format!("{} d", secs / 86_400),
    }
}
