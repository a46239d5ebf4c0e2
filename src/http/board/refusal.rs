//! The board's refusals: small HTML pages (a person reads them in a
//! browser), each saying what to do next.

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse as _, Response};

use super::html::escape;

/// An HTML page refusing the request with `status`, titled `title`, saying
/// `what` (the page's own words; anything from the request is escaped here).
pub fn page(status: StatusCode, title: &str, what: &str) -> Response {
    let body = format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"referrer\" content=\"no-referrer\"><title>{title}</title><style>\
         body {{ font: 15px/1.5 system-ui, sans-serif; margin: 12vh auto; max-width: 36em; \
         color: #1f2328; padding: 0 16px; }} code {{ background: #eef1f4; padding: 1px 4px; \
         border-radius: 4px; }}</style></head><body><h1>{title}</h1><p>{}</p></body></html>\n",
        escape(what),
        title = escape(title),
    );
    (
        status,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        body,
    )
        .into_response()
}

/// 401: no key, an unknown or ended one, or a link used or too old.
pub fn sign_in(what: &str) -> Response {
    page(
        StatusCode::UNAUTHORIZED,
        "This board needs a fresh link",
        &format!(
            "{what} Get a new link with `countersign board` on the machine that serves this \
             channel, or ask its owner for one (the board_link tool). A link works once, for 60 \
             seconds; the page it opens keeps working in this browser until the key ends."
        ),
    )
}

/// 403: a good secret that does not open this board.
pub fn forbidden(what: &str) -> Response {
    page(
        StatusCode::FORBIDDEN,
        "This key does not open this board",
        what,
    )
}

/// 404: no such channel here.
pub fn not_found(name: &str) -> Response {
    page(
        StatusCode::NOT_FOUND,
        "No such board",
        &format!(
            "This server hosts no channel named '{name}'. Check the link, or ask the server's \
             owner for a new one."
        ),
    )
}

/// 500 and 503: the server cannot read what it needs.
pub fn broken(status: StatusCode, what: &str) -> Response {
    page(status, "The board cannot be shown", what)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_refusal_is_html_and_escapes_what_it_names() {
        let r = not_found("<script>x</script>");
        assert_eq!(r.status(), StatusCode::NOT_FOUND);
        assert_eq!(
            r.headers()[header::CONTENT_TYPE],
            "text/html; charset=utf-8"
        );
        let body = axum::body::to_bytes(r.into_body(), 1 << 16).await.unwrap();
        let text = String::from_utf8(body.to_vec()).unwrap();
        assert!(text.contains("&lt;script&gt;x&lt;/script&gt;"), "{text}");
        assert!(!text.contains("<script>"));
    }
}
