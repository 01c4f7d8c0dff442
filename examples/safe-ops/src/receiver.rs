//! A webhook receiver for approver links, as a deployment would run next to safe-ops (a
//! relay to chat or mail): it takes guard's signed POSTs, refuses any whose signature does
//! not verify under the shared secret (401) or whose body is not a link (400), and keeps
//! each delivered link for the approver it names. The demo uses it as the approvers' inbox;
//! it can also refuse a number of deliveries (503), to show that guard retries.

use std::{
    net::SocketAddr,
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, SystemTime},
};

use axum::{
    Router,
    body::Bytes,
    extract::State,
    http::{HeaderMap, StatusCode},
    routing::post,
};
use rmcp_guard::approval::webhook;
use serde_json::Value;

/// One link as it arrived.
#[derive(Debug, Clone)]
pub struct Delivered {
    /// The approver it is for (the user as configured).
    pub approver: String,
    /// The one-time link.
    pub url: String,
    /// The approval it belongs to.
    pub approval_id: String,
    /// The whole body.
    pub body: Value,
}

#[derive(Default)]
struct Inbox {
    links: Mutex<Vec<Delivered>>,
    refused: AtomicUsize,
    unavailable: AtomicUsize,
}

/// A running receiver on loopback.
pub struct Receiver {
    addr: SocketAddr,
    inbox: Arc<Inbox>,
    server: tokio::task::JoinHandle<()>,
}

impl Receiver {
    /// Listens on a free loopback port, verifying signatures with `secret`.
    pub async fn start(secret: Vec<u8>) -> Result<Self, String> {
        let inbox = Arc::new(Inbox::default());
        let state = (Arc::new(secret), inbox.clone());
        let app = Router::new()
            .route("/approval-links", post(receive))
            .with_state(state);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|e| format!("the link receiver cannot listen: {e}"))?;
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(Self {
            addr,
            inbox,
            server,
        })
    }

    /// The URL guard posts to.
    pub fn url(&self) -> String {
        format!("http://{}/approval-links", self.addr)
    }

    /// Every link delivered so far.
    pub fn links(&self) -> Vec<Delivered> {
        self.inbox
            .links
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Waits up to `wait` for a link for `approver`.
    pub async fn link_for(&self, approver: &str, wait: Duration) -> Option<Delivered> {
        let until = tokio::time::Instant::now() + wait;
        loop {
            if let Some(link) = self.links().into_iter().find(|l| l.approver == approver) {
                return Some(link);
            }
            if tokio::time::Instant::now() >= until {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// How many posts were refused for their signature or body.
    pub fn refused(&self) -> usize {
        self.inbox.refused.load(Ordering::SeqCst)
    }

    /// Answers the next `n` valid deliveries with 503, as a receiver that is down would.
    pub fn unavailable_for(&self, n: usize) {
        self.inbox.unavailable.store(n, Ordering::SeqCst);
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.server.abort();
    }
}

async fn receive(
    State((secret, inbox)): State<(Arc<Vec<u8>>, Arc<Inbox>)>,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    let signature = headers
        .get(webhook::SIGNATURE_HEADER)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if let Err(problem) = webhook::verify(
        &secret,
        signature,
        &body,
        SystemTime::now(),
        webhook::TOLERANCE,
    ) {
        tracing::warn!(target: "safe_ops", %problem, "refused a link delivery");
        inbox.refused.fetch_add(1, Ordering::SeqCst);
        return StatusCode::UNAUTHORIZED;
    }
    let Ok(body) = serde_json::from_slice::<Value>(&body) else {
        inbox.refused.fetch_add(1, Ordering::SeqCst);
        return StatusCode::BAD_REQUEST;
    };
    let text = |path: &str| {
        body.pointer(path)
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let (Some(approver), Some(url), Some(approval_id)) =
        (text("/approver/user"), text("/url"), text("/approval_id"))
    else {
        inbox.refused.fetch_add(1, Ordering::SeqCst);
        return StatusCode::BAD_REQUEST;
    };
    let down = inbox
        .unavailable
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok();
    if down {
        return StatusCode::SERVICE_UNAVAILABLE;
    }
    inbox
        .links
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(Delivered {
            approver,
            url,
            approval_id,
            body,
        });
    StatusCode::NO_CONTENT
}
