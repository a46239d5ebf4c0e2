//! Prompts a client makes itself: what a recording hook receives as a
//! "prompt" although nobody typed it, and what the memory's search and
//! thread leave out where an earlier version recorded one.
//!
//! Claude Code hands its own notices to the prompt hook: a background
//! task's completion (`<task-notification>…`), the output of a local
//! command, a reminder, a tick, a resource update. Each starts with one of
//! the client's tags. Messages from another session (`<cross-session-message
//! …>`, `<teammate-message …>`) start with a tag too, but they are kept, as
//! what they are ([`peer_message`]).
//!
//! It owns the list of those shapes; it must not read hook input or files.

/// The tags Claude Code opens its own prompts with (2.1.x): a background
/// task's notice, a local command's output and caveat, the session's own
/// reminders, a scheduled tick, an MCP resource or polling update, a hook's
/// own text, a remote review's notice.
const GENERATED_TAGS: &[&str] = &[
    "task-notification",
    "local-command-stdout",
    "local-command-stderr",
    "local-command-caveat",
    "system-reminder",
    "system_reminder",
    "tick",
    "mcp-resource-update",
    "mcp-polling-update",
    "user-prompt-submit-hook",
    "post-tool-use-hook",
    "remote-review",
];

/// The tags that carry a message from another agent session.
const PEER_TAGS: &[&str] = &["cross-session-message", "teammate-message", "agent-message"];

/// The tag `text` opens with (`<name>` or `<name attr…>`), if any.
fn opening_tag(text: &str) -> Option<&str> {
    let rest = text.trim_start().strip_prefix('<')?;
    let end = rest.find(|c: char| c == '>' || c.is_whitespace())?;
    Some(&rest[..end])
}

/// True when `prompt` was made by the client, not typed: one of Claude
/// Code's notices.
pub fn is_generated(prompt: &str) -> bool {
    let t = prompt.trim_start();
    opening_tag(t).is_some_and(|tag| GENERATED_TAGS.contains(&tag))
        || t.starts_with("[SYSTEM NOTIFICATION")
}

/// A message from another agent session, as the client hands it over:
/// `<cross-session-message from="…">text</cross-session-message>` (or a
/// teammate's): the sender as given, and the text inside the tags.
pub fn peer_message(prompt: &str) -> Option<(Option<String>, String)> {
    let t = prompt.trim();
    let tag = opening_tag(t).filter(|tag| PEER_TAGS.contains(tag))?;
    let open_end = t.find('>')?;
    let attrs = &t[1 + tag.len()..open_end];
    let from = attrs
        .split_once("from=\"")
        .and_then(|(_, rest)| rest.split_once('"'))
        .map(|(f, _)| f.to_owned())
        .filter(|f| !f.is_empty());
    let body = &t[open_end + 1..];
    let close = format!("</{tag}>");
    let body = body.strip_suffix(close.as_str()).unwrap_or(body);
    Some((from, body.trim().to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notices_are_told_from_typed_prompts() {
        assert!(is_generated(
            "<task-notification>\n<task-id>a1</task-id>\n<status>completed</status>"
        ));
        assert!(is_generated(
            "<local-command-caveat>Caveat: …</local-command-caveat>"
        ));
        assert!(is_generated("  <system-reminder>\nx</system-reminder>"));
        assert!(!is_generated("fix the <task-notification> parser"));
        assert!(!is_generated("<div> in the header is wrong"));
        assert!(!is_generated("Tell the backend hello."));
        // Another session's message is not a notice: it is kept as one.
        assert!(!is_generated(
            "<cross-session-message from=\"a\">hi</cross-session-message>"
        ));
    }

    #[test]
    fn a_peer_message_gives_its_sender_and_text() {
        assert_eq!(
            peer_message(
                "<cross-session-message from=\"review@desk\">\nThe API is ready.\n</cross-session-message>"
            ),
            Some((Some("review@desk".into()), "The API is ready.".into()))
        );
        assert_eq!(
            peer_message("<teammate-message>go</teammate-message>"),
            Some((None, "go".into()))
        );
        assert_eq!(peer_message("hello <cross-session-message>"), None);
    }
}
