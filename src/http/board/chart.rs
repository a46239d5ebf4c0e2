//! The chart of open debts per role over the last days, drawn as inline
//! SVG (the page loads nothing from anywhere), and each role's colour.
//!
//! The counts are daily samples (the open debts at the end of each day), so
//! each line is a step line: a count holds for its whole day and changes at
//! the day's edge, never along a diagonal that would invent counts between
//! two samples. Lines are drawn a little apart so that roles with the same
//! counts do not hide each other, and each day has a hover readout (an SVG
//! `<title>`: no script).
//!
//! A role's colour comes from its name alone (a hash to a hue), so adding
//! a role never recolours the others; its lightness is then the one that
//! reads at WCAG AA on the page's backgrounds, once for each colour scheme
//! (CSS `light-dark()`).

use super::contrast::{AA, ratio};
use super::html::escape;
use crate::app::board::Chart;
use crate::core::timestamp::format_rfc3339;

const WIDTH: i64 = 640;
const HEIGHT: i64 = 180;
const LEFT: i64 = 36;
const RIGHT: i64 = 12;
const TOP: i64 = 12;
const BOTTOM: i64 = 28;
/// Pixels between the lines of two roles with the same counts.
const SPREAD: f64 = 2.5;

/// The backgrounds a role's colour is drawn on in the light scheme: the
/// stylesheet's `--card` and `--page` (a test checks they still are).
pub const LIGHT_GROUNDS: [&str; 2] = ["#ffffff", "#f6f8fa"];
/// The same in the dark scheme.
pub const DARK_GROUNDS: [&str; 2] = ["#161b22", "#0d1117"];

/// Contrast aimed at, a little above AA so that rounding never fails it.
const AIM: f64 = AA + 0.1;

/// The hue of `role`, in degrees: a hash of its name alone.
pub fn hue(role: &str) -> u32 {
    // FNV-1a, then murmur3's finalizer so that names differing in their
    // last letter land far apart: stable across builds and platforms.
    let mut h: u32 = 0x811c_9dc5;
    for b in role.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^= h >> 16;
    h % 360
}

/// `#rrggbb` of a hue (degrees), saturation and lightness (0 to 1).
fn hsl(hue: u32, s: f64, l: f64) -> String {
    let c = (1.0 - (2.0 * l - 1.0).abs()) * s;
    let h = f64::from(hue) / 60.0;
    let x = c * (1.0 - (h % 2.0 - 1.0).abs());
    let (r, g, b) = match hue / 60 {
        0 => (c, x, 0.0),
        1 => (x, c, 0.0),
        2 => (0.0, c, x),
        3 => (0.0, x, c),
        4 => (x, 0.0, c),
        _ => (c, 0.0, x),
    };
    let m = l - c / 2.0;
    let byte = |v: f64| ((v + m) * 255.0).round().clamp(0.0, 255.0) as u8;
    format!("#{:02x}{:02x}{:02x}", byte(r), byte(g), byte(b))
}

/// `role`'s colour in the light and in the dark scheme: its hue, as light
/// (on light grounds) or as dark (on dark ones) as reads at AA.
pub fn role_colours(role: &str) -> (String, String) {
    let h = hue(role);
    let reads = |c: &str, grounds: &[&str]| grounds.iter().all(|g| ratio(c, g) >= AIM);
    let light = (0..=60)
        .rev()
        .map(|l| hsl(h, 0.7, f64::from(l) / 100.0))
        .find(|c| reads(c, &LIGHT_GROUNDS))
        .unwrap_or_else(|| "#000000".to_owned());
    let dark = (30..=100)
        .map(|l| hsl(h, 0.7, f64::from(l) / 100.0))
        .find(|c| reads(c, &DARK_GROUNDS))
        .unwrap_or_else(|| "#ffffff".to_owned());
    (light, dark)
}

/// The inline style giving an element `role`'s colour as `--role`.
pub fn role_style(role: &str) -> String {
    let (light, dark) = role_colours(role);
    format!("--role: light-dark({light}, {dark})")
}

/// The values of the value axis: from zero to a round top in at most five
/// even steps of 1, 2 or 5 times a power of ten.
pub fn ticks(max: u32) -> Vec<u64> {
    let max = u64::from(max);
    let mut step: u64 = 1;
    loop {
        for m in [1, 2, 5] {
            let s = step.saturating_mul(m);
            if max.div_ceil(s) <= 4 {
                let top = max.div_ceil(s).max(1) * s;
                return (0..=top / s).map(|i| i * s).collect();
            }
        }
        step = step.saturating_mul(10);
    }
}

/// The chart as one `<svg>` element: a step line per role, its axes, and
/// a readout per day. Role names are escaped.
pub fn svg(chart: &Chart) -> String {
    let days = chart.days.len().max(1);
    let max = chart
        .series
        .iter()
        .flat_map(|(_, v)| v.iter().copied())
        .max()
        .unwrap_or(0);
    let ticks = ticks(max);
    let top = *ticks.last().unwrap_or(&1) as f64;
    let plot_w = (WIDTH - LEFT - RIGHT) as f64;
    let plot_h = (HEIGHT - TOP - BOTTOM) as f64;
    let col = plot_w / days as f64;
    let x = |i: usize| LEFT as f64 + i as f64 * col;
    let y = |n: u64| TOP as f64 + plot_h - n as f64 * plot_h / top;

    let mut out = format!(
        "<svg class=\"chart\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" width=\"{WIDTH}\" height=\"{HEIGHT}\" \
         role=\"img\" aria-label=\"open debts per role over the last {days} days\">"
    );
    for n in &ticks {
        let yy = y(*n);
        out.push_str(&format!(
            "<line x1=\"{LEFT}\" y1=\"{yy:.1}\" x2=\"{}\" y2=\"{yy:.1}\" class=\"grid\"/>\
             <text x=\"{}\" y=\"{:.1}\" class=\"tick\" text-anchor=\"end\">{n}</text>",
            WIDTH - RIGHT,
            LEFT - 6,
            yy + 4.0
        ));
    }
    let last = chart.days.len().saturating_sub(1);
    for (i, day) in chart.days.iter().enumerate() {
        if i == 0 || i == last || i == last / 2 {
            let label = if i == last {
                "today".to_owned()
            } else {
                format_rfc3339(*day)[5..10].to_owned()
            };
            let anchor = match i {
                0 => "start",
                i if i == last => "end",
                _ => "middle",
            };
            let at = match anchor {
                "start" => x(i),
                "end" => x(i + 1),
                _ => x(i) + col / 2.0,
            };
            out.push_str(&format!(
                "<text x=\"{at:.1}\" y=\"{}\" class=\"tick\" text-anchor=\"{anchor}\">{label}</text>",
                HEIGHT - 8
            ));
        }
    }
    let lines = chart.series.len();
    for (i, (role, counts)) in chart.series.iter().enumerate() {
        let shift = (i as f64 - (lines as f64 - 1.0) / 2.0) * SPREAD;
        let mut d = String::new();
        for (day, n) in counts.iter().enumerate() {
            let yy = y(u64::from(*n)) + shift;
            if day == 0 {
                d.push_str(&format!("M{:.1} {yy:.1}", x(0)));
            } else {
                d.push_str(&format!(" V{yy:.1}"));
            }
            d.push_str(&format!(" H{:.1}", x(day + 1)));
        }
        out.push_str(&format!(
            "<path class=\"line\" style=\"{}\" d=\"{d}\"><title>{}: {} open now</title></path>",
            role_style(role),
            escape(role),
            counts.last().copied().unwrap_or(0)
        ));
    }
    // One readout per day, over the whole height of its column.
    for (i, day) in chart.days.iter().enumerate() {
        let date = &format_rfc3339(*day)[..10];
        let counts: Vec<String> = chart
            .series
            .iter()
            .map(|(role, v)| format!("{} {}", escape(role), v.get(i).copied().unwrap_or(0)))
            .collect();
        out.push_str(&format!(
            "<rect class=\"day\" x=\"{:.1}\" y=\"{TOP}\" width=\"{col:.1}\" height=\"{plot_h:.1}\">\
             <title>{date}: {}</title></rect>",
            x(i),
            if counts.is_empty() {
                "no role".to_owned()
            } else {
                counts.join(", ")
            }
        ));
    }
    out.push_str("</svg>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_roles() -> Chart {
        Chart {
            days: (0..14).map(|d| d * 86_400_000).collect(),
            series: vec![
                ("a<b>".into(), vec![0; 14]),
                ("c".into(), (0..14).collect()),
            ],
        }
    }

    #[test]
    fn each_role_gets_a_line_and_its_name_is_escaped() {
        let svg = svg(&two_roles());
        assert_eq!(svg.matches("<path class=\"line\"").count(), 2);
        assert!(svg.contains("a&lt;b&gt;: 0 open now"));
        assert!(!svg.contains("<b>"));
    }

    #[test]
    fn lines_are_steps_never_diagonals() {
        let svg = svg(&two_roles());
        for d in svg.split(" d=\"").skip(1) {
            let d = &d[..d.find('"').unwrap()];
            // One move, then only horizontal and vertical segments.
            assert!(d.starts_with('M'), "{d}");
            assert_eq!(d.matches('M').count(), 1, "{d}");
            assert!(!d.contains('L') && !d.contains('l'), "{d}");
            assert_eq!(d.matches('H').count(), 14, "a step per day: {d}");
        }
        // Lines with equal counts are drawn apart, not on top of each other.
        let firsts: Vec<&str> = svg
            .split(" d=\"M")
            .skip(1)
            .map(|d| d.split(' ').nth(1).unwrap())
            .collect();
        assert_ne!(firsts[0], firsts[1], "{svg}");
    }

    #[test]
    fn each_day_has_a_readout_of_every_role() {
        let svg = svg(&two_roles());
        assert_eq!(svg.matches("<rect class=\"day\"").count(), 14);
        assert!(
            svg.contains("<title>1970-01-04: a&lt;b&gt; 0, c 3</title>"),
            "{svg}"
        );
    }

    #[test]
    fn ticks_are_round_and_even() {
        assert_eq!(ticks(0), [0, 1]);
        assert_eq!(ticks(1), [0, 1]);
        assert_eq!(ticks(3), [0, 1, 2, 3]);
        assert_eq!(ticks(4), [0, 1, 2, 3, 4]);
        assert_eq!(ticks(5), [0, 2, 4, 6]);
        assert_eq!(ticks(7), [0, 2, 4, 6, 8]);
        assert_eq!(ticks(13), [0, 5, 10, 15]);
        assert_eq!(ticks(180), [0, 50, 100, 150, 200]);
        assert!(*ticks(u32::MAX).last().unwrap() >= u64::from(u32::MAX));
        let svg = svg(&two_roles());
        // Max 13: the axis reads 0, 5, 10, 15 and its top touches the plot's top.
        for n in ["0", "5", "10", "15"] {
            assert!(
                svg.contains(&format!("text-anchor=\"end\">{n}</text>")),
                "{n}"
            );
        }
        assert!(!svg.contains("text-anchor=\"end\">6</text>"));
        assert!(svg.contains(&format!("y1=\"{TOP}.0\"")), "{svg}");
    }

    #[test]
    fn a_role_keeps_its_colour_when_another_joins() {
        let before = svg(&two_roles());
        let mut more = two_roles();
        more.series.insert(0, ("aaa".into(), vec![1; 14]));
        let after = svg(&more);
        let style_of = |svg: &str, role: &str| {
            let at = svg.find(&format!("<title>{role}: ")).unwrap();
            let open = svg[..at].rfind("style=\"").unwrap();
            svg[open..at].split('"').nth(1).unwrap().to_owned()
        };
        assert_eq!(style_of(&before, "c"), style_of(&after, "c"));
        assert_eq!(style_of(&before, "c"), role_style("c"));
        assert!(hue("c") < 360);
        // Six roles of a real channel, six hues well apart.
        let mut hues: Vec<u32> = ["lead", "parser", "storage", "web", "docs", "review"]
            .iter()
            .map(|r| hue(r))
            .collect();
        hues.sort_unstable();
        assert!(hues.windows(2).all(|w| w[1] - w[0] >= 20), "{hues:?}");
    }

    #[test]
    fn an_empty_chart_still_draws() {
        let svg = svg(&Chart {
            days: Vec::new(),
            series: Vec::new(),
        });
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
    }
}
