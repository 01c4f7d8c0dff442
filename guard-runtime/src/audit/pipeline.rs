//! Events from the steps of a guarded call that run outside any store transaction (a
//! `#[destructive]` tool's outcomes, exposure refusals) go to the log through one writer
//! task per guard, in the order they happened. The writer appends whatever has queued up in
//! one transaction, so one durable commit serves many calls and the writer keeps up with
//! them. [`Pipeline::written`] waits for one event's commit (a record that must be in the log
//! before an effect runs); [`Pipeline::settled`] waits until everything sent so far is
//! written (a demo, a test, a shutdown).

use std::sync::OnceLock;

use tokio::sync::{mpsc, oneshot};

use super::{AuditLog, Event};

/// The most events one commit takes: a bound on how long the first of them waits.
const GROUP: usize = 256;

/// Whether an event reached the log; the error as text (the writer logs it in full).
pub(crate) type Written = Result<(), String>;

enum Message {
    Event(Box<Event>, Option<oneshot::Sender<Written>>),
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
                let mut group = Vec::with_capacity(GROUP);
                while inbox.recv_many(&mut group, GROUP).await > 0 {
                    write(&log, group.drain(..)).await;
                }
            });
            sender
        }))
    }

    /// Queues `event` for the log.
    pub(crate) fn send(&self, event: Event) {
        self.queue(event, None);
    }

    /// Queues `event` and waits until the transaction holding it committed.
    pub(crate) async fn written(&self, event: Event) -> Written {
        let (done, wait) = oneshot::channel();
        self.queue(event, Some(done));
        wait.await.unwrap_or_else(|_| {
            Err("the audit writer stopped before the record was written".to_owned())
        })
    }

    fn queue(&self, event: Event, done: Option<oneshot::Sender<Written>>) {
        let (refused, done) = match self.sender() {
            Some(sender) => match sender.send(Message::Event(Box::new(event), done)) {
                Ok(()) => return,
                Err(mpsc::error::SendError(Message::Event(event, done))) => (*event, done),
                Err(_) => return,
            },
            None => (event, done),
        };
        tracing::error!(
            trace_id = refused.trace_id(),
            tool = refused.tool(),
            outcome = refused.outcome(),
            "could not write the audit record: no async runtime"
        );
        if let Some(done) = done {
            let _ = done.send(Err(
                "no async runtime to write the audit record on".to_owned()
            ));
        }
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

/// Appends one group's events in one transaction, in order, then answers its waiters. A
/// group that cannot commit is retried event by event, so a bad event loses only itself.
async fn write(log: &AuditLog, group: impl Iterator<Item = Message>) {
    let mut events = Vec::new();
    let mut waiting = Vec::new();
    let mut settled = Vec::new();
    for message in group {
        match message {
            Message::Event(event, done) => {
                events.push(*event);
                waiting.push(done);
            }
            // Everything queued before it is in this group, so written below.
            Message::Settled(done) => settled.push(done),
        }
    }
    let results: Vec<Written> = match log.append_all(&events).await {
        Ok(()) => vec![Ok(()); events.len()],
        Err(_) if events.len() > 1 => {
            let mut results = Vec::with_capacity(events.len());
            for event in &events {
                results.push(
                    log.append(None, event)
                        .await
                        .map(drop)
                        .map_err(|e| e.to_string()),
                );
            }
            results
        }
        Err(error) => vec![Err(error.to_string())],
    };
    for ((event, done), result) in events.iter().zip(waiting).zip(results) {
        if let Err(error) = &result {
            tracing::error!(
                trace_id = event.trace_id(),
                tool = event.tool(),
                outcome = event.outcome(),
                %error,
                "could not write the audit record"
            );
        }
        if let Some(done) = done {
            let _ = done.send(result);
        }
    }
    for done in settled {
        let _ = done.send(());
    }
}
