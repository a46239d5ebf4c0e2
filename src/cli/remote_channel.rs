//! A channel read through a `countersign serve` elsewhere: what `status` and
//! `hook stop` use when `COUNTERSIGN_URL` and `COUNTERSIGN_TOKEN` are set.
//!
//! The token is a secret and travels in the environment only: an argument
//! that looks like one is refused before anything else runs (it would show
//! in `ps`). It is sent only where it cannot be read on the way: plain http
//! only to this machine (loopback), https verified against the web's roots,
//! and a redirect is never followed (it could carry the token elsewhere).
//! Answers are read up to a bound and checked for their shape; everything a
//! server sends is shown as peer text.
//!
//! Owns the URL's rules, the one HTTP client, and the reading of answers.
//! It decides nothing about counters (`app::status`) or stops (`hook`).

use std::ffi::OsString;
use std::net::IpAddr;
use std::time::Duration;

use serde_json::{Map, Value};
use sha2::{Digest as _, Sha256};

use crate::app::info::VERSION;

/// The variable naming the server (`https://host[/mcp]`).
pub const URL_VAR: &str = "COUNTERSIGN_URL";
/// The variable holding the role token.
pub const TOKEN_VAR: &str = "COUNTERSIGN_TOKEN";
/// How secrets begin: role tokens, view keys.
const SECRET_PREFIXES: [&str; 2] = ["cst_", "csv_"];
/// The largest answer read.
const MAX_ANSWER: u64 = 16 << 20;
/// How long `status` waits for the server.
pub const STATUS_TIMEOUT: Duration = Duration::from_secs(15);
/// How long the stop hook waits for the server before letting the stop pass.
pub const HOOK_TIMEOUT: Duration = Duration::from_secs(3);

/// The refusal of a command line carrying a secret, if it does: any
/// argument, or the value after an `=`, that starts like a token or key.
pub fn secret_in_args(args: &[OsString]) -> Option<String> {
    let looks_secret = |s: &str| SECRET_PREFIXES.iter().any(|p| s.starts_with(p));
    let found = args.iter().skip(1).any(|a| {
        let a = a.to_string_lossy();
        looks_secret(&a) || a.split_once('=').is_some_and(|(_, v)| looks_secret(v))
    });
    found.then(|| {
        format!(
            "a token on the command line is visible to every user of this machine (`ps`): \
             refused. Put it in the environment instead: export {TOKEN_VAR}=… (and {URL_VAR}=… \
             for the server)"
        )
    })
}

/// A server to read the channel through, with the role token to read it.
#[derive(Debug, Clone)]
pub struct RemoteChannel {
    base: String,
    token: String,
    loopback: bool,
}

/// Why a server could not be read.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    /// The settings are wrong (URL, missing token): nothing was sent.
    #[error("{0}")]
    Config(String),
    /// The server refused the token or does not know the route (401, 403,
    /// 404): a setting to fix, not an outage.
    #[error("{url} answered {status}: {message} (check {URL_VAR} and {TOKEN_VAR})")]
    Refused {
        /// The URL asked.
        url: String,
        /// The HTTP status.
        status: u16,
        /// The server's `error`, as peer text.
        message: String,
    },
    /// The server answered with a redirect, which is never followed.
    #[error(
        "{url} answered with a redirect ({status}), which is never followed (it could carry the \
         token elsewhere): set {URL_VAR} to the server's own address"
    )]
    Redirect {
        /// The URL asked.
        url: String,
        /// The HTTP status.
        status: u16,
    },
    /// No answer: unreachable, too slow, TLS refused.
    #[error("cannot reach {url}: {reason}")]
    Unreachable {
        /// The URL asked.
        url: String,
        /// What went wrong.
        reason: String,
    },
    /// An answer that is not what the route gives.
    #[error("{url} answered badly: {reason}")]
    BadAnswer {
        /// The URL asked.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
}

impl RemoteError {
    /// True when the settings, not the network, are at fault: a stop hook
    /// says so instead of passing silently.
    pub fn is_misconfigured(&self) -> bool {
        matches!(
            self,
            Self::Config(_) | Self::Refused { .. } | Self::Redirect { .. }
        )
    }
}

/// What `/hook-status` answers.
#[derive(Debug)]
pub struct HookAnswer {
    /// The role the token acts as.
    pub role: String,
    /// Every counter.
    pub counts: Map<String, Value>,
}

impl RemoteChannel {
    /// The server of the environment: `None` when `COUNTERSIGN_URL` is unset
    /// or empty (the channel is read beside its folder).
    pub fn from_env() -> Result<Option<Self>, RemoteError> {
        let Some(url) = std::env::var(URL_VAR).ok().filter(|u| !u.trim().is_empty()) else {
            return Ok(None);
        };
        let token = std::env::var(TOKEN_VAR).unwrap_or_default();
        Self::new(&url, &token).map(Some)
    }

    /// The server at `url`, read with `token`.
    pub fn new(url: &str, token: &str) -> Result<Self, RemoteError> {
        let (base, loopback) = base_url(url).map_err(RemoteError::Config)?;
        let token = token.trim();
        if token.is_empty() {
            return Err(RemoteError::Config(format!(
                "{URL_VAR} is set but {TOKEN_VAR} is empty: export the role token as \
                 {TOKEN_VAR} (or unset {URL_VAR} to read the channel beside its folder)"
            )));
        }
        if !token.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(RemoteError::Config(format!(
                "{TOKEN_VAR} holds characters no token has"
            )));
        }
        Ok(Self {
            base,
            token: token.to_owned(),
            loopback,
        })
    }

    /// The server's address, as used (no trailing `/` or `/mcp`).
    pub fn base(&self) -> &str {
        &self.base
    }

    /// What names this server and token on this machine, without revealing
    /// either: the first 16 hex of the SHA-256 of both.
    pub fn fingerprint(&self) -> String {
        let digest = Sha256::digest(format!("{}\n{}", self.base, self.token).as_bytes());
        hex::encode(digest)[..16].to_owned()
    }

    /// `GET /status`: the status report, as `countersign status` prints it.
    pub fn status(&self) -> Result<Value, RemoteError> {
        self.report(format!("{}/status", self.base), STATUS_TIMEOUT)
    }

    /// `GET /status?wait=N`: the status report once something actionable
    /// waits, or after `wait_s` seconds (the server holds it that long).
    pub fn status_wait(&self, wait_s: u64) -> Result<Value, RemoteError> {
        let url = format!("{}/status?wait={wait_s}", self.base);
        self.report(url, Duration::from_secs(wait_s) + STATUS_TIMEOUT)
    }

    fn report(&self, url: String, timeout: Duration) -> Result<Value, RemoteError> {
        let answer = self.get(&url, timeout)?;
        let has_counts = answer.get("counts").is_some_and(Value::is_object);
        if !has_counts {
            return Err(RemoteError::BadAnswer {
                url,
                reason: "not a status report (no `counts`)".into(),
            });
        }
        Ok(Value::Object(answer))
    }

    /// `GET /hook-status`: the token's role and its counters.
    pub fn hook_status(&self) -> Result<HookAnswer, RemoteError> {
        let url = format!("{}/hook-status", self.base);
        let answer = self.get(&url, HOOK_TIMEOUT)?;
        let role = answer.get("role").and_then(Value::as_str);
        let counts = answer.get("counts").and_then(Value::as_object);
        match (role, counts) {
            (Some(role), Some(counts)) => Ok(HookAnswer {
                role: role.to_owned(),
                counts: counts.clone(),
            }),
            _ => Err(RemoteError::BadAnswer {
                url,
                reason: "no `role` or `counts`".into(),
            }),
        }
    }

    /// One GET with the token, answered by a JSON object.
    fn get(&self, url: &str, timeout: Duration) -> Result<Map<String, Value>, RemoteError> {
        let mut config = ureq::Agent::config_builder()
            .max_redirects(0)
            .http_status_as_error(false)
            .timeout_global(Some(timeout))
            .user_agent(format!("countersign/{VERSION}"));
        if self.loopback {
            // A proxy from the environment would carry the token, in the
            // clear, off this machine.
            config = config.proxy(None);
        }
        let agent = ureq::Agent::new_with_config(config.build());
        let unreachable = |e: ureq::Error| RemoteError::Unreachable {
            url: url.to_owned(),
            reason: crate::core::peer_text::one_line(&e.to_string()),
        };
        let mut response = agent
            .get(url)
            .header("Authorization", &format!("Bearer {}", self.token))
            .header("Accept", "application/json")
            .call()
            .map_err(unreachable)?;
        let status = response.status().as_u16();
        if (300..400).contains(&status) {
            return Err(RemoteError::Redirect {
                url: url.to_owned(),
                status,
            });
        }
        let body = response
            .body_mut()
            .with_config()
            .limit(MAX_ANSWER)
            .read_to_string()
            .map_err(unreachable)?;
        let parsed: Option<Map<String, Value>> = serde_json::from_str(&body).ok();
        if matches!(status, 401 | 403 | 404) {
            let message = parsed
                .as_ref()
                .and_then(|m| m.get("error"))
                .and_then(Value::as_str)
                .map_or_else(|| "(no reason given)".to_owned(), peer_line);
            return Err(RemoteError::Refused {
                url: url.to_owned(),
                status,
                message,
            });
        }
        if status != 200 {
            let reason = parsed
                .as_ref()
                .and_then(|m| m.get("error"))
                .and_then(Value::as_str)
                .map_or_else(
                    || format!("HTTP {status}"),
                    |e| format!("HTTP {status}: {}", peer_line(e)),
                );
            return Err(RemoteError::BadAnswer {
                url: url.to_owned(),
                reason,
            });
        }
        parsed.ok_or_else(|| RemoteError::BadAnswer {
            url: url.to_owned(),
            reason: "not a JSON object".into(),
        })
    }
}

/// A server's text on one line, escaped, and cut to a readable length.
fn peer_line(s: &str) -> String {
    let cut: String = s.chars().take(300).collect();
    crate::core::peer_text::one_line(&cut)
}

/// `url` without a trailing `/` or `/mcp`, and whether it names this
/// machine; refused unless https, or http to a loopback address.
pub(super) fn base_url(url: &str) -> Result<(String, bool), String> {
    let mut base = url.trim();
    loop {
        let before = base;
        base = base.trim_end_matches('/');
        base = base.strip_suffix("/mcp").unwrap_or(base);
        if base == before {
            break;
        }
    }
    let bad = |why: &str| {
        Err(format!(
            "{URL_VAR}={} {why}",
            crate::core::peer_text::one_line(url)
        ))
    };
    let Ok(uri) = base.parse::<ureq::http::Uri>() else {
        return bad("is not a URL");
    };
    let Some(authority) = uri.authority() else {
        return bad("names no server (write https://HOST[:PORT])");
    };
    if authority.as_str().contains('@') {
        return bad("carries credentials in the URL: put the token in COUNTERSIGN_TOKEN only");
    }
    if uri.query().is_some() {
        return bad("has a query: give the server's address only");
    }
    let host = authority
        .host()
        .trim_start_matches('[')
        .trim_end_matches(']');
    let loopback = host.eq_ignore_ascii_case("localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback());
    match uri.scheme_str() {
        Some("https") => {}
        Some("http") if loopback => {}
        Some("http") => {
            return bad(
                "is plain http to another machine, where the token could be read on the way: \
                 use https (a reverse proxy in front of `countersign serve`, see docs/SERVE.md)",
            );
        }
        _ => return bad("is neither https:// nor http:// (to this machine)"),
    }
    Ok((base.to_owned(), loopback))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_loses_its_trailing_slash_and_mcp() {
        for (given, want) in [
            ("https://cs.example.org", "https://cs.example.org"),
            ("https://cs.example.org/", "https://cs.example.org"),
            ("https://cs.example.org/mcp", "https://cs.example.org"),
            ("https://cs.example.org/mcp/", "https://cs.example.org"),
            (
                "https://cs.example.org/team/mcp",
                "https://cs.example.org/team",
            ),
            ("http://127.0.0.1:8765/mcp", "http://127.0.0.1:8765"),
            ("http://localhost:8765", "http://localhost:8765"),
            ("http://[::1]:8765/", "http://[::1]:8765"),
        ] {
            assert_eq!(base_url(given).unwrap().0, want, "{given}");
        }
        assert!(base_url("http://127.0.0.1:1").unwrap().1);
        assert!(!base_url("https://cs.example.org").unwrap().1);
    }

    #[test]
    fn plain_http_goes_only_to_this_machine() {
        for bad in [
            "http://cs.example.org",
            "http://10.0.0.2:8765",
            "ftp://127.0.0.1",
            "127.0.0.1:8765",
            "https://user:pw@cs.example.org",
            "https://cs.example.org/?x=1",
            "",
            "not a url",
        ] {
            assert!(base_url(bad).is_err(), "{bad}");
        }
        let why = base_url("http://cs.example.org").unwrap_err();
        assert!(
            why.contains("COUNTERSIGN_URL") && why.contains("https"),
            "{why}"
        );
    }

    #[test]
    fn a_secret_in_the_arguments_is_found_bare_or_after_an_equals() {
        let args = |v: &[&str]| v.iter().map(OsString::from).collect::<Vec<_>>();
        assert!(secret_in_args(&args(&["countersign", "status"])).is_none());
        let why = secret_in_args(&args(&["countersign", "status", "cst_abc"])).unwrap();
        assert!(why.contains(TOKEN_VAR), "{why}");
        assert!(secret_in_args(&args(&["countersign", "--token=csv_x"])).is_some());
        assert!(
            secret_in_args(&args(&["cst_is_the_program_name"])).is_none(),
            "the program's own name is not an argument"
        );
    }

    #[test]
    fn a_url_without_a_token_is_a_setting_to_fix() {
        let e = RemoteChannel::new("https://cs.example.org", " ").unwrap_err();
        assert!(e.is_misconfigured());
        assert!(e.to_string().contains(TOKEN_VAR), "{e}");
        let a = RemoteChannel::new("https://cs.example.org/mcp", "cst_a").unwrap();
        let b = RemoteChannel::new("https://cs.example.org", "cst_b").unwrap();
        assert_ne!(a.fingerprint(), b.fingerprint());
        assert_eq!(a.base(), "https://cs.example.org");
    }
}
