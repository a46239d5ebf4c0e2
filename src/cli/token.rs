//! `countersign token`: the role tokens `countersign serve` accepts.
//!
//! A token lets whoever holds it act as one role of one channel through this
//! home's server. It is printed once and only its SHA-256 is kept (in the
//! home's access database), so a lost token is revoked and made again, never
//! shown again. The view keys behind board links are listed and revoked
//! here too, whoever issued them.

use std::process::ExitCode;

use anyhow::bail;

use super::Cli;
use crate::app::hosting::channel_ref;
use crate::cli::output::outln;
use crate::core::timestamp::format_rfc3339;
use crate::store::access::Access;
use crate::store::now_ms;

/// Arguments of `token`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, clap::Subcommand)]
enum Command {
    /// Make a token acting as --role in the channel and print it once, e.g.
    /// `countersign token create --role backend --label laptop`.
    Create {
        /// A note to tell tokens apart in `token list` (who holds it, where).
        #[arg(long, default_value = "")]
        label: String,
    },
    /// List the tokens and the board's view keys made in this home (never the secrets): id,
    /// channel, role (or `view key`), label, made, expires, revoked.
    List,
    /// Revoke a token or a view key by the id `token list` shows (or a unique prefix of 6 or
    /// more digits). Its next request is refused; a token's view keys end with it.
    Revoke {
        /// The token's id.
        id: String,
    },
}

/// Runs `token`.
pub fn run(cli: &Cli, a: &Args) -> anyhow::Result<ExitCode> {
    let home = cli.home()?;
    match &a.command {
        Command::Create { label } => {
            if label.chars().count() > 80 || label.chars().any(char::is_control) {
                bail!("--label: at most 80 characters, no control characters");
            }
            // The server acts as the role with this home's key: make sure
            // it can (the owner's home admits itself; another home must
            // have joined as the role first).
            let mut session = cli.session_with_role()?;
            session.announce()?;
            let role = session.role()?;
            let dir = session.channel().dir().clone();
            let access = Access::open(&home.access_db())?;
            let (secret, token) =
                access.create_role_token(&channel_ref(&dir), role.as_str(), label, now_ms())?;
            outln!("{secret}");
            eprintln!(
                "token {} acts as '{}' in channel '{}' ({}) through `countersign serve` with this \
                 home. It is shown only now: keep it in a secret store or an environment \
                 variable, never on a command line. Revoke it with `countersign token revoke {}`.",
                token.id,
                token.role,
                token.channel.name,
                dir.root().display(),
                token.id
            );
        }
        Command::List => {
            let access = Access::open(&home.access_db())?;
            let tokens = access.role_tokens()?;
            let keys = access.view_keys()?;
            if tokens.is_empty() && keys.is_empty() {
                outln!("no tokens (make one with `countersign token create --role R`)");
            }
            for t in tokens {
                outln!(
                    "{}  {}  {}  {}  made {}{}",
                    t.id,
                    t.channel.name,
                    t.role,
                    if t.label.is_empty() { "-" } else { &t.label },
                    format_rfc3339(t.created_ms),
                    t.revoked_ms
                        .map(|r| format!("  revoked {}", format_rfc3339(r)))
                        .unwrap_or_default()
                );
            }
            for k in keys {
                outln!(
                    "{}  {}  view key  {}  by {}  made {}  expires {}{}",
                    k.id,
                    k.channel.name,
                    if k.label.is_empty() { "-" } else { &k.label },
                    k.issued_token
                        .as_deref()
                        .map_or_else(|| k.issued_by.clone(), |t| format!("{} ({t})", k.issued_by)),
                    format_rfc3339(k.created_ms),
                    format_rfc3339(k.expires_ms),
                    k.revoked_ms
                        .map(|r| format!("  revoked {}", format_rfc3339(r)))
                        .unwrap_or_default()
                );
            }
        }
        Command::Revoke { id } => {
            let access = Access::open(&home.access_db())?;
            let now = now_ms();
            if let Some((t, keys)) = access.revoke_role_token(id, now)? {
                outln!(
                    "revoked token {} ({} in {}) and the {keys} view key(s) it issued; its next \
                     request is refused, and so is every board it opened",
                    t.id,
                    t.role,
                    t.channel.name
                );
            } else if let Some(k) = access.revoke_view_key(id, now)? {
                outln!(
                    "revoked view key {} (board of {}); every board opened with it is closed",
                    k.id,
                    k.channel.name
                );
            } else {
                bail!(
                    "no live token or view key has the id '{id}' (or the prefix matches several): \
                     see `countersign token list`"
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
