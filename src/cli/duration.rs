//! Durations on the command line: `--sync-every 30s`, `sync --budget 2m`,
//! `invite --expires 24h`.
//!
//! Owns the one spelling every flag shares (a whole number and a unit: ms, s,
//! m, h or d; a bare number is seconds); each flag adds its own bounds.

use std::time::Duration;

/// Parses `500ms`, `30s`, `2m`, `24h`, `7d` or plain seconds.
pub fn parse(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (n, unit) = s.split_at(split);
    let n: u64 = n
        .parse()
        .map_err(|_| format!("'{s}' is not a duration such as 500ms, 30s, 2m, 24h or 7d"))?;
    Ok(match unit {
        "ms" => Duration::from_millis(n),
        "" | "s" => Duration::from_secs(n),
        "m" => Duration::from_secs(n.saturating_mul(60)),
        "h" => Duration::from_secs(n.saturating_mul(3600)),
        "d" => Duration::from_secs(n.saturating_mul(86_400)),
        _ => return Err(format!("'{s}': the unit must be ms, s, m, h or d")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_unit_and_the_bare_number() {
        assert_eq!(parse("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse("30"), Ok(Duration::from_secs(30)));
        assert_eq!(parse(" 30s "), Ok(Duration::from_secs(30)));
        assert_eq!(parse("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse("24h"), Ok(Duration::from_secs(86_400)));
        assert_eq!(parse("7d"), Ok(Duration::from_secs(604_800)));
    }

    #[test]
    fn refusals_say_what_is_accepted() {
        assert!(parse("soon").unwrap_err().contains("such as"));
        assert!(parse("3w").unwrap_err().contains("ms, s, m, h or d"));
        assert!(parse("").is_err());
        // Huge values saturate instead of overflowing.
        assert!(parse("99999999999999999999").is_err());
        assert_eq!(
            parse(&format!("{}d", u64::MAX)),
            Ok(Duration::from_secs(u64::MAX))
        );
    }
}
