//! `countersign log`: every record in readable form, with verification marks.
//!
//! One line per record: every text a peer wrote (topics, notes, keys, device
//! names) and every path found in the folder is shown through
//! `core::peer_text`, so no record can add a line or act on the terminal.

use std::collections::VecDeque;
use std::process::ExitCode;

use crate::cli::output::outln;
use crate::core::op::Op;
use crate::core::peer_text::one_line;
use crate::core::record::decode_body;
use crate::core::timestamp::{format_rfc3339, parse_since};
use crate::store::RecordLine;

use super::Cli;
use super::terminal::{page, stdout_is_terminal};

/// Arguments of `log`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "With --role ROLE, only the records written as ROLE (the role from the \
    environment or the project binding filters nothing: any device reads the whole log).\n\n\
    Examples:\n  \
    countersign log --limit 20\n  \
    countersign log --role backend --since 2026-11-30\n  \
    countersign log --grep login"
)]
pub struct Args {
    /// Print each verified record's body as JSON, one per line.
    #[arg(long)]
    pub json: bool,
    /// Only the records written at or after this time (ISO 8601, e.g. 2026-11-30 or
    /// 2026-11-30T09:00:00Z).
    #[arg(long, value_name = "TIME")]
    pub since: Option<String>,
    /// Only the lines holding TEXT (any case).
    #[arg(long, value_name = "TEXT")]
    pub grep: Option<String>,
    /// Only the newest N records that match.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub limit: Option<u64>,
}

/// Prints accepted records in the channel's total order (✓: signature and
/// chain verified), then what could not be applied (✗); the filters pick
/// records, and leave the ✗ lines out once any is given.
pub fn run(cli: &Cli, a: &Args) -> anyhow::Result<ExitCode> {
    let since = match &a.since {
        Some(t) => Some(parse_since(t).map_err(|e| {
            anyhow::anyhow!("--since: {e} (write e.g. 2026-11-30 or 2026-11-30T09:00:00Z)")
        })?),
        None => None,
    };
    let grep = a.grep.as_deref().map(str::to_lowercase);
    let filtered = cli.role.is_some() || since.is_some() || grep.is_some() || a.limit.is_some();
    let feed_prefix = cli.role.as_deref().map(|r| format!("{}/", r.trim()));
    // On a terminal the whole text goes to the pager; with --limit only the
    // newest lines are kept; else each line is printed as it comes.
    let paged = stdout_is_terminal();
    let keep = a.limit.map(|n| n as usize);
    let mut held: VecDeque<String> = VecDeque::new();
    let mut emit = |line: String| {
        if !paged && keep.is_none() {
            outln!("{line}");
            return;
        }
        held.push_back(line);
        if keep.is_some_and(|n| held.len() > n) {
            held.pop_front();
        }
    };
    let mut channel = cli.open_channel()?;
    crate::app::admission::catch_up(&mut channel)?;
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
        if feed_prefix
            .as_ref()
            .is_some_and(|p| !feed.starts_with(p.as_str()))
            || since.is_some_and(|t| ms < t)
        {
            return Ok(());
        }
        let line = if a.json {
            body
        } else {
            let what = decode_body(&body)
                .ok()
                .and_then(|(_, _, op)| op)
                .map(|op| describe(&op))
                .unwrap_or_default();
            format!(
                "✓ {} {feed} #{seq} {} {op}{what}",
                format_rfc3339(ms),
                &id[..12]
            )
        };
        if grep
            .as_ref()
            .is_some_and(|g| !line.to_lowercase().contains(g.as_str()))
        {
            return Ok(());
        }
        emit(line);
        Ok::<_, anyhow::Error>(())
    })?;
    if !filtered {
        for p in ix.problems()? {
            emit(format!(
                "✗ {}:{} {}: {}",
                one_line(&p.path),
                p.offset,
                p.kind,
                one_line(&p.reason)
            ));
        }
    }
    if !held.is_empty() {
        let mut text = String::new();
        for l in held {
            text.push_str(&l);
            text.push('\n');
        }
        page(&text);
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
