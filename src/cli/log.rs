//! `countersign log`: every record in readable form, with verification marks.
//!
//! One line per record: every text a peer wrote (topics, notes, keys, device
//! names) and every path found in the folder is shown through
//! `core::peer_text`, so no record can add a line or act on the terminal.

use std::process::ExitCode;

use crate::cli::output::outln;
use crate::core::op::Op;
use crate::core::peer_text::one_line;
use crate::core::record::decode_body;
use crate::core::timestamp::format_rfc3339;
use crate::store::index::RecordLine;

use super::Cli;

/// Arguments of `log`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print each verified record's body as JSON, one per line.
    #[arg(long)]
    pub json: bool,
}

/// Prints accepted records in the channel's total order (✓: signature and
/// chain verified), then what could not be applied (✗).
pub fn run(cli: &Cli, a: &Args) -> anyhow::Result<ExitCode> {
    let mut channel = cli.open_channel()?;
    channel.catch_up()?;
    let ix = channel.index();
    ix.each_record(|r| {
        let RecordLine {
            id,
            feed,
            seq,
            ms,
            op,
            body,
        } = r;
        if a.json {
            outln!("{body}");
            return Ok(());
        }
        let what = decode_body(&body)
            .ok()
            .and_then(|(_, _, op)| op)
            .map(|op| describe(&op))
            .unwrap_or_default();
        outln!(
            "✓ {} {feed} #{seq} {} {op}{what}",
            format_rfc3339(ms),
            &id[..12]
        );
        Ok::<_, anyhow::Error>(())
    })?;
    for p in ix.problems()? {
        outln!(
            "✗ {}:{} {}: {}",
            one_line(&p.path),
            p.offset,
            p.kind,
            one_line(&p.reason)
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn describe(op: &Op) -> String {
    let short = |ids: &[crate::core::ids::RecordId]| {
        ids.iter().map(|i| i.short()).collect::<Vec<_>>().join(",")
    };
    match op {
        Op::Send(s) => {
            let to: Vec<&str> = s.to.iter().map(|r| r.as_str()).collect();
            let debt = if s.action_required {
                " [action required]"
            } else {
                ""
            };
            format!(" → {}{debt}: \"{}\"", to.join(","), one_line(&s.topic))
        }
        Op::Read(i) | Op::Opened(i) => format!(" {}", short(&i.ids)),
        Op::Delete(t) => format!(" {}", t.id.short()),
        Op::Resolve(n) | Op::Confirm(n) | Op::Reopen(n) => {
            format!(
                " {}{}",
                n.id.short(),
                n.note
                    .as_deref()
                    .map(|t| format!(": \"{}\"", one_line(t)))
                    .unwrap_or_default()
            )
        }
        Op::WorkStatus(w) => format!(" {} → {}", w.id.short(), w.value),
        Op::Admit(a) => format!(" {} as {}", a.feed, a.role),
        Op::FeedInit(f) => format!(" {} on {}", f.role, one_line(&f.device_name)),
        Op::Invite(i) => format!(
            " {} until {}",
            i.role,
            crate::core::timestamp::format_rfc3339(i.expires_ms)
        ),
        Op::Claim(c) => format!(
            " {} on {} takes invitation {}",
            c.role,
            one_line(&c.device_name),
            c.invitation.short()
        ),
        Op::AddRole(a) => format!(" {}", a.role),
        Op::ReplaceKey(r) => format!(" {} key {}", r.feed, one_line(&r.pubkey)),
        Op::Revise(r) => format!(" {}", r.id.short()),
        Op::Ack(a) => format!(" {} {}", a.id.short(), a.decision),
        Op::PinSet(p) => format!(
            " \"{}\" version \"{}\"",
            one_line(&p.key),
            one_line(&p.version)
        ),
        Op::Backfill(b) => format!(" {}", short(&b.ids)),
        Op::UndoBackfill(u) => format!(" {}", short(&u.ids)),
        Op::UploadChunk(u) => format!(
            " {} ({} bytes)",
            u.upload.map_or_else(|| "new".to_owned(), |i| i.short()),
            u.text.len()
        ),
        Op::Seal(s) => format!(" {} sha256 {}", s.upload.short(), one_line(&s.sha256)),
        Op::Summary(s) => format!(" {} ({} bytes)", short(&s.covers), s.text.len()),
        Op::Note(n) => format!(" {} ({} bytes)", n.kind.as_str(), n.text.len()),
    }
}
