//! What every operation tool does first and last: find the store, establish the caller,
//! check scopes, and answer the model with a stable code, a trace id and an audit record.

use std::time::Duration;

use rmcp::model::{CallToolResponse, CallToolResult};
use serde_json::Value;

use super::{Configured, Operations, intent::OperationRef, rate::Rate};
use crate::store::{Statement, StoreError, Tx, now_ms};
use crate::{
    args::{GuardArguments, ToolArgsDerived},
    audit::{Check, Event},
    entry::dispatch::GuardCall,
    error::{Code, ToolError},
    identity::{Identity, require_scopes_traced},
    outcome::{Outcome, Step, tag},
};

/// A prepare tool's options, fixed at compile time by `#[prepare]`.
#[derive(Debug)]
pub struct PrepareSpec {
    /// The prepare tool's name.
    pub tool: &'static str,
    /// The operation it prepares.
    pub op: &'static str,
    /// The confirm tool the model must call next.
    pub confirm_tool: &'static str,
    /// How long the intent can be confirmed.
    pub ttl: Duration,
    /// Scopes the caller needs.
    pub scopes: &'static [&'static str],
    /// Calls per user allowed, if limited.
    pub rate: Option<Rate>,
}

/// A confirm tool's options: its op's scopes are checked again at confirm time.
#[derive(Debug)]
pub struct ConfirmSpec {
    /// The confirm tool's name.
    pub tool: &'static str,
    /// The operation it carries out.
    pub op: &'static str,
    /// The prepare tool of the same operation.
    pub prepare_tool: &'static str,
    /// Scopes the caller needs.
    pub scopes: &'static [&'static str],
    /// How long a confirmed operation waits before its effect runs (`defer = "2m"`);
    /// `None` runs it at once, unless the deployment sets a wait
    /// ([`Operations::defer_confirm`]).
    pub defer: Option<Duration>,
}

/// One operation call in progress: who is calling, under which trace id.
pub(crate) struct Caller {
    pub ops: Operations,
    /// The caller, tenant and user in canonical form ([`crate::person`]): what intents, keys
    /// and rates are stored and compared under.
    pub identity: Identity,
    /// The tenant and user as the identity provider spelled them, for records stored before
    /// names were canonical.
    pub spelled: (String, String),
    pub trace_id: String,
    pub tool: &'static str,
    pub op: &'static str,
}

/// The arguments of a two-phase or keyed tool, deserialised by guard: a wrong shape is
/// refused (`INVALID_INPUT`) and audited for the identified caller, before anything runs.
pub async fn arguments<T: ToolArgsDerived>(
    guard: &dyn Configured,
    call: &GuardCall,
    tool: &'static str,
    op: &'static str,
    given: GuardArguments<T>,
) -> Step<T> {
    let error = match given.parsed() {
        Ok(arguments) => return Ok(arguments),
        Err(error) => error,
    };
    let caller = Caller::start(guard, call, tool, op, &[]).await?;
    let record = caller.record(Outcome::Refused(Code::InvalidInput), None, None, None);
    caller.audit_alone(&record).await;
    Err(caller.refuse(ToolError::arguments_do_not_fit(tool, &error), None))
}

impl Caller {
    /// Finds the store, identifies the caller of `call` (the call guard's exposure
    /// dispatched to `tool`) and checks `scopes`. Every refusal is an answer for the model;
    /// a scope denial is also audited.
    pub async fn start(
        guard: &dyn Configured,
        call: &GuardCall,
        tool: &'static str,
        op: &'static str,
        scopes: &[&str],
    ) -> Step<Self> {
        let trace_id = crate::trace::new_id();
        let Some(ops) = guard.operations().cloned() else {
            tracing::error!(%trace_id, tool, "a two-phase tool was called but the guard has no operations; configure Guard::with_operations");
            return Err(answer_error(
                ToolError::new(
                    Code::Unavailable,
                    format!(
                        "This server's operation store is not configured, so nothing was done. Ask the operator (trace_id {trace_id})."
                    ),
                ),
                &trace_id,
            ));
        };
        // The caller is read from the call rmcp dispatched to this tool, not from a context
        // code in the process could have built (see `crate::entry::dispatch`).
        let Some(request) = call.request_of(tool) else {
            tracing::error!(%trace_id, tool, "a two-phase tool was called outside a tools/call that guard's exposure dispatched to it (a server without #[tool_handler(router = rmcp_guard::exposed(self, Self::tool_router))], code calling the tool's method itself, or a tool dispatching its own call's context again through the server's call_tool); nothing was done");
            return Err(answer_error(
                ToolError::new(
                    Code::Unavailable,
                    format!(
                        "This server does not state which tools it publishes, so nothing was done. Ask the operator (trace_id {trace_id})."
                    ),
                ),
                &trace_id,
            ));
        };
        let identified = ops
            .identity
            .identify(request)
            .and_then(|identity| canonical(identity, tool, &trace_id));
        let (identity, spelled) = match identified {
            Ok(identified) => identified,
            Err(refusal) => {
                let event = Event::new(tool, Outcome::Refused(refusal.code()), trace_id.as_str())
                    .field("op", op);
                event.mirror();
                if let Err(error) = ops.audit.append(None, &event).await {
                    tracing::error!(%trace_id, %error, "could not write the audit record");
                }
                return Err(answer_error(refusal, &trace_id));
            }
        };
        let caller = Self {
            ops,
            identity,
            spelled,
            trace_id,
            tool,
            op,
        };
        if let Err(denied) = require_scopes_traced(&caller.identity, tool, scopes, &caller.trace_id)
        {
            let record = caller.record(Outcome::Refused(Code::PermissionDenied), None, None, None);
            caller.audit_alone(&record).await;
            return Err(caller.refuse(denied, None));
        }
        Ok(caller)
    }

    /// The operation id the model sent, exactly as the prepare returned it: guard compares
    /// every identifier as written, operation ids as idempotency keys, and folds neither
    /// case nor space, so one id is never two spellings. Anything else (another spelling of
    /// the UUID included) is refused, and audited, as bad input naming `prepare_tool`.
    pub async fn operation_id(&self, reference: &OperationRef, prepare_tool: &str) -> Step<String> {
        let id = &reference.operation_id;
        if uuid::Uuid::try_parse(id).is_ok_and(|uuid| uuid.hyphenated().to_string() == *id) {
            return Ok(id.clone());
        }
        let record = self.record(Outcome::Refused(Code::InvalidInput), None, None, None);
        self.audit_alone(&record).await;
        Err(self.refuse(
            ToolError::invalid_input(format!(
                "operation_id must be the UUID that {prepare_tool} returned, exactly as it was returned (lower-case, with hyphens); nothing was done"
            )),
            None,
        ))
    }

    /// This call's audit event: who asked, which op, and what it concerned.
    pub fn record(
        &self,
        outcome: Outcome,
        operation_id: Option<&str>,
        target: Option<&str>,
        summary: Option<&str>,
    ) -> Event {
        let mut event = Event::new(self.tool, outcome, self.trace_id.as_str()).field("op", self.op);
        if !self.identity.tenant.is_empty() || !self.identity.user.is_empty() {
            event = event.identity(&self.identity.tenant, &self.identity.user);
        }
        event
            .field("operation_id", operation_id)
            .field("target", target)
            .field("summary", summary)
    }

    /// Writes `record` inside `tx` (and mirrors it to the log); call
    /// [`committed`](Self::committed) once `tx` commits.
    pub async fn audit(&self, tx: &mut Tx, record: &Event) -> Result<(), StoreError> {
        record.mirror();
        self.ops.audit.record_in(tx, record).await
    }

    /// After a commit holding a record written by [`audit`](Self::audit): the log's
    /// sequencer places it.
    pub fn committed(&self) {
        self.ops.audit.queued_committed();
    }

    /// Writes `record` and commits `tx`.
    pub async fn commit_audit(&self, tx: Tx, record: &Event) -> Result<(), StoreError> {
        self.commit_audited(tx, Vec::new(), record).await
    }

    /// Runs `last` (the call's own last writes), writes `record` and commits: one trip to
    /// the store.
    pub async fn commit_audited(
        &self,
        tx: Tx,
        last: Vec<Statement>,
        record: &Event,
    ) -> Result<(), StoreError> {
        record.mirror();
        self.ops.audit.commit_with(tx, last, record, None).await
    }

    /// Like [`commit_audited`](Self::commit_audited), letting `check` look at what `last`
    /// did first; a refused check rolls everything back. One trip on SQLite, two on
    /// PostgreSQL (the check needs `last`'s answers before the `COMMIT` goes).
    pub async fn commit_checked(
        &self,
        tx: Tx,
        last: Vec<Statement>,
        record: &Event,
        check: Check,
    ) -> Result<(), StoreError> {
        record.mirror();
        self.ops
            .audit
            .commit_with(tx, last, record, Some(check))
            .await
    }

    /// Writes `record` in a transaction of its own, for outcomes whose own transaction
    /// rolled back or never began. A failure is logged: the model's answer stands.
    pub async fn audit_alone(&self, record: &Event) {
        self.alone(record, None).await;
    }

    /// Like [`audit_alone`](Self::audit_alone), also counting the call against `rate`.
    pub async fn alone(&self, record: &Event, rate: Option<&Rate>) {
        let written = async {
            let mut tx = self.ops.store.begin().await?;
            if let Some(rate) = rate {
                let who = (self.identity.tenant.as_str(), self.identity.user.as_str());
                let _counted = rate.take(&mut tx, who, self.tool, now_ms()).await?;
            }
            self.commit_audit(tx, record).await
        };
        if let Err(error) = written.await {
            tracing::error!(trace_id = %self.trace_id, %error, outcome = record.outcome(), "could not write the audit record");
        }
    }

    /// An `isError` answer with guard's tag.
    pub fn refuse(&self, error: ToolError, operation_id: Option<&str>) -> Box<CallToolResponse> {
        let outcome = Outcome::Refused(error.code());
        Box::new(tag(error.into_result(), outcome, &self.trace_id, operation_id).into())
    }

    /// A successful structured answer with guard's tag.
    pub fn answer(&self, outcome: Outcome, body: Value, operation_id: &str) -> CallToolResponse {
        tag(
            CallToolResult::structured(body),
            outcome,
            &self.trace_id,
            Some(operation_id),
        )
        .into()
    }

    /// A successful structured answer with guard's tag, for a call with no operation id.
    pub fn answer_plain(&self, outcome: Outcome, body: Value) -> CallToolResponse {
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
                Code::Unavailable,
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
    let outcome = Outcome::Refused(error.code());
    Box::new(tag(error.into_result(), outcome, trace_id, None).into())
}

/// The caller with tenant and user in canonical form, and as the provider spelled them; a
/// spelling guard refuses is a `PERMISSION_DENIED` refusal.
fn canonical(
    identity: Identity,
    tool: &str,
    trace_id: &str,
) -> Result<(Identity, (String, String)), ToolError> {
    let spelled = (identity.tenant.clone(), identity.user.clone());
    match identity.person() {
        Ok(person) => Ok((
            Identity {
                tenant: person.tenant().to_owned(),
                user: person.user().to_owned(),
                scopes: identity.scopes,
            },
            spelled,
        )),
        Err(problem) => {
            tracing::warn!(%trace_id, tool, %problem, "the identity provider named the caller in a refused spelling");
            Err(ToolError::new(
                Code::PermissionDenied,
                format!(
                    "Nothing was done: the caller's name is spelled in a way guard refuses ({problem}). Ask the operator to fix the account (trace_id {trace_id})."
                ),
            ))
        }
    }
}
