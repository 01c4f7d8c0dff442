//! What wraps every answer of the page, whichever part of the server gives it: the page's
//! own, axum's (404, 405, 413, 415) or these layers' refusals.
//!
//! - **Host.** A request is served only if its `Host` (and the authority of an absolute
//!   request target) names the page: the public base's host and port, for a loopback page
//!   also `localhost` on its port, and any name allowed with
//!   [`ApprovalPageBuilder::allow_host`](super::ApprovalPageBuilder::allow_host). A DNS
//!   rebinding page (`Host: evil.example` on the page's address) gets a refusal, never the
//!   page or its CSRF token.
//! - **Length.** A target longer than [`MAX_TARGET`] is refused here with 414. hyper answers
//!   targets past 64 KiB itself, before any layer runs, with an empty 414 that has nothing to
//!   frame or cache.
//! - **Headers.** Every answer gets the content security policy, `X-Frame-Options: DENY`,
//!   `X-Content-Type-Options: nosniff`, a same-origin referrer policy and `Cache-Control:
//!   no-store`.

use std::{
    net::{IpAddr, SocketAddr},
    sync::Arc,
};

use axum::{
    body::Body,
    extract::{Request, State},
    http::{HeaderMap, HeaderValue, StatusCode, header},
    middleware::Next,
    response::{IntoResponse, Response},
};
use url::Url;

use super::ApprovalPageError;

/// The page's policy: nothing from elsewhere, its own stylesheet, forms posting to itself,
/// never framed.
pub(super) const CSP: &str = "default-src 'none'; style-src 'self'; img-src 'none'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// The longest request target served; a link is far shorter.
pub(super) const MAX_TARGET: usize = 2048;

/// The `host:port` values the page answers to, lowercase, ports explicit.
pub(super) fn hosts(
    base: &Url,
    local: SocketAddr,
    extra: &[String],
) -> Result<Arc<Vec<String>>, ApprovalPageError> {
    let default_port = base.port_or_known_default().unwrap_or(80);
    let scheme_port = if base.scheme() == "https" { 443 } else { 80 };
    let mut hosts = Vec::new();
    let base_host = base.host_str().unwrap_or_default();
    hosts.push(format!("{}:{default_port}", base_host.to_ascii_lowercase()));
    let base_ip = match base.host() {
        Some(url::Host::Ipv4(ip)) => Some(IpAddr::V4(ip)),
        Some(url::Host::Ipv6(ip)) => Some(IpAddr::V6(ip)),
        _ => None,
    };
    // A page reached at its own loopback address is also reached as localhost.
    if local.ip().is_loopback() && base_ip == Some(local.ip()) && default_port == local.port() {
        hosts.push(format!("localhost:{}", local.port()));
    }
    for host in extra {
        let parsed =
            authority(host, scheme_port).ok_or_else(|| ApprovalPageError::BadHost(host.clone()))?;
        hosts.push(parsed);
    }
    Ok(Arc::new(hosts))
}

/// `host[:port]` as `host:port` (lowercase, the default port filled in), or `None` for
/// anything else.
fn authority(value: &str, default_port: u16) -> Option<String> {
    let value = value.trim().to_ascii_lowercase();
    let (host, port) = if let Some(rest) = value.strip_prefix('[') {
        let (ip, after) = rest.split_once(']')?;
        ip.parse::<std::net::Ipv6Addr>().ok()?;
        let port = match after {
            "" => default_port,
            p => p.strip_prefix(':')?.parse().ok()?,
        };
        (format!("[{ip}]"), port)
    } else {
        let (host, port) = match value.rsplit_once(':') {
            Some((host, port)) => (host, port.parse().ok()?),
            None => (value.as_str(), default_port),
        };
        let host = host.strip_suffix('.').unwrap_or(host);
        let fine = !host.is_empty()
            && host
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'));
        if !fine {
            return None;
        }
        (host.to_owned(), port)
    };
    Some(format!("{host}:{port}"))
}

/// Serves the request only if it names the page and its target is of a sane length.
pub(super) async fn admit(
    State((hosts, default_port)): State<(Arc<Vec<String>>, u16)>,
    request: Request,
    next: Next,
) -> Response {
    if request.uri().to_string().len() > MAX_TARGET {
        return refusal(
            StatusCode::URI_TOO_LONG,
            "This address is far longer than any approval link. Open the link exactly as it was sent to you.",
        );
    }
    let mut named = request
        .headers()
        .get_all(header::HOST)
        .iter()
        .map(|v| v.to_str().ok().and_then(|v| authority(v, default_port)));
    let host = match (named.next(), named.next()) {
        (Some(Some(host)), None) => host,
        _ => {
            tracing::warn!("the approval page refused a request without exactly one valid Host");
            return misdirected();
        }
    };
    let target = request
        .uri()
        .authority()
        .map(|a| authority(a.as_str(), default_port));
    let target_ok = match target {
        None => true,
        Some(Some(target)) => target == host,
        Some(None) => false,
    };
    if !target_ok || !hosts.contains(&host) {
        tracing::warn!(host = %host, "the approval page refused a request for a name it does not serve (DNS rebinding, or a proxy to allow with ApprovalPageBuilder::allow_host)");
        return misdirected();
    }
    next.run(request).await
}

fn misdirected() -> Response {
    refusal(
        StatusCode::MISDIRECTED_REQUEST,
        "This approval page is not served under the name this request used. Open the link exactly as it was sent to you.",
    )
}

fn refusal(status: StatusCode, text: &str) -> Response {
    let html = format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Refused</title></head><body><p>{text}</p></body></html>\n"
    );
    let mut response = (status, html).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    response
}

/// Adds the page's protective headers to `response`, whatever produced it.
pub(super) async fn armour(mut response: Response<Body>) -> Response<Body> {
    secure(response.headers_mut());
    response
}

fn secure(headers: &mut HeaderMap) {
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_values_compare_with_explicit_ports() {
        assert_eq!(authority("Example.COM", 443).unwrap(), "example.com:443");
        assert_eq!(authority("127.0.0.1:8080", 80).unwrap(), "127.0.0.1:8080");
        assert_eq!(authority("[::1]:9", 80).unwrap(), "[::1]:9");
        assert_eq!(authority("[::1]", 80).unwrap(), "[::1]:80");
        assert_eq!(authority("localhost.:7", 80).unwrap(), "localhost:7");
        for bad in [
            "",
            "a b",
            "evil.example:x",
            "[nope]:1",
            "user@host",
            "h:99999",
        ] {
            assert_eq!(authority(bad, 80), None, "{bad:?}");
        }
        let base = Url::parse("http://127.0.0.1:4000/").unwrap();
        let local = SocketAddr::from(([127, 0, 0, 1], 4000));
        let hosts = hosts(&base, local, &["approve.internal".into()]).unwrap();
        assert_eq!(
            *hosts,
            ["127.0.0.1:4000", "localhost:4000", "approve.internal:80"]
        );
        let proxied = Url::parse("https://approve.example.com/ops/").unwrap();
        let hosts = super::hosts(&proxied, local, &[]).unwrap();
        assert_eq!(*hosts, ["approve.example.com:443"]);
    }
}
