//! The chart of open debts per role over the last days, drawn as inline
//! SVG (the page loads nothing from anywhere).

use super::html::escape;
use crate::app::board::Chart;
use crate::core::timestamp::format_rfc3339;

const WIDTH: i64 = 640;
const HEIGHT: i64 = 180;
const LEFT: i64 = 36;
const RIGHT: i64 = 12;
const TOP: i64 = 12;
const BOTTOM: i64 = 28;

/// The colours of the roles' lines, in roster order (then again).
pub const PALETTE: [&str; 8] = [
    "#3b6ea5", "#c0703a", "#4f8f5b", "#9b4f96", "#b3a235", "#4a9aa8", "#a84a4a", "#6b6b6b",
];

/// The colour of the `i`-th role.
pub fn colour(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

/// The chart as one `<svg>` element with a line per role, its axis and a
/// legend. Role names are escaped.
pub fn svg(chart: &Chart) -> String {
    let days = chart.days.len().max(1) as i64;
    let max = chart
        .series
        .iter()
        .flat_map(|(_, v)| v.iter().copied())
        .max()
        .unwrap_or(0)
        .max(1) as i64;
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let x = |i: i64| LEFT + if days > 1 { i * plot_w / (days - 1) } else { 0 };
    let y = |n: i64| TOP + plot_h - n * plot_h / max;

    let mut out = format!(
        "<svg class=\"chart\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" width=\"{WIDTH}\" height=\"{HEIGHT}\" \
         role=\"img\" aria-label=\"open debts per role over the last {days} days\">"
    );
    // Axis and grid: zero, the maximum, and half-way.
    for n in [0, max / 2, max] {
        let yy = y(n);
        out.push_str(&format!(
            "<line x1=\"{LEFT}\" y1=\"{yy}\" x2=\"{}\" y2=\"{yy}\" class=\"grid\"/>\
             <text x=\"{}\" y=\"{}\" class=\"tick\" text-anchor=\"end\">{n}</text>",
            WIDTH - RIGHT,
            LEFT - 6,
            yy + 4
        ));
    }
    let last = chart.days.len().saturating_sub(1);
    for (i, day) in chart.days.iter().enumerate() {
        if i == 0 || i == last || i == last / 2 {
            let label = &format_rfc3339(*day)[5..10];
            let anchor = match i {
                0 => "start",
                i if i == last => "end",
                _ => "middle",
            };
            out.push_str(&format!(
                "<text x=\"{}\" y=\"{}\" class=\"tick\" text-anchor=\"{anchor}\">{label}</text>",
                x(i as i64),
                HEIGHT - 8
            ));
        }
    }
    for (i, (role, counts)) in chart.series.iter().enumerate() {
        let points: Vec<String> = counts
            .iter()
            .enumerate()
            .map(|(d, n)| format!("{},{}", x(d as i64), y(i64::from(*n))))
            .collect();
        out.push_str(&format!(
            "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"{}\">\
             <title>{}: {} open now</title></polyline>",
            colour(i),
            points.join(" "),
            escape(role),
            counts.last().copied().unwrap_or(0)
        ));
    }
    out.push_str("</svg>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_role_gets_a_line_and_its_name_is_escaped() {
        let chart = Chart {
            days: (0..14).map(|d| d * 86_400_000).collect(),
            series: vec![
                ("a<b>".into(), vec![0; 14]),
                ("c".into(), (0..14).collect()),
            ],
        };
        let svg = svg(&chart);
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert!(svg.contains("a&lt;b&gt;: 0 open now"));
        assert!(!svg.contains("<b>"));
        // The highest count touches the top of the plot.
        assert!(svg.contains(&format!("{},{TOP}", WIDTH - RIGHT)), "{svg}");
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
