//! The approval page over HTTP: `GET /approval/{link}` shows it, `POST /approval/{link}`
//! decides (or, where approvers sign in, signs in). Where approvers sign in,
//! `/approval/inbox` lists what waits for the signed-in person and decides through their
//! own links, and lists the grants they hold, each revocable there. Nothing is decided by a GET; a POST must
//! come from the page's own origin and carry the link's CSRF token. Every answer, axum's
//! own included, passes through [`super::shield`]: requests for another `Host` are refused,
//! and every answer forbids framing, caching, and any script or asset from elsewhere. The
//! referrer (which holds the link) never leaves the page's origin. It is not suppressed
//! altogether: with `no-referrer` a browser sends `Origin: null` on the page's own POST,
//! and the origin check could not tell it from another site's.
//!
//! One link's page is in `link`, the inbox in `inbox`, and what every answer is made of in
//! `html`.

mod html;
mod inbox;
mod link;

use std::sync::Arc;

use axum::{
    Router,
    http::{HeaderMap, HeaderValue, StatusCode, header},
    middleware,
    response::{IntoResponse, Response},
    routing::get,
};
use serde::Deserialize;

use super::{Shared, desk::Decision, refusal::Refusal, shield};
use crate::person::Person;

const STYLE: &str = include_str!("../page.css");

pub(super) fn router(shared: Arc<Shared>) -> Router {
    let default_port = if shared.base.scheme() == "https" {
        443
    } else {
        80
    };
    let admit = (shared.hosts.clone(), default_port);
    Router::new()
        .route("/approval/inbox", get(inbox::inbox).post(inbox::inbox_post))
        .route("/approval/{link}", get(link::show).post(link::decide))
        .route("/approval-assets/page.css", get(style))
        .fallback(not_found)
        .with_state(shared)
        .layer(middleware::from_fn_with_state(admit, shield::admit))
        .layer(middleware::map_response(shield::armour))
}

#[derive(Deserialize)]
struct Posted {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    decision: String,
    #[serde(default)]
    typed: Option<String>,
    #[serde(default)]
    secret: Option<String>,
    #[serde(default)]
    token: Option<String>,
}

impl Posted {
    /// The decision a page's form posted (`None` for anything else), and its CSRF token.
    fn decision(self) -> (Option<Decision>, String) {
        let decision = match self.decision.as_str() {
            "approve" => Some(Decision::Approve {
                typed: self.typed,
                secret: self.secret,
            }),
            "reject" => Some(Decision::Reject),
            _ => None,
        };
        (decision, self.csrf)
    }
}

/// The person at the browser, where approvers sign in.
fn signed_in(shared: &Shared, headers: &HeaderMap) -> Option<Person> {
    shared.sign_in.as_ref()?.signed_in(headers)
}

async fn style() -> Response {
    let mut response = (StatusCode::OK, STYLE).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/css; charset=utf-8"),
    );
    response
}

async fn not_found() -> Response {
    html::refused(&Refusal::UnknownLink)
}

/// A browser names the page's origin in `Origin` on every POST; a request from another
/// site names its own, or says `Sec-Fetch-Site: cross-site`.
fn same_origin(origin: &str, headers: &HeaderMap) -> bool {
    let site_ok = match headers.get("sec-fetch-site").map(HeaderValue::to_str) {
        None => true,
        Some(Ok(site)) => site == "same-origin",
        Some(Err(_)) => false,
    };
    let origin_ok = match headers.get(header::ORIGIN).map(HeaderValue::to_str) {
        None => true,
        Some(Ok(sent)) => sent == origin,
        Some(Err(_)) => false,
    };
    site_ok && origin_ok
}
