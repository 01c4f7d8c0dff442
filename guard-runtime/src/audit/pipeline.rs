//! Events from the steps of a guarded call that run outside any store transaction (a
//! `#[destructive]` tool's outcomes, exposure refusals) go to the log through one writer
//! task per guard, in the order they happened. The writer appends whatever has queued up in
//! one transaction, so one durable commit serves many calls and the writer keeps up with
//! them. [`Pipeline::written`] waits for one event's commit (a record that must be in the log
//! before an effect runs); [`Pipeline::settled`] waits until everything sent so far is
//! written (a demo, a test, a shutdown).
//!
//! An event nobody waits for (an outcome, after the model has its answer) waits up to
//! [`GATHER`] for company: the next call's confirmation, which must be written before its
//! effect, then takes it along in its own commit instead of the log committing twice.

use std::{sync::OnceLock, time::Duration};

use tokio::sync::{mpsc, oneshot};

use super::{AuditLog, Event};

/// The most events one commit takes: a bound on how long the first of them waits.
const GROUP: usize = 256;

/// How long a group of events nobody waits for gathers more before it is written. A
/// waiter (`written`, `settled`) ends the gathering at once.
pub(crate) const GATHER: Duration = Duration::from_millis(5);

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
                    gather(&mut inbox, &mut group).await;
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

/// Adds to `group` what arrives within [`GATHER`], until someone waits on the group or it
/// is full.
async fn gather(inbox: &mut mpsc::UnboundedReceiver<Message>, group: &mut Vec<Message>) {
    let until = tokio::time::Instant::now() + GATHER;
    while group.len() < GROUP && !group.iter().any(Message::awaited) {
        let more = inbox.recv_many(group, GROUP - group.len());
        match tokio::time::timeout_at(until, more).await {
            Ok(received) if received > 0 => {}
            // Gathered long enough, or every sender is gone: write what there is.
            _ => return,
        }
    }
}

impl Message {
    /// Whether someone waits for this message's group to be written.
    fn awaited(&self) -> bool {
        matches!(self, Message::Event(_, Some(_)) | Message::Settled(_))
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

#[cfg(all(test, feature = "sqlite", feature = "testing"))]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::{outcome::Outcome, store::SqliteStore, testing::CountingStore};

    /// A pipeline on a fresh SQLite log whose transactions are counted, on a runtime whose
    /// clock moves only when every task waits (so the gathering is not raced by the machine).
    fn counted(dir: &tempfile::TempDir) -> (Pipeline, CountingStore, tokio::runtime::Runtime) {
        let store = SqliteStore::open(dir.path().join("log.db")).expect("store");
        let counting = CountingStore::new(Arc::new(store));
        let pipeline = Pipeline::new(AuditLog::new(counting.clone(), "test"));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .expect("runtime");
        (pipeline, counting, runtime)
    }

    fn event(n: u32) -> Event {
        Event::new("delete_file", Outcome::Declined, format!("trace-{n}"))
    }

    /// The transactions that committed.
    fn commits(counting: &CountingStore) -> usize {
        counting
            .take()
            .iter()
            .filter(|trips| trips.iter().flatten().any(|sql| sql.contains("COMMIT")))
            .count()
    }

    #[test]
    fn an_outcome_nobody_waits_for_shares_the_next_confirmations_commit() {
        let dir = tempfile::tempdir().unwrap();
        let (pipeline, counting, runtime) = counted(&dir);
        runtime.block_on(async {
            pipeline.send(event(1));
            // The writer takes the outcome and gathers; the confirmation comes meanwhile.
            tokio::task::yield_now().await;
            pipeline.written(event(2)).await.expect("written");
        });
        assert_eq!(commits(&counting), 1, "one commit for both records");
        let records = runtime.block_on(pipeline.log().records()).expect("records");
        let traces: Vec<_> = records
            .iter()
            .filter_map(|r| r.json())
            .filter_map(|j| j["trace_id"].as_str().map(str::to_owned))
            .collect();
        assert_eq!(
            traces,
            ["trace-1", "trace-2"],
            "in the order they were sent"
        );
    }

    #[test]
    fn a_waited_for_record_is_written_without_gathering() {
        let dir = tempfile::tempdir().unwrap();
        let (pipeline, counting, runtime) = counted(&dir);
        runtime.block_on(async {
            let started = tokio::time::Instant::now();
            pipeline.written(event(1)).await.expect("written");
            // The paused clock moved only if the writer waited on its gathering timer.
            assert_eq!(started.elapsed(), Duration::ZERO);
            pipeline.send(event(2));
            pipeline.settled().await;
            assert_eq!(
                started.elapsed(),
                Duration::ZERO,
                "settled ends the gathering"
            );
        });
        assert_eq!(commits(&counting), 2);
    }

    #[test]
    fn an_outcome_alone_is_written_after_the_gathering() {
        let dir = tempfile::tempdir().unwrap();
        let (pipeline, counting, runtime) = counted(&dir);
        let written = runtime.block_on(async {
            pipeline.send(event(1));
            // Never `settled`, which would end the gathering: the timer must.
            for _ in 0..10_000 {
                tokio::time::sleep(GATHER).await;
                if !pipeline.log().records().await.expect("records").is_empty() {
                    return true;
                }
            }
            false
        });
        assert!(
            written,
            "an outcome nobody waits for is written all the same"
        );
        assert_eq!(commits(&counting), 1);
    }
}
