//! The memory as one HTML page for a person (`countersign memory export`):
//! titled with the channel's name, the messages grouped by day, each line
//! `author · time · topic` opening into its text, the summaries so far in a
//! list above them, and a search box.
//!
//! Every text in it was written by peers (the channel's name included) and
//! goes through `core::peer_text::html`, marked `dir="auto"` so a
//! right-to-left text keeps its order. The page loads nothing: its
//! Content-Security-Policy allows only its own style and script, by hash,
//! and the script only hides and opens what the page already holds (it
//! reads text, never writes markup).

use std::fmt::Write as _;

use base64::Engine as _;
use sha2::{Digest as _, Sha256};

use crate::app::Session;
use crate::app::memory::{self, Walked};
use crate::core::peer_text::html;
use crate::core::timestamp::format_rfc3339;
use crate::store::MemoryItem;
use crate::store::now_ms;

const STYLE: &str = "\
:root{color-scheme:light dark}\
body{font:15px/1.45 system-ui,sans-serif;margin:0 auto;padding:1em;max-width:60em}\
header{position:sticky;top:0;background:Canvas;padding:.5em 0;border-bottom:1px solid #8884}\
h1{font-size:1.4em;margin:.2em 0}h2{font-size:1.05em;margin:1.4em 0 .4em}\
input{font:inherit;width:100%;max-width:28em;padding:.35em;box-sizing:border-box}\
.meta{color:GrayText}.who{font-weight:600}\
details.item{margin:.15em 0}details.item>summary{cursor:pointer;overflow-wrap:anywhere}\
.sum{margin:.3em 0 .3em 1.2em}\
pre{white-space:pre-wrap;overflow-wrap:anywhere;background:#8881;padding:.6em;margin:.3em 0 .6em 1.2em}\
ul.summaries{padding-left:1.2em}ul.summaries li{margin:.3em 0}";

/// The search: hides the lines and days that do not hold every word typed,
/// and opens the messages that do.
const SCRIPT: &str = "\
const q=document.getElementById('q'),found=document.getElementById('found');\
q.addEventListener('input',()=>{\
const words=q.value.toLowerCase().split(/\\s+/).filter(Boolean);let n=0;\
for(const it of document.querySelectorAll('.item')){\
const t=it.textContent.toLowerCase();const hit=words.every(w=>t.includes(w));\
it.hidden=!hit;if(hit&&words.length){n++;if(it.tagName==='DETAILS')it.open=true;}}\
for(const s of document.querySelectorAll('.day,.summaries-box')){\
s.hidden=words.length>0&&!s.querySelector('.item:not([hidden])');}\
found.textContent=words.length?n+(n===1?' match':' matches'):'';});";

/// `'sha256-…'` of a text, for the Content-Security-Policy.
fn csp_hash(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    format!(
        "'sha256-{}'",
        base64::engine::general_purpose::STANDARD.encode(digest)
    )
}

/// One message of the memory, with the summary of its own line when it was
/// long enough to need one.
struct Message<'a> {
    item: &'a MemoryItem,
    summary: Option<String>,
}

/// A line covering several items that has a summary.
struct Summary {
    first_ms: i64,
    last_ms: i64,
    items: usize,
    text: String,
}

/// The whole memory as one page.
pub fn export(s: &mut Session) -> anyhow::Result<String> {
    let name = s.channel().dir().genesis().name.clone();
    // The walk lends each item for one step: they are copied out.
    let mut items: Vec<(MemoryItem, Option<String>)> = Vec::new();
    let mut summaries: Vec<Summary> = Vec::new();
    // The line last opened, until its original (if it is an item) follows.
    let mut open: Option<(usize, Option<String>)> = None;
    memory::memory_walk(s, |w| {
        match w {
            Walked::Open {
                items: n,
                text,
                first_ms,
                last_ms,
                ..
            } => {
                if n > 1
                    && let Some(t) = text
                {
                    summaries.push(Summary {
                        first_ms,
                        last_ms,
                        items: n,
                        text: t.to_owned(),
                    });
                }
                open = Some((n, text.map(str::to_owned)));
            }
            Walked::Original(m) => {
                let summary = match open.take() {
                    Some((1, text)) => text,
                    _ => None,
                };
                items.push((m.clone(), summary));
            }
            Walked::Close => open = None,
        }
        Ok(())
    })?;
    let messages: Vec<Message<'_>> = items
        .iter()
        .map(|(item, summary)| Message {
            item,
            summary: summary.clone(),
        })
        .collect();
    Ok(render(&name, &messages, &summaries, now_ms()))
}

/// `YYYY-MM-DD` and `HH:MM` of a time.
fn day_and_time(ms: i64) -> (String, String) {
    let t = format_rfc3339(ms);
    (
        t.get(..10).unwrap_or(&t).to_owned(),
        t.get(11..16).unwrap_or_default().to_owned(),
    )
}

fn render(name: &str, messages: &[Message<'_>], summaries: &[Summary], now: i64) -> String {
    let title = html(name);
    let csp = format!(
        "default-src 'none'; style-src {}; script-src {}; base-uri 'none'; form-action 'none'",
        csp_hash(STYLE),
        csp_hash(SCRIPT)
    );
    let span = match (messages.first(), messages.last()) {
        (Some(a), Some(b)) => format!(
            "{} message{} from {} to {}",
            messages.len(),
            if messages.len() == 1 { "" } else { "s" },
            day_and_time(a.item.key.hlc.ms()).0,
            day_and_time(b.item.key.hlc.ms()).0
        ),
        _ => "no message yet".to_owned(),
    };
    let mut out = format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{csp}\">\n\
         <title dir=\"auto\">{title} · memory</title><style>{STYLE}</style></head><body>\n\
         <header><h1 dir=\"auto\">{title}</h1>\n<p class=\"meta\">The channel's memory: {span}. \
         Exported {}. Written by the channel's agents: read it as content, not instructions.</p>\n\
         <input type=\"search\" id=\"q\" placeholder=\"Search the memory\" \
         aria-label=\"Search the memory\" autocomplete=\"off\"> <span id=\"found\" \
         class=\"meta\" role=\"status\"></span></header>\n<main>\n",
        format_rfc3339(now)
    );
    if !summaries.is_empty() {
        let _ = writeln!(
            out,
            "<details class=\"summaries-box\"><summary>Summaries so far ({})</summary>\
             <ul class=\"summaries\">",
            summaries.len()
        );
        for s in summaries {
            let (first, _) = day_and_time(s.first_ms);
            let (last, _) = day_and_time(s.last_ms);
            let when = if first == last {
                first
            } else {
                format!("{first} – {last}")
            };
            let _ = writeln!(
                out,
                "<li class=\"item\"><span class=\"meta\">{when} · {} messages</span><br>\
                 <span dir=\"auto\">{}</span></li>",
                s.items,
                html(&s.text)
            );
        }
        out.push_str("</ul></details>\n");
    }
    let mut day = String::new();
    for m in messages {
        let (d, time) = day_and_time(m.item.key.hlc.ms());
        if d != day {
            if !day.is_empty() {
                out.push_str("</section>\n");
            }
            let _ = writeln!(out, "<section class=\"day\"><h2>{d}</h2>");
            day = d;
        }
        let summary = m
            .summary
            .as_deref()
            .map(|t| format!("<p class=\"sum\" dir=\"auto\">{}</p>", html(t)))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "<details class=\"item\"><summary><span class=\"who\" dir=\"auto\">{}</span> · \
             <span class=\"meta\">{time}</span> · <span dir=\"auto\">{}</span></summary>\
             {summary}<pre dir=\"auto\">{}</pre></details>",
            html(&m.item.role),
            html(&m.item.topic),
            html(&m.item.body)
        );
    }
    if day.is_empty() {
        out.push_str("<p>The memory is empty: no message has settled yet.</p>\n");
    } else {
        out.push_str("</section>\n");
    }
    let _ = write!(out, "</main>\n<script>{SCRIPT}</script>\n</body></html>\n");
    out
}
