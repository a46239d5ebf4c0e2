//! `countersign send`: send a message from a shell or a script.

use std::io::Read as _;
use std::process::ExitCode;

use super::Cli;
use crate::app::send::{SendRequest, ToArg, send_message};

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
}

/// Sends and prints `{id, created_at}` as JSON.
pub fn run(cli: &Cli, a: &Args) -> anyhow::Result<ExitCode> {
    let body = match &a.body {
        Some(b) => b.clone(),
        None => {
            let mut s = String::new();
            std::io::stdin().read_to_string(&mut s)?;
            s
        }
    };
    let to = if a.to.len() == 1 {
        ToArg::One(a.to[0].clone())
    } else {
        ToArg::Many(a.to.clone())
    };
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
        },
    )?;
    println!("{out}");
    Ok(ExitCode::SUCCESS)
}
