//! Toolsets: the named groups of tools a server can be limited to
//! (`countersign mcp --tools mail,debts`).
//!
//! Owns which tool belongs to which set and the parsing of `--tools`; must
//! not decide anything about what a tool does. A session that only needs mail
//! pays for a fraction of tools/list in context; a tool outside the served
//! sets is neither listed nor run. `server_build` is in every set, so a
//! session can always ask what it is served.

use std::fmt;

/// Every set by name, with its tools (`all` holds every tool).
pub const TOOLSETS: &[(&str, &str, &[&str])] = &[
    (
        "mail",
        "send, read, mark, list, search, threads; status and waiting; who is on the channel; a \
         board link for your person",
        &[
            "send_message",
            "read_inbox",
            "mark_read",
            "list_messages",
            "search_messages",
            "get_thread",
            "channel_status",
            "wait_for_mail",
            "wait_for_reply",
            "list_roles",
            "server_build",
            "get_protocol",
            "board_link",
        ],
    ),
    (
        "debts",
        "the lifecycle of action_required messages and of work status",
        &[
            "resolve_message",
            "confirm_resolution",
            "reopen_message",
            "open_obligations",
            "set_work_status",
            "ready_work",
            "message_history",
            "server_build",
        ],
    ),
    (
        "consent",
        "proposals, votes, revising and deleting messages, pins, the cleanup pass",
        &[
            "awaiting_ack",
            "acknowledge",
            "get_acknowledgements",
            "revise_message",
            "delete_message",
            "message_history",
            "pin_set",
            "pin_get",
            "pin_list",
            "pin_history",
            "backfill_superseded",
            "undo_backfill",
            "get_charter_template",
            "server_build",
        ],
    ),
    (
        "uploads",
        "documents too large for one message",
        &[
            "upload_content",
            "seal_content",
            "get_content",
            "server_build",
        ],
    ),
    (
        "memory",
        "the channel's history as one-line summaries: view, open, read, search",
        &[
            "memory_view",
            "memory_zoom",
            "memory_read",
            "memory_search",
            "memory_thread",
            "memory_date",
            "memory_status",
            "server_build",
        ],
    ),
    (
        "jobs",
        "compaction jobs for a compactor agent; never in `all`",
        &[
            "compact_next",
            "compact_read",
            "compact_submit",
            "compact_release",
            "compact_resume",
            "server_build",
        ],
    ),
    (
        "all",
        "every tool but the jobs, memory_date and memory_status (the default)",
        &[],
    ),
];

/// Tools besides the jobs that `all` leaves out: served only when a set
/// naming them is asked for (`--tools all,memory`). The default list must fit
/// its byte budget (tests/it/mcp_toolsets.rs), every line the memory shows
/// already carries its date, and the backlog is a compactor's business, not
/// a session's.
const OUTSIDE_ALL: &[&str] = &["memory_date", "memory_status"];

/// The sets a server serves, in the order given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Toolsets(Vec<&'static str>);

impl Default for Toolsets {
    fn default() -> Self {
        Self(vec!["all"])
    }
}

impl Toolsets {
    /// Parses `--tools`: set names separated by commas.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut sets = Vec::new();
        for name in text.split(',').map(str::trim) {
            let Some((known, _, _)) = TOOLSETS.iter().find(|(n, _, _)| *n == name) else {
                return Err(format!(
                    "unknown toolset '{name}'; the toolsets are {}",
                    names().join(", ")
                ));
            };
            if !sets.contains(known) {
                sets.push(*known);
            }
        }
        Ok(Self(sets))
    }

    /// The names of the sets served.
    pub fn names(&self) -> &[&'static str] {
        &self.0
    }

    /// Whether `tool` is served.
    pub fn serves(&self, tool: &str) -> bool {
        self.0
            .iter()
            .any(|set| (*set == "all" && !outside_all(tool)) || tools_of(set).contains(&tool))
    }
}

impl fmt::Display for Toolsets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.join(","))
    }
}

/// Whether `all` leaves `tool` out: the job tools (only `--tools jobs`
/// serves those, so a session that works on the channel never loads them)
/// and [`OUTSIDE_ALL`].
fn outside_all(tool: &str) -> bool {
    OUTSIDE_ALL.contains(&tool) || (tools_of("jobs").contains(&tool) && tool != "server_build")
}

/// Every set's name.
pub fn names() -> Vec<&'static str> {
    TOOLSETS.iter().map(|(n, _, _)| *n).collect()
}

/// The tools of the set `set` (none for `all` or an unknown name).
fn tools_of(set: &str) -> &'static [&'static str] {
    TOOLSETS
        .iter()
        .find(|(n, _, _)| *n == set)
        .map_or(&[], |(_, _, tools)| tools)
}

/// The named sets (besides `all`) that hold `tool`.
pub fn homes_of(tool: &str) -> Vec<&'static str> {
    TOOLSETS
        .iter()
        .filter(|(_, _, tools)| tools.contains(&tool))
        .map(|(n, _, _)| *n)
        .collect()
}

/// The help of `--tools`: every set with what it holds.
pub fn help() -> String {
    let mut out = String::from(
        "Serve only these toolsets (comma-separated); a tool outside them is not listed and a \
         call to it is refused. The toolsets:\n",
    );
    for (name, what, tools) in TOOLSETS {
        out.push_str(&format!("  {name}: {what}"));
        if !tools.is_empty() {
            out.push_str(&format!(" ({})", tools.join(", ")));
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_parse_and_unknown_names_are_refused_with_the_known_ones() {
        let s = Toolsets::parse("mail,debts,mail").unwrap();
        assert_eq!(s.names(), ["mail", "debts"]);
        assert!(s.serves("send_message") && s.serves("resolve_message"));
        assert!(!s.serves("pin_set"));
        assert!(Toolsets::default().serves("pin_set"));
        // The job tools are served only by name.
        assert!(!Toolsets::default().serves("compact_next"));
        let jobs = Toolsets::parse("jobs").unwrap();
        assert!(jobs.serves("compact_submit") && jobs.serves("server_build"));
        assert!(!jobs.serves("send_message"));
        assert!(!Toolsets::default().serves("memory_date"));
        assert!(Toolsets::parse("all,memory").unwrap().serves("memory_date"));
        let e = Toolsets::parse("mail,votes").unwrap_err();
        assert!(
            e.contains("'votes'") && e.contains("mail, debts, consent, uploads, memory, jobs, all"),
            "{e}"
        );
    }

    #[test]
    fn every_tool_has_a_named_set() {
        for tool in super::super::TOOL_ORDER {
            assert!(!homes_of(tool).is_empty(), "{tool} is in no named toolset");
        }
        for (_, _, tools) in TOOLSETS {
            for t in *tools {
                assert!(super::super::TOOL_ORDER.contains(t), "{t} is no tool");
            }
        }
    }
}
