//! The board's pages below the board: one message (`m/<id>`: its text,
//! state, thread, votes and every record that touched it), one pin
//! (`pin/<key>`: its text in full, its versions) and the channel's moves a
//! page at a time (`activity?before=`). Drawn by pure functions from
//! `app::timeline` and `app::pin`.
//!
//! Like the board, each page loads nothing and runs no script (they need
//! none: they do not refresh); every string from the channel goes through
//! `escape`, each piece of peer text isolated in its direction (`dir="auto"`
//! or `<bdi>`), and bodies are bounded by the app. They share the board's
//! stylesheet (both palettes, and table rows as labelled cards below
//! 700 px, so a phone never scrolls sideways).

use super::html::{push, push_bdi, push_fmt};
use super::links::Links;
use super::page::{STYLE, cell, entries, topic_cell, what};
use super::when::ago_tag;
use crate::app::pin::PinVersion;
use crate::app::timeline::{ActivityPage, MessageDetail};
use crate::core::timestamp::parse_since;

/// The page of one message.
pub fn message(channel: &str, d: &MessageDetail, now: i64) -> String {
    let links = Links::deep(channel);
    let mut out = head(channel, &d.topic, &links);
    out.push_str("<h1 dir=\"auto\">");
    push(&mut out, &d.topic);
    out.push_str("</h1><dl class=\"facts\"><dt>id</dt><dd><code>");
    push(&mut out, &d.id);
    out.push_str("</code> <span class=\"muted\">");
    push(&mut out, &d.full_id);
    out.push_str("</span></dd><dt>from → to</dt><dd>");
    push_bdi(&mut out, &d.from);
    out.push_str(" → ");
    for (i, r) in d.to.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        push_bdi(&mut out, r);
    }
    out.push_str("</dd><dt>sent</dt><dd>");
    out.push_str(&ago_tag(d.ms, now));
    out.push_str("</dd>");
    if let Some(k) = &d.kind {
        out.push_str("<dt>kind</dt><dd>");
        push(&mut out, k);
        out.push_str("</dd>");
    }
    if d.debt {
        out.push_str("<dt>debt</dt><dd><span class=\"tag\">");
        push(&mut out, d.status.as_deref().unwrap_or("open"));
        out.push_str("</span>");
        if let Some(by) = &d.resolved_by {
            out.push_str(" by ");
            push_bdi(&mut out, by);
            out.push_str(if d.confirmed {
                ", confirmed"
            } else {
                ", not confirmed yet"
            });
        }
        if let Some(n) = &d.resolution_note {
            out.push_str(" <bdi class=\"note\" dir=\"auto\">");
            push(&mut out, n);
            out.push_str("</bdi>");
        }
        out.push_str("</dd>");
    }
    if let Some(ws) = &d.work_status {
        out.push_str("<dt>work status</dt><dd><span class=\"tag\">");
        push(&mut out, &ws.replace('_', " "));
        out.push_str("</span>");
        if let Some((b, topic)) = &d.blocked_by {
            push_fmt(
                &mut out,
                format_args!(" on <a class=\"id blocker\" href=\"{}\">", links.message(b)),
            );
            push(&mut out, b);
            out.push_str("</a>");
            if let Some(t) = topic {
                out.push_str(" <bdi dir=\"auto\">");
                push(&mut out, t);
                out.push_str("</bdi>");
            }
        }
        out.push_str("</dd>");
    }
    if !d.blocks.is_empty() {
        out.push_str("<dt>blocks</dt><dd>");
        for b in &d.blocks {
            push_fmt(
                &mut out,
                format_args!("<a class=\"id\" href=\"{}\">", links.message(b)),
            );
            push(&mut out, b);
            out.push_str("</a> ");
        }
        out.push_str("</dd>");
    }
    if let Some(k) = &d.pin_key {
        push_fmt(
            &mut out,
            format_args!("<dt>pin key</dt><dd><a href=\"{}\"><code>", links.pin(k)),
        );
        push_bdi(&mut out, k);
        out.push_str("</code></a></dd>");
    }
    if let Some(ms) = d.deleted_ms {
        out.push_str("<dt>deleted</dt><dd>");
        out.push_str(&ago_tag(ms, now));
        out.push_str("</dd>");
    }
    if let Some(ms) = d.retired_ms {
        out.push_str("<dt>settled</dt><dd>");
        out.push_str(&ago_tag(ms, now));
        out.push_str("</dd>");
    }
    out.push_str("</dl><h2 id=\"text\">Text</h2><pre class=\"body\" dir=\"auto\">");
    push(&mut out, &d.body);
    out.push_str("</pre>");
    if d.body_cut {
        push_fmt(
            &mut out,
            format_args!(
                "<p class=\"more\">the first {} of {} characters; the whole text: \
                 <code>countersign log</code> or the read tools</p>",
                d.body.chars().count(),
                d.body_chars
            ),
        );
    }

    if !d.votes.is_empty() {
        out.push_str("<h2 id=\"votes\">Votes</h2><table><tr><th>role</th><th>decision</th><th>note</th></tr>");
        for v in &d.votes {
            out.push_str("<tr class=\"vote\">");
            cell(&mut out, "", "");
            push_bdi(&mut out, &v.role);
            out.push_str("</td>");
            cell(&mut out, "state", "");
            out.push_str("<span class=\"tag");
            if v.stale {
                out.push_str(" stale\" title=\"cast on an earlier text");
            }
            out.push_str("\">");
            push(&mut out, &v.decision);
            out.push_str("</span></td>");
            topic_cell(&mut out);
            push(&mut out, v.note.as_deref().unwrap_or(""));
            out.push_str("</td></tr>");
        }
        out.push_str("</table>");
    }

    push_fmt(
        &mut out,
        format_args!(
            "<h2 id=\"thread\">Thread <span class=\"count\">{}{}</span></h2><ol class=\"thread\">",
            d.thread.len(),
            if d.thread_cut { "+" } else { "" }
        ),
    );
    for t in &d.thread {
        push_fmt(
            &mut out,
            format_args!(
                "<li{}><a class=\"id\" href=\"{}\">",
                if t.this { " class=\"this\"" } else { "" },
                links.message(&t.id)
            ),
        );
        push(&mut out, &t.id);
        out.push_str("</a> ");
        push_bdi(&mut out, &t.from);
        out.push_str(": <bdi dir=\"auto\">");
        push(&mut out, &t.topic);
        out.push_str("</bdi> ");
        out.push_str(&ago_tag(t.ms, now));
        if t.deleted {
            out.push_str(" <span class=\"tag\">deleted</span>");
        }
        out.push_str("</li>");
    }
    out.push_str("</ol>");

    push_fmt(
        &mut out,
        format_args!(
            "<h2 id=\"timeline\">Timeline <span class=\"count\">{}{}</span></h2>\
             <ol class=\"timeline\">",
            d.timeline.len(),
            if d.timeline_cut { "+" } else { "" }
        ),
    );
    for e in &d.timeline {
        out.push_str("<li class=\"event\">");
        out.push_str(&ago_tag(e.ms, now));
        out.push_str(" <b>");
        push_bdi(&mut out, &e.role);
        out.push_str("</b> ");
        what(&mut out, e, &links);
        out.push_str("</li>");
    }
    out.push_str("</ol>");
    if d.timeline_cut {
        out.push_str("<p class=\"more\">more records than shown; the oldest are listed</p>");
    }
    tail(out)
}

/// The page of pin `key`: the current version's text in full, then every
/// version (newest first: `versions` as `app::pin::versions` gives them).
pub fn pin(channel: &str, key: &str, versions: &[PinVersion], now: i64) -> String {
    let links = Links::deep(channel);
    let title = format!("pin {key}");
    let mut out = head(channel, &title, &links);
    out.push_str("<h1>pin <code>");
    push_bdi(&mut out, key);
    out.push_str("</code></h1>");
    let Some(cur) = versions.first() else {
        out.push_str("<p class=\"empty\">nothing is pinned under this key</p>");
        return tail(out);
    };
    out.push_str("<dl class=\"facts\"><dt>title</dt><dd dir=\"auto\">");
    push(&mut out, &cur.title);
    out.push_str("</dd><dt>version</dt><dd>");
    push_bdi(&mut out, &cur.version);
    out.push_str("</dd><dt>sha256</dt><dd><code class=\"sha\">");
    push(&mut out, &cur.body_sha256);
    out.push_str("</code></dd><dt>by</dt><dd>");
    push_bdi(&mut out, &cur.updated_by);
    out.push(' ');
    out.push_str(&ago_tag(rfc_ms(&cur.updated_at), now));
    out.push_str("</dd><dt>approved by</dt><dd>");
    match &cur.approved_by {
        Some(id) => {
            push_fmt(
                &mut out,
                format_args!("<a class=\"id\" href=\"{}\">", links.message(id)),
            );
            push(&mut out, id);
            out.push_str("</a>");
        }
        None => out.push_str("<span class=\"muted\">set directly</span>"),
    }
    push_fmt(
        &mut out,
        format_args!(
            "</dd><dt>length</dt><dd>{} characters, {} bytes</dd></dl>",
            cur.body_length_chars, cur.body_length_bytes
        ),
    );
    out.push_str("<h2 id=\"text\">Text</h2><pre class=\"body\" dir=\"auto\">");
    push(&mut out, &cur.body);
    out.push_str("</pre>");
    push_fmt(
        &mut out,
        format_args!(
            "<h2 id=\"versions\">Versions <span class=\"count\">{}</span></h2><table>\
             <tr><th>version</th><th>sha256</th><th>by</th><th>approved by</th><th>set</th></tr>",
            versions.len()
        ),
    );
    for v in versions {
        out.push_str("<tr class=\"pin-version\">");
        cell(&mut out, "", "version");
        push_bdi(&mut out, &v.version);
        out.push_str("</td>");
        cell(&mut out, "id", "sha256");
        out.push_str("<code>");
        push(&mut out, v.body_sha256.get(..12).unwrap_or(&v.body_sha256));
        out.push_str("…</code></td>");
        cell(&mut out, "", "by");
        push_bdi(&mut out, &v.updated_by);
        out.push_str("</td>");
        cell(&mut out, "", "approved by");
        if let Some(id) = &v.approved_by {
            push_fmt(
                &mut out,
                format_args!("<a class=\"id\" href=\"{}\">", links.message(id)),
            );
            push(&mut out, id);
            out.push_str("</a>");
        }
        out.push_str("</td>");
        cell(&mut out, "when", "set");
        out.push_str(&ago_tag(rfc_ms(&v.updated_at), now));
        out.push_str("</td></tr>");
    }
    out.push_str("</table>");
    tail(out)
}

/// A page of the channel's moves, older than the board shows.
pub fn activity(channel: &str, page: &ActivityPage, now: i64) -> String {
    let links = Links::below(channel);
    let mut out = head(channel, "activity", &links);
    out.push_str("<h1>Activity, older</h1>");
    entries(&mut out, page, now, &links);
    tail(out)
}

fn head(channel: &str, title: &str, links: &Links) -> String {
    let mut out = String::with_capacity(16 * 1024);
    out.push_str("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">");
    out.push_str("<meta name=\"referrer\" content=\"no-referrer\"><title>");
    push(&mut out, title);
    out.push_str(" · ");
    push(&mut out, channel);
    out.push_str(" · countersign board</title><style>");
    out.push_str(STYLE);
    out.push_str(super::strip::STYLE);
    push_fmt(
        &mut out,
        format_args!(
            "</style></head><body><main class=\"detail\"><nav class=\"crumbs\">\
             <a href=\"{}\">← board of ",
            links.board_href()
        ),
    );
    push_bdi(&mut out, channel);
    out.push_str("</a></nav>");
    out
}

fn tail(mut out: String) -> String {
    out.push_str("</main></body></html>\n");
    out
}

fn rfc_ms(at: &str) -> i64 {
    parse_since(at).unwrap_or(0)
}
