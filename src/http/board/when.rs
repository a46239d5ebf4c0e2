//! Times as a person reads them on the board: how long ago, with the exact
//! UTC time in a `title` attribute.
//!
//! Each `<time>` carries a class (`span` or `ago`) by which the page's
//! script rewrites its text as time passes, in the same words as [`ago`],
//! so that a page left open never reads "just now" an hour later.

use crate::core::timestamp::format_rfc3339;

/// How long before `now_ms` the time `ms` was, in one short unit ("just
/// now", "12 min", "3 h", "5 d"). A time ahead of `now_ms` (another
/// machine's clock) reads "just now".
pub fn ago(ms: i64, now_ms: i64) -> String {
    let secs = (now_ms.saturating_sub(ms)).max(0) / 1000;
    match secs {
        0..60 => "just now".to_owned(),
        60..3_600 => format!("{} min", secs / 60),
        3_600..86_400 => format!("{} h", secs / 3_600),
        _ => format!("{} d", secs / 86_400),
    }
}

/// A `<time>` element reading how long since `ms` ("3 h"), with the UTC
/// time as its `datetime` and `title`.
pub fn time_tag(ms: i64, now_ms: i64) -> String {
    tag("span", ms, ago(ms, now_ms))
}

/// A `<time>` element reading when `ms` was ("3 h ago", "just now").
pub fn ago_tag(ms: i64, now_ms: i64) -> String {
    let span = ago(ms, now_ms);
    if span == "just now" {
        tag("ago", ms, span)
    } else {
        tag("ago", ms, format!("{span} ago"))
    }
}

fn tag(class: &str, ms: i64, text: String) -> String {
    let utc = format_rfc3339(ms);
    format!("<time class=\"{class}\" datetime=\"{utc}\" title=\"{utc}\">{text}</time>")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_span_reads_in_its_own_unit() {
        let now = 1_800_000_000_000;
        assert_eq!(ago(now - 5_000, now), "just now");
        assert_eq!(ago(now + 60_000, now), "just now");
        assert_eq!(ago(now - 12 * 60_000, now), "12 min");
        assert_eq!(ago(now - 3 * 3_600_000 - 1, now), "3 h");
        assert_eq!(ago(now - 5 * 86_400_000, now), "5 d");
    }

    #[test]
    fn the_tag_carries_the_utc_time() {
        let tag = time_tag(0, 7_200_000);
        assert_eq!(
            tag,
            "<time class=\"span\" datetime=\"1970-01-01T00:00:00.000Z\" \
             title=\"1970-01-01T00:00:00.000Z\">2 h</time>"
        );
        assert!(ago_tag(0, 7_200_000).ends_with(">2 h ago</time>"));
        assert!(ago_tag(0, 7_200_000).starts_with("<time class=\"ago\" "));
        assert!(ago_tag(0, 1_000).ends_with(">just now</time>"));
    }
}
