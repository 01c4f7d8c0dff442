//! Observing guard's outbox: the messages tools sent, by channel and in sending order.

use std::{collections::BTreeMap, sync::Arc};

use sha2::{Digest, Sha256};

use super::{Observe, Snapshot, plural, short};
use rmcp_guard::{Guard, canonical::canonical_json, outbox::Outbound};

type Sent = Arc<dyn Fn() -> Vec<Outbound> + Send + Sync>;

/// The messages tools sent through a guard's [`Outbox`](rmcp_guard::Outbox): the total and, per channel,
/// the count and a sha256 over the canonical JSON of the bodies in sending order.
pub struct OutboxObserver {
    sent: Sent,
}

impl OutboxObserver {
    /// Observes the outbox of `guard`.
    pub fn new(guard: Arc<Guard>) -> Self {
        Self::from_fn(move || guard.outbox().sent())
    }

    /// Observes whatever `sent` returns (another outbox, a capture endpoint, ...).
    pub fn from_fn(sent: impl Fn() -> Vec<Outbound> + Send + Sync + 'static) -> Self {
        Self {
            sent: Arc::new(sent),
        }
    }
}

impl Observe for OutboxObserver {
    fn label(&self) -> String {
        "outbox".to_owned()
    }

    fn snapshot(&self) -> Result<Snapshot, String> {
        let sent = (self.sent)();
        let mut snap = Snapshot::default();
        snap.insert("total", plural(sent.len(), "message", "messages"));
        let mut channels: BTreeMap<&str, (usize, Sha256)> = BTreeMap::new();
        for message in &sent {
            let (count, hasher) = channels
                .entry(message.channel.as_str())
                .or_insert_with(|| (0, Sha256::new()));
            *count += 1;
            let body = canonical_json(&message.body).map_err(|e| e.to_string())?;
            hasher.update((body.len() as u64).to_le_bytes());
            hasher.update(body.as_bytes());
        }
        for (channel, (count, hasher)) in channels {
            snap.insert(
                format!("channel {channel}"),
                format!(
                    "{}, sha256 {}",
                    plural(count, "message", "messages"),
                    short(&hasher.finalize())
                ),
            );
        }
        Ok(snap)
    }

    /// Every message by its place in sending order: a message sent is an addition, never
    /// an overwrite.
    fn items(&self) -> Result<Snapshot, String> {
        let mut snap = Snapshot::default();
        for (i, message) in (self.sent)().iter().enumerate() {
            let body = canonical_json(&message.body).map_err(|e| e.to_string())?;
            snap.insert(
                format!("message {i}"),
                format!(
                    "channel {}, sha256 {}",
                    message.channel,
                    short(&Sha256::digest(body.as_bytes()))
                ),
            );
        }
        Ok(snap)
    }
}
