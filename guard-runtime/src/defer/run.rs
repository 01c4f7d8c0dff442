//! Running due calls: each call is claimed in a transaction of its own (PostgreSQL: `FOR
//! UPDATE SKIP LOCKED`, so a call another runner holds, or a withdrawal holds, is passed
//! over; SQLite: under the store's one writer), its status re-read under the claim, the
//! tool's run (preview, then handler) awaited, and the call ended in the transaction that
//! records how.

use std::{
    future::Future,
    sync::{Arc, Mutex},
    time::Duration,
};

use serde_json::Value;

use super::{Deferred, DeferredCalls, Status, Stored, read_locked};
use crate::{
    audit::Event,
    outcome::Outcome,
    store::{StoreError, Tx},
};

/// The most calls one pass looks at; a larger backlog goes over the next passes.
const BATCH: i64 = 100;

/// A due call, claimed by a runner: what the tool's deferred run reads. Only a runner
/// builds one, after it claimed the call, so only a claimed call reaches a handler.
pub struct Due {
    pub(crate) call: Deferred,
    pub(crate) arguments: Value,
    pub(crate) form: Value,
    pub(crate) fingerprint: String,
    /// This run's trace id.
    pub(crate) trace_id: String,
    /// Whose call it is: tenant and user, canonical.
    pub(crate) owner: (String, String),
    /// The transaction that claimed the call, which records how it ended.
    pub(crate) claim: Claim,
}

/// The transaction holding a claimed call. A run whose effect writes to the store (a
/// deferred confirm) takes it, writes its effect in it, and hands it back, so the effect,
/// the call's ending and its audit record commit together; a run that does not give it
/// back leaves the call due (nothing of it committed).
#[derive(Clone)]
pub(crate) struct Claim(Arc<Mutex<Option<Tx>>>);

impl Claim {
    fn new(tx: Tx) -> Self {
        Self(Arc::new(Mutex::new(Some(tx))))
    }

    /// The claiming transaction, once.
    pub(crate) fn take(&self) -> Option<Tx> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).take()
    }

    /// Hands the transaction back for the runner to record the ending in.
    pub(crate) fn give_back(&self, tx: Tx) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(tx);
    }
}

impl std::fmt::Debug for Due {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Due")
            .field("operation_id", &self.call.operation_id)
            .field("tool", &self.call.tool)
            .finish_non_exhaustive()
    }
}

impl Due {
    /// The call's id.
    pub fn operation_id(&self) -> &str {
        &self.call.operation_id
    }

    /// The tool whose effect it runs.
    pub fn tool(&self) -> &str {
        &self.call.tool
    }
}

/// How the run of a due call ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Ending {
    /// The handler ran: its result as the model would have seen it, and its outcome
    /// (`executed`, `handler_error` or `handler_failed`).
    Ran {
        /// The result, as JSON.
        result: Value,
        /// The handler's outcome.
        outcome: Outcome,
    },
    /// The target is no longer what the human saw: nothing ran.
    StateChanged {
        /// What changed, as the model is told.
        reason: String,
    },
    /// The call could not be run (its arguments or form no longer read, its preview
    /// failed): nothing ran.
    Failed {
        /// Why, as the model is told.
        reason: String,
    },
    /// No tool of this process runs it: it stays due for a process that does.
    NotHere {
        /// Why, for the log.
        reason: String,
    },
}

impl DeferredCalls {
    /// Runs every call the database's clock says is due with `run`, each at most once, and
    /// ends it with its audit record. No caller passes a time: a call runs no earlier than
    /// the time the human was told, however this is driven. A call withdrawn, or run by
    /// another runner, since it was listed is left alone. Returns how many calls this pass
    /// ended.
    pub(crate) async fn run_due<Fut>(
        &self,
        mut run: impl FnMut(Due) -> Fut,
    ) -> Result<u64, StoreError>
    where
        Fut: Future<Output = Ending>,
    {
        let mut tx = self.store.begin().await?;
        let sql = format!(
            "SELECT operation_id FROM guard_deferred WHERE status = 'SCHEDULED' AND due_at <= {}
             ORDER BY due_at LIMIT $1",
            crate::store::ledger::clock::now_sql(tx.dialect())
        );
        let due: Vec<String> = tx
            .query(&sql, &[BATCH.into()])
            .await?
            .iter()
            .map(|row| row.text("operation_id").map(str::to_owned))
            .collect::<Result<_, _>>()?;
        tx.rollback().await?;
        let mut ended = 0;
        for id in due {
            let mut tx = self.store.begin().await?;
            let claimed = read_locked(&mut tx, &id, true).await?;
            // Due by the database's clock, read under the claim.
            let now = crate::store::ledger::clock::now(&mut tx).await?;
            let claimed = claimed.filter(|s| s.status == Status::Scheduled && s.call.due_at <= now);
            let Some(stored) = claimed else {
                tx.rollback().await?;
                continue;
            };
            let Stored {
                call,
                owner,
                arguments,
                form,
                fingerprint,
                trace_id: scheduled_by,
                ..
            } = stored;
            let claim = Claim::new(tx);
            let due = Due {
                call: call.clone(),
                arguments,
                form,
                fingerprint,
                trace_id: crate::trace::new_id(),
                owner: (owner.tenant.clone(), owner.user.clone()),
                claim: claim.clone(),
            };
            let trace_id = due.trace_id.clone();
            let ending = run(due).await;
            let Some(mut tx) = claim.take() else {
                tracing::error!(operation_id = %id, tool = %call.tool, "a deferred run gave up its claim (its store failed); nothing of it committed and the call stays due");
                continue;
            };
            let (status, result, outcome) = match ending {
                Ending::Ran { result, outcome } => (Status::Ran, result, outcome),
                Ending::StateChanged { reason } => (
                    Status::StateChanged,
                    Value::String(reason),
                    Outcome::StateChanged,
                ),
                Ending::Failed { reason } => (
                    Status::Failed,
                    Value::String(reason),
                    Outcome::DeferredFailed,
                ),
                Ending::NotHere { reason } => {
                    tracing::warn!(operation_id = %id, tool = %call.tool, %reason, "a due deferred call was left for a process that has its tool");
                    tx.rollback().await?;
                    continue;
                }
            };
            let text = crate::canonical::canonical_json(&result).map_err(|e| {
                StoreError::Other(format!("a run's result has no canonical JSON: {e}"))
            })?;
            let closed_at = crate::store::ledger::clock::now(&mut tx).await?;
            tx.execute(
                "UPDATE guard_deferred SET status = $2, closed_at = $3, result = $4
                 WHERE operation_id = $1 AND status = 'SCHEDULED'",
                &[
                    id.as_str().into(),
                    status.as_str().into(),
                    closed_at.into(),
                    text.into(),
                ],
            )
            .await?;
            let mut record = Event::new(call.tool.as_str(), outcome, trace_id)
                .identity(&owner.tenant, &owner.user)
                .field("operation_id", id.as_str())
                .field("target", call.target.as_str())
                .field("deferred", status.as_str())
                .field("scheduled_trace_id", scheduled_by);
            record = match &result {
                Value::String(reason) if status != Status::Ran => {
                    record.field("reason", reason.as_str())
                }
                result => record.digest("result_sha256", result),
            };
            self.commit(tx, Vec::new(), &record).await?;
            ended += 1;
        }
        Ok(ended)
    }
}

/// The task a server runs to run due calls in the background; it stops when this is
/// dropped (with the server that holds it), and is gone, with
/// the server clone it held, when the drop returns. Only [`crate::run_deferred`] starts one.
#[derive(Debug)]
pub struct Runner(#[expect(dead_code, reason = "held for its drop")] crate::blocking::Background);

impl DeferredCalls {
    /// Runs [`run_due`](Self::run_due) with `run` every `every` until the returned [`Runner`]
    /// is dropped. Processes sharing a store may each run one: every call still runs once. A
    /// failed pass is logged and the next one retries.
    pub(crate) fn run_in_background<F, Fut>(&self, every: Duration, run: F) -> Runner
    where
        F: Fn(Due) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Ending> + Send + 'static,
    {
        let calls = self.clone();
        Runner(crate::blocking::Background::spawn(async move {
            let mut ticks = tokio::time::interval(every);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticks.tick().await;
                if let Err(error) = calls.run_due(&run).await {
                    tracing::warn!(%error, "running due deferred calls failed; the next pass tries again");
                }
            }
        }))
    }
}
