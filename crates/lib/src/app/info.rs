//! Channel information tools: list_roles, server_build, get_protocol,
//! get_charter_template.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Serialize;

use super::presence::{DeviceView, devices_by_role};
use super::refusal::AppResult;
use super::session::Session;
use crate::core::ids::Role;

/// The version of this build.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The protocol document served by get_protocol.
pub const PROTOCOL: &str = include_str!("../../../../docs/PROTOCOL.md");

/// The starting team charter served by get_charter_template.
pub const CHARTER_TEMPLATE: &str = include_str!("../../../../docs/charter-template.md");

/// Who is in the channel: the roster (the channel definition's roles and
/// those the owner added), and for each role the devices writing it and when
/// each was last heard from.
pub fn list_roles(s: &mut Session) -> AppResult<Roles> {
    s.catch_up()?;
    Ok(Roles {
        roles: s.roster(),
        you: s.role_opt().cloned(),
        source: "channel-registry",
        devices: devices_by_role(s)?,
    })
}

/// What list_roles answers.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Roles {
    /// The channel's roles.
    #[schemars(with = "Vec<String>")]
    pub roles: Vec<Role>,
    /// The session's role, if it has one.
    #[schemars(with = "Option<String>")]
    pub you: Option<Role>,
    /// Where the roles come from.
    pub source: &'static str,
    /// Each role's devices.
    pub devices: BTreeMap<String, Vec<DeviceView>>,
}

/// What this running server is and what it implements.
pub fn server_build() -> ServerBuild {
    ServerBuild {
        build: format!("countersign {VERSION}"),
        version: VERSION,
        protocol_contract: "get_protocol() — the tools, their parameters, refusals and results",
        whats_new: vec![
            News {
                since: "2026-11-30",
                what: "signed per-role feeds in a shared folder, a local index, messaging, debts with their lifecycle, work status and the wait tools",
                r#do: "call channel_status() first and triage what it lists; get_protocol() has the rules",
            },
            News {
                since: "2026-11-30",
                what: "consent: a kind='proc' proposal answers pin_key and about_message_id explicitly (null is an answer) and a pin round declares voters; votes (acknowledge, with void for a dead subject) are bound to the exact text, so revise_message quenches them; pin_set on a protected key needs approved_by, and one proposal approves one version; a nudge (about_message_id) retires with its target; backfill_superseded previews a cleanup and needs expect_count and each key owner's word, undo_backfill reverses it",
                r#do: "check awaiting_ack() for proposals waiting on you; pass expect_body_sha256 when you vote on something you read earlier; try pin_set(dry_run=true) before asking for a write",
            },
            News {
                since: "2026-11-30",
                what: "documents larger than an inline body: upload_content, seal_content, get_content, and body_ref on send_message, revise_message and pin_set; get_charter_template gives a starting team charter",
                r#do: "send anything over 256 KiB (or whose digest matters on its own) with upload_content, seal_content, then send_message(body_ref=<upload_id>)",
            },
        ],
        shipped: vec![
            Shipped {
                id: "feeds",
                shipped_at: "2026-11-30",
                what: "signed, hash-chained per-role feeds; tolerant reading; verify",
            },
            Shipped {
                id: "index",
                shipped_at: "2026-11-30",
                what: "incremental SQLite index, reindex, trigram full-text search",
            },
            Shipped {
                id: "messaging",
                shipped_at: "2026-11-30",
                what: "send_message, read_inbox, mark_read, delete_message, list_messages, search_messages, get_thread, list_roles, server_build, get_protocol",
            },
            Shipped {
                id: "debts",
                shipped_at: "2026-11-30",
                what: "resolve_message, confirm_resolution, reopen_message, open_obligations, ready_work, set_work_status, message_history, channel_status; decisions made on two machines fold to one winner, the loser listed as conflicted",
            },
            Shipped {
                id: "waits",
                shipped_at: "2026-11-30",
                what: "wait_for_mail and wait_for_reply, woken by a watcher on the channel folder",
            },
            Shipped {
                id: "consent",
                shipped_at: "2026-11-30",
                what: "proposals with pin_key, about_message_id and voters; acknowledge, get_acknowledgements, awaiting_ack; revise_message; pin_set (with dry_run), pin_get, pin_list, pin_history; nudges and their retirement; backfill_superseded and undo_backfill; consent decided on two machines folds to one winner",
            },
            Shipped {
                id: "uploads",
                shipped_at: "2026-11-30",
                what: "upload_content, seal_content, get_content (documents up to 8 MiB) and body_ref on send_message, revise_message and pin_set",
            },
            Shipped {
                id: "charter",
                shipped_at: "2026-11-30",
                what: "get_charter_template, a starting team charter with ten ground rules",
            },
            Shipped {
                id: "sync",
                shipped_at: "2026-11-30",
                what: "countersign sync through git or rclone, and mcp and serve syncing by themselves (after each write and every 30 s; --sync-every sets the period or off), with sync_failed in channel_status when the last sync failed; join, admit, add-role and rotate-key for machines and roles (CLI, on the owner's machine where the owner signs)",
            },
            Shipped {
                id: "presence",
                shipped_at: "2026-11-30",
                what: "list_roles devices with last_heard_at; channel_status tentative_since, held, and alarms for forks, second key claims, held records and clocks ahead; sealed segments may be gzip (countersign compress); countersign repair",
            },
            Shipped {
                id: "invite",
                shipped_at: "2026-12-01",
                what: "countersign invite --role R prints a one-time code (the folder holds only a commitment to its secret); countersign join --invite CODE on a new machine writes a claim, and the owner's machine admits the first valid claim by itself at its next sync, status or tool call; a used, expired or unproven claim is an invitation alarm, never admitted",
            },
            Shipped {
                id: "hostile-folder",
                shipped_at: "2026-12-01",
                what: "the channel folder is treated as untrusted input: no symlink followed, only regular files read or written, every read bounded; channel_status alarms for files of the wrong type (wrong_type), oversize segments and feeds cut short of their signed head (cut); a write that failed is never published later",
            },
        ],
        not_shipped: vec![NotShipped {
            id: "invite-remote",
            why: "an invitation code does not carry the channel's remote: the new machine needs a copy of the folder first (a git clone, or rclone copy and remote set), then join --invite",
        }],
        source: "countersign (Rust), stdio MCP server",
    }
}

/// What server_build answers: this build, what it implements and what not yet.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct ServerBuild {
    /// `countersign <version>`.
    pub build: String,
    /// The crate version.
    pub version: &'static str,
    /// Where the contract is.
    pub protocol_contract: &'static str,
    /// What changed, newest last, with what to do about it.
    pub whats_new: Vec<News>,
    /// The features this build ships.
    pub shipped: Vec<Shipped>,
    /// Features not in this build, and why.
    pub not_shipped: Vec<NotShipped>,
    /// The implementation.
    pub source: &'static str,
}

/// One change in whats_new.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct News {
    /// The date it shipped.
    pub since: &'static str,
    /// What changed.
    pub what: &'static str,
    /// What a session should do about it.
    pub r#do: &'static str,
}

/// One shipped feature.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Shipped {
    /// Its name.
    pub id: &'static str,
    /// The date it shipped.
    pub shipped_at: &'static str,
    /// What it is.
    pub what: &'static str,
}

/// One feature not in this build.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct NotShipped {
    /// Its name.
    pub id: &'static str,
    /// Why not.
    pub why: &'static str,
}
