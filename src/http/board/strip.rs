//! The attention strip at the top of the board, the red count of alarms in
//! its header, and the state of a live round: drawn from
//! `app::attention`, by pure functions.
//!
//! Every string from the channel goes through `escape` (with `dir="auto"`
//! on peer text, so a right-to-left topic keeps its order); every item
//! links to the message it is about, or to the board's alarms.

use super::html::{push, push_bdi, push_fmt};
use super::links::Links;
use super::when::ago_tag;
use crate::app::attention::{Attention, AttentionItem, PER_KIND, RoundState, Subject, Who};

/// The strip's own style, added after the board's stylesheet: it uses the
/// board's classes and only the colours of its palettes (the alarm red and
/// the amber of an ageing debt are named there, so `contrast` checks them
/// in both schemes; the badge's white-on-red is `--card` on `--alarm`).
pub const STYLE: &str = r#"
.attention { background: var(--card); border: 1px solid var(--line); border-radius: 8px;
  padding: 8px 14px; margin: 8px 0 4px; }
.attention h2 { margin: 4px 0 6px; }
.attention ul { list-style: none; margin: 0; padding: 0; }
.attention li { padding: 5px 0; border-bottom: 1px solid var(--line); display: flex; flex-wrap: wrap;
  gap: 2px 10px; align-items: baseline; }
.attention li:last-child { border-bottom: none; }
.attention .what { font-weight: 600; white-space: nowrap; }
.attention .who { white-space: nowrap; }
.attention .note { color: var(--muted); overflow-wrap: anywhere; }
.attention .topic { overflow-wrap: anywhere; }
.attention li.alarm .what, .attention li.conflict .what { color: var(--alarm); }
.heat-1 { color: var(--heat); } .heat-2 { color: var(--warn); font-weight: 600; }
.heat-3 { color: var(--alarm); font-weight: 700; }
.badge { display: inline-block; padding: 0 8px; border-radius: 10px; font-size: 13px; font-weight: 600;
  background: var(--alarm); color: var(--card); text-decoration: none; }
.badge.calm { background: var(--tag-bg); color: var(--muted); font-weight: 400; }
.state.contested { background: var(--reject-bg); } .state.ready { background: var(--agree-bg); }
.detail pre.body { background: var(--card); border: 1px solid var(--line); border-radius: 8px;
  padding: 10px 14px; white-space: pre-wrap; overflow-wrap: anywhere; font: inherit; }
.detail dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 2px 14px; margin: 8px 0; }
.detail dl.facts dt { color: var(--muted); } .detail dl.facts dd { margin: 0; overflow-wrap: anywhere; }
.detail ol.timeline { padding-left: 20px; } .detail ol.timeline li { margin: 3px 0; }
.detail .this { font-weight: 600; }
nav.crumbs { font-size: 13px; margin: 10px 0 0; }
"#;

/// The count of alarms for the header: red when there are any, linking to
/// the alarms; a quiet note when `verify` would still report something.
pub fn alarm_badge(out: &mut String, a: &Attention) {
    if a.alarms > 0 {
        push_fmt(
            out,
            format_args!(
                "<a class=\"badge\" id=\"alarm-count\" href=\"#alarms\">{} alarm{}</a>",
                a.alarms,
                if a.alarms == 1 { "" } else { "s" }
            ),
        );
    } else if a.quiet_problems > 0 {
        push_fmt(
            out,
            format_args!(
                "<a class=\"badge calm\" id=\"alarm-count\" href=\"#alarms\">no alarm; verify \
                 reports {}</a>",
                a.quiet_problems
            ),
        );
    }
}

/// The strip: one line per item, saying what, who must act, about what,
/// since when, and the note, linking to it.
pub fn strip(out: &mut String, a: &Attention, links: &Links) {
    let n = a.items.len() + a.left_out.iter().map(|(_, n)| n - PER_KIND).sum::<usize>();
    push_fmt(
        out,
        format_args!(
            "<section class=\"attention\" id=\"attention\"><h2>Needs attention \
             <span class=\"count\">{n}</span></h2>"
        ),
    );
    if a.items.is_empty() {
        out.push_str(
            "<p class=\"empty\">nothing is stuck: no alarm, no contested or stalled round, no \
             resolution waiting over a day, no debt idle over a day</p></section>",
        );
        return;
    }
    out.push_str("<ul>");
    for item in &a.items {
        entry(out, item, a.generated_ms, links);
    }
    out.push_str("</ul>");
    for (kind, total) in &a.left_out {
        push_fmt(
            out,
            format_args!(
                "<p class=\"more\">{}: {total} in all, the first {PER_KIND} shown</p>",
                kind.label()
            ),
        );
    }
    out.push_str("</section>");
}

fn entry(out: &mut String, item: &AttentionItem, now: i64, links: &Links) {
    let kind = format!("{:?}", item.kind).to_lowercase();
    push_fmt(
        out,
        format_args!("<li class=\"item {kind}\"><span class=\"what\">"),
    );
    push(out, item.kind.label());
    out.push_str("</span> ");
    match &item.subject {
        Subject::Message(id) => {
            push_fmt(
                out,
                format_args!("<a class=\"id\" href=\"{}\">", links.message(id)),
            );
            push(out, id);
            out.push_str("</a> <bdi class=\"topic\" dir=\"auto\">");
            push(out, &item.topic);
            out.push_str("</bdi>");
        }
        Subject::Alarms => {
            out.push_str("<a href=\"#alarms\">");
            push(out, &item.topic);
            out.push_str("</a>");
        }
    }
    out.push_str(" <span class=\"who\">→ ");
    who(out, &item.who);
    if let Some(h) = &item.held_by {
        out.push_str(" (held by ");
        push_bdi(out, h);
        out.push(')');
    }
    out.push_str("</span>");
    if item.since_ms < now {
        let days = (now - item.since_ms) / 86_400_000;
        let heat = match days {
            0 => 0,
            1..=2 => 1,
            3..=6 => 2,
            _ => 3,
        };
        push_fmt(
            out,
            format_args!(
                " <span class=\"age heat-{heat}\">{}</span>",
                ago_tag(item.since_ms, now)
            ),
        );
    }
    if let Some(note) = &item.note {
        out.push_str(" <bdi class=\"note\" dir=\"auto\">");
        push(out, note);
        out.push_str("</bdi>");
    }
    out.push_str("</li>");
}

/// Who must act, in words.
pub fn who(out: &mut String, w: &Who) {
    match w {
        Who::Roles(roles) if roles.is_empty() => out.push_str("nobody named"),
        Who::Roles(roles) => {
            for (i, r) in roles.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str("<b>");
                push_bdi(out, r);
                out.push_str("</b>");
            }
        }
        Who::Person => out.push_str("<b>a person</b> (the note says who)"),
        Who::Keeper => out.push_str("<b>whoever keeps the folder</b>"),
    }
}

/// A round's state as a tag: waiting for N, contested (with the rejecting
/// note), ready to pin.
pub fn round_state(out: &mut String, s: &RoundState) {
    match s {
        RoundState::Waiting { n } => push_fmt(
            out,
            format_args!("<span class=\"tag state waiting\">waiting for {n}</span>"),
        ),
        RoundState::Contested { by, decision, note } => {
            out.push_str("<span class=\"tag state contested\">contested: ");
            push_bdi(out, by);
            out.push(' ');
            push(out, &decision.replace('_', " "));
            out.push_str("</span>");
            if let Some(n) = note {
                out.push_str(" <bdi class=\"note\" dir=\"auto\">");
                push(out, n);
                out.push_str("</bdi>");
            }
        }
        RoundState::Ready => {
            out.push_str("<span class=\"tag state ready\">ready to pin</span>");
        }
        RoundState::Void => out.push_str("<span class=\"tag state\">void</span>"),
    }
}
