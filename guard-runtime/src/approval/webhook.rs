//! Approver links delivered by webhook: an HTTP POST of the link as JSON, signed with
//! HMAC-SHA256 under a secret the receiver shares, in the style of Stripe's and GitHub's
//! webhooks, so a receiver (a chat relay, a mailer) can tell guard's deliveries from
//! anyone else's and refuse a replay of an old one.
//!
//! Each POST carries:
//!
//! - `Guard-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`;
//! - `Guard-Event: approval.link` and `Guard-Delivery: <approval id>.<digest of the
//!   approver>`, the same on every attempt, so a receiver that got a link twice can tell.
//!   These two headers are outside the signature: a receiver deduplicates on the signed
//!   body's `approval_id` and `approver`, never on the header alone;
//! - the body: `approval_id`, `tool`, `target`, `summary`, `requester` and `approver`
//!   (`tenant`, `user`), `url` (the one-time link) and `expires_at` (RFC 3339).
//!
//! A receiver recomputes the HMAC over the raw body exactly as received, compares in
//! constant time, and refuses a timestamp older than a few minutes ([`verify`] does all
//! three). Any answer but 2xx is a failed attempt, retried by the page.
//!
//! This client speaks plain HTTP, and only to loopback: the body holds a link that approves,
//! so it never crosses a network unencrypted. A receiver elsewhere is reached through a
//! relay on the same host that forwards over TLS, or through a [`super::Notifier`] of the
//! deployment's own.

use std::time::{Duration, SystemTime};

use hmac::{Hmac, KeyInit, Mac};
use serde_json::json;
use sha2::Sha256;
use url::Url;

use super::{ApproverLink, delivery::Delivery};

/// The header holding the timestamp and signature.
pub const SIGNATURE_HEADER: &str = "Guard-Signature";
/// The header naming the kind of event (`approval.link`).
pub const EVENT_HEADER: &str = "Guard-Event";
/// The header naming the delivery, the same on every attempt of one link.
pub const DELIVERY_HEADER: &str = "Guard-Delivery";
/// How old a signed timestamp [`verify`] accepts by default.
pub const TOLERANCE: Duration = Duration::from_secs(300);

/// The shortest secret accepted: 256 bits, the size of the HMAC-SHA256 output.
const MIN_SECRET: usize = 32;

type HmacSha256 = Hmac<Sha256>;

/// Delivers approver links by signed POST to a receiver on this host.
pub struct WebhookNotifier {
    url: Url,
    secret: Vec<u8>,
    timeout: Duration,
}

impl std::fmt::Debug for WebhookNotifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookNotifier")
            .field("url", &self.url.as_str())
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

/// Why a webhook notifier cannot be set up.
#[derive(thiserror::Error)]
pub enum WebhookError {
    /// Not an `http://` URL to a loopback address.
    #[error(
        "the webhook URL {0} is not http:// to a loopback address (127.0.0.1, [::1] or localhost): approver links must not cross a network unencrypted. Run a relay on this host that forwards over TLS, or deliver through a Notifier of your own"
    )]
    NotLoopback(String),
    /// The secret is too short to sign with.
    #[error(
        "the webhook secret has {0} bytes; use at least {MIN_SECRET} random bytes, shared with the receiver only"
    )]
    ShortSecret(usize),
}

/// Its sentence, as [`Display`](std::fmt::Display) says it: `main() -> Result<(), Box<dyn
/// Error>>` prints an error returned at start-up with `Debug`, and should say what to do.
impl std::fmt::Debug for WebhookError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

/// Why [`verify`] refused a delivery.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    /// No parsable `t=...,v1=...` header.
    #[error("the {SIGNATURE_HEADER} header is missing or not `t=<unix seconds>,v1=<hex>`")]
    Malformed,
    /// The timestamp is outside the tolerance.
    #[error("the signed timestamp is too far from now (a replay, or a clock that is off): refused")]
    Stale,
    /// No signature matches the body under the secret.
    #[error("the signature does not match the body under the shared secret: refused")]
    Mismatch,
}

impl WebhookNotifier {
    /// Posts to `url` (http to loopback), signing with `secret` (32 bytes or more).
    pub fn new(url: &str, secret: impl Into<Vec<u8>>) -> Result<Self, WebhookError> {
        let secret = secret.into();
        if secret.len() < MIN_SECRET {
            return Err(WebhookError::ShortSecret(secret.len()));
        }
        let parsed = Url::parse(url).map_err(|_| WebhookError::NotLoopback(url.to_owned()))?;
        let loopback = match parsed.host() {
            Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
            Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
            Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
            None => false,
        };
        if parsed.scheme() != "http" || !loopback {
            return Err(WebhookError::NotLoopback(url.to_owned()));
        }
        Ok(Self {
            url: parsed,
            secret,
            timeout: Duration::from_secs(10),
        })
    }

    /// How long one attempt may take, connecting included (default 10 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    async fn post(&self, link: &ApproverLink) -> Result<(), String> {
        let body = body(link).to_string();
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let signature = sign(&self.secret, now, body.as_bytes());
        let host = self.url.host_str().unwrap_or("localhost");
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let port = self.url.port_or_known_default().unwrap_or(80);
        let stream = tokio::net::TcpStream::connect((host, port))
            .await
            .map_err(|e| format!("cannot connect to {}: {e}", self.url))?;
        let (mut sender, connection) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                .await
                .map_err(|e| format!("HTTP handshake with {} failed: {e}", self.url))?;
        tokio::spawn(connection);
        let mut target = self.url.path().to_owned();
        if let Some(query) = self.url.query() {
            target.push('?');
            target.push_str(query);
        }
        let authority = match self.url.port() {
            Some(port) => format!("{}:{port}", self.url.host_str().unwrap_or(host)),
            None => self.url.host_str().unwrap_or(host).to_owned(),
        };
        let request = http::Request::post(target)
            .header(http::header::HOST, authority)
            .header(http::header::CONTENT_TYPE, "application/json")
            .header(http::header::USER_AGENT, "rmcp-guard approval page")
            .header(SIGNATURE_HEADER, signature)
            .header(EVENT_HEADER, "approval.link")
            .header(DELIVERY_HEADER, delivery_id(link))
            .body(http_body_util::Full::new(bytes::Bytes::from(body)))
            .map_err(|e| format!("cannot build the webhook request: {e}"))?;
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| format!("the POST to {} failed: {e}", self.url))?;
        let status = response.status();
        if status.is_success() {
            Ok(())
        } else {
            Err(format!("the receiver at {} answered {status}", self.url))
        }
    }
}

impl super::Notifier for WebhookNotifier {
    fn channel(&self) -> String {
        format!("webhook {}", self.url)
    }

    fn deliver<'a>(&'a self, link: &'a ApproverLink) -> Delivery<'a> {
        Box::pin(async move {
            tokio::time::timeout(self.timeout, self.post(link))
                .await
                .unwrap_or_else(|_| {
                    Err(format!(
                        "the receiver at {} did not answer within {:?}",
                        self.url, self.timeout
                    ))
                })
        })
    }
}

/// The JSON a link travels as (also what [`super::FileDropNotifier`] writes).
pub(super) fn body(link: &ApproverLink) -> serde_json::Value {
    json!({
        "approval_id": link.approval_id,
        "tool": link.tool,
        "target": link.target,
        "summary": link.summary,
        "requester": {"tenant": link.requester.tenant(), "user": link.requester.user()},
        "approver": {"tenant": link.approver.tenant, "user": link.approver.user},
        "url": link.url.as_str(),
        "expires_at": chrono::DateTime::<chrono::Utc>::from(link.expires_at)
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
    })
}

/// The same for every attempt of one link, and different for each approver of an approval.
fn delivery_id(link: &ApproverLink) -> String {
    let who = serde_json::json!([link.approver.tenant, link.approver.user]).to_string();
    let who = crate::canonical::sha256_hex(who.as_bytes());
    format!("{}.{}", link.approval_id, &who[..16])
}

/// The `Guard-Signature` value for `body` sent at `timestamp` (Unix seconds).
pub fn sign(secret: &[u8], timestamp: u64, body: &[u8]) -> String {
    let mac = mac(secret, timestamp, body);
    format!(
        "t={timestamp},v1={}",
        crate::canonical::hex(&mac.finalize().into_bytes())
    )
}

/// Checks a delivery as a receiver should: the header parses, its timestamp is within
/// `tolerance` of `now`, and one of its `v1` signatures is the HMAC of `"<t>.<body>"` under
/// `secret`, compared in constant time.
pub fn verify(
    secret: &[u8],
    header: &str,
    body: &[u8],
    now: SystemTime,
    tolerance: Duration,
) -> Result<(), SignatureError> {
    let mut timestamp = None;
    let mut signatures = Vec::new();
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", t)) => timestamp = t.parse::<u64>().ok(),
            Some(("v1", hex)) => signatures.push(hex),
            _ => {}
        }
    }
    let (Some(timestamp), false) = (timestamp, signatures.is_empty()) else {
        return Err(SignatureError::Malformed);
    };
    let now = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    if now.abs_diff(timestamp) > tolerance.as_secs() {
        return Err(SignatureError::Stale);
    }
    for hex in signatures {
        let Some(bytes) = unhex(hex) else { continue };
        if mac(secret, timestamp, body).verify_slice(&bytes).is_ok() {
            return Ok(());
        }
    }
    Err(SignatureError::Mismatch)
}

fn mac(secret: &[u8], timestamp: u64, body: &[u8]) -> HmacSha256 {
    let mut mac = HmacSha256::new_from_slice(secret).expect("HMAC takes keys of any length");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    mac
}

fn unhex(hex: &str) -> Option<Vec<u8>> {
    if !hex.len().is_multiple_of(2) {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &[u8] = b"0123456789abcdef0123456789abcdef";

    #[test]
    fn a_set_up_error_prints_its_sentence_with_debug() {
        let error = WebhookNotifier::new("http://example.com/", SECRET).unwrap_err();
        assert_eq!(format!("{error:?}"), error.to_string());
        assert!(format!("{error:?}").contains("not http:// to a loopback address"));
    }

    #[test]
    fn a_signature_verifies_only_for_its_body_secret_and_time() {
        let at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let header = sign(SECRET, 1_800_000_000, b"{\"a\":1}");
        assert_eq!(verify(SECRET, &header, b"{\"a\":1}", at, TOLERANCE), Ok(()));
        assert_eq!(
            verify(SECRET, &header, b"{\"a\":2}", at, TOLERANCE),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            verify(&SECRET[1..], &header, b"{\"a\":1}", at, TOLERANCE),
            Err(SignatureError::Mismatch)
        );
        let later = at + Duration::from_secs(301);
        assert_eq!(
            verify(SECRET, &header, b"{\"a\":1}", later, TOLERANCE),
            Err(SignatureError::Stale)
        );
        for bad in ["", "t=1", "v1=00", "t=x,v1=00"] {
            assert_eq!(
                verify(SECRET, bad, b"{}", at, TOLERANCE),
                Err(SignatureError::Malformed),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn only_loopback_http_and_long_secrets_are_accepted() {
        assert!(WebhookNotifier::new("http://127.0.0.1:9/hook", SECRET).is_ok());
        assert!(WebhookNotifier::new("http://localhost:9/hook", SECRET).is_ok());
        assert!(WebhookNotifier::new("http://[::1]:9/hook", SECRET).is_ok());
        for url in [
            "https://hooks.example.com/x",
            "http://hooks.example.com/x",
            "http://10.0.0.1/x",
            "ftp://127.0.0.1/x",
        ] {
            assert!(
                matches!(
                    WebhookNotifier::new(url, SECRET),
                    Err(WebhookError::NotLoopback(_))
                ),
                "{url}"
            );
        }
        assert!(matches!(
            WebhookNotifier::new("http://127.0.0.1/x", &b"short"[..]),
            Err(WebhookError::ShortSecret(5))
        ));
    }
}
