//! UTC timestamp helpers: formatting, `since`-filter parsing and age arithmetic.
//!
//! This module owns the crate's one representation of time — milliseconds since the Unix
//! epoch as an `i64`, always UTC — and the conversions between it and text:
//!
//! * [`format_rfc3339`] renders an instant as `YYYY-MM-DDTHH:MM:SS.mmmZ`, fixed width so that
//!   string order equals time order;
//! * [`parse_since`] accepts the ISO-8601 forms a user types as a `since` filter and turns them
//!   into an instant, honouring any UTC offset;
//! * [`days_between`] turns two instants into a non-negative day count for `age_days` /
//!   `idle_days` style fields.
//!
//! The calendar (valid dates, leap years, civil time to instant and back, UTC offsets) is
//! `jiff`'s, except that [`format_rfc3339`] does its own day arithmetic, for speed, and
//! property tests hold it to jiff's. The shapes a `since` value may take are the protocol's and are read here: jiff's
//! own parsers read RFC 3339 and Temporal (RFC 9557) text, which differs from them in both
//! directions (six-digit signed years, basic `20260809` forms, hour-only times, U+2212 as a
//! minus, a leap second taken as `:59`, at most nine fraction digits), so this module splits
//! the text into fields and jiff checks and converts the fields.
//!
//! It must stay pure: it never reads the wall clock, the time zone database or the
//! environment. Callers pass every instant in, which keeps it deterministic and testable.
//! Only years `1..=9999` are representable.

use jiff::SignedDuration;
use jiff::civil::{self, Date, DateTime, Time};
use thiserror::Error;

/// Milliseconds in one civil day (UTC has no leap seconds in this model).
const MS_PER_DAY: i64 = 86_400_000;

/// The Unix epoch as a civil date-time in UTC. Instants are reckoned as civil time from it
/// rather than as `jiff::Timestamp`s, whose range stops short of 9999-12-31 (it leaves room for
/// any offset).
const EPOCH: DateTime = civil::datetime(1970, 1, 1, 0, 0, 0, 0);

/// The earliest representable instant: `0001-01-01T00:00:00.000Z` (a test checks it with jiff).
const MIN_MS: i64 = -62_135_596_800_000;

/// The latest representable instant: `9999-12-31T23:59:59.999Z` (a test checks it with jiff).
const MAX_MS: i64 = 253_402_300_799_999;

/// A `since` value that is not an accepted ISO-8601 timestamp or lies outside years 1..=9999.
///
/// Its `Display` text is the user-facing message and quotes the input verbatim.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("'since' must be an ISO-8601 timestamp such as 2026-08-09T10:00:00Z (got '{input}')")]
pub struct SinceError {
    input: String,
}

impl SinceError {
    /// The same refusal for a parameter with another name than `since`.
    #[must_use]
    pub fn named(&self, field: &str) -> String {
        format!(
            "'{field}' must be an ISO-8601 timestamp such as 2026-08-09T10:00:00Z (got '{}')",
            self.input
        )
    }
}

/// Formats `ms` (milliseconds since the Unix epoch, UTC) as RFC 3339, e.g.
/// `2026-08-09T10:00:00.123Z`.
///
/// The output always has millisecond precision, a four-digit year and a `Z` suffix, so it is
/// fixed width (24 bytes) and lexicographic order equals chronological order. Instants outside
/// `0001-01-01T00:00:00.000Z ..= 9999-12-31T23:59:59.999Z` are clamped to that range (they
/// cannot be written in this form); [`parse_since`] accepts every string this returns.
///
/// A listing formats a few timestamps per row, so this one is written digit by digit from
/// the day count ([`civil_from_days`]) rather than through jiff's date arithmetic and
/// `format!`; a property test checks it against jiff over the whole range.
#[must_use]
pub fn format_rfc3339(ms: i64) -> String {
    let ms = ms.clamp(MIN_MS, MAX_MS);
    let (year, month, day) = civil_from_days(ms.div_euclid(MS_PER_DAY));
    let in_day = ms.rem_euclid(MS_PER_DAY);
    let mut out = *b"0000-00-00T00:00:00.000Z";
    let mut put = |at: usize, width: usize, mut v: i64| {
        for b in out[at..at + width].iter_mut().rev() {
            *b = b'0' + (v % 10) as u8;
            v /= 10;
        }
    };
    put(0, 4, year);
    put(5, 2, month);
    put(8, 2, day);
    put(11, 2, in_day / 3_600_000);
    put(14, 2, in_day / 60_000 % 60);
    put(17, 2, in_day / 1000 % 60);
    put(20, 3, in_day % 1000);
    out.iter().map(|&b| char::from(b)).collect()
}

/// The proleptic Gregorian date (year, month, day) of `days` since 1970-01-01: the
/// era-of-400-years arithmetic (a 400-year era is 146,097 days, and counting years from
/// March puts the leap day last).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Parses a user-supplied `since` timestamp into milliseconds since the Unix epoch (UTC).
///
/// Accepted shapes (surrounding whitespace is ignored):
///
/// * a bare date `2026-08-09`, meaning midnight UTC;
/// * a date, a separator `T` (or `t`, or a single space), then `HH:MM` or `HH:MM:SS`, where the
///   seconds may carry a fraction after `.` or `,` with any number of digits (truncated, not
///   rounded, to milliseconds);
/// * after the time, an optional zone: `Z`/`z`, or a numeric offset `±HH`, `±HH:MM` or `±HHMM`.
///   With no zone the time is taken as UTC.
///
/// The result is the instant, so `2026-08-09T12:00:00+02:00` and `2026-08-09T10:00:00Z` give the
/// same value. Out-of-range fields are refused (month 13, day 32, February 30, hour 24,
/// second 60, offsets of 24 hours or more, years outside `1..=9999`), as is an offset that
/// moves the instant outside `0001-01-01T00:00:00Z ..= 9999-12-31T23:59:59.999Z`.
///
/// # Errors
///
/// Returns [`SinceError`] for anything else; its message quotes `s` as given.
pub fn parse_since(s: &str) -> Result<i64, SinceError> {
    parse_instant(s.trim()).ok_or_else(|| SinceError {
        input: s.to_owned(),
    })
}

/// Days from `earlier_ms` to `now_ms` as a fraction rounded to two decimals (half up), e.g.
/// `1.5` for 36 hours.
///
/// Never negative: if `earlier_ms` is after `now_ms` (clock skew between writers) the result is
/// `0.0`.
#[must_use]
pub fn days_between(earlier_ms: i64, now_ms: i64) -> f64 {
    let elapsed = i128::from(now_ms) - i128::from(earlier_ms);
    if elapsed <= 0 {
        return 0.0;
    }
    let day = i128::from(MS_PER_DAY);
    // Whole hundredths of a day, rounded half up, computed exactly in integers; the single
    // division below then yields the closest f64 to the two-decimal value.
    let hundredths = (elapsed * 100 + day / 2) / day;
    #[allow(clippy::cast_precision_loss)] // at most ~1.1e11, exactly representable
    let hundredths = hundredths as f64;
    hundredths / 100.0
}

/// Parses an already-trimmed `since` string; `None` means "refuse".
///
/// The shape is read here; whether the fields make a date, a time and an offset, and which
/// instant they name, is jiff's to say.
fn parse_instant(s: &str) -> Option<i64> {
    let mut cur = Cursor::new(s);

    let year = cur.digits(4)?;
    cur.expect(b'-')?;
    let month = cur.two_digits()?;
    cur.expect(b'-')?;
    let day = cur.two_digits()?;
    // jiff's years reach back to -9999; the protocol's start at 1.
    if year == 0 {
        return None;
    }
    let date = Date::new(year, month, day).ok()?;
    if cur.at_end() {
        return instant(date.to_datetime(Time::midnight()), 0);
    }

    if !matches!(cur.next()?, b'T' | b't' | b' ') {
        return None;
    }
    let hour = cur.two_digits()?;
    cur.expect(b':')?;
    let minute = cur.two_digits()?;
    let (second, milli) = if cur.eat(b':') {
        let second = cur.two_digits()?;
        let milli = if cur.eat(b'.') || cur.eat(b',') {
            cur.fraction_ms()?
        } else {
            0
        };
        (second, milli)
    } else {
        (0, 0)
    };
    let time = Time::new(hour, minute, second, i32::from(milli) * 1_000_000).ok()?;

    let offset_minutes = match cur.next() {
        None | Some(b'Z' | b'z') => 0,
        Some(sign @ (b'+' | b'-')) => {
            let off_hour = cur.two_digits()?;
            let off_minute = if cur.at_end() {
                0
            } else {
                cur.eat(b':');
                cur.two_digits()?
            };
            if off_hour > 23 || off_minute > 59 {
                return None;
            }
            let magnitude = i64::from(off_hour) * 60 + i64::from(off_minute);
            if sign == b'-' { -magnitude } else { magnitude }
        }
        Some(_) => return None,
    };
    if !cur.at_end() {
        return None;
    }
    instant(date.to_datetime(time), offset_minutes)
}

/// The instant of the civil date-time `local` at `offset_minutes` east of UTC, if it lies
/// within years `1..=9999`.
fn instant(local: DateTime, offset_minutes: i64) -> Option<i64> {
    let utc = local
        .checked_sub(SignedDuration::from_mins(offset_minutes))
        .ok()?;
    let ms = i64::try_from(utc.duration_since(EPOCH).as_millis()).ok()?;
    (MIN_MS..=MAX_MS).contains(&ms).then_some(ms)
}

/// A forward-only reader over the ASCII bytes of a timestamp.
struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn new(s: &'a str) -> Self {
        Self {
            bytes: s.as_bytes(),
            pos: 0,
        }
    }

    fn at_end(&self) -> bool {
        self.pos >= self.bytes.len()
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let byte = self.peek()?;
        self.pos += 1;
        Some(byte)
    }

    /// Consumes `byte` if it is next; reports whether it did.
    fn eat(&mut self, byte: u8) -> bool {
        let hit = self.peek() == Some(byte);
        if hit {
            self.pos += 1;
        }
        hit
    }

    fn expect(&mut self, byte: u8) -> Option<()> {
        self.eat(byte).then_some(())
    }

    /// Reads exactly `n` ASCII digits (at most 4) as a number.
    fn digits(&mut self, n: usize) -> Option<i16> {
        let mut value = 0;
        for _ in 0..n {
            let byte = self.peek().filter(u8::is_ascii_digit)?;
            value = value * 10 + i16::from(byte - b'0');
            self.pos += 1;
        }
        Some(value)
    }

    /// Reads exactly two ASCII digits as a number.
    fn two_digits(&mut self) -> Option<i8> {
        self.digits(2).and_then(|v| i8::try_from(v).ok())
    }

    /// Reads one or more fraction digits, returning their value truncated to milliseconds.
    fn fraction_ms(&mut self) -> Option<i16> {
        let start = self.pos;
        let mut milli = 0;
        while let Some(byte) = self.peek().filter(u8::is_ascii_digit) {
            let index = self.pos - start;
            if index < 3 {
                milli += i16::from(byte - b'0') * [100, 10, 1][index];
            }
            self.pos += 1;
        }
        (self.pos > start).then_some(milli)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// 2026-08-09T10:00:00Z.
    const T0: i64 = 1_786_269_600_000;

    fn ok(s: &str) -> i64 {
        match parse_since(s) {
            Ok(ms) => ms,
            Err(err) => panic!("{s:?} should parse: {err}"),
        }
    }

    fn refused(s: &str) {
        assert_eq!(
            parse_since(s),
            Err(SinceError {
                input: s.to_owned()
            }),
            "{s:?} should be refused"
        );
    }

    /// Days in a month of the proleptic Gregorian calendar, written out here as an
    /// oracle independent of jiff.
    fn days_in_month(year: i64, month: i64) -> i64 {
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
        match month {
            2 if leap => 29,
            2 => 28,
            4 | 6 | 9 | 11 => 30,
            _ => 31,
        }
    }

    /// The first and last day of the representable range, in days since 1970-01-01.
    const MIN_DAY: i64 = MIN_MS.div_euclid(MS_PER_DAY);
    const MAX_DAY: i64 = MAX_MS.div_euclid(MS_PER_DAY);

    /// `format_rfc3339` as jiff's calendar and formatting give it.
    fn formatted_by_jiff(ms: i64) -> String {
        let dt = EPOCH
            .checked_add(SignedDuration::from_millis(ms.clamp(MIN_MS, MAX_MS)))
            .unwrap();
        format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
            dt.year(),
            dt.month(),
            dt.day(),
            dt.hour(),
            dt.minute(),
            dt.second(),
            dt.millisecond()
        )
    }

    #[test]
    fn formatting_agrees_with_jiff_at_the_edges() {
        for ms in [
            MIN_MS,
            MIN_MS - 1,
            i64::MIN,
            MAX_MS,
            MAX_MS + 1,
            i64::MAX,
            0,
            -1,
            T0,
            951_782_400_000,   // 2000-02-29
            4_107_542_400_000, // 2100-03-01
        ] {
            assert_eq!(format_rfc3339(ms), formatted_by_jiff(ms), "{ms}");
        }
    }

    proptest! {
        #[test]
        fn formatting_agrees_with_jiff(ms in MIN_MS..=MAX_MS) {
            prop_assert_eq!(format_rfc3339(ms), formatted_by_jiff(ms));
        }

        #[test]
        fn formatting_agrees_with_jiff_on_every_day(day in MIN_DAY..=MAX_DAY, in_day in 0..MS_PER_DAY) {
            let ms = day * MS_PER_DAY + in_day;
            prop_assert_eq!(format_rfc3339(ms), formatted_by_jiff(ms));
        }
    }

    #[test]
    fn reference_instant_is_right() {
        let at = |s: &str| {
            let ms = s
                .parse::<DateTime>()
                .unwrap()
                .duration_since(EPOCH)
                .as_millis();
            i64::try_from(ms).unwrap()
        };
        assert_eq!(at("2026-08-09T10:00:00"), T0);
        assert_eq!(at("0001-01-01T00:00:00"), MIN_MS);
        assert_eq!(at("9999-12-31T23:59:59.999"), MAX_MS);
        assert_eq!(
            "2026-08-09T10:00:00Z"
                .parse::<jiff::Timestamp>()
                .unwrap()
                .as_millisecond(),
            T0
        );
        assert_eq!(ok("1970-01-01"), 0);
        assert_eq!(format_rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(format_rfc3339(-MS_PER_DAY), "1969-12-31T00:00:00.000Z");
        assert_eq!(ok("2000-03-01"), 11_017 * MS_PER_DAY);
        assert_eq!(MAX_DAY - MIN_DAY + 1, 3_652_059);
    }

    /// The first and last day of every month over the whole range, where a calendar goes wrong
    /// if it does (the days between are covered by the round-trip property below).
    #[test]
    fn civil_round_trip_over_whole_range() {
        let mut days = MIN_DAY;
        for y in 1..=9999 {
            for m in 1..=12 {
                let last = days_in_month(y, m);
                for (d, at) in [(1, days), (last, days + last - 1)] {
                    let date = format!("{y:04}-{m:02}-{d:02}");
                    let ms = at * MS_PER_DAY;
                    assert_eq!(format_rfc3339(ms), format!("{date}T00:00:00.000Z"));
                    assert_eq!(ok(&date), ms, "{date}");
                }
                days += last;
            }
        }
        assert_eq!(days, MAX_DAY + 1);
    }

    #[test]
    fn formats_with_millis_and_z() {
        assert_eq!(format_rfc3339(T0 + 123), "2026-08-09T10:00:00.123Z");
        assert_eq!(format_rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(format_rfc3339(-1), "1969-12-31T23:59:59.999Z");
        assert_eq!(format_rfc3339(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(format_rfc3339(MIN_MS), "0001-01-01T00:00:00.000Z");
        assert_eq!(format_rfc3339(MAX_MS), "9999-12-31T23:59:59.999Z");
    }

    #[test]
    fn format_clamps_outside_representable_range() {
        assert_eq!(format_rfc3339(MIN_MS - 1), "0001-01-01T00:00:00.000Z");
        assert_eq!(format_rfc3339(i64::MIN), "0001-01-01T00:00:00.000Z");
        assert_eq!(format_rfc3339(MAX_MS + 1), "9999-12-31T23:59:59.999Z");
        assert_eq!(format_rfc3339(i64::MAX), "9999-12-31T23:59:59.999Z");
    }

    #[test]
    fn parses_utc_with_t_or_space() {
        assert_eq!(ok("2026-08-09T10:00:00Z"), T0);
        assert_eq!(ok("2026-08-09 10:00:00Z"), T0);
        assert_eq!(ok("2026-08-09t10:00:00z"), T0);
        assert_eq!(ok("  2026-08-09T10:00:00Z\n"), T0);
    }

    #[test]
    fn parses_fractional_seconds_truncated_to_millis() {
        assert_eq!(ok("2026-08-09T10:00:00.1Z"), T0 + 100);
        assert_eq!(ok("2026-08-09T10:00:00.12Z"), T0 + 120);
        assert_eq!(ok("2026-08-09T10:00:00.123Z"), T0 + 123);
        assert_eq!(ok("2026-08-09T10:00:00.1239Z"), T0 + 123);
        assert_eq!(ok("2026-08-09T10:00:00.999999999999999999999Z"), T0 + 999);
        assert_eq!(ok("2026-08-09T10:00:00,5Z"), T0 + 500);
        assert_eq!(ok("2026-08-09T10:00:00.000001"), T0);
        assert_eq!(ok("2026-08-09T12:00:00.25+02:00"), T0 + 250);
    }

    #[test]
    fn parses_numeric_offsets_as_instants() {
        assert_eq!(ok("2026-08-09T12:00:00+02:00"), T0);
        assert_eq!(ok("2026-08-09T12:00:00+0200"), T0);
        assert_eq!(ok("2026-08-09T12:00:00+02"), T0);
        assert_eq!(ok("2026-08-09T04:30:00-0530"), T0);
        assert_eq!(ok("2026-08-09T04:30:00-05:30"), T0);
        assert_eq!(ok("2026-08-09T10:00:00+00:00"), T0);
        assert_eq!(ok("2026-08-09T10:00:00-00:00"), T0);
        assert_eq!(ok("2026-08-09 12:00+02:00"), T0);
        // An offset can move the instant across a day, month and year boundary.
        assert_eq!(ok("2027-01-01T01:00:00+03:00"), ok("2026-12-31T22:00:00Z"));
    }

    #[test]
    fn parses_naive_as_utc() {
        assert_eq!(ok("2026-08-09T10:00:00"), T0);
        assert_eq!(ok("2026-08-09 10:00:00"), T0);
    }

    #[test]
    fn parses_bare_date_as_midnight_utc() {
        assert_eq!(ok("2026-08-09"), T0 - 10 * 3_600_000);
        assert_eq!(ok("1970-01-01"), 0);
        assert_eq!(ok("0001-01-01"), MIN_MS);
        assert_eq!(ok("2024-02-29"), ok("2024-02-28") + MS_PER_DAY);
        assert_eq!(ok("2000-02-29"), 951_782_400_000);
    }

    #[test]
    fn parses_hours_and_minutes_without_seconds() {
        assert_eq!(ok("2026-08-09T10:00"), T0);
        assert_eq!(ok("2026-08-09T10:00Z"), T0);
        assert_eq!(ok("2026-08-09T10:30"), T0 + 30 * 60_000);
        assert_eq!(ok("2026-08-09T12:00+02"), T0);
    }

    #[test]
    fn offsets_near_the_range_edges() {
        assert_eq!(ok("0001-01-01T01:00:00+01:00"), MIN_MS);
        assert_eq!(ok("0001-01-01T00:00:00-01:00"), MIN_MS + 3_600_000);
        assert_eq!(ok("9999-12-31T23:00:00.999-00:59"), MAX_MS - 59_000);
        assert_eq!(ok("9999-12-31T22:59:59.999-01:00"), MAX_MS);
        assert_eq!(ok("9999-12-31T23:59:59.999Z"), MAX_MS);
        refused("0001-01-01T00:00:00+00:01");
        refused("0001-01-01T00:59:59.999+01:00");
        refused("9999-12-31T23:30:00-01:00");
        refused("9999-12-31T23:59:59.999-00:01");
    }

    #[test]
    fn refuses_out_of_range_fields() {
        for s in [
            "2026-13-01",
            "2026-00-01",
            "2026-08-32",
            "2026-08-00",
            "2026-02-30",
            "2025-02-29",
            "1900-02-29",
            "2026-04-31",
            "2026-08-09T24:00:00Z",
            "2026-08-09T10:60:00Z",
            "2026-08-09T10:00:60Z",
            "0000-12-31",
            "0000-12-31T23:00:00-02:00",
            "2026-08-09T10:00:00+24:00",
            "2026-08-09T10:00:00+02:60",
        ] {
            refused(s);
        }
    }

    #[test]
    fn refuses_malformed_input() {
        for s in [
            "",
            "   ",
            "yesterday",
            "1786269600000",
            "2026-8-9",
            "26-08-09",
            "+2026-08-09",
            "10000-01-01",
            "2026/08/09",
            "20260809",
            "2026-08-09T",
            "2026-08-09T10",
            "2026-08-09T1000",
            "2026-08-09T10:0",
            "2026-08-09T10:00:0",
            "2026-08-09T10:00:00.",
            "2026-08-09T10:00:00.Z",
            "2026-08-09T10:00.5",
            "2026-08-09Z",
            "2026-08-09+02:00",
            "2026-08-09x10:00:00",
            "2026-08-09  10:00:00",
            "2026-08-09T10:00:00 Z",
            "2026-08-09T10:00:00ZZ",
            "2026-08-09T10:00:00+2",
            "2026-08-09T10:00:00+02:0",
            "2026-08-09T10:00:00+02:000",
            "2026-08-09T10:00:00+02x",
            "2026-08-09T10:00:00+",
            "2026-08-09T10:00:00UTC",
            "2026-08-09T10:00:00−02:00",
            "２０２６-08-09",
        ] {
            refused(s);
        }
    }

    /// Forms that RFC 3339, RFC 9557 or jiff's own parsers take but the protocol does not.
    #[test]
    fn refuses_forms_of_other_grammars() {
        for s in [
            "+002026-08-09",
            "-000001-01-01",
            "2026-08-09T10:00:00+02:00:00",
            "2026-08-09T10:00:00+020000",
            "2026-08-09T10:00:00Z[UTC]",
            "2026-08-09T12:00:00+02:00[Europe/Paris]",
            "2026-08-09T10:00:00[+02:00]",
            "2026-08-09T100000Z",
            "2026-W32-7",
            "2026-221",
            "2026-08-09T10:00:00.5-00:00:30",
            "2026-08-09T10:00:60.5Z",
            "2026-08-09T24:00",
        ] {
            refused(s);
        }
    }

    #[test]
    fn refusal_message_is_exact_and_quotes_input() {
        let err = parse_since(" 2026-13-01 ").unwrap_err();
        assert_eq!(
            err.to_string(),
            "'since' must be an ISO-8601 timestamp such as 2026-08-09T10:00:00Z \
             (got ' 2026-13-01 ')"
        );
        assert_eq!(
            err.named("snapshot_at"),
            "'snapshot_at' must be an ISO-8601 timestamp such as 2026-08-09T10:00:00Z \
             (got ' 2026-13-01 ')"
        );
    }

    #[test]
    fn days_between_rounds_to_hundredths() {
        assert_eq!(days_between(T0, T0), 0.0);
        assert_eq!(days_between(T0, T0 + MS_PER_DAY), 1.0);
        assert_eq!(days_between(T0, T0 + MS_PER_DAY * 3 / 2), 1.5);
        assert_eq!(days_between(T0, T0 + 3_600_000), 0.04); // 0.041666…
        assert_eq!(days_between(T0, T0 + MS_PER_DAY / 3), 0.33);
        assert_eq!(days_between(T0, T0 + MS_PER_DAY * 2 / 3), 0.67);
        assert_eq!(days_between(T0, T0 + MS_PER_DAY / 200), 0.01); // exactly half up
        assert_eq!(days_between(T0, T0 + MS_PER_DAY / 200 - 1), 0.0);
        assert_eq!(days_between(0, 365 * MS_PER_DAY), 365.0);
        assert_eq!(days_between(MIN_MS, MAX_MS), 3_652_059.0);
    }

    #[test]
    fn days_between_is_never_negative() {
        assert_eq!(days_between(T0 + 1, T0), 0.0);
        assert_eq!(days_between(T0 + MS_PER_DAY * 10, T0), 0.0);
        assert_eq!(days_between(i64::MAX, i64::MIN), 0.0);
        assert!(days_between(i64::MIN, i64::MAX).is_finite());
    }

    proptest! {
        #[test]
        fn format_then_parse_round_trips(ms in MIN_MS..=MAX_MS) {
            let text = format_rfc3339(ms);
            prop_assert_eq!(text.len(), 24);
            prop_assert_eq!(parse_since(&text), Ok(ms));
        }

        #[test]
        fn string_order_matches_time_order(a in MIN_MS..=MAX_MS, b in MIN_MS..=MAX_MS) {
            prop_assert_eq!(format_rfc3339(a).cmp(&format_rfc3339(b)), a.cmp(&b));
        }

        #[test]
        fn offset_shifts_the_instant(
            ms in (MIN_MS + MS_PER_DAY)..=(MAX_MS - MS_PER_DAY),
            off_minutes in -(23 * 60 + 59)..=(23 * 60 + 59i64),
        ) {
            let ms = ms - ms.rem_euclid(1_000);
            let local = format_rfc3339(ms + off_minutes * 60_000);
            let sign = if off_minutes < 0 { '-' } else { '+' };
            let (h, m) = (off_minutes.abs() / 60, off_minutes.abs() % 60);
            let with_offset = format!("{}{sign}{h:02}:{m:02}", &local[..19]);
            prop_assert_eq!(parse_since(&with_offset), Ok(ms));
        }

        #[test]
        fn days_between_is_non_negative_and_bounded(a in any::<i64>(), b in any::<i64>()) {
            let days = days_between(a, b);
            prop_assert!(days >= 0.0);
            prop_assert!(days.is_finite());
            prop_assert!(days_between(b, a) == 0.0 || days == 0.0);
        }

        #[test]
        fn parse_never_panics(s in "\\PC{0,40}") {
            let _ = parse_since(&s);
        }
    }
}
