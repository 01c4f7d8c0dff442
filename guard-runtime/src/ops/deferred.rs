//! Deferred confirms: `#[confirm(op = ..., recheck = ..., defer = "2m")]`, or a wait the
//! deployment sets ([`Operations::defer_confirm`](super::Operations::defer_confirm)).
//!
//! The confirm does steps 1–5 as any confirm does (lock, owner, repeat, expiry, the author's
//! re-check), then, in place of the effect, stores the confirmed operation in
//! `guard_deferred` under the intent's own `operation_id`, in the transaction that writes
//! its `scheduled` audit record, and answers when it runs and how to withdraw it. A confirm
//! repeated before then answers the same schedule.
//!
//! When it is due, a runner claims the row (`FOR UPDATE SKIP LOCKED` on PostgreSQL) and,
//! in the claiming transaction, the run locks the intent again, checks that it is still the
//! one the human confirmed (owner, op, `PREPARED`, the payload's digest), re-runs the
//! author's re-check (a changed target is `STATE_CHANGED`: the intent closes `REJECTED` and
//! nothing runs), then runs the author's effect with the [`Approved`] proof, stores its
//! result and `SUBMITTED`; the runner then ends the call and writes its audit record in the
//! same commit. An effect that refuses is rolled back to before the re-check (a savepoint),
//! so the call still ends, recorded, with nothing of the effect in the store.

use std::time::Duration;

use rmcp::model::CallToolResponse;
use serde::{Serialize, de::DeserializeOwned};
use serde_json::{Value, json};

use super::{
    Configured,
    call::{Caller, ConfirmSpec},
    confirm::{Approved, Gate, Gated, Locked, Recheck, set_status, submitted},
    intent::{Deferral, Status, Stored},
    rfc3339,
};
use crate::{
    canonical::{canonical_payload, sha256_hex},
    defer::{self, Due, Ending},
    error::{Code, ToolError},
    identity::Identity,
    outcome::Outcome,
    store::{
        StoreError, Tx,
        lock::{self, Lock},
        now_ms,
    },
};

/// The savepoint a due confirm's re-check and effect run after: a refusal rolls back to it.
const SAVEPOINT: &str = "guard_deferred_confirm";

impl Gate<'_> {
    /// A confirm of an intent whose confirm was deferred: a scheduled one answers its
    /// schedule again, a withdrawn or failed one is refused; `None` when the intent's own
    /// status answers (it ran: `SUBMITTED`; its target changed: `REJECTED`).
    pub(super) fn deferred(&self, intent: &Stored, deferral: &Deferral) -> Option<Gated> {
        let (id, prepare) = (self.id, self.spec.prepare_tool);
        let at = deferral.closed_at.map(rfc3339).unwrap_or_default();
        match deferral.status {
            defer::Status::Scheduled if intent.status == Status::Prepared => {
                let result = scheduled_answer(self.caller, intent, deferral.due_at, true);
                Some(Gated::Done(Outcome::Scheduled, Box::new(result)))
            }
            defer::Status::Withdrawn => Some(self.refused(ToolError::new(
                Code::InvalidState,
                format!(
                    "Operation {id} was withdrawn at {at}, before it ran; nothing was done. Call {prepare} again if the user still wants it."
                ),
            ))),
            defer::Status::Failed => Some(self.refused(ToolError::new(
                Code::InvalidState,
                format!(
                    "Operation {id} came due at {at} and could not run ({}); nothing was done. Call {prepare} again if the user still wants it.",
                    deferral.result.as_deref().map(unquote).unwrap_or_default()
                ),
            ))),
            _ => None,
        }
    }
}

/// A stored reason, without the JSON string's quotes.
fn unquote(text: &str) -> String {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::String(reason)) => reason,
        _ => text.to_owned(),
    }
}

/// The answer to a confirm that scheduled `intent` (or found it scheduled, `again`).
fn scheduled_answer(
    caller: &Caller,
    intent: &Stored,
    due_at: i64,
    again: bool,
) -> CallToolResponse {
    let scheduled = defer::Scheduled {
        operation_id: intent.operation_id.clone(),
        due_at,
    };
    let mut body = serde_json::Map::new();
    body.insert("op".into(), intent.op.clone().into());
    body.insert("tool".into(), caller.tool.into());
    body.insert("target".into(), intent.target.clone().into());
    body.insert("already_scheduled".into(), again.into());
    scheduled
        .into_result(caller.tool, &intent.target, body, &caller.trace_id, true)
        .into()
}

/// The wait that holds for the confirm `spec` describes on this server, if any.
pub(crate) fn wait(guard: &dyn Configured, spec: &ConfirmSpec) -> Option<Duration> {
    guard.operations()?.defer_for(spec.tool, spec.defer)
}

impl<P> Approved<P> {
    /// In place of steps 6–8 of a deferred confirm: store the confirmed operation to run
    /// `after` from now, with its audit record, and answer when it runs and how to withdraw
    /// it. The proof goes no further: the effect runs only from a runner's claim.
    pub(crate) async fn schedule(self, after: Duration) -> CallToolResponse {
        let Locked {
            caller,
            spec,
            mut tx,
            intent,
            ..
        } = self.0;
        let id = intent.operation_id.as_str();
        let stored = async {
            let (arguments, arguments_sha256) = canonical_payload(&json!({"operation_id": id}))
                .map_err(|e| {
                    StoreError::Other(format!("an operation id has no canonical JSON: {e}"))
                })?;
            let call = defer::NewCall {
                operation_id: id.to_owned(),
                owner: (&caller.identity.tenant, &caller.identity.user),
                tool: spec.tool,
                target: &intent.target,
                arguments,
                arguments_sha256: &arguments_sha256,
                form: "{}".to_owned(),
                fingerprint: &intent.payload_sha256,
                trace_id: &caller.trace_id,
            };
            let (scheduled, insert) = defer::new_call(&mut tx, call, after).await?;
            let record = caller
                .record(Outcome::Scheduled, Some(id), Some(&intent.target), None)
                .field("due_at", rfc3339(scheduled.due_at))
                .field("payload_sha256", intent.payload_sha256.as_str());
            caller.commit_audited(tx, vec![insert], &record).await?;
            Ok::<_, StoreError>(scheduled)
        }
        .await;
        match stored {
            Ok(scheduled) => scheduled_answer(&caller, &intent, scheduled.due_at, false),
            Err(e) => {
                *super::confirm::result_unknown(&caller, id, Some(&intent.target), spec, &e).await
            }
        }
    }
}

/// The run of a due deferred confirm, up to the author's re-check: the runner's claiming
/// transaction, the intent locked in it and checked to be the one the human confirmed. Any
/// other finding ends the run (recorded by the runner) and nothing runs.
pub(crate) async fn run_due_confirm<P: DeserializeOwned>(
    guard: &dyn Configured,
    spec: &'static ConfirmSpec,
    due: Due,
) -> Result<Locked<P>, Ending> {
    if due.call.tool != spec.tool {
        return Err(Ending::Failed {
            reason: format!(
                "Nothing ran: the deferred confirm of {} reached the run of {}.",
                due.call.tool, spec.tool
            ),
        });
    }
    let Some(ops) = guard.operations().cloned() else {
        return Err(Ending::NotHere {
            reason: "this server's guard has no operations".into(),
        });
    };
    let Some(mut tx) = due.claim.take() else {
        return Err(Ending::NotHere {
            reason: "the call's claim was already taken".into(),
        });
    };
    match checked(spec, &due, &mut tx).await {
        Ok(Ok((intent, payload))) => {
            let (tenant, user) = due.owner.clone();
            let caller = Caller {
                ops,
                identity: Identity::new(tenant.clone(), user.clone(), Vec::<String>::new()),
                spelled: (tenant, user),
                trace_id: due.trace_id.clone(),
                tool: spec.tool,
                op: spec.op,
            };
            Ok(Locked {
                caller,
                spec,
                tx,
                intent,
                payload,
                claim: Some(due.claim),
            })
        }
        Ok(Err(ending)) => {
            due.claim.give_back(tx);
            Err(ending)
        }
        Err(error) => {
            // The claim's transaction is dropped (rolled back): the call stays due.
            tracing::error!(operation_id = %due.call.operation_id, tool = spec.tool, %error, "the operation store failed in a deferred confirm's run; it stays due");
            Err(Ending::NotHere {
                reason: error.to_string(),
            })
        }
    }
}

/// The intent of `due`, locked in `tx` and checked, with its payload; or how the run ends.
async fn checked<P: DeserializeOwned>(
    spec: &'static ConfirmSpec,
    due: &Due,
    tx: &mut Tx,
) -> Result<Result<(Stored, P), Ending>, StoreError> {
    let id = due.call.operation_id.as_str();
    let owner = (due.owner.0.as_str(), due.owner.1.as_str());
    lock::hold(
        tx,
        Lock::Target {
            tenant: owner.0,
            op: spec.op,
            target: &due.call.target,
        },
    )
    .await?;
    let failed = |why: String| Ending::Failed {
        reason: format!(
            "Nothing ran: {why}. Prepare the operation again if the user still wants it."
        ),
    };
    let intent = match Stored::read(tx, id, owner, true).await? {
        Some(intent) if intent.op == spec.op && intent.target == due.call.target => intent,
        _ => {
            return Ok(Err(failed(format!(
                "operation {id} is not the one that was confirmed"
            ))));
        }
    };
    if intent.status != Status::Prepared {
        return Ok(Err(failed(format!(
            "operation {id} is {} and no longer waits for its effect",
            intent.status.as_str()
        ))));
    }
    if intent.payload_sha256 != due.fingerprint
        || intent.payload_sha256 != sha256_hex(intent.payload.as_bytes())
    {
        return Ok(Err(failed(format!(
            "operation {id} no longer holds what the user confirmed"
        ))));
    }
    let payload = match serde_json::from_str::<P>(&intent.payload) {
        Ok(payload) => payload,
        Err(e) => {
            return Ok(Err(failed(format!(
                "the payload of operation {id} no longer reads as the confirm's ({e})"
            ))));
        }
    };
    tx.execute(&format!("SAVEPOINT {SAVEPOINT}"), &[]).await?;
    Ok(Ok((intent, payload)))
}

impl<P> Locked<P> {
    /// The re-check's verdict in a due run: go on with the proof, or end the run. A changed
    /// target closes the intent `REJECTED` in the claim's transaction.
    pub(crate) async fn rechecked_due(
        self,
        verdict: Result<Recheck, ToolError>,
    ) -> Result<Approved<P>, Ending> {
        let ending = match verdict {
            Ok(Recheck::Unchanged) => return Ok(Approved(self)),
            Ok(Recheck::Changed(what)) => Ending::StateChanged {
                reason: format!(
                    "{what}. Nothing was done: the target changed after the user confirmed, so operation {} is closed.",
                    self.intent.operation_id
                ),
            },
            Err(error) => Ending::Failed {
                reason: format!(
                    "Nothing ran: the re-check of operation {} failed: [{}] {}",
                    self.intent.operation_id,
                    error.code(),
                    error.message()
                ),
            },
        };
        Err(self.end(ending).await)
    }

    /// Rolls the effect back to the savepoint, closes the intent `REJECTED` for a changed
    /// target, and hands the transaction back for the runner to record `ending` in.
    async fn end(mut self, ending: Ending) -> Ending {
        let id = self.intent.operation_id.clone();
        let undone = async {
            self.tx
                .execute(&format!("ROLLBACK TO SAVEPOINT {SAVEPOINT}"), &[])
                .await?;
            if matches!(ending, Ending::StateChanged { .. }) {
                self.tx
                    .pipeline(&[set_status(&id, Status::Rejected)])
                    .await?;
            }
            Ok::<_, StoreError>(())
        }
        .await;
        self.hand_back(undone, ending)
    }

    /// Gives the transaction back to the runner's claim, unless the store failed (then it
    /// rolls back, and the call stays due).
    fn hand_back(self, written: Result<(), StoreError>, ending: Ending) -> Ending {
        let Locked {
            tx, claim, intent, ..
        } = self;
        match (written, claim) {
            (Ok(()), Some(claim)) => {
                claim.give_back(tx);
                ending
            }
            (Err(error), _) => {
                tracing::error!(operation_id = %intent.operation_id, %error, "the operation store failed in a deferred confirm's run; it stays due");
                Ending::NotHere {
                    reason: error.to_string(),
                }
            }
            (Ok(()), None) => Ending::NotHere {
                reason: "a confirm's run had no claim".into(),
            },
        }
    }
}

impl<P> Approved<P> {
    /// Steps 7–8 of a due deferred confirm: the effect's row, its result and `SUBMITTED`,
    /// written in the claim's transaction, which the runner commits with the call's ending
    /// and its audit record; a refused effect is rolled back and the call ends without it.
    #[doc(hidden)]
    pub async fn finish_due<R: Serialize>(self, effect: Result<R, ToolError>) -> Ending {
        let result = match effect.and_then(|r| serde_json::to_value(r).map_err(ToolError::internal))
        {
            Ok(result) => result,
            Err(refusal) => {
                let ending = if refusal.code() == Code::StateChanged {
                    Ending::StateChanged {
                        reason: format!(
                            "{} Nothing was done, and operation {} is closed.",
                            refusal.message().trim_end(),
                            self.0.intent.operation_id
                        ),
                    }
                } else {
                    Ending::Failed {
                        reason: format!(
                            "Nothing was done: the effect refused: [{}] {}",
                            refusal.code(),
                            refusal.message()
                        ),
                    }
                };
                return self.0.end(ending).await;
            }
        };
        let mut locked = self.0;
        let id = locked.intent.operation_id.clone();
        let now = now_ms();
        let written = async {
            locked
                .tx
                .execute(
                    "INSERT INTO guard_operation_effects (operation_id, committed_at) VALUES ($1, $2)",
                    &[id.as_str().into(), now.into()],
                )
                .await?;
            let updated = locked
                .tx
                .execute(
                    "UPDATE guard_operations SET status = 'SUBMITTED', result = $2, confirmed_at = $3
                     WHERE operation_id = $1 AND status = 'PREPARED'",
                    &[id.as_str().into(), result.to_string().into(), now.into()],
                )
                .await?;
            if updated != 1 {
                return Err(StoreError::Other(format!(
                    "operation {id} left PREPARED while its deferred confirm held it"
                )));
            }
            Ok(())
        }
        .await;
        let body = submitted(&locked.intent, result, now, false);
        locked.hand_back(
            written,
            Ending::Ran {
                result: body,
                outcome: Outcome::Submitted,
            },
        )
    }
}

/// The state of a deferred confirm for `get_operation_result`, in place of the intent's
/// own while it waits, was withdrawn or could not run.
pub(super) fn lookup(intent: &Stored) -> Option<(&'static str, Outcome, String, Value)> {
    let deferral = intent.deferred.as_ref()?;
    let at = deferral.closed_at.map(rfc3339);
    Some(match deferral.status {
        defer::Status::Scheduled if intent.status == Status::Prepared => (
            "SCHEDULED",
            Outcome::Scheduled,
            format!(
                "Confirmed and scheduled: it runs at {} unless withdrawn with withdraw(operation_id) before then. Do not confirm it again.",
                rfc3339(deferral.due_at)
            ),
            json!({"due_at": rfc3339(deferral.due_at)}),
        ),
        defer::Status::Withdrawn => (
            "WITHDRAWN",
            Outcome::Withdrawn,
            "Withdrawn before it ran: nothing was done. Prepare it again if the user still wants it.".into(),
            json!({"due_at": rfc3339(deferral.due_at), "withdrawn_at": at}),
        ),
        defer::Status::Failed => (
            "FAILED",
            Outcome::DeferredFailed,
            "It came due and could not run: nothing was done. Prepare it again if the user still wants it.".into(),
            json!({
                "due_at": rfc3339(deferral.due_at),
                "ended_at": at,
                "reason": deferral.result.as_deref().map(unquote),
            }),
        ),
        _ => return None,
    })
}
