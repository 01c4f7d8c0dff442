//! Outbound notifications (emails, webhooks, chat messages) that tools send through guard,
//! so their side effects can be observed and counted like rows and files.

use std::sync::Mutex;

use serde_json::Value;

/// One message a tool sent.
#[derive(Debug, Clone, PartialEq)]
pub struct Outbound {
    /// Where it went.
    pub channel: String,
    /// What was sent.
    pub body: Value,
}

/// The record of everything tools sent. Delivery is the server's business; the outbox is
/// what the honesty kit reads to see whether a call notified anyone.
#[derive(Debug, Default)]
pub struct Outbox {
    sent: Mutex<Vec<Outbound>>,
}

impl Outbox {
    /// Records a message for `channel`.
    pub fn send(&self, channel: impl Into<String>, body: Value) {
        self.sent
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(Outbound {
                channel: channel.into(),
                body,
            });
    }

    /// Everything sent so far, oldest first.
    pub fn sent(&self) -> Vec<Outbound> {
        self.sent.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}
