//! The prepare step that `#[prepare]` expands into: identify, check scopes and rate, let the
//! author check the request inside a store transaction, then store the intent and its audit
//! record together. No effect runs here.

use rmcp::model::CallToolResponse;
use serde::Serialize;
use serde_json::json;

use super::{
    Configured,
    call::{Caller, PrepareSpec},
    intent::Intent,
    rate::Rate,
    rfc3339,
};
use crate::canonical::canonical_payload;
use crate::entry::dispatch::GuardCall;
use crate::store::{
    Statement, StoreError, Tx,
    lock::{self, Lock},
    now_ms,
};
use crate::{
    error::{Code, ToolError},
    identity::Identity,
    outcome::{Outcome, Step},
};

/// A prepare in progress, handed to the author's handler: the trusted caller and a store
/// transaction in which to read what the check needs.
pub struct Prepare {
    caller: Caller,
    spec: &'static PrepareSpec,
    /// The rate that holds for this tool here (see [`Operations::rate_limit`]).
    ///
    /// [`Operations::rate_limit`]: super::Operations::rate_limit
    rate: Option<Rate>,
    tx: Tx,
    now: i64,
    /// The target this prepare holds (see [`Prepare::lock_target`]).
    locked: Option<String>,
}

impl Prepare {
    /// Who is calling, from the identity provider.
    pub fn caller(&self) -> &Identity {
        &self.caller.identity
    }

    /// The transaction the intent will be stored in.
    pub fn tx(&mut self) -> &mut Tx {
        &mut self.tx
    }

    /// The trace id of this call, for the author's logs.
    pub fn trace_id(&self) -> &str {
        &self.caller.trace_id
    }

    /// Holds `target` (the same id the [`Intent`] will name) until the intent is stored, so
    /// a confirm of that target cannot change it while this prepare reads it: the confirm
    /// waits, or this call waits for the confirm to commit and then reads what it did.
    /// Call it before reading the target's state. Guard takes it anyway when it stores the
    /// intent, which is too late for the checks made before.
    pub async fn lock_target(&mut self, target: &str) -> Result<(), ToolError> {
        if self.locked.as_deref() == Some(target) {
            return Ok(());
        }
        let who = &self.caller.identity;
        lock::hold(
            &mut self.tx,
            Lock::Target {
                tenant: &who.tenant,
                op: self.spec.op,
                target,
            },
        )
        .await?;
        self.locked = Some(target.to_owned());
        Ok(())
    }

    #[doc(hidden)]
    pub async fn begin(
        guard: &dyn Configured,
        call: &GuardCall,
        spec: &'static PrepareSpec,
    ) -> Step<Self> {
        let caller = Caller::start(guard, call, spec.tool, spec.op, spec.scopes).await?;
        let now = now_ms();
        let mut tx = match caller.ops.store.begin().await {
            Ok(tx) => tx,
            Err(e) => return Err(caller.unavailable(&e, "Try again shortly")),
        };
        let rate = caller.ops.rate_for(spec.tool, spec.rate);
        if let Some(rate) = &rate {
            let who = (
                caller.identity.tenant.as_str(),
                caller.identity.user.as_str(),
            );
            match rate.take(&mut tx, who, spec.tool, now).await {
                Ok(Ok(())) => {}
                Ok(Err(wait)) => {
                    drop(tx);
                    let record =
                        caller.record(Outcome::Refused(Code::RateLimited), None, None, None);
                    caller.audit_alone(&record).await;
                    let error = ToolError::new(
                        Code::RateLimited,
                        format!(
                            "{} allows {} for each user; nothing was prepared. Try again in {} seconds.",
                            spec.tool,
                            rate.describe(),
                            wait.as_secs().max(1)
                        ),
                    );
                    return Err(caller.refuse(error, None));
                }
                Err(e) => return Err(caller.unavailable(&e, "Try again shortly")),
            }
        }
        Ok(Self {
            caller,
            spec,
            rate,
            tx,
            now,
            locked: None,
        })
    }

    /// Stores the author's intent, or answers with the author's refusal.
    #[doc(hidden)]
    pub async fn finish<P: Serialize>(
        self,
        checked: Result<Intent<P>, ToolError>,
    ) -> Result<CallToolResponse, rmcp::ErrorData> {
        let Self {
            caller,
            spec,
            rate,
            tx,
            now,
            locked,
        } = self;
        let intent = match checked {
            Ok(intent) => intent,
            Err(refusal) => {
                drop(tx);
                let record = caller.record(Outcome::Refused(refusal.code()), None, None, None);
                caller.alone(&record, rate.as_ref()).await;
                return Ok(*caller.refuse(refusal, None));
            }
        };
        let payload = match serde_json::to_value(&intent.payload) {
            Ok(payload) => payload,
            Err(e) => return Ok(*caller.refuse(ToolError::internal(e), None)),
        };
        let canonical = match canonical_payload(&payload) {
            Ok(canonical) => canonical,
            Err(e) => {
                drop(tx);
                let refusal =
                    ToolError::new(Code::InvalidInput, format!("Nothing was prepared: {e}."));
                let record = caller.record(Outcome::Refused(refusal.code()), None, None, None);
                caller.alone(&record, rate.as_ref()).await;
                return Ok(*caller.refuse(refusal, None));
            }
        };
        let preview = intent.preview.clone().unwrap_or_else(|| payload.clone());
        let operation_id = uuid::Uuid::new_v4().to_string();
        let ttl = caller.ops.ttl_for(spec.tool, spec.ttl);
        let expires_at = now.saturating_add(i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX));
        let stored = Stored {
            caller: &caller,
            spec,
            intent: &intent,
            operation_id: &operation_id,
            payload: canonical,
            preview: preview.to_string(),
            now,
            expires_at,
            locked: locked.as_deref() == Some(intent.target.as_str()),
        };
        match stored.write(tx).await {
            Ok(()) => {}
            Err(e) if e.is_unique() => {
                return Ok(pending_elsewhere(&caller, spec, rate, &intent).await);
            }
            Err(e) => {
                return Ok(
                    *caller.unavailable(&e, "No operation was stored; call the prepare tool again")
                );
            }
        }
        let body = json!({
            "operation_id": operation_id,
            "op": spec.op,
            "status": "PREPARED",
            "expires_at": rfc3339(expires_at),
            "preview": preview,
            "requires_user_confirmation": true,
            "next": format!(
                "Nothing has changed yet. Show this preview to the user; only if they explicitly agree, call {} with this operation_id before it expires.",
                spec.confirm_tool
            ),
        });
        Ok(caller.answer(Outcome::Prepared, body, &operation_id))
    }
}

/// The rows one prepare writes, in one transaction.
struct Stored<'a, P> {
    caller: &'a Caller,
    spec: &'static PrepareSpec,
    intent: &'a Intent<P>,
    operation_id: &'a str,
    payload: (String, String),
    preview: String,
    now: i64,
    expires_at: i64,
    /// Whether the author already holds the intent's target.
    locked: bool,
}

impl<P> Stored<'_, P> {
    async fn write(self, tx: Tx) -> Result<(), StoreError> {
        let who = &self.caller.identity;
        let target = self.intent.target.as_str();
        let lock = (!self.locked)
            .then(|| {
                lock::statement(
                    tx.dialect(),
                    Lock::Target {
                        tenant: &who.tenant,
                        op: self.spec.op,
                        target,
                    },
                )
            })
            .flatten();
        let mut last: Vec<Statement> = lock.into_iter().collect();
        last.extend([
            // An expired intent no longer holds its target, unless its confirm was
            // deferred and waits to run: the human confirmed it in time.
            Statement::execute(
                "UPDATE guard_operations SET status = 'EXPIRED'
                 WHERE tenant = $1 AND op = $2 AND target = $3 AND status = 'PREPARED'
                   AND expires_at <= $4
                   AND NOT EXISTS (SELECT 1 FROM guard_deferred d
                                   WHERE d.operation_id = guard_operations.operation_id
                                     AND d.status = 'SCHEDULED')",
                vec![
                    who.tenant.as_str().into(),
                    self.spec.op.into(),
                    target.into(),
                    self.now.into(),
                ],
            ),
            Statement::execute(
                "INSERT INTO guard_operations
                    (operation_id, tenant, user_id, op, target, payload, payload_sha256, preview,
                     status, expires_at, created_at, trace_id)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'PREPARED', $9, $10, $11)",
                vec![
                    self.operation_id.into(),
                    who.tenant.as_str().into(),
                    who.user.as_str().into(),
                    self.spec.op.into(),
                    target.into(),
                    self.payload.0.into(),
                    self.payload.1.as_str().into(),
                    self.preview.as_str().into(),
                    self.expires_at.into(),
                    self.now.into(),
                    self.caller.trace_id.as_str().into(),
                ],
            ),
        ]);
        let record = self
            .caller
            .record(
                Outcome::Prepared,
                Some(self.operation_id),
                Some(target),
                self.intent.summary.as_deref(),
            )
            .field("preview", self.preview)
            .field("payload_sha256", self.payload.1);
        self.caller.commit_audited(tx, last, &record).await
    }
}

/// Another intent for the same target is still pending: say which (if it is the caller's
/// own) and until when.
async fn pending_elsewhere<P>(
    caller: &Caller,
    spec: &PrepareSpec,
    rate: Option<Rate>,
    intent: &Intent<P>,
) -> CallToolResponse {
    let pending = async {
        let mut tx = caller.ops.store.begin().await?;
        let row = tx
            .query_opt(
                "SELECT operation_id, user_id, expires_at FROM guard_operations
                 WHERE tenant = $1 AND op = $2 AND target = $3 AND status = 'PREPARED'",
                &[
                    caller.identity.tenant.as_str().into(),
                    spec.op.into(),
                    intent.target.as_str().into(),
                ],
            )
            .await?;
        tx.rollback().await?;
        Ok::<_, StoreError>(row)
    }
    .await;
    let detail = match pending {
        Ok(Some(row))
            if row.text("user_id").is_ok_and(|stored| {
                crate::person::canonical(stored).is_ok_and(|c| c == caller.identity.user)
            }) =>
        {
            format!(
                "your operation {} is still pending until {}: confirm that one with {}, or wait until it expires",
                row.text("operation_id").unwrap_or_default(),
                rfc3339(row.int("expires_at").unwrap_or_default()),
                spec.confirm_tool
            )
        }
        Ok(Some(row)) => format!(
            "another user's operation on it is pending until {}; try again after that",
            rfc3339(row.int("expires_at").unwrap_or_default())
        ),
        _ => "another operation on it is pending; try again shortly".to_owned(),
    };
    let record = caller.record(
        Outcome::Refused(Code::InvalidState),
        None,
        Some(&intent.target),
        None,
    );
    caller.alone(&record, rate.as_ref()).await;
    *caller.refuse(
        ToolError::new(
            Code::InvalidState,
            format!(
                "Nothing was prepared: {} already has a pending {} operation; {detail}.",
                intent.target, spec.op
            ),
        ),
        None,
    )
}
