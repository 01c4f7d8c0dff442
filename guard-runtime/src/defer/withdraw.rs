//! Withdrawing one deferred call: under the call's row lock, re-read it, check owner and
//! status, and end it `WITHDRAWN` with the audit record, so a runner that claims it after
//! finds nothing to run, and one that claimed it first makes the withdrawal say it ran.

use serde_json::Value;

use super::{Deferred, DeferredCalls, Status, read_locked};
use crate::{audit::Event, error::Code, outcome::Outcome, person::Person, store::StoreError};

/// What became of a withdrawal.
#[derive(Debug, Clone, PartialEq)]
pub enum Withdrawal {
    /// The call was scheduled and is now withdrawn: it never runs.
    Withdrawn {
        /// The call.
        call: Deferred,
    },
    /// The call was withdrawn before: nothing changed, and it still never runs.
    AlreadyWithdrawn {
        /// The call.
        call: Deferred,
        /// When it was withdrawn (ms since the Unix epoch).
        at: i64,
    },
    /// The call already ran (or came due and was refused): too late to withdraw.
    AlreadyRan {
        /// The call.
        call: Deferred,
        /// How it ended: `RAN`, `STATE_CHANGED` or `FAILED`.
        status: Status,
        /// When (ms since the Unix epoch).
        at: i64,
        /// The handler's result for `RAN`, the reason for the others.
        result: Value,
    },
    /// No call of this owner has this id (anyone else's is not found either).
    NotFound,
}

impl Withdrawal {
    /// How the audit log and the model's tag spell this ending.
    pub fn outcome(&self) -> Outcome {
        match self {
            Withdrawal::Withdrawn { .. } => Outcome::Withdrawn,
            Withdrawal::AlreadyWithdrawn { .. } => Outcome::AlreadyWithdrawn,
            Withdrawal::AlreadyRan { .. } => Outcome::Refused(Code::AlreadyRan),
            Withdrawal::NotFound => Outcome::Refused(Code::OperationNotFound),
        }
    }
}

impl DeferredCalls {
    /// Withdraws `owner`'s call `operation_id`: once it is withdrawn no runner runs it. A
    /// runner holding the call makes this wait, then answer that it ran. Every ending is
    /// audited under `trace_id`, in the transaction that withdraws the call if it does.
    pub(crate) async fn withdraw(
        &self,
        owner: &Person,
        operation_id: &str,
        trace_id: &str,
    ) -> Result<Withdrawal, StoreError> {
        let mut tx = self.store.begin().await?;
        let stored = read_locked(&mut tx, operation_id, false)
            .await?
            .filter(|stored| stored.owned_by(owner));
        let answer = match stored {
            None => Withdrawal::NotFound,
            Some(stored) => match (stored.status, stored.closed_at) {
                (Status::Scheduled, _) => {
                    let now = crate::store::ledger::clock::now(&mut tx).await?;
                    let closed = tx
                        .execute(
                            "UPDATE guard_deferred SET status = 'WITHDRAWN', closed_at = $2
                             WHERE operation_id = $1 AND status = 'SCHEDULED'",
                            &[operation_id.into(), now.into()],
                        )
                        .await?;
                    if closed != 1 {
                        return Err(StoreError::Other(format!(
                            "deferred call {operation_id} ended under its own lock"
                        )));
                    }
                    // A deferred confirm keeps its call under its intent's id: the intent
                    // closes with it, so its target is free to be prepared again.
                    tx.execute(
                        "UPDATE guard_operations SET status = 'REJECTED'
                         WHERE operation_id = $1 AND status = 'PREPARED'",
                        &[operation_id.into()],
                    )
                    .await?;
                    Withdrawal::Withdrawn { call: stored.call }
                }
                (Status::Withdrawn, Some(at)) => Withdrawal::AlreadyWithdrawn {
                    call: stored.call,
                    at,
                },
                (status, Some(at)) => Withdrawal::AlreadyRan {
                    call: stored.call,
                    status,
                    at,
                    result: stored.result.unwrap_or(Value::Null),
                },
                (status, None) => {
                    return Err(StoreError::Other(format!(
                        "deferred call {operation_id} is {status:?} without its closing time"
                    )));
                }
            },
        };
        let record = record(&answer, owner, operation_id, trace_id);
        self.commit(tx, Vec::new(), &record).await?;
        Ok(answer)
    }
}

/// The withdrawal's audit record: who asked, which call, and how it ended.
fn record(answer: &Withdrawal, owner: &Person, operation_id: &str, trace_id: &str) -> Event {
    let mut event = Event::new(super::TOOL, answer.outcome(), trace_id)
        .identity(owner.tenant(), owner.user())
        .field("operation_id", operation_id);
    let call = match answer {
        Withdrawal::Withdrawn { call } | Withdrawal::AlreadyWithdrawn { call, .. } => Some(call),
        Withdrawal::AlreadyRan { call, status, .. } => {
            event = event.field("status", status.as_str());
            Some(call)
        }
        Withdrawal::NotFound => None,
    };
    if let Some(call) = call {
        event = event
            .field("withdraws", call.tool.as_str())
            .field("target", call.target.as_str());
    }
    event
}
