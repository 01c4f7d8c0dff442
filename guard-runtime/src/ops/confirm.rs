//! The confirm step that `#[confirm]` expands into, all in one store transaction:
//!
//! 1. lock the intent (`BEGIN IMMEDIATE` on SQLite, `SELECT … FOR UPDATE` on PostgreSQL);
//! 2. another tenant's or user's intent is `OPERATION_NOT_FOUND`, exactly like an unknown id;
//! 3. a `SUBMITTED` intent returns its stored result with `already_processed: true`;
//! 4. an expired intent is marked `EXPIRED` and refused;
//! 5. the author's `recheck` hook looks at the target again (a [`Locked`] intent);
//! 6. the author's effect runs with the [`Approved`] proof;
//! 7. the effect's row, the result, the status and the audit record are written;
//! 8. commit.
//!
//! On PostgreSQL step 1 takes the target lock first (as a prepare of the target does), and
//! every read of the intent names its owner, so another owner's id is never waited on.
//!
//! A constraint the effect runs into (the data is not what the preview showed) rolls back
//! and closes the intent as `REJECTED` with `STATE_CHANGED`. A store failure before the
//! effect ran is `UNAVAILABLE`: nothing was done, retry. One after it may or may not have
//! committed, so the model is told the result is unknown and to ask `get_operation_result`
//! before retrying. Every answer is audited, in
//! a transaction of its own when the call's is gone.

use rmcp::{handler::server::wrapper::Parameters, model::CallToolResponse};
use serde::{Serialize, de::DeserializeOwned};
use serde_json::{Value, json};

use super::{
    Configured,
    call::{Caller, ConfirmSpec},
    intent::{OperationRef, Status, Stored},
    rfc3339,
};
use crate::canonical::sha256_hex;
use crate::entry::dispatch::GuardCall;
use crate::store::{
    Dialect, Done, Statement, StoreError, Tx,
    lock::{self, Lock},
    now_ms,
};
use crate::{
    error::{Code, ToolError},
    identity::Identity,
    outcome::{Outcome, Step},
};

/// What the author's `recheck` hook found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recheck {
    /// The target is still as the user saw it: go on.
    Unchanged,
    /// The target changed since the prepare (the order shipped): say what changed. Guard
    /// refuses with `STATE_CHANGED` and closes the intent as `REJECTED`.
    Changed(String),
}

/// A locked, owned, unexpired intent, before its re-check. The `recheck` hook gets this.
pub struct Locked<P> {
    pub(super) caller: Caller,
    pub(super) spec: &'static ConfirmSpec,
    pub(super) tx: Tx,
    pub(super) intent: Stored,
    pub(super) payload: P,
    /// For the run of a deferred confirm: the runner's claim, which gets the transaction
    /// back with the effect in it.
    pub(super) claim: Option<crate::defer::Claim>,
}

/// The proof a confirm handler takes: guard builds it only for a locked intent that belongs
/// to the caller, has not expired, was not submitted before, and passed the re-check, and
/// only inside the transaction the result will commit in.
pub struct Approved<P>(pub(super) Locked<P>);

impl<P> Locked<P> {
    /// Who is calling (the intent's owner).
    pub fn caller(&self) -> &Identity {
        &self.caller.identity
    }

    /// The intent being carried out.
    pub fn operation_id(&self) -> &str {
        &self.intent.operation_id
    }

    /// The target the prepare froze.
    pub fn target(&self) -> &str {
        &self.intent.target
    }

    /// The payload the prepare froze, as the user saw it.
    pub fn payload(&self) -> &P {
        &self.payload
    }

    /// The transaction the effect commits in.
    pub fn tx(&mut self) -> &mut Tx {
        &mut self.tx
    }

    /// The trace id of this call, for the author's logs.
    pub fn trace_id(&self) -> &str {
        &self.caller.trace_id
    }
}

impl<P> std::ops::Deref for Approved<P> {
    type Target = Locked<P>;
    fn deref(&self) -> &Locked<P> {
        &self.0
    }
}

impl<P> std::ops::DerefMut for Approved<P> {
    fn deref_mut(&mut self) -> &mut Locked<P> {
        &mut self.0
    }
}

impl<P: DeserializeOwned> Locked<P> {
    /// Steps 1–4: lock the intent and end the call unless it can go ahead.
    pub(crate) async fn begin(
        guard: &dyn Configured,
        call: &GuardCall,
        spec: &'static ConfirmSpec,
        Parameters(reference): Parameters<OperationRef>,
    ) -> Step<Self> {
        let caller = Caller::start(guard, call, spec.tool, spec.op, spec.scopes).await?;
        let id = caller.operation_id(&reference, spec.prepare_tool).await?;
        let mut tx = match caller.ops.store.begin().await {
            Ok(tx) => tx,
            Err(e) => {
                let answer = caller.unavailable(
                    &e,
                    "The operation was not touched; retry with the same operation_id",
                );
                let record =
                    caller.record(Outcome::Refused(Code::Unavailable), Some(&id), None, None);
                caller.audit_alone(&record).await;
                return Err(answer);
            }
        };
        let gate = Gate {
            caller: &caller,
            spec,
            id: &id,
        };
        match gate.check(&mut tx).await {
            Ok(Gated::Go(intent)) => {
                let payload = match serde_json::from_str::<P>(&intent.payload) {
                    Ok(payload) => payload,
                    Err(e) => {
                        tracing::error!(trace_id = %caller.trace_id, operation_id = %id, error = %e, "a stored payload no longer reads as the confirm's payload type");
                        drop(tx);
                        let refusal = ToolError::internal(e);
                        let record = caller.record(
                            Outcome::Refused(refusal.code()),
                            Some(&id),
                            Some(&intent.target),
                            None,
                        );
                        caller.audit_alone(&record).await;
                        return Err(caller.refuse(refusal, Some(&id)));
                    }
                };
                Ok(Self {
                    caller,
                    spec,
                    tx,
                    intent: *intent,
                    payload,
                    claim: None,
                })
            }
            Ok(Gated::Done(outcome, answer)) => {
                // What the gate marked commits with its audit record.
                let record = caller.record(outcome, Some(&id), None, None);
                match caller.commit_audit(tx, &record).await {
                    Ok(()) => Err(answer),
                    Err(e) => Err(not_carried_out(&caller, &id, None, spec, &e).await),
                }
            }
            Err(e) => {
                drop(tx);
                Err(not_carried_out(&caller, &id, None, spec, &e).await)
            }
        }
    }

    /// Step 5's verdict: go on with the proof, or close the intent as `REJECTED`.
    pub(crate) async fn rechecked(self, verdict: Result<Recheck, ToolError>) -> Step<Approved<P>> {
        match verdict {
            Ok(Recheck::Unchanged) => Ok(Approved(self)),
            Ok(Recheck::Changed(what)) => {
                let Self {
                    caller,
                    spec,
                    tx,
                    intent,
                    ..
                } = self;
                let id = intent.operation_id.as_str();
                let record = caller.record(
                    Outcome::Refused(Code::StateChanged),
                    Some(id),
                    Some(&intent.target),
                    None,
                );
                let closed = caller
                    .commit_audited(tx, vec![set_status(id, Status::Rejected)], &record)
                    .await;
                if let Err(e) = closed {
                    return Err(not_carried_out(&caller, id, Some(&intent.target), spec, &e).await);
                }
                Err(caller.refuse(
                    ToolError::new(
                        Code::StateChanged,
                        format!(
                            "{what}. Nothing was done: the target changed after the user saw the preview, so operation {id} is closed. Call {} again if the user still wants it.",
                            spec.prepare_tool
                        ),
                    ),
                    Some(id),
                ))
            }
            Err(refusal) => Err(self.refused(refusal).await),
        }
    }

    /// The author refused (or failed): roll back, audit, and pass the refusal on. A
    /// `STATE_CHANGED` refusal (the author's, or a constraint the effect ran into: the data
    /// is not what the preview showed) also closes the intent as `REJECTED`, so it is
    /// answered definitely from then on instead of failing the same way on every retry.
    async fn refused(self, refusal: ToolError) -> Box<CallToolResponse> {
        let Self {
            caller,
            spec,
            tx,
            intent,
            ..
        } = self;
        let id = intent.operation_id.as_str();
        let target = Some(intent.target.as_str());
        if refusal.code() == Code::Unavailable {
            drop(tx);
            let error = StoreError::Other(refusal.to_string());
            return result_unknown(&caller, id, target, spec, &error).await;
        }
        if let Err(e) = tx.rollback().await {
            return result_unknown(&caller, id, target, spec, &e).await;
        }
        if refusal.code() == Code::StateChanged {
            return reject_after_rollback(&caller, spec, &intent, refusal).await;
        }
        let record = caller.record(Outcome::Refused(refusal.code()), Some(id), target, None);
        caller.audit_alone(&record).await;
        caller.refuse(refusal, Some(id))
    }
}

/// Closes `intent` as `REJECTED` with its `STATE_CHANGED` audit record, in a transaction of
/// its own after the confirm's rolled back, and answers `STATE_CHANGED`. If another call
/// settled the intent in between, its outcome is the answer.
async fn reject_after_rollback(
    caller: &Caller,
    spec: &'static ConfirmSpec,
    intent: &Stored,
    refusal: ToolError,
) -> Box<CallToolResponse> {
    let id = intent.operation_id.as_str();
    let who = (
        caller.identity.tenant.as_str(),
        caller.identity.user.as_str(),
    );
    let record = caller.record(
        Outcome::Refused(Code::StateChanged),
        Some(id),
        Some(&intent.target),
        None,
    );
    let closed = async {
        let mut tx = caller.ops.store.begin().await?;
        lock::hold(
            &mut tx,
            Lock::Target {
                tenant: who.0,
                op: spec.op,
                target: &intent.target,
            },
        )
        .await?;
        let now = Stored::read(&mut tx, id, who, true).await?;
        if let Some(now) = now.filter(|now| now.status != Status::Prepared) {
            tx.rollback().await?;
            return Ok(Some(now));
        }
        caller
            .commit_audited(tx, vec![set_status(id, Status::Rejected)], &record)
            .await?;
        Ok::<_, StoreError>(None)
    }
    .await;
    let closed_now = match closed {
        Ok(None) => true,
        Ok(Some(settled)) if settled.status == Status::Submitted => {
            let record = caller.record(
                Outcome::AlreadyProcessed,
                Some(id),
                Some(&intent.target),
                None,
            );
            caller.audit_alone(&record).await;
            let result = Stored::json(settled.result.as_deref());
            let at = settled.confirmed_at.unwrap_or_else(now_ms);
            return Box::new(caller.answer(
                Outcome::AlreadyProcessed,
                submitted(&settled, result, at, true),
                id,
            ));
        }
        Ok(Some(_)) => {
            caller.audit_alone(&record).await;
            true
        }
        Err(e) => {
            // Nothing was done, which the answer says; the intent stays PREPARED and the
            // next confirm runs into the same refusal and closes it then.
            tracing::error!(trace_id = %caller.trace_id, operation_id = %id, error = %e, "could not close an intent whose effect was refused");
            caller.audit_alone(&record).await;
            false
        }
    };
    let state = if closed_now {
        format!("Operation {id} is closed and nothing was done")
    } else {
        format!(
            "Nothing was done, and confirming operation {id} again will be refused the same way"
        )
    };
    caller.refuse(
        ToolError::new(
            Code::StateChanged,
            format!(
                "{} {state}; call {} again if the user still wants it.",
                refusal.message().trim_end(),
                spec.prepare_tool
            ),
        ),
        Some(id),
    )
}

impl<P: DeserializeOwned> Approved<P> {
    /// Steps 7–8: store the effect's result with its audit record and commit, or roll all of
    /// it back.
    #[doc(hidden)]
    pub async fn finish<R: Serialize>(
        self,
        effect: Result<R, ToolError>,
    ) -> Result<CallToolResponse, rmcp::ErrorData> {
        let result = match effect.and_then(|r| serde_json::to_value(r).map_err(ToolError::internal))
        {
            Ok(result) => result,
            Err(refusal) => return Ok(*self.0.refused(refusal).await),
        };
        let Locked {
            caller,
            spec,
            tx,
            intent,
            ..
        } = self.0;
        let id = intent.operation_id.as_str();
        let now = now_ms();
        let record = caller
            .record(Outcome::Submitted, Some(id), Some(&intent.target), None)
            .digest("result_sha256", &result);
        let committed = store_result(&caller, tx, id, &result, now, &record).await;
        if let Err(e) = committed {
            return Ok(*result_unknown(&caller, id, Some(&intent.target), spec, &e).await);
        }
        Ok(caller.answer(
            Outcome::Submitted,
            submitted(&intent, result, now, false),
            id,
        ))
    }
}

/// Step 7: the effect's row, the result and the `SUBMITTED` status, with the audit record,
/// committed only if the intent was still `PREPARED` (an effect must not have moved it).
/// One trip to the store: on PostgreSQL the status update feeds the effect's row, whose
/// `operation_id` is then `NULL` (refused by its constraint, so nothing commits) if no
/// `PREPARED` intent was updated; on SQLite the check runs on the store's thread.
async fn store_result(
    caller: &Caller,
    tx: Tx,
    id: &str,
    result: &Value,
    now: i64,
    record: &crate::audit::Event,
) -> Result<(), StoreError> {
    if tx.dialect() == Dialect::Postgres {
        let submit = Statement::execute(
            "WITH submitted AS (
                 UPDATE guard_operations SET status = 'SUBMITTED', result = $2, confirmed_at = $3
                 WHERE operation_id = $1 AND status = 'PREPARED'
                 RETURNING operation_id)
             INSERT INTO guard_operation_effects (operation_id, committed_at)
             VALUES ((SELECT operation_id FROM submitted), $3)",
            vec![id.into(), result.to_string().into(), now.into()],
        );
        return caller
            .commit_audited(tx, vec![submit], record)
            .await
            .map_err(|e| {
                if e.is_constraint() {
                    not_stored(id, e)
                } else {
                    e
                }
            });
    }
    let last = vec![
        Statement::execute(
            "INSERT INTO guard_operation_effects (operation_id, committed_at) VALUES ($1, $2)",
            vec![id.into(), now.into()],
        ),
        Statement::execute(
            "UPDATE guard_operations SET status = 'SUBMITTED', result = $2, confirmed_at = $3
             WHERE operation_id = $1 AND status = 'PREPARED'",
            vec![id.into(), result.to_string().into(), now.into()],
        ),
    ];
    let id = id.to_owned();
    let check = move |done: &[Done]| match done {
        [_, updated] if updated.changed == 1 => Ok(()),
        [_, updated] => Err(not_stored(
            &id,
            format!("{} rows of it updated", updated.changed),
        )),
        _ => Err(StoreError::Other(
            "the store answered the wrong number of statements".into(),
        )),
    };
    caller
        .commit_checked(tx, last, record, Box::new(check))
        .await
}

/// A result that did not commit because its intent was no longer `PREPARED` under the lock.
fn not_stored(id: &str, detail: impl std::fmt::Display) -> StoreError {
    StoreError::Other(format!(
        "operation {id} left PREPARED while locked, so its result was not stored ({detail})"
    ))
}

/// Steps 1–4 over one transaction.
pub(super) struct Gate<'a> {
    pub(super) caller: &'a Caller,
    pub(super) spec: &'static ConfirmSpec,
    pub(super) id: &'a str,
}

pub(super) enum Gated {
    Go(Box<Stored>),
    /// The call ends here with this outcome; the transaction commits what it marked.
    Done(Outcome, Box<CallToolResponse>),
}

impl Gate<'_> {
    async fn check(&self, tx: &mut Tx) -> Result<Gated, StoreError> {
        let (caller, id) = (self.caller, self.id);
        let who = (
            caller.identity.tenant.as_str(),
            caller.identity.user.as_str(),
        );
        let not_found = || {
            Gated::Done(
                Outcome::Refused(Code::OperationNotFound),
                caller.refuse(not_found(id, self.spec.prepare_tool), None),
            )
        };
        // Read unlocked first, and only the caller's own intent goes on to be locked, so
        // another owner's id is never waited on. A pending intent's target is locked before
        // its row, as a prepare of that target locks it before writing: the two take turns,
        // in one order.
        let intent = match Stored::read(tx, id, who, false).await? {
            Some(intent) if intent.op == self.spec.op => intent,
            _ => return Ok(not_found()),
        };
        let intent = if intent.status == Status::Prepared && tx.dialect() == Dialect::Postgres {
            // The target's lock, then the row's, in one trip.
            let target = Lock::Target {
                tenant: who.0,
                op: self.spec.op,
                target: &intent.target,
            };
            let mut locked: Vec<Statement> =
                lock::statement(tx.dialect(), target).into_iter().collect();
            locked.push(Stored::select(tx.dialect(), id, true));
            let done = tx.pipeline(&locked).await?;
            match Stored::owned(done.into_iter().last(), who)? {
                Some(intent) => intent,
                None => return Ok(not_found()),
            }
        } else {
            intent
        };
        if intent.payload_sha256 != sha256_hex(intent.payload.as_bytes()) {
            tracing::error!(trace_id = %caller.trace_id, operation_id = %id, "stored payload does not match its SHA-256; refusing to act on it");
            tx.pipeline(&[set_status(id, Status::Rejected)]).await?;
            return Ok(self.refused(ToolError::new(
                Code::InvalidState,
                format!(
                    "Operation {id} no longer matches what the user confirmed, so it is closed and nothing was done. Call {} again (trace_id {}).",
                    self.spec.prepare_tool, caller.trace_id
                ),
            )));
        }
        if let Some(deferral) = &intent.deferred
            && let Some(done) = self.deferred(&intent, deferral)
        {
            return Ok(done);
        }
        let now = now_ms();
        match intent.status {
            Status::Submitted => {
                let result = Stored::json(intent.result.as_deref());
                let body = submitted(&intent, result, intent.confirmed_at.unwrap_or(now), true);
                return Ok(Gated::Done(
                    Outcome::AlreadyProcessed,
                    Box::new(caller.answer(Outcome::AlreadyProcessed, body, id)),
                ));
            }
            Status::Expired => return Ok(self.expired()),
            Status::Rejected => {
                return Ok(self.refused(ToolError::new(
                    Code::InvalidState,
                    format!(
                        "Operation {id} was closed because its target changed before it was confirmed; nothing was done. Call {} again if the user still wants it.",
                        self.spec.prepare_tool
                    ),
                )));
            }
            Status::Prepared if intent.expires_at <= now => {
                tx.pipeline(&[set_status(id, Status::Expired)]).await?;
                return Ok(self.expired());
            }
            Status::Prepared => {}
        }
        Ok(Gated::Go(Box::new(intent)))
    }

    fn expired(&self) -> Gated {
        self.refused(ToolError::new(
            Code::ConfirmationExpired,
            format!(
                "Operation {} expired before it was confirmed; nothing was done. Call {} again and show the user the new preview.",
                self.id, self.spec.prepare_tool
            ),
        ))
    }

    pub(super) fn refused(&self, error: ToolError) -> Gated {
        Gated::Done(
            Outcome::Refused(error.code()),
            self.caller.refuse(error, Some(self.id)),
        )
    }
}

/// Marks the intent `status`.
pub(super) fn set_status(id: &str, status: Status) -> Statement {
    Statement::execute(
        "UPDATE guard_operations SET status = $2 WHERE operation_id = $1",
        vec![id.into(), status.as_str().into()],
    )
}

pub(crate) fn not_found(id: &str, prepare_tool: &str) -> ToolError {
    ToolError::new(
        Code::OperationNotFound,
        format!(
            "No operation {id} exists for you; nothing was done. Use the operation_id that {prepare_tool} returned to you, or call {prepare_tool} again."
        ),
    )
}

pub(super) fn submitted(
    intent: &Stored,
    result: Value,
    confirmed_at: i64,
    already_processed: bool,
) -> Value {
    json!({
        "operation_id": intent.operation_id,
        "op": intent.op,
        "status": "SUBMITTED",
        "already_processed": already_processed,
        "confirmed_at": rfc3339(confirmed_at),
        "result": result,
    })
}

/// The store failed before the effect ran: nothing was carried out, whatever the store did
/// with the rest (a status it was marking, an audit record), and the intent is as it was.
/// The answer is audited in a transaction of its own; if that fails, the log says so.
async fn not_carried_out(
    caller: &Caller,
    id: &str,
    target: Option<&str>,
    spec: &ConfirmSpec,
    error: &StoreError,
) -> Box<CallToolResponse> {
    tracing::error!(trace_id = %caller.trace_id, tool = spec.tool, operation_id = %id, %error, "operation store failed before a confirm's effect");
    let record = caller.record(Outcome::Refused(Code::Unavailable), Some(id), target, None);
    caller.audit_alone(&record).await;
    caller.refuse(
        ToolError::new(
            Code::Unavailable,
            format!(
                "The operation store failed before operation {id} was carried out, so nothing was done. Call {} again with the same operation_id shortly; ask get_operation_result(operation_id) if in doubt (trace_id {}).",
                spec.tool, caller.trace_id
            ),
        ),
        Some(id),
    )
}

/// The store failed after the effect ran: the commit may or may not have happened. The answer is
/// audited in a transaction of its own (the confirm's is gone); if even that fails, the log
/// says so under the trace id.
pub(super) async fn result_unknown(
    caller: &Caller,
    id: &str,
    target: Option<&str>,
    spec: &ConfirmSpec,
    error: &StoreError,
) -> Box<CallToolResponse> {
    tracing::error!(trace_id = %caller.trace_id, tool = spec.tool, operation_id = %id, %error, "operation store failed during a confirm");
    let record = caller.record(
        Outcome::Refused(Code::ResultUnknown),
        Some(id),
        target,
        None,
    );
    caller.audit_alone(&record).await;
    caller.refuse(
        ToolError::new(
            Code::ResultUnknown,
            format!(
                "Result unknown: the operation store failed while confirming operation {id}, so it may or may not have been submitted. Call get_operation_result(operation_id) before retrying (trace_id {}).",
                caller.trace_id
            ),
        ),
        Some(id),
    )
}
