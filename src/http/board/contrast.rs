//! WCAG contrast of the board's colours, checked against the stylesheet
//! itself (`page::STYLE`), in both colour schemes.
//!
//! Every colour of the page is a custom property of one of its two
//! palettes (`:root`, and `:root` under `prefers-color-scheme: dark`); the
//! rest of the stylesheet only refers to them. The names say what each
//! colour is for: `--page`, `--card` and `--*-bg` are backgrounds, `--line`
//! draws borders only, `--h0`… are the roles' hues (lines, legends and card
//! edges on the page and the cards), and every other colour is text, which
//! must read at 4.5:1 (WCAG AA) on every background of its palette.

use super::chart::HUES;
use super::page::STYLE;

/// WCAG AA for normal text.
const AA: f64 = 4.5;

/// The relative luminance of `#rrggbb`.
fn luminance(hex: &str) -> f64 {
    let channel = |i: usize| {
        let c = f64::from(u8::from_str_radix(&hex[i..i + 2], 16).unwrap()) / 255.0;
        if c <= 0.040_45 {
            c / 12.92
        } else {
            ((c + 0.055) / 1.055).powf(2.4)
        }
    };
    0.2126 * channel(1) + 0.7152 * channel(3) + 0.0722 * channel(5)
}

/// The contrast ratio of two colours, from 1 to 21.
fn ratio(a: &str, b: &str) -> f64 {
    let (a, b) = (luminance(a), luminance(b));
    (a.max(b) + 0.05) / (a.min(b) + 0.05)
}

/// The declarations of the block that opens with `opening`, as
/// (name without `--`, `#rrggbb`), and the stylesheet without that block.
fn palette(style: &str, opening: &str) -> (Vec<(String, String)>, String) {
    let start = style
        .find(opening)
        .unwrap_or_else(|| panic!("{opening} missing"));
    let end = start + style[start..].find('}').unwrap();
    let vars = style[start + opening.len()..end]
        .split(';')
        .filter_map(|d| d.trim().strip_prefix("--"))
        .map(|d| {
            let (name, value) = d.split_once(':').unwrap();
            let value = value.trim();
            assert!(
                value.len() == 7 && value.starts_with('#'),
                "--{name}: write palette colours as #rrggbb"
            );
            (name.trim().to_owned(), value.to_lowercase())
        })
        .collect();
    (vars, format!("{}{}", &style[..start], &style[end..]))
}

/// True where a colour literal (`#rgb`, `#rrggbb`, `rgb(`, `hsl(`) is
/// written outside the palettes.
fn stray_colour(rest: &str) -> Option<&str> {
    for (i, _) in rest.match_indices('#') {
        let hex = rest[i + 1..]
            .chars()
            .take_while(char::is_ascii_hexdigit)
            .count();
        let next = rest[i + 1 + hex..].chars().next().unwrap_or(' ');
        if matches!(hex, 3 | 4 | 6 | 8) && !(next.is_alphanumeric() || next == '-' || next == '_') {
            return Some(&rest[i..i + 1 + hex]);
        }
    }
    ["rgb(", "rgba(", "hsl(", "hsla("]
        .into_iter()
        .find(|f| rest.contains(f))
}

fn failures(vars: &[(String, String)]) -> Vec<String> {
    let get = |n: &str| &vars.iter().find(|(k, _)| k == n).unwrap().1;
    let backgrounds: Vec<&(String, String)> = vars
        .iter()
        .filter(|(k, _)| k == "page" || k == "card" || k.ends_with("-bg"))
        .collect();
    let is_hue = |k: &str| {
        k.strip_prefix('h')
            .is_some_and(|n| n.parse::<usize>().is_ok())
    };
    let mut failed = Vec::new();
    for (name, colour) in vars {
        if name == "line" || backgrounds.iter().any(|(k, _)| k == name) {
            continue;
        }
        let against: Vec<(&str, &str)> = if is_hue(name) {
            vec![("page", get("page")), ("card", get("card"))]
        } else {
            backgrounds
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect()
        };
        for (bg, on) in against {
            let r = ratio(colour, on);
            if r < AA {
                failed.push(format!("--{name} on --{bg}: {r:.2}:1"));
            }
        }
    }
    failed
}

#[test]
fn the_ratio_matches_wcag() {
    assert!((ratio("#000000", "#ffffff") - 21.0).abs() < 1e-9);
    assert!((ratio("#777777", "#ffffff") - 4.48).abs() < 0.01);
    assert!((ratio("#ffffff", "#ffffff") - 1.0).abs() < 1e-9);
    // The colour the board used to draw a role in: below AA.
    assert!(
        !failures(&[
            ("page".into(), "#ffffff".into()),
            ("card".into(), "#ffffff".into()),
            ("h0".into(), "#b3a235".into()),
        ])
        .is_empty()
    );
}

#[test]
fn every_colour_of_both_palettes_reads_at_aa() {
    let (light, rest) = palette(STYLE, ":root {");
    let (dark, rest) = palette(&rest, "@media (prefers-color-scheme: dark) { :root {");
    let names = |p: &[(String, String)]| p.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>();
    assert_eq!(
        names(&light),
        names(&dark),
        "both palettes name the same colours"
    );
    for i in 0..HUES {
        assert!(names(&light).contains(&format!("h{i}")), "--h{i} missing");
    }
    assert_eq!(stray_colour(&rest), None, "a colour outside the palettes");
    let mut failed = failures(&light);
    failed.extend(failures(&dark).into_iter().map(|f| format!("dark: {f}")));
    assert!(failed.is_empty(), "below 4.5:1: {failed:#?}");
}
