//! What every operation tool does first and last: find the store, establish the caller,
//! check scopes, and answer the model with a stable code, a trace id and an audit record.

use std::time::Duration;

use rmcp::model::{CallToolResponse, CallToolResult, MetaObject};
use serde_json::{Value, json};

use super::{
    Operations,
    audit::AuditRecord,
    intent::OperationRef,
    now_ms,
    rate::Rate,
    sql::{StoreError, Tx},
};
use crate::{
    error::{ToolError, codes},
    flow::Step,
    guard::Guard,
    identity::{Identity, require_scopes_traced},
};

/// A prepare tool's options, fixed at compile time by `#[prepare]`.
#[derive(Debug)]
pub struct PrepareSpec {
    pub tool: &'static str,
    pub op: &'static str,
    /// The confirm tool the model must call next.
    pub confirm_tool: &'static str,
    pub ttl: Duration,
    pub scopes: &'static [&'static str],
    pub rate: Option<Rate>,
}

/// A confirm tool's options: its op's scopes are checked again at confirm time.
#[derive(Debug)]
pub struct ConfirmSpec {
    pub tool: &'static str,
    pub op: &'static str,
    pub prepare_tool: &'static str,
    pub scopes: &'static [&'static str],
}

/// One operation call in progress: who is calling, under which trace id.
pub(crate) struct Caller {
    pub ops: Operations,
    pub identity: Identity,
    pub trace_id: String,
    pub tool: &'static str,
    pub op: &'static str,
}

impl Caller {
    /// Finds the store, identifies the caller and checks `scopes`. Every refusal is an
    /// answer for the model; a scope denial is also audited.
    pub async fn start(
        guard: &Guard,
        tool: &'static str,
        op: &'static str,
        scopes: &[&str],
    ) -> Step<Self> {
        let trace_id = crate::trace::new_id();
        let Some(ops) = guard.operations().cloned() else {
            tracing::error!(%trace_id, tool, "a two-phase tool was called but the guard has no operations; configure Guard::with_operations");
            return Err(answer_error(
                ToolError::new(
                    codes::UNAVAILABLE,
                    format!(
                        "This server's operation store is not configured, so nothing was done. Ask the operator (trace_id {trace_id})."
                    ),
                ),
                &trace_id,
            ));
        };
        // The caller is read from the call rmcp dispatched to this tool, not from a context
        // code in the process could have built (see `crate::dispatch`).
        let Some(request) = crate::dispatch::take(tool).map(|incoming| incoming.request) else {
            tracing::error!(%trace_id, tool, "a two-phase tool was called outside a tools/call that guard's exposure dispatched to it (a server without #[tool_handler(router = rmcp_guard::exposed(self, Self::tool_router()))], or code calling the tool's method itself); nothing was done");
            return Err(answer_error(
                ToolError::new(
                    codes::UNAVAILABLE,
                    format!(
                        "This server does not state which tools it publishes, so nothing was done. Ask the operator (trace_id {trace_id})."
                    ),
                ),
                &trace_id,
            ));
        };
        let identity = ops
            .identity
            .identify(&request)
            .map_err(|e| answer_error(e, &trace_id))?;
        let caller = Self {
            ops,
            identity,
            trace_id,
            tool,
            op,
        };
        if let Err(denied) = require_scopes_traced(&caller.identity, tool, scopes, &caller.trace_id)
        {
            let record = caller.record(codes::PERMISSION_DENIED, None, None, None);
            caller.audit_alone(&record).await;
            return Err(caller.refuse(denied, None));
        }
        Ok(caller)
    }

    /// The operation id the model sent, normalised; a value that is not a UUID is refused
    /// (and audited) as bad input naming `prepare_tool`, where a real one comes from.
    pub async fn operation_id(&self, reference: &OperationRef, prepare_tool: &str) -> Step<String> {
        let id = reference.operation_id.trim().to_ascii_lowercase();
        if uuid::Uuid::try_parse(&id).is_ok() {
            return Ok(id);
        }
        let record = self.record(codes::INVALID_INPUT, None, None, None);
        self.audit_alone(&record).await;
        Err(self.refuse(
            ToolError::invalid_input(format!(
                "operation_id must be the UUID that {prepare_tool} returned; nothing was done"
            )),
            None,
        ))
    }

    pub fn record(
        &self,
        outcome: &'static str,
        operation_id: Option<&str>,
        target: Option<&str>,
        summary: Option<&str>,
    ) -> AuditRecord {
        AuditRecord {
            trace_id: self.trace_id.clone(),
            tenant: self.identity.tenant.clone(),
            user: self.identity.user.clone(),
            tool: self.tool,
            op: self.op,
            operation_id: operation_id.map(str::to_owned),
            target: target.map(str::to_owned),
            summary: summary.map(str::to_owned),
            outcome,
            at: now_ms(),
        }
    }

    /// Writes `record` inside `tx` (and logs it).
    pub async fn audit(&self, tx: &mut Tx, record: &AuditRecord) -> Result<(), StoreError> {
        log(record);
        self.ops.audit.record(tx, record).await
    }

    /// Writes `record` in a transaction of its own, for outcomes whose own transaction
    /// rolled back or never began. A failure is logged: the model's answer stands.
    pub async fn audit_alone(&self, record: &AuditRecord) {
        self.alone(record, None).await;
    }

    /// Like [`audit_alone`](Self::audit_alone), also counting the call against `rate`.
    pub async fn alone(&self, record: &AuditRecord, rate: Option<&Rate>) {
        let written = async {
            let mut tx = self.ops.store.begin().await?;
            if let Some(rate) = rate {
                let who = (self.identity.tenant.as_str(), self.identity.user.as_str());
                let _counted = rate.take(&mut tx, who, self.tool, record.at).await?;
            }
            self.audit(&mut tx, record).await?;
            tx.commit().await
        };
        if let Err(error) = written.await {
            tracing::error!(trace_id = %self.trace_id, %error, outcome = record.outcome, "could not write the audit record");
        }
    }

    /// An `isError` answer with guard's tag.
    pub fn refuse(&self, error: ToolError, operation_id: Option<&str>) -> Box<CallToolResponse> {
        let outcome = error.code();
        Box::new(tag(error.into_result(), outcome, &self.trace_id, operation_id).into())
    }

    /// A successful structured answer with guard's tag.
    pub fn answer(&self, outcome: &str, body: Value, operation_id: &str) -> CallToolResponse {
        tag(
            CallToolResult::structured(body),
            outcome,
            &self.trace_id,
            Some(operation_id),
        )
        .into()
    }

    /// A successful structured answer with guard's tag, for a call with no operation id.
    pub fn answer_plain(&self, outcome: &str, body: Value) -> CallToolResponse {
        tag(
            CallToolResult::structured(body),
            outcome,
            &self.trace_id,
            None,
        )
        .into()
    }

    /// A store failure before anything was written: logged in full, `UNAVAILABLE` for the
    /// model.
    pub fn unavailable(&self, error: &StoreError, what_next: &str) -> Box<CallToolResponse> {
        tracing::error!(trace_id = %self.trace_id, tool = self.tool, %error, "operation store failed");
        self.refuse(
            ToolError::new(
                codes::UNAVAILABLE,
                format!(
                    "The operation store is unavailable, so nothing was done. {what_next} (trace_id {}).",
                    self.trace_id
                ),
            ),
            None,
        )
    }
}

fn answer_error(error: ToolError, trace_id: &str) -> Box<CallToolResponse> {
    let outcome = error.code();
    Box::new(tag(error.into_result(), outcome, trace_id, None).into())
}

fn tag(
    mut result: CallToolResult,
    outcome: &str,
    trace_id: &str,
    operation_id: Option<&str>,
) -> CallToolResult {
    let mut meta = result.meta.take().unwrap_or_default();
    let mut guard = json!({"outcome": outcome, "traceId": trace_id});
    if let Some(id) = operation_id {
        guard["operationId"] = id.into();
    }
    meta.0.insert("guard".into(), guard);
    result.meta = Some(MetaObject(meta.0));
    result
}

fn log(r: &AuditRecord) {
    tracing::info!(
        target: "guard::audit",
        tool = r.tool,
        op = r.op,
        outcome = r.outcome,
        tenant = %r.tenant,
        user = %r.user,
        operation_id = r.operation_id.as_deref().unwrap_or(""),
        target_id = r.target.as_deref().unwrap_or(""),
        trace_id = %r.trace_id,
    );
}
