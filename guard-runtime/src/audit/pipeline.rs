//! Events from the steps of a guarded call that run outside any store transaction (a
//! `#[destructive]` tool's outcomes, exposure refusals) go to the log through one writer
//! task per guard, in the order they happened. The writer appends whatever has queued up in
//! one transaction, so one durable commit serves many calls and the writer keeps up with
//! them. [`Pipeline::written`] waits for one event's commit (a record that must be in the log
//! before an effect runs); [`Pipeline::settled`] waits until everything sent so far is
//! written, and what this process queued with its calls is sequenced (a demo, a test, a
//! shutdown). [`Pipeline::settled_blocking`] does the same from synchronous code: the
//! guard's `Drop`, so a server that stops normally leaves its last records in the log
//! without its author asking.
//!
//! An event nobody waits for (an outcome, after the model has its answer) waits up to
//! [`GATHER`] for company: the next call's confirmation, which must be written before its
//! effect, then takes it along in its own commit instead of the log committing twice.
//!
//! The same groups spend 2026-07-28 request states ([`Pipeline::spent`]): a retry's state is
//! spent before its answer is read, so the spend is waited for, and it commits with whatever
//! else is queued (the previous calls' outcomes, other retries' spends) instead of alone.

use std::{
    sync::{
        Arc, OnceLock,
        atomic::{AtomicUsize, Ordering},
        mpsc as sync_mpsc,
    },
    time::Duration,
};

use tokio::sync::{mpsc, oneshot};

use super::{AuditLog, Event};
use crate::store::{
    now_ms,
    purge::{self, Expiring},
    spent::Spend,
};

/// The most events one commit takes: a bound on how long the first of them waits.
const GROUP: usize = 256;

/// How long a group of events nobody waits for gathers more before it is written. A
/// waiter (`written`, `settled`) ends the gathering at once.
pub(crate) const GATHER: Duration = Duration::from_millis(5);

/// How often, at most, the writer purges spent states that expired: the purge is
/// housekeeping (a spent state's row only has to outlive the state), not a step of any call.
const PURGE_EVERY: Duration = Duration::from_millis(100);

/// Whether an event reached the log; the error as text (the writer logs it in full).
pub(crate) type Written = Result<(), String>;

/// Whether a state was spent now (false: it already was); the error as text.
pub(crate) type Spent = Result<bool, String>;

enum Message {
    Event(Box<Event>, Option<oneshot::Sender<Written>>),
    /// A spend, and the event its commit writes only if the spend was fresh.
    Spend(Spend, Option<Box<Event>>, oneshot::Sender<Spent>),
    Settled(Settler),
}

/// Who waits for a settle: a task, or synchronous code blocked on it.
enum Settler {
    Task(oneshot::Sender<()>),
    Blocked(sync_mpsc::Sender<()>),
}

impl Settler {
    fn done(self) {
        match self {
            Settler::Task(done) => drop(done.send(())),
            Settler::Blocked(done) => drop(done.send(())),
        }
    }
}

/// The writer of one guard's out-of-transaction events.
pub(crate) struct Pipeline {
    log: AuditLog,
    sender: OnceLock<mpsc::UnboundedSender<Message>>,
    /// Events and spends sent to the writer and not yet written (or failed).
    unwritten: Arc<AtomicUsize>,
    /// How long the writer gathers a group nobody waits for ([`GATHER`]; tests set it).
    gathering: Duration,
}

impl Pipeline {
    /// The writer of a server's events into `log`, whose queued entries (on PostgreSQL) this
    /// process then keeps sequenced while the log is open, from now if a runtime is running,
    /// else from the first event.
    pub(crate) fn new(log: AuditLog) -> Self {
        log.keep_sequenced();
        Self {
            log,
            sender: OnceLock::new(),
            unwritten: Arc::default(),
            gathering: GATHER,
        }
    }

    /// This pipeline gathering for `gathering` instead of [`GATHER`]: a test that must tell
    /// "waited for company" from "wrote at once" makes the wait an hour.
    #[cfg(test)]
    fn gathering(mut self, gathering: Duration) -> Self {
        self.gathering = gathering;
        self
    }

    pub(crate) fn log(&self) -> &AuditLog {
        &self.log
    }

    /// The writer's inbox, starting the writer on first use: on a thread of its own, with a
    /// runtime of its own, so the records it holds are written whatever becomes of the
    /// server's runtime (a current-thread runtime blocked in a `Drop`, or shutting down).
    fn sender(&self) -> Option<&mpsc::UnboundedSender<Message>> {
        if let Some(sender) = self.sender.get() {
            return Some(sender);
        }
        tokio::runtime::Handle::try_current().ok()?;
        self.log.keep_sequenced();
        Some(self.sender.get_or_init(|| {
            let (sender, mut inbox) = mpsc::unbounded_channel();
            let log = self.log.clone();
            let unwritten = Arc::clone(&self.unwritten);
            let gathering = self.gathering;
            let writer = async move {
                let mut group = Vec::with_capacity(GROUP);
                let mut purges = Purges::default();
                while inbox.recv_many(&mut group, GROUP).await > 0 {
                    gather(&mut inbox, &mut group, gathering).await;
                    if group.iter().any(|m| matches!(m, Message::Spend(..))) {
                        purges.start(&log);
                    }
                    let sent = group.iter().filter(|m| !matches!(m, Message::Settled(_)));
                    let sent = sent.count();
                    let settlers = write(&log, group.drain(..)).await;
                    unwritten.fetch_sub(sent, Ordering::AcqRel);
                    if !settlers.is_empty() {
                        sequence_own(&log).await;
                        settlers.into_iter().for_each(Settler::done);
                    }
                }
            };
            let thread = std::thread::Builder::new().name("guard-audit-writer".into());
            let started = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .and_then(|runtime| thread.spawn(move || runtime.block_on(writer)));
            if let Err(error) = started {
                // The inbox is gone with the writer: every record is refused, and logged.
                tracing::error!(target: "guard::audit", %error, "could not start the audit writer");
            }
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

    /// Spends a request state (see [`Spend`]) and waits until the transaction holding the
    /// spend committed: `Ok(false)` if the state had already been spent.
    pub(crate) async fn spent(&self, spend: Spend) -> Spent {
        self.spend_with(spend, None).await
    }

    /// Spends a request state and, in the same commit, writes `event` if the spend was
    /// fresh: an accept's confirmation, which a replay must neither write nor pass.
    pub(crate) async fn written_spending(&self, event: Event, spend: Spend) -> Spent {
        self.spend_with(spend, Some(Box::new(event))).await
    }

    async fn spend_with(&self, spend: Spend, event: Option<Box<Event>>) -> Spent {
        let (done, wait) = oneshot::channel();
        let sent = self.sender().is_some_and(|s| {
            self.unwritten.fetch_add(1, Ordering::AcqRel);
            let sent = s.send(Message::Spend(spend, event, done)).is_ok();
            if !sent {
                self.unwritten.fetch_sub(1, Ordering::AcqRel);
            }
            sent
        });
        if !sent {
            return Err("no async runtime to record the used request state on".to_owned());
        }
        wait.await.unwrap_or_else(|_| {
            Err("the audit writer stopped before the used request state was recorded".to_owned())
        })
    }

    fn queue(&self, event: Event, done: Option<oneshot::Sender<Written>>) {
        let (refused, done) = match self.sender() {
            Some(sender) => {
                self.unwritten.fetch_add(1, Ordering::AcqRel);
                match sender.send(Message::Event(Box::new(event), done)) {
                    Ok(()) => return,
                    Err(mpsc::error::SendError(Message::Event(event, done))) => {
                        self.unwritten.fetch_sub(1, Ordering::AcqRel);
                        (*event, done)
                    }
                    Err(_) => return,
                }
            }
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

    /// Waits until every event sent before this call is written (or failed, logged), and
    /// every entry this process queued with its calls is sequenced.
    pub(crate) async fn settled(&self) {
        let (done, wait) = oneshot::channel();
        let sent = self
            .sender()
            .is_some_and(|s| s.send(Message::Settled(Settler::Task(done))).is_ok());
        if sent {
            // The writer sequences before it answers.
            let _ = wait.await;
        } else {
            sequence_own(&self.log).await;
        }
    }

    /// [`settled`](Self::settled), from synchronous code, waiting at most `limit`: whether
    /// it settled in time (a failure is logged). The writer runs on its own thread, so this
    /// may block any thread, a current-thread runtime's included (on PostgreSQL, whose
    /// connections may run on that runtime, the limit then bounds the wait).
    pub(crate) fn settled_blocking(&self, limit: Duration) -> bool {
        // Nothing queued: nothing to wait for.
        if self.unwritten.load(Ordering::Acquire) == 0 && !self.log.has_own_queued() {
            return true;
        }
        let Some(sender) = self.sender.get() else {
            return true;
        };
        let (done, wait) = sync_mpsc::channel();
        if sender
            .send(Message::Settled(Settler::Blocked(done)))
            .is_err()
        {
            return true;
        }
        let settled = crate::blocking::wait(&wait, limit, crate::blocking::Runs::Elsewhere);
        if !settled {
            tracing::warn!(target: "guard::audit", "the audit records still queued when the guard was dropped were not committed within {limit:?} and may be lost; await Guard::audit_settled before the runtime stops");
        }
        settled
    }
}

/// Sequences what this process queued with its calls, logging a failure.
async fn sequence_own(log: &AuditLog) {
    if let Err(error) = log.sequence_own().await {
        tracing::error!(target: "guard::audit", %error, "could not sequence this process's queued audit entries; another server of the store will");
    }
}

/// Adds to `group` what arrives within `gathering` ([`GATHER`]), until someone waits on the
/// group or it is full.
async fn gather(
    inbox: &mut mpsc::UnboundedReceiver<Message>,
    group: &mut Vec<Message>,
    gathering: Duration,
) {
    let until = tokio::time::Instant::now() + gathering;
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
        matches!(
            self,
            Message::Event(_, Some(_)) | Message::Spend(..) | Message::Settled(_)
        )
    }
}

/// The writer's purges of expired spent states: at most one under way, at most one per
/// [`PURGE_EVERY`], each in a transaction of its own beside the groups.
#[derive(Default)]
struct Purges {
    last: Option<(tokio::time::Instant, tokio::task::JoinHandle<()>)>,
}

impl Purges {
    fn start(&mut self, log: &AuditLog) {
        let now = tokio::time::Instant::now();
        if let Some((at, running)) = &self.last
            && (now < *at + PURGE_EVERY || !running.is_finished())
        {
            return;
        }
        let store = log.store().clone();
        let running = tokio::spawn(async move {
            purge::expired_or_log(store.as_ref(), Expiring::RedeemedStates, now_ms()).await;
        });
        self.last = Some((now, running));
    }
}

/// Appends one group's events in one transaction, in order, then answers its waiters; the
/// settles it held are returned, to be answered once this process's entries are
/// sequenced. A group that cannot commit is retried event by event, so a bad event loses
/// only itself.
async fn write(log: &AuditLog, group: impl Iterator<Item = Message>) -> Vec<Settler> {
    let mut events = Vec::new();
    let mut waiting = Vec::new();
    let (mut spends, mut spenders) = (Vec::new(), Vec::new());
    let mut settled = Vec::new();
    for message in group {
        match message {
            Message::Event(event, done) => {
                events.push(*event);
                waiting.push(done);
            }
            Message::Spend(spend, event, done) => {
                spends.push((spend, event.map(|e| *e)));
                spenders.push(done);
            }
            // Everything queued before it is in this group, so written below.
            Message::Settled(done) => settled.push(done),
        }
    }
    let (results, spent): (Vec<Written>, Vec<Spent>) = match log.write_group(&events, &spends).await
    {
        Ok(fresh) => (
            vec![Ok(()); events.len()],
            fresh.into_iter().map(Ok).collect(),
        ),
        Err(_) if events.len() + spends.len() > 1 => alone(log, &events, &spends).await,
        Err(error) => (
            vec![Err(error.to_string()); events.len()],
            vec![Err(error.to_string()); spends.len()],
        ),
    };
    for (done, spent) in spenders.into_iter().zip(spent) {
        if let Err(error) = &spent {
            tracing::error!(%error, "could not record a used request state");
        }
        let _ = done.send(spent);
    }
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
    settled
}

/// A group that could not commit, written message by message, so a bad one loses only itself.
async fn alone(
    log: &AuditLog,
    events: &[Event],
    spends: &[(Spend, Option<Event>)],
) -> (Vec<Written>, Vec<Spent>) {
    let mut written = Vec::with_capacity(events.len());
    for event in events {
        written.push(
            log.append(None, event)
                .await
                .map(drop)
                .map_err(|e| e.to_string()),
        );
    }
    let mut spent = Vec::with_capacity(spends.len());
    for spend in spends {
        spent.push(
            log.write_group(&[], std::slice::from_ref(spend))
                .await
                .map(|fresh| fresh.first().copied().unwrap_or(false))
                .map_err(|e| e.to_string()),
        );
    }
    (written, spent)
}

#[cfg(all(test, feature = "sqlite"))]
mod recording;

#[cfg(all(test, feature = "sqlite"))]
mod tests;
