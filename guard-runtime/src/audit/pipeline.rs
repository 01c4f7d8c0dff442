//! Events from the steps of a guarded call that run outside any store transaction (a
//! `#[destructive]` tool's outcomes, exposure refusals) go to the log through one writer
//! task per guard, in the order they happened. [`Pipeline::settled`] waits until everything
//! sent so far is written (a demo, a test, a shutdown).

use std::sync::OnceLock;

use tokio::sync::{mpsc, oneshot};

use super::{AuditLog, Event};

enum Message {
    Event(Box<Event>),
    Settled(oneshot::Sender<()>),
}

/// The writer of one guard's out-of-transaction events.
pub(crate) struct Pipeline {
    log: AuditLog,
    sender: OnceLock<mpsc::UnboundedSender<Message>>,
}

impl Pipeline {
    pub(crate) fn new(log: AuditLog) -> Self {
        Self {
            log,
            sender: OnceLock::new(),
        }
    }

    pub(crate) fn log(&self) -> &AuditLog {
        &self.log
    }

    /// The writer task's inbox, starting the task on first use (on the caller's runtime).
    fn sender(&self) -> Option<&mpsc::UnboundedSender<Message>> {
        if let Some(sender) = self.sender.get() {
            return Some(sender);
        }
        let runtime = tokio::runtime::Handle::try_current().ok()?;
        Some(self.sender.get_or_init(|| {
            let (sender, mut inbox) = mpsc::unbounded_channel();
            let log = self.log.clone();
            runtime.spawn(async move {
                while let Some(message) = inbox.recv().await {
                    match message {
                        Message::Event(event) => {
                            if let Err(error) = log.append(None, &event).await {
                                tracing::error!(
                                    trace_id = event.trace_id(),
                                    tool = event.tool(),
                                    outcome = event.outcome(),
                                    %error,
                                    "could not write the audit record"
                                );
                            }
                        }
                        Message::Settled(done) => {
                            let _ = done.send(());
                        }
                    }
                }
            });
            sender
        }))
    }

    /// Queues `event` for the log.
    pub(crate) fn send(&self, event: Event) {
        let refused = match self.sender() {
            Some(sender) => match sender.send(Message::Event(Box::new(event))) {
                Ok(()) => return,
                Err(mpsc::error::SendError(Message::Event(event))) => *event,
                Err(_) => return,
            },
            None => event,
        };
        tracing::error!(
            trace_id = refused.trace_id(),
            tool = refused.tool(),
            outcome = refused.outcome(),
            "could not write the audit record: no async runtime"
        );
    }

    /// Waits until every event sent before this call is written (or failed, logged).
    pub(crate) async fn settled(&self) {
        let (done, wait) = oneshot::channel();
        if self
            .sender()
            .is_some_and(|s| s.send(Message::Settled(done)).is_ok())
        {
            let _ = wait.await;
        }
    }
}
