//! What every answer of the page is made of: the HTML frame with the page's own style
//! sheet, the answer to a refused or unreadable post, and text escaped for HTML.

use axum::{
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};

use crate::approval::refusal::Refusal;

pub(super) fn not_understood() -> Response {
    page(
        StatusCode::BAD_REQUEST,
        &shell(
            "Not understood",
            "<p class=\"refused\">The page sent no decision. Open your approval link and press Approve or Reject.</p>",
        ),
    )
}

pub(super) fn refused(refusal: &Refusal) -> Response {
    let body = format!("<p class=\"refused\">{}</p>", esc(&refusal.message()));
    page(
        StatusCode::from_u16(refusal.status()).unwrap_or(StatusCode::FORBIDDEN),
        &shell("Approval refused", &body),
    )
}

pub(super) fn page(status: StatusCode, html: &str) -> Response {
    let mut response = (status, html.to_owned()).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    response
}

pub(super) fn shell(title: &str, body: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\"><title>{}</title><link rel=\"stylesheet\" href=\"../approval-assets/page.css\"></head><body><main>{body}</main></body></html>\n",
        esc(title)
    )
}

pub(super) fn utc(at: std::time::SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(at)
        .format("%Y-%m-%d %H:%M:%S UTC")
        .to_string()
}

pub(super) fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}
