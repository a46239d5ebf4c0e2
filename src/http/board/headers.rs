//! The headers every board answer carries, refusals included: a
//! Content-Security-Policy that allows the page's own inline style and
//! script and nothing else, no referrer, no sniffing, no caching, no
//! framing.

use axum::http::{HeaderName, HeaderValue, header};
use axum::response::Response;

/// The board's Content-Security-Policy: the inline style and script of the
/// page, `data:` images, the event stream of its own origin; no other
/// source, no framing, no `<base>`, no form.
pub const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; \
    img-src data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/// Every header of [`secure`], as (name, value).
pub const HEADERS: [(HeaderName, &str); 5] = [
    (header::CONTENT_SECURITY_POLICY, CSP),
    (header::REFERRER_POLICY, "no-referrer"),
    (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
    (header::CACHE_CONTROL, "no-store"),
    (header::X_FRAME_OPTIONS, "DENY"),
];

/// `response` with the board's headers set (replacing any of the same name).
pub async fn secure(mut response: Response) -> Response {
    let h = response.headers_mut();
    for (name, value) in HEADERS {
        h.insert(name, HeaderValue::from_static(value));
    }
    response
}
