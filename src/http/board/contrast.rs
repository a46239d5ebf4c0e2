//! WCAG contrast: how the board knows a colour reads on its background.
//!
//! Owns the contrast ratio (WCAG 2's relative luminance) that role colours
//! are chosen by (`chart::role_colours`), and the tests that check every
//! colour of the stylesheet itself (`page::STYLE`) in both colour schemes.
//! Every fixed colour of the page is a custom property of one of its two
//! palettes (`:root`, and `:root` under `prefers-color-scheme: dark`); the
//! rest of the stylesheet only refers to them. The names say what each
//! colour is for: `--page`, `--card` and `--*-bg` are backgrounds, `--line`
//! draws borders only, and every other colour is text, which must read at
//! 4.5:1 on every background of its palette. Role colours (lines, legends,
//! card edges) must read at 4.5:1 on `--page` and `--card`.

/// WCAG AA for normal text.
pub const AA: f64 = 4.5;

/// The relative luminance of `#rrggbb` (0 for anything else: black).
fn luminance(hex: &str) -> f64 {
    let channel = |i: usize| {
        let byte = hex
            .get(i..i + 2)
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        let c = f64::from(byte.unwrap_or(0)) / 255.0;
        if c <= 0.040_45 {
            c / 12.92
        } else {
            ((c + 0.055) / 1.055).powf(2.4)
        }
    };
    0.2126 * channel(1) + 0.7152 * channel(3) + 0.0722 * channel(5)
}

/// The contrast ratio of two `#rrggbb` colours, from 1 to 21.
pub fn ratio(a: &str, b: &str) -> f64 {
    let (a, b) = (luminance(a), luminance(b));
    (a.max(b) + 0.05) / (a.min(b) + 0.05)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::board::chart::{DARK_GROUNDS, LIGHT_GROUNDS, role_colours};
    use crate::http::board::page::STYLE;
    use crate::http::board::strip;

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
            if matches!(hex, 3 | 4 | 6 | 8)
                && !(next.is_alphanumeric() || next == '-' || next == '_')
            {
                return Some(&rest[i..i + 1 + hex]);
            }
        }
        ["rgb(", "rgba(", "hsl(", "hsla("]
            .into_iter()
            .find(|f| rest.contains(f))
    }

    fn failures(vars: &[(String, String)]) -> Vec<String> {
        let backgrounds: Vec<&(String, String)> = vars
            .iter()
            .filter(|(k, _)| k == "page" || k == "card" || k.ends_with("-bg"))
            .collect();
        let mut failed = Vec::new();
        for (name, colour) in vars {
            if name == "line" || backgrounds.iter().any(|(k, _)| k == name) {
                continue;
            }
            let against: Vec<(&str, &str)> = backgrounds
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
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
        assert_eq!(stray_colour(&rest), None, "a colour outside the palettes");
        // The strip's stylesheet, added after the board's, uses them too.
        assert_eq!(
            stray_colour(strip::STYLE),
            None,
            "a colour of the strip outside the palettes"
        );
        let mut failed = failures(&light);
        failed.extend(failures(&dark).into_iter().map(|f| format!("dark: {f}")));
        assert!(failed.is_empty(), "below 4.5:1: {failed:#?}");
    }

    #[test]
    fn every_role_colour_reads_at_aa_in_both_schemes() {
        let (light, rest) = palette(STYLE, ":root {");
        let (dark, _) = palette(&rest, "@media (prefers-color-scheme: dark) { :root {");
        let ground =
            |p: &[(String, String)], n: &str| p.iter().find(|(k, _)| k == n).unwrap().1.clone();
        // The grounds role colours are chosen against are the stylesheet's.
        assert_eq!(
            LIGHT_GROUNDS,
            [ground(&light, "card"), ground(&light, "page")]
        );
        assert_eq!(DARK_GROUNDS, [ground(&dark, "card"), ground(&dark, "page")]);
        for i in 0..2_000 {
            let role = format!("role-{i}");
            let (l, d) = role_colours(&role);
            for g in LIGHT_GROUNDS {
                assert!(ratio(&l, g) >= AA, "{role}: {l} on {g}");
            }
            for g in DARK_GROUNDS {
                assert!(ratio(&d, g) >= AA, "{role}: {d} on {g}");
            }
            // Still a colour, not black or white for every role.
            assert!(l != "#000000" && d != "#ffffff", "{role}: {l} {d}");
        }
    }
}
