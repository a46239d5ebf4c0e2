//! The board page: one self-contained HTML document drawn from a
//! [`Board`], by a pure function.
//!
//! The page loads nothing (inline `<style>`, inline SVG, one inline
//! script), so the board's Content-Security-Policy can forbid everything
//! else. It is complete without JavaScript (a `<noscript>` refresh keeps it
//! current); with it, the script listens to the board's event stream and
//! swaps the page's `<header>` and `<main>` for fresh copies whenever the
//! channel changes, keeps every relative time true as the page stays open,
//! and shows when the server stopped answering.
//!
//! Every string from the channel goes through [`escape`], and each piece of
//! it is isolated in its own direction (`dir="auto"` or `<bdi>`), so
//! right-to-left text is neither reordered nor reorders the page's words.
//! The stylesheet has a light and a dark palette (`prefers-color-scheme`),
//! every colour of both named in them and checked for WCAG AA contrast by
//! the tests of [`super::contrast`]; below 700 px wide, table rows become
//! cards (each cell labelled) and role cards become chips, so a phone never
//! scrolls sideways.

use super::chart::{role_style, svg};
use super::html::{escape, push, push_bdi, push_fmt};
use super::links::Links;
use super::strip;
use super::when::{ago_tag, time_tag};
use crate::app::board::{
    AlarmItem, Board, DebtItem, DeviceItem, PinItem, ProposalItem, RoleCard, Section, SyncHealth,
};
use crate::app::timeline::{ActivityPage, Entry};

/// Seconds between refreshes of the page without JavaScript.
pub const NOSCRIPT_REFRESH_SECS: u32 = 30;

/// The board's stylesheet, shared by its pages.
pub const STYLE: &str = r#"
:root { color-scheme: light dark;
  --ink: #1f2328; --muted: #59636e; --warn: #9a3412; --line: #d8dee4;
  --page: #f6f8fa; --card: #ffffff; --head-bg: #f6f8fa; --tag-bg: #eef1f4;
  --agree-bg: #e6f4ea; --reject-bg: #fde8e8; --warn-bg: #fff4ed;
  --alarm: #b42318; --heat: #8a5a00; --link: #0a5cc2; }
@media (prefers-color-scheme: dark) { :root {
  --ink: #e6edf3; --muted: #a3acb7; --warn: #ff9b57; --line: #30363d;
  --page: #0d1117; --card: #161b22; --head-bg: #1c2128; --tag-bg: #262c36;
  --agree-bg: #12301c; --reject-bg: #3b1618; --warn-bg: #2d1a0e;
  --alarm: #ff7b72; --heat: #d29922; --link: #6cb6ff; } }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif;
  color: var(--ink); background: var(--page); }
header { padding: 14px 24px; background: var(--card); border-bottom: 1px solid var(--line);
  display: flex; flex-wrap: wrap; gap: 6px 18px; align-items: baseline; }
header h1 { margin: 0; font-size: 18px; font-weight: 600; overflow-wrap: anywhere; }
header .meta { color: var(--muted); font-size: 13px; overflow-wrap: anywhere; }
header .live.down { color: var(--warn); background: var(--warn-bg); border: 1px solid var(--warn);
  border-radius: 6px; padding: 2px 8px; font-size: 14px; font-weight: 600; }
main { padding: 16px 24px 40px; max-width: 1240px; }
h2 { font-size: 15px; margin: 26px 0 8px; font-weight: 600; }
h2 .count { color: var(--muted); font-weight: 400; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(210px, 1fr)); gap: 12px; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 10px 14px;
  border-top: 4px solid var(--role); }
.card h3 { margin: 0 0 6px; font-size: 15px; overflow-wrap: anywhere; }
.card dl { display: grid; grid-template-columns: 1fr auto; margin: 0; gap: 2px 10px; }
.card dt { color: var(--muted); } .card dd { margin: 0; text-align: right; font-variant-numeric: tabular-nums; }
.card dd.hot { font-weight: 700; }
table { width: 100%; border-collapse: collapse; background: var(--card); border: 1px solid var(--line);
  border-radius: 8px; overflow: hidden; }
th, td { text-align: start; padding: 6px 10px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-weight: 600; color: var(--muted); font-size: 12px; background: var(--head-bg); white-space: nowrap; }
td.id, td.when, td.state, td.num { white-space: nowrap; }
td code { overflow-wrap: anywhere; }
tr:last-child td { border-bottom: none; }
code, .id { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 12px; }
.muted { color: var(--muted); }
a, a:visited { color: var(--link); }
.empty { color: var(--muted); font-style: italic; padding: 4px 0; }
.tag { display: inline-block; padding: 0 6px; border-radius: 10px; background: var(--tag-bg); font-size: 12px;
  white-space: nowrap; }
.tag.agree { background: var(--agree-bg); } .tag.object, .tag.reject { background: var(--reject-bg); }
.tag.stale { text-decoration: line-through; }
.alarm td { background: var(--warn-bg); } .alarm .kind { color: var(--warn); font-weight: 600; }
.excerpt { color: var(--muted); white-space: pre-wrap; overflow-wrap: anywhere; }
td.topic { overflow-wrap: anywhere; }
.chart { background: var(--card); border: 1px solid var(--line); border-radius: 8px; width: 100%; max-width: 880px;
  height: auto; }
.chart .grid { stroke: var(--line); } .chart .tick { fill: var(--muted); font-size: 11px; }
.chart .line { fill: none; stroke: var(--role); stroke-width: 2; }
.chart .day { fill: transparent; } .chart .day:hover { fill: var(--line); fill-opacity: 0.35; }
.legend { display: flex; flex-wrap: wrap; gap: 4px 14px; margin: 6px 0 0; font-size: 13px; }
.legend span::before { content: ""; display: inline-block; width: 10px; height: 10px; border-radius: 2px;
  background: var(--role); margin-right: 5px; }
.more { color: var(--muted); font-size: 12px; margin: 4px 0; }
@media (max-width: 700px) {
  header { padding: 10px 14px; } main { padding: 8px 14px 32px; }
  .cards { display: flex; gap: 6px; overflow-x: auto; padding-bottom: 4px; }
  .card { flex: none; display: flex; align-items: baseline; gap: 0 8px; padding: 3px 10px; white-space: nowrap;
    border-top: 1px solid var(--line); border-left: 4px solid var(--role); border-radius: 14px; }
  .card h3 { margin: 0; font-size: 14px; }
  .card dl { display: flex; gap: 0 4px; } .card dt { font-size: 12px; }
  .card dd { margin-right: 6px; } .card .zero { display: none; }
  table, tbody, tr, td { display: block; width: 100%; }
  table { background: none; border: none; border-radius: 0; overflow: visible; }
  tr:has(> th) { display: none; }
  tr { display: flex; flex-wrap: wrap; gap: 2px 14px; background: var(--card); border: 1px solid var(--line);
    border-radius: 8px; padding: 8px 12px; margin-bottom: 8px; }
  td { width: auto; max-width: 100%; padding: 0; border: none; }
  td.topic { flex-basis: 100%; order: -1; font-size: 15px; }
  td[data-label]::before { content: attr(data-label) " "; color: var(--muted); font-size: 12px; }
  tr.alarm { background: var(--warn-bg); }
}
"#;

/// Keeps the page current: swaps in a fresh `<header>` and `<main>` when
/// the board's event stream says the channel changed, rewrites every
/// relative time as time passes (the server's clock, from `data-now`), and
/// says plainly, with the time, when the server stops answering. Without
/// JavaScript the `<noscript>` refresh does the first two.
const SCRIPT: &str = r#"
(function () {
  "use strict";
  var skew = 0, open = false, downSince = null, closed = false;
  function two(n) { return (n < 10 ? "0" : "") + n; }
  function span(ms) {
    var s = Math.max(0, Math.floor(ms / 1000));
    if (s < 60) return "just now";
    if (s < 3600) return Math.floor(s / 60) + " min";
    if (s < 86400) return Math.floor(s / 3600) + " h";
    return Math.floor(s / 86400) + " d";
  }
  function clock() {
    var main = document.querySelector("main[data-now]");
    var now = main && Number(main.getAttribute("data-now"));
    if (now) skew = now - Date.now();
  }
  function tick() {
    var now = Date.now() + skew, all = document.querySelectorAll("time.ago, time.span");
    for (var i = 0; i < all.length; i++) {
      var t = all[i], at = Date.parse(t.getAttribute("datetime"));
      if (isNaN(at)) continue;
      var s = span(now - at);
      t.textContent = t.classList.contains("ago") && s !== "just now" ? s + " ago" : s;
    }
  }
  function show() {
    var live = document.getElementById("live");
    if (!live) return;
    if (downSince) {
      live.className = "meta live down";
      live.textContent = "disconnected since " + two(downSince.getHours()) + ":" +
        two(downSince.getMinutes()) + ": this is the board as read then; " +
        (closed ? "reload the page to continue" : "reconnecting");
    } else if (open) {
      live.className = "meta live";
      live.textContent = "live";
    }
  }
  function down() {
    if (!downSince) downSince = new Date();
    show();
  }
  clock();
  tick();
  setInterval(tick, 30000);
  document.addEventListener("visibilitychange", function () { if (!document.hidden) tick(); });
  if (!window.EventSource || !window.fetch || !window.DOMParser) return;
  var here = location.pathname.replace(/\/+$/, "");
  var busy = false, again = false;
  function reload() {
    if (busy) { again = true; return; }
    busy = true;
    fetch(here, { credentials: "same-origin", cache: "no-store" }).then(function (r) {
      if (!r.ok) throw new Error(r.status);
      return r.text();
    }).then(function (text) {
      var doc = new DOMParser().parseFromString(text, "text/html");
      ["header", "main"].forEach(function (part) {
        var fresh = doc.querySelector(part), old = document.querySelector(part);
        if (fresh && old) old.replaceWith(document.adoptNode(fresh));
      });
      clock();
      tick();
      show();
    }).catch(function () {
      closed = true;
      down();
    }).then(function () {
      busy = false;
      if (again) { again = false; reload(); }
    });
  }
  var events = new EventSource(here + "/events");
  events.addEventListener("change", reload);
  events.onopen = function () {
    open = true;
    if (downSince) { downSince = null; closed = false; reload(); }
    show();
  };
  events.onerror = function () {
    closed = events.readyState === EventSource.CLOSED;
    down();
  };
})();
"#;

/// The whole page.
pub fn render(b: &Board) -> String {
    let now = b.generated_ms;
    let mut out = String::with_capacity(32 * 1024);
    out.push_str("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">");
    out.push_str("<meta name=\"referrer\" content=\"no-referrer\">");
    push_fmt(
        &mut out,
        format_args!(
            "<noscript><meta http-equiv=\"refresh\" content=\"{NOSCRIPT_REFRESH_SECS}\"></noscript>"
        ),
    );
    out.push_str("<title>");
    push(&mut out, &b.channel);
    out.push_str(" · countersign board</title><style>");
    out.push_str(STYLE);
    out.push_str(strip::STYLE);
    out.push_str("</style></head><body><header><h1>");
    push_bdi(&mut out, &b.channel);
    out.push_str("</h1>");
    strip::alarm_badge(&mut out, &b.attention);
    out.push_str("<span class=\"meta\">read ");
    out.push_str(&ago_tag(now, now));
    out.push_str("</span><span class=\"meta\">");
    match &b.remote {
        Some(r) => {
            out.push_str("synced with ");
            push_bdi(&mut out, r);
        }
        None => out.push_str("no sync remote on this machine"),
    }
    out.push_str("</span><span class=\"meta live\" id=\"live\">");
    push_fmt(
        &mut out,
        format_args!("refreshes every {NOSCRIPT_REFRESH_SECS} s; reload the page for the latest"),
    );
    push_fmt(
        &mut out,
        format_args!("</span></header>\n<main data-now=\"{now}\">"),
    );
    let links = Links::board(&b.channel);
    strip::strip(&mut out, &b.attention, &links);

    roles(&mut out, &b.roles);
    out.push_str("<h2>Open debts per role, last 14 days</h2>");
    out.push_str(&svg(&b.chart));
    out.push_str("<div class=\"legend\">");
    for (role, counts) in &b.chart.series {
        push_fmt(
            &mut out,
            format_args!("<span style=\"{}\">", role_style(role)),
        );
        push_bdi(&mut out, role);
        push_fmt(
            &mut out,
            format_args!(" ({})</span>", counts.last().copied().unwrap_or(0)),
        );
    }
    out.push_str("</div>");
    debts(
        &mut out,
        ("Open debts", "open-debts"),
        &b.open_debts,
        now,
        "no open debts",
        &links,
    );
    debts(
        &mut out,
        ("Resolved, waiting for confirmation", "unconfirmed"),
        &b.unconfirmed,
        now,
        "no resolution waits for confirmation",
        &links,
    );
    proposals(&mut out, &b.proposals, now, &links);
    pins(&mut out, &b.pins, now, &links);
    devices(&mut out, &b.devices, now);
    alarms(&mut out, &b.alarms, b.attention.quiet_problems);
    activity(&mut out, b, now, &links);
    out.push_str("</main>\n<script>");
    out.push_str(SCRIPT);
    out.push_str("</script></body></html>\n");
    out
}

fn heading(out: &mut String, title: &str, id: &str, n: usize, more: bool) {
    push_fmt(
        out,
        format_args!(
            "<h2 id=\"{id}\">{title} <span class=\"count\">{n}{}</span></h2>",
            if more { "+" } else { "" }
        ),
    );
}

fn more_note(out: &mut String, more: bool) {
    if more {
        out.push_str("<p class=\"more\">more than shown; the oldest are listed first</p>");
    }
}

/// Opens a cell: `class` says how it lays out (`id`, `when`, `state`,
/// `num` never wrap), `label` names it where rows become cards on a narrow
/// screen (the page's own words, never peer text).
pub(super) fn cell(out: &mut String, class: &str, label: &str) {
    out.push_str("<td");
    if !class.is_empty() {
        push_fmt(out, format_args!(" class=\"{class}\""));
    }
    if !label.is_empty() {
        push_fmt(out, format_args!(" data-label=\"{label}\""));
    }
    out.push('>');
}

/// Opens the cell of a row's peer-written subject: first on a card, its
/// direction taken from its own text.
pub(super) fn topic_cell(out: &mut String) {
    out.push_str("<td class=\"topic\" dir=\"auto\">");
}

fn roles(out: &mut String, cards: &[RoleCard]) {
    out.push_str("<h2 id=\"roles\">Roles</h2><div class=\"cards\">");
    for c in cards {
        push_fmt(
            out,
            format_args!(
                "<section class=\"card role\" style=\"{}\"><h3>",
                role_style(&c.role)
            ),
        );
        push_bdi(out, &c.role);
        out.push_str("</h3><dl>");
        // What the role must do first, what it has not read last.
        for (label, n) in [
            ("owed", c.owed),
            ("to confirm", c.to_confirm),
            ("votes awaited", c.votes_awaited),
            ("unread", c.unread),
        ] {
            let class = if n > 0 { "hot" } else { "zero" };
            push_fmt(
                out,
                format_args!("<dt class=\"{class}\">{label}</dt><dd class=\"{class}\">{n}</dd>"),
            );
        }
        out.push_str("</dl></section>");
    }
    out.push_str("</div>");
}

fn names(out: &mut String, roles: &[String]) {
    if roles.is_empty() {
        out.push_str("<span class=\"muted\">nobody</span>");
    }
    for (i, r) in roles.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        push_bdi(out, r);
    }
}

fn debts(
    out: &mut String,
    (title, id): (&str, &str),
    s: &Section<DebtItem>,
    now: i64,
    none: &str,
    links: &Links,
) {
    heading(out, title, id, s.items.len(), s.more);
    if s.items.is_empty() {
        push_fmt(out, format_args!("<p class=\"empty\">{none}</p>"));
        return;
    }
    out.push_str(
        "<table class=\"debts\"><tr><th>id</th><th>topic</th><th>from → to</th><th>state</th>\
         <th>whose move</th><th>for</th><th>sent</th></tr>",
    );
    for d in &s.items {
        push_fmt(
            out,
            format_args!("<tr class=\"debt\" id=\"d-{}\">", escape(&d.id)),
        );
        cell(out, "id", "");
        push_fmt(out, format_args!("<a href=\"{}\">", links.message(&d.id)));
        push(out, &d.id);
        out.push_str("</a></td>");
        topic_cell(out);
        push(out, &d.topic);
        out.push_str("</td>");
        cell(out, "", "from → to");
        push_bdi(out, &d.from);
        out.push_str(" → ");
        names(out, &d.to);
        out.push_str("</td>");
        cell(out, "state", "");
        out.push_str("<span class=\"tag\">");
        push(out, &d.state.replace('_', " "));
        out.push_str("</span>");
        if let Some(by) = &d.resolved_by {
            out.push_str(" by ");
            push_bdi(out, by);
        }
        if let Some(b) = &d.blocked_by {
            push_fmt(
                out,
                format_args!(" on <a class=\"id blocker\" href=\"{}\">", links.message(b)),
            );
            push(out, b);
            out.push_str("</a>");
        }
        out.push_str("</td>");
        cell(out, "", "whose move");
        names(out, &d.court);
        out.push_str("</td>");
        cell(out, "when", "for");
        out.push_str(&time_tag(d.since_ms, now));
        out.push_str("</td>");
        cell(out, "when", "sent");
        out.push_str(&ago_tag(d.sent_ms, now));
        out.push_str("</td></tr>");
    }
    out.push_str("</table>");
    more_note(out, s.more);
}

fn proposals(out: &mut String, s: &Section<ProposalItem>, now: i64, links: &Links) {
    heading(out, "Open proposals", "proposals", s.items.len(), s.more);
    if s.items.is_empty() {
        out.push_str("<p class=\"empty\">no proposal waits for a decision</p>");
        return;
    }
    out.push_str(
        "<table><tr><th>id</th><th>topic</th><th>from</th><th>pin</th><th>votes cast</th>\
         <th>awaited</th><th>state</th><th>sent</th></tr>",
    );
    for p in &s.items {
        out.push_str("<tr class=\"proposal\">");
        cell(out, "id", "");
        push_fmt(out, format_args!("<a href=\"{}\">", links.message(&p.id)));
        push(out, &p.id);
        out.push_str("</a></td>");
        topic_cell(out);
        push(out, &p.topic);
        out.push_str("</td>");
        cell(out, "", "from");
        push_bdi(out, &p.from);
        out.push_str("</td>");
        cell(out, "", "pin");
        match &p.pin_key {
            Some(k) => {
                out.push_str("<code>");
                push_bdi(out, k);
                out.push_str("</code>");
            }
            None => out.push_str("<span class=\"muted\">—</span>"),
        }
        out.push_str("</td>");
        cell(out, "", "votes");
        if p.votes.is_empty() {
            out.push_str("<span class=\"muted\">none yet</span>");
        }
        for v in &p.votes {
            let class = if v.stale {
                "tag stale".to_owned()
            } else {
                format!("tag {}", escape(&v.decision))
            };
            push_fmt(
                out,
                format_args!(
                    "<span class=\"{class}\" title=\"{}\">",
                    if v.stale {
                        "cast on an earlier text"
                    } else {
                        "standing"
                    }
                ),
            );
            push_bdi(out, &v.role);
            out.push_str(": ");
            push(out, &v.decision);
            out.push_str("</span> ");
        }
        out.push_str("</td>");
        cell(out, "", "awaited");
        names(out, &p.awaiting);
        out.push_str("</td>");
        cell(out, "", "");
        strip::round_state(out, &p.state);
        out.push_str("</td>");
        cell(out, "when", "sent");
        out.push_str(&ago_tag(p.sent_ms, now));
        out.push_str("</td></tr>");
    }
    out.push_str("</table>");
    more_note(out, s.more);
}

fn pins(out: &mut String, s: &Section<PinItem>, now: i64, links: &Links) {
    heading(out, "Pins", "pins", s.items.len(), s.more);
    if s.items.is_empty() {
        out.push_str("<p class=\"empty\">nothing pinned</p>");
        return;
    }
    out.push_str(
        "<table><tr><th>key</th><th>title</th><th>version</th><th>sha256</th><th>by</th>\
         <th>approved by</th><th>set</th></tr>",
    );
    for p in &s.items {
        out.push_str("<tr class=\"pin\">");
        cell(out, "", "");
        push_fmt(
            out,
            format_args!("<a href=\"{}\"><code>", links.pin(&p.key)),
        );
        push_bdi(out, &p.key);
        out.push_str("</code></a></td>");
        topic_cell(out);
        push(out, &p.title);
        out.push_str("</td>");
        cell(out, "", "version");
        push_bdi(out, &p.version);
        out.push_str("</td>");
        cell(out, "id", "sha256");
        out.push_str("<code title=\"");
        push(out, &p.sha256);
        out.push_str("\">");
        push(out, p.sha256.get(..12).unwrap_or(&p.sha256));
        out.push_str("…</code></td>");
        cell(out, "", "by");
        push_bdi(out, &p.by);
        out.push_str("</td>");
        cell(out, "", "approved by");
        match &p.approved_by {
            Some(id) => {
                out.push_str("<span class=\"id\">");
                push(out, id);
                out.push_str("</span>");
                if let Some(t) = &p.approved_topic {
                    out.push(' ');
                    push_bdi(out, t);
                }
            }
            None => out.push_str("<span class=\"muted\">set directly</span>"),
        }
        out.push_str("</td>");
        cell(out, "when", "set");
        out.push_str(&ago_tag(p.ms, now));
        out.push_str("</td></tr>");
    }
    out.push_str("</table>");
    more_note(out, s.more);
}

fn devices(out: &mut String, list: &[DeviceItem], now: i64) {
    heading(out, "Devices", "devices", list.len(), false);
    if list.is_empty() {
        out.push_str("<p class=\"empty\">no device has written yet</p>");
        return;
    }
    out.push_str(
        "<table><tr><th>role</th><th>device</th><th>records</th><th>last heard</th>\
         <th>sync</th></tr>",
    );
    for d in list {
        out.push_str("<tr class=\"device\">");
        cell(out, "", "role");
        push_bdi(out, &d.role);
        out.push_str("</td>");
        cell(out, "", "device");
        out.push_str("<code>");
        push_bdi(out, &d.device);
        out.push_str("</code>");
        if d.this_device {
            out.push_str(" <span class=\"tag\">this machine</span>");
        }
        out.push_str("</td>");
        cell(out, "num", "records");
        push_fmt(out, format_args!("{}</td>", d.records));
        cell(out, "when", "last heard");
        match d.last_heard_ms {
            Some(ms) => out.push_str(&ago_tag(ms, now)),
            None => out.push_str("<span class=\"muted\">never</span>"),
        }
        out.push_str("</td>");
        cell(out, "", "sync");
        match &d.sync {
            SyncHealth::Current => out.push_str("up to date"),
            SyncHealth::Behind { missing } => push_fmt(
                out,
                format_args!("<span class=\"tag\">{missing} records announced, not here</span>"),
            ),
            SyncHealth::Frozen { reason } => {
                out.push_str("<span class=\"tag\">frozen</span> ");
                push_bdi(out, reason);
            }
            SyncHealth::Synced { at_ms } => {
                out.push_str("synced ");
                out.push_str(&ago_tag(*at_ms, now));
            }
            SyncHealth::Failed { at_ms, error } => {
                out.push_str("<span class=\"tag\">last sync failed</span> ");
                out.push_str(&ago_tag(*at_ms, now));
                out.push_str(": ");
                push_bdi(out, error);
            }
            SyncHealth::NotSynced => out.push_str("<span class=\"muted\">no remote</span>"),
            SyncHealth::Unknown => out.push_str("<span class=\"muted\">no sync yet</span>"),
        }
        out.push_str("</td></tr>");
    }
    out.push_str("</table>");
}

fn alarms(out: &mut String, s: &Section<AlarmItem>, quiet: usize) {
    heading(out, "Alarms", "alarms", s.items.len(), s.more);
    if quiet > 0 {
        // Said even with no alarm: `verify` exits 1 on these, so the board
        // must not read "nothing wrong".
        push_fmt(
            out,
            format_args!(
                "<p class=\"more\" id=\"verify-note\">besides alarms, <code>countersign verify</code> \
                 reports {quiet} harmless problem(s): files no feed uses (a conflict copy left by a \
                 sync tool, say) or unreadable lines; it lists them, and removing the files clears \
                 them</p>"
            ),
        );
    }
    if s.items.is_empty() {
        out.push_str(if quiet > 0 {
            "<p class=\"empty\">no alarm: no fork, quarantine, held record or lost decision</p>"
        } else {
            "<p class=\"empty\">no alarm: nothing wrong found in the folder</p>"
        });
        return;
    }
    out.push_str("<table><tr><th>kind</th><th>feed</th><th>where</th><th>what</th></tr>");
    for a in &s.items {
        out.push_str("<tr class=\"alarm\">");
        cell(out, "kind", "");
        push(out, &a.kind.replace('_', " "));
        out.push_str("</td>");
        cell(out, "", "feed");
        out.push_str("<code>");
        push_bdi(out, a.feed.as_deref().unwrap_or("—"));
        out.push_str("</code></td>");
        cell(out, "", "where");
        out.push_str("<code>");
        push_bdi(out, &a.r#where);
        out.push_str("</code></td>");
        topic_cell(out);
        push(out, &a.reason);
        out.push_str("</td></tr>");
    }
    out.push_str("</table>");
    more_note(out, s.more);
}

fn activity(out: &mut String, b: &Board, now: i64, links: &Links) {
    heading(
        out,
        "Recent activity",
        "traffic",
        b.activity.entries.len(),
        b.activity.next.is_some(),
    );
    entries(out, &b.activity, now, links);
}

/// The moves of `page` as a table, with the link to the next page back:
/// shared by the board's "Recent activity" and the activity pages.
pub fn entries(out: &mut String, page: &ActivityPage, now: i64, links: &Links) {
    if page.entries.is_empty() {
        out.push_str("<p class=\"empty\">no activity yet</p>");
        return;
    }
    out.push_str("<table class=\"activity\"><tr><th>when</th><th>who</th><th>what</th></tr>");
    for e in &page.entries {
        out.push_str("<tr class=\"move\">");
        cell(out, "when", "");
        out.push_str(&ago_tag(e.ms, now));
        out.push_str("</td>");
        cell(out, "", "");
        push_bdi(out, &e.role);
        out.push_str("</td>");
        // The page's own words, each piece of peer text isolated in it.
        out.push_str("<td class=\"topic\">");
        what(out, e, links);
        out.push_str("</td></tr>");
    }
    out.push_str("</table>");
    if let Some(next) = &page.next {
        push_fmt(
            out,
            format_args!(
                "<p class=\"more\"><a rel=\"next\" href=\"{}\">older activity →</a></p>",
                links.activity(next)
            ),
        );
    }
}

/// What a record did, its subject linked, and its note.
pub(super) fn what(out: &mut String, e: &Entry, links: &Links) {
    push(out, &e.what);
    if let Some(b) = &e.names {
        push_fmt(
            out,
            format_args!(" on <a class=\"id blocker\" href=\"{}\">", links.message(b)),
        );
        push(out, b);
        out.push_str("</a>");
    }
    if let Some(k) = &e.pin_key {
        push_fmt(out, format_args!(" <a href=\"{}\">pin</a>", links.pin(k)));
    }
    if let Some(id) = &e.subject {
        push_fmt(
            out,
            format_args!(": <a class=\"id\" href=\"{}\">", links.message(id)),
        );
        push(out, id);
        out.push_str("</a>");
        if let Some(t) = &e.subject_topic {
            out.push_str(" <bdi dir=\"auto\">");
            push(out, t);
            out.push_str("</bdi>");
        }
    }
    if let Some(n) = &e.note {
        out.push_str(" <div class=\"excerpt\" dir=\"auto\">");
        push(out, n);
        out.push_str("</div>");
    }
}
