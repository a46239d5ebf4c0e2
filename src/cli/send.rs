//! `countersign send`: send a message from a shell or a script: one line
//! for a person, the tool's JSON with `--json`.

use std::io::Read as _;
use std::process::ExitCode;

use super::Cli;
use crate::app::send::{SendRequest, ToArg, send_message};
use crate::cli::output::outln;
use crate::core::peer_text::one_line;

/// Arguments of `send`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Recipient role(s), comma-separated, or '*' for every other role.
    #[arg(long, value_delimiter = ',', required = true)]
    pub to: Vec<String>,
    /// Subject line (at most 80 characters).
    #[arg(long)]
    pub topic: String,
    /// The body; read from standard input when omitted.
    #[arg(long)]
    pub body: Option<String>,
    /// Make the message a debt the addressee must resolve.
    #[arg(long)]
    pub action_required: bool,
    /// Id of the message this answers.
    #[arg(long)]
    pub reply_to: Option<String>,
    /// bug, feat, proc, status, question or answer.
    #[arg(long)]
    pub kind: Option<String>,
    /// Initial work status.
    #[arg(long)]
    pub work_status: Option<String>,
    /// For a proposal: the pin key it would change, or 'none' (kind 'proc' needs an answer).
    #[arg(long, value_name = "KEY|none")]
    pub pin_key: Option<String>,
    /// For a proposal: the message it is about, or 'none' (kind 'proc' needs an answer).
    #[arg(long, value_name = "ID|none")]
    pub about: Option<String>,
    /// With --pin-key: the roles whose agreement the round needs (comma-separated), or '*'.
    #[arg(long, value_delimiter = ',')]
    pub voters: Option<Vec<String>>,
    /// Print `{id, created_at, …}` as JSON (for scripts) instead of one line.
    #[arg(long)]
    pub json: bool,
}

/// An explicit answer on the command line: 'none' is null.
fn answer(v: &Option<String>) -> Option<Option<String>> {
    v.as_ref().map(|s| (s != "none").then(|| s.clone()))
}

fn to_arg(v: &[String]) -> ToArg {
    if v.len() == 1 {
        ToArg::One(v[0].clone())
    } else {
        ToArg::Many(v.to_vec())
    }
}

/// Sends and prints one line (`sent <id> to backend (action required)`), or
/// with `--json` `{id, created_at, …}`.
pub fn run(cli: &Cli, a: &Args) -> anyhow::Result<ExitCode> {
    let body = match &a.body {
        Some(b) => b.clone(),
        None => {
            let mut s = String::new();
            std::io::stdin().read_to_string(&mut s)?;
            s
        }
    };
    let to = to_arg(&a.to);
    let shown_to = a.to.join(", ");
    let mut session = cli.session_with_role()?;
    let out = send_message(
        &mut session,
        SendRequest {
            to,
            topic: a.topic.clone(),
            body,
            body_ref: None,
            action_required: a.action_required,
            reply_to: a.reply_to.clone(),
            kind: a.kind.clone(),
            work_status: a.work_status.clone(),
            addenda: None,
            decision_requested: true,
            pin_key: answer(&a.pin_key),
            about_message_id: answer(&a.about),
            voters: a.voters.as_deref().map(|v| Some(to_arg(v))),
        },
    )?;
    if a.json {
        outln!("{}", serde_json::to_string(&out)?);
        return Ok(ExitCode::SUCCESS);
    }
    // The roles as the channel expanded them ('*'), else as given (checked).
    let to = match &out.recipients {
        Some(roles) => roles
            .iter()
            .map(|r| r.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        None => one_line(&shown_to),
    };
    let debt = if a.action_required {
        " (action required)"
    } else {
        ""
    };
    outln!("sent {} to {to}{debt}", out.id);
    Ok(ExitCode::SUCCESS)
}
