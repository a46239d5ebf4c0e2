//! The failure table of background compaction with a model: what a failed
//! request to the model's API says, and how long the API then rests before
//! the next automatic try.
//!
//! A failure is the API's, never the items': the job is given back and no
//! line counts a failure. Pure: the caller passes the HTTP status (or none,
//! when the API could not be reached), the answer's text and its
//! `retry-after`, and adds the pause to its own clock.

use serde::{Deserialize, Serialize};

/// Why the API failed, one row of the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApiFailure {
    /// The account has no credit left (HTTP 402, or a refusal that says so).
    NoCredit,
    /// The key was rejected or has no access (HTTP 401, 403).
    KeyRejected,
    /// Too many requests (HTTP 429).
    RateLimited,
    /// Not reachable, or overloaded (no answer, HTTP 503, 529).
    Unreachable,
    /// Anything else.
    Other,
}

/// The shortest pause after a rate limit, whatever the API asks.
pub const RATE_LIMIT_MIN_MS: i64 = 60 * 1000;
/// The pause after no credit and after any other error.
pub const HOUR_MS: i64 = 60 * 60 * 1000;
/// The pause after the API was not reachable or overloaded.
pub const UNREACHABLE_MS: i64 = 5 * 60 * 1000;

impl ApiFailure {
    /// The row for an answer: `status` is `None` when no answer came (a
    /// connection error or a time-out); `body` is the answer's text, read
    /// only to tell a refusal for lack of credit sent as a 400.
    pub fn classify(status: Option<u16>, body: &str) -> Self {
        match status {
            None | Some(503 | 529) => Self::Unreachable,
            Some(402) => Self::NoCredit,
            Some(400) if body.to_ascii_lowercase().contains("credit balance") => Self::NoCredit,
            Some(401 | 403) => Self::KeyRejected,
            Some(429) => Self::RateLimited,
            Some(_) => Self::Other,
        }
    }

    /// How long the API rests after this failure, in ms; `None` for a key
    /// rejected: until a new key is stored. `retry_after` is the answer's
    /// `retry-after` header (seconds), read for a rate limit only.
    pub fn pause_ms(self, retry_after: Option<&str>) -> Option<i64> {
        match self {
            Self::NoCredit | Self::Other => Some(HOUR_MS),
            Self::KeyRejected => None,
            Self::Unreachable => Some(UNREACHABLE_MS),
            Self::RateLimited => {
                let asked = retry_after
                    .and_then(|v| v.trim().parse::<f64>().ok())
                    .filter(|s| s.is_finite() && *s >= 0.0)
                    .map_or(0, |s| (s.min(86_400.0) * 1000.0).ceil() as i64);
                Some(asked.max(RATE_LIMIT_MIN_MS))
            }
        }
    }

    /// The failure in a few words, as the status line shows it.
    pub fn words(self) -> &'static str {
        match self {
            Self::NoCredit => "no credit",
            Self::KeyRejected => "key rejected",
            Self::RateLimited => "rate limited",
            Self::Unreachable => "not reachable",
            Self::Other => "error",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_of_the_table() {
        let row = |status, body: &str, retry| {
            let f = ApiFailure::classify(status, body);
            (f, f.pause_ms(retry))
        };
        use ApiFailure::*;
        assert_eq!(row(Some(402), "", None), (NoCredit, Some(HOUR_MS)));
        assert_eq!(
            row(Some(400), "Your credit balance is too low", None),
            (NoCredit, Some(HOUR_MS))
        );
        assert_eq!(row(Some(401), "", None), (KeyRejected, None));
        assert_eq!(row(Some(403), "", None), (KeyRejected, None));
        assert_eq!(
            row(Some(429), "", Some("120")),
            (RateLimited, Some(120_000))
        );
        assert_eq!(row(Some(429), "", Some("3")), (RateLimited, Some(60_000)));
        assert_eq!(
            row(Some(429), "", Some("soon")),
            (RateLimited, Some(60_000))
        );
        assert_eq!(row(Some(429), "", None), (RateLimited, Some(60_000)));
        assert_eq!(row(None, "", None), (Unreachable, Some(UNREACHABLE_MS)));
        assert_eq!(
            row(Some(529), "", None),
            (Unreachable, Some(UNREACHABLE_MS))
        );
        assert_eq!(
            row(Some(503), "", None),
            (Unreachable, Some(UNREACHABLE_MS))
        );
        assert_eq!(row(Some(500), "", None), (Other, Some(HOUR_MS)));
        assert_eq!(row(Some(400), "bad request", None), (Other, Some(HOUR_MS)));
    }
}
