//! The guarded call flow that `#[destructive]` expands into: preview, capability, one
//! elicitation (push or MRTR), the three outcomes, revalidation, re-check, then the handler.
//! Every step that ends the call returns the model's result; nothing after it runs.
//!
//! The steps form a chain of values that only this module can build: [`Flow::begin`] gives a
//! [`Shown`] effect, only [`Flow::ask`] (which really asks the human) turns it into an
//! [`Accepted`] answer, and only [`Flow::recheck`] turns that into the [`Confirmed`] proof.
//! No step takes a form value from its caller, so no code can mint a proof without a human.

use std::{marker::PhantomData, time::Duration};

use rmcp::{
    RoleServer, ServiceError,
    handler::server::{
        common::FromContextPart,
        tool::{IntoCallToolResult, ToolCallContext},
    },
    model::{
        CallToolResponse, CallToolResult, CancelledNotificationParam, ClientResult, ContentBlock,
        ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction, InputRequest,
        InputRequests, InputRequiredResult, InputResponses, JsonObject, MetaObject,
        ProtocolVersion, RequestStateError, SealOptions, ServerRequest,
    },
    service::{PeerRequestOptions, RequestContext},
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::{
    canonical::{NotCanonical, canonical_json},
    confirmed::Confirmed,
    error::{ToolError, codes},
    form::{DefaultValue, FieldKind, FieldRole, Form, FormSpec},
    guard::Guard,
    preview::{Effect, Preview},
    validate::{is_invisible, validate},
};
use unicode_normalization::UnicodeNormalization;

mod batch;
mod page;
#[cfg(feature = "approval")]
mod page_mrtr;

/// The key of guard's one input request in an MRTR round.
pub const INPUT_KEY: &str = "guard_confirm";

/// What the human is asked to do besides filling the form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfirmKind {
    /// Only the form (and its `validate` rules).
    Form,
    /// A checkbox that must be ticked.
    Checkbox,
    /// The target, retyped exactly.
    TypeToConfirm,
    /// The human picks which of a batch's items the effect touches (see [`crate::batch`]).
    Pick,
}

impl ConfirmKind {
    fn as_str(self) -> &'static str {
        match self {
            ConfirmKind::Form => "form",
            ConfirmKind::Checkbox => "checkbox",
            ConfirmKind::TypeToConfirm => "type_to_confirm",
            ConfirmKind::Pick => "pick",
        }
    }
}

/// A guarded tool's options, fixed at compile time by `#[destructive]`.
#[derive(Debug)]
pub struct ToolSpec {
    /// The tool's name as rmcp routes it.
    pub name: &'static str,
    /// How the human confirms.
    pub confirm: ConfirmKind,
    /// A header above the preview in the question.
    pub message: Option<&'static str>,
    /// How long the human has, if not the guard's default.
    pub timeout: Option<Duration>,
    /// The text the model gets when the human declines.
    pub on_decline: Option<&'static str>,
    /// The text the model gets when the human cancels.
    pub on_cancel: Option<&'static str>,
    /// Approved on guard's approval page (`approve = "url"`) instead of a form in the client.
    pub approval: Option<ApprovalSpec>,
}

/// How a tool with `approve = "url"` is approved on the page.
#[derive(Debug, Clone, Copy)]
pub struct ApprovalSpec {
    /// How many people must approve; above one, none of them the requester.
    pub approvers: u8,
    /// The label of a secret the page asks for, handed to the handler as a [`crate::Secret`].
    pub secret: Option<&'static str>,
}

/// The parts of a `tools/call` the flow needs: the request context, the raw arguments (to
/// bind MRTR state to them) and the MRTR echo. They come from the call rmcp dispatched
/// through guard's exposure (see `crate::dispatch`), never from the context handed to the
/// extractor, which code in the process can build; without a dispatched call for this tool
/// the flow asks nobody and runs nothing.
pub struct GuardCall {
    request: RequestContext<RoleServer>,
    arguments: JsonObject,
    request_state: Option<String>,
    input_responses: Option<InputResponses>,
    /// The tool rmcp dispatched this call to, if guard's exposure dispatched it.
    dispatched: Option<String>,
}

impl<S> FromContextPart<ToolCallContext<'_, S>> for GuardCall {
    fn from_context_part(context: &mut ToolCallContext<'_, S>) -> Result<Self, rmcp::ErrorData> {
        let arguments = context.arguments.clone().unwrap_or_default();
        let tool = context.name().to_owned();
        Ok(match crate::dispatch::take(&tool) {
            Some(incoming) => Self {
                request: incoming.request,
                arguments,
                request_state: incoming.request_state,
                input_responses: incoming.input_responses,
                dispatched: Some(tool),
            },
            None => Self {
                request: context.request_context.clone(),
                arguments,
                request_state: None,
                input_responses: None,
                dispatched: None,
            },
        })
    }
}

/// The sealed MRTR state: which question was asked, and what the human was shown.
#[derive(Serialize, Deserialize)]
struct Sealed {
    nonce: String,
    fingerprint: String,
    /// Carried across rounds so the asking and answering calls share one trace id.
    trace_id: String,
    /// The sealing guard's boot epoch when it keeps used states in memory only (see
    /// [`Guard`]): a state from before a restart cannot be checked for use, so it is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    epoch: Option<String>,
    /// The approval a call approved on the page waits for (see `page_mrtr`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    approval: Option<String>,
    /// A batch question's offer, item by item: the answering round judges the picks
    /// against it, so a retry cannot widen what was offered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    offered: Option<Vec<crate::batch::Offered>>,
}

/// One guarded call in progress.
pub struct Flow<'g, F> {
    guard: &'g Guard,
    call: GuardCall,
    spec: &'static ToolSpec,
    /// The name the sealed state is bound to: the form's, or `batch`.
    form_name: &'static str,
    trace_id: String,
    /// The echoed MRTR state, opened (verified) once when the call arrives.
    opened: Option<Result<Sealed, RequestStateError>>,
    /// What the audit record says the human saw and answered (redacted), once known.
    seen: std::sync::Mutex<Seen>,
    form: PhantomData<fn() -> F>,
}

/// The parts of a call's story known only as it goes on.
#[derive(Default)]
struct Seen {
    /// The target and the preview's summary, as shown.
    effect: Option<(String, String)>,
    /// The accepted answer, redacted field by field.
    answer: Option<JsonObject>,
    /// A batch's per-item counts, once the handler reported.
    counts: Option<Value>,
}

/// A step either continues with a value or ends the call with the model's result.
pub type Step<T> = Result<T, Box<CallToolResponse>>;

/// The effect the preview found, about to be shown to the human. Only [`Flow::begin`]
/// builds one.
pub struct Shown {
    effect: Effect,
}

/// The human's accepted and revalidated answer to one tool's question, before the re-check.
/// Only [`Flow::ask`] builds one, and only after a real accept.
pub struct Accepted<F> {
    form: F,
    effect: Effect,
    spec: &'static ToolSpec,
    secret: Option<crate::Secret>,
}

/// The author's business rules on an accepted form.
pub type Rules<F> = fn(&F) -> Result<(), String>;

impl<'g, F: Form> Flow<'g, F> {
    /// Starts one guarded call: opens the sealed MRTR state, if the call carries one.
    pub fn new(guard: &'g Guard, call: GuardCall, spec: &'static ToolSpec) -> Self {
        Self::start(guard, call, spec, F::SPEC.name)
    }

    /// Step 4: a failed precondition or a preview error ends the call without asking.
    pub fn begin(&self, preview: Result<Preview, ToolError>) -> Step<Shown> {
        match preview {
            Ok(Preview::Effect(effect)) => {
                self.seen().effect =
                    Some((effect.target().to_owned(), effect.summary().to_owned()));
                Ok(Shown { effect })
            }
            Ok(Preview::Nothing(text)) => Err(self.natural("precondition_failed", text)),
            Err(error) => Err(self.refuse("preview_failed", error)),
        }
    }

    /// Steps 5–7: capability, one elicitation, the outcome, and server-side revalidation.
    /// `expected` is the text a type-to-confirm answer must equal.
    pub async fn ask(
        &self,
        shown: Shown,
        expected: Option<&str>,
        rules: Option<Rules<F>>,
    ) -> Step<Accepted<F>> {
        self.published()?;
        self.roles_hold(expected)?;
        let effect = shown.effect;
        if let Some(approval) = self.spec.approval {
            let (content, secret) = self.ask_page(&effect, expected, approval).await?;
            let form = self.accept(Some(&content), expected, rules)?;
            return Ok(Accepted {
                form,
                effect,
                spec: self.spec,
                secret,
            });
        }
        let answer = if self.is_mrtr() {
            self.ask_mrtr(&effect, expected).await?
        } else {
            self.ask_push(self.question(&effect, expected)).await?
        };
        let content = self.accepted(answer)?;
        let form = self.accept(content.as_ref(), expected, rules)?;
        Ok(Accepted {
            form,
            effect,
            spec: self.spec,
            secret: None,
        })
    }

    /// Step 8: the target must still be exactly what the human confirmed, and the answer
    /// must be this tool's. The confirmation is then committed to the audit log before the
    /// proof exists, so an effect never runs unrecorded, even if the process stops during it.
    pub async fn recheck(
        &self,
        accepted: Accepted<F>,
        again: Result<Preview, ToolError>,
    ) -> Step<Confirmed<F>> {
        let Accepted {
            form,
            effect: confirmed,
            spec,
            secret,
        } = accepted;
        // The last check before the body runs: a call the client cancelled (or whose
        // connection closed) after the human answered must not reach its effect.
        if self.call.request.ct.is_cancelled() {
            return Err(self.cancelled_by_client());
        }
        if !std::ptr::eq(spec, self.spec) {
            tracing::error!(trace_id = %self.trace_id, tool = self.spec.name, answered = spec.name, "an answer given to another tool reached this tool's re-check");
            return Err(self.refuse(
                "wrong_tool",
                ToolError::new(
                    codes::INVALID_CONFIRMATION,
                    format!(
                        "Nothing was changed: the confirmation was given for {}, not {}. Call the tool again to ask the user.",
                        spec.name, self.spec.name
                    ),
                ),
            ));
        }
        match again {
            Ok(Preview::Effect(now)) if now == confirmed => {
                self.seen().answer = Some(crate::form::redacted(&form));
                self.commit_accepted().await?;
                Ok(Confirmed::new(
                    form,
                    now.target().to_owned(),
                    self.trace_id.clone(),
                    secret,
                ))
            }
            Ok(_) => Err(self.refuse("state_changed", state_changed(confirmed.target()))),
            Err(error) => Err(self.refuse("preview_failed", error)),
        }
    }

    /// The form's static roles must match the confirmation kind. The macro checks this at
    /// compile time; checking again here keeps the flow fail-closed for any form.
    fn roles_hold(&self, expected: Option<&str>) -> Step<()> {
        let broken = match roles_problem(F::SPEC, self.spec.confirm) {
            Some(problem) => Some(problem),
            None if self.spec.confirm == ConfirmKind::TypeToConfirm && expected.is_none() => {
                Some("type_to_confirm has no target text to compare")
            }
            None => None,
        };
        match broken {
            None => Ok(()),
            Some(problem) => {
                tracing::error!(trace_id = %self.trace_id, tool = self.spec.name, form = F::SPEC.name, problem, "form roles do not match the confirmation kind");
                Err(self.refuse(
                    "misconfigured",
                    ToolError::new(
                        codes::INVALID_STATE,
                        format!(
                            "Nothing was changed: {} is misconfigured on the server, so it cannot ask for confirmation (trace_id {}). Tell the operator.",
                            self.spec.name, self.trace_id
                        ),
                    ),
                ))
            }
        }
    }

    fn question(&self, effect: &Effect, expected: Option<&str>) -> ElicitRequestParams {
        let mut message = String::new();
        if let Some(header) = self.spec.message {
            message.push_str(header);
            message.push_str("\n\n");
        }
        message.push_str(effect.summary());
        if let Some(text) = expected {
            message.push_str(&format!("\n\nTo confirm, type {text} exactly."));
        }
        ElicitRequestParams::FormElicitationParams {
            meta: None,
            message,
            requested_schema: crate::form::cached_schema::<F>(),
        }
    }

    async fn ask_mrtr(&self, effect: &Effect, expected: Option<&str>) -> Step<ElicitResult> {
        let ttl = self.guard.timeout(self.spec.timeout);
        let Some(sealed) = self.verified_state()? else {
            if !self.client_can_confirm() {
                return Err(self.unsupported());
            }
            let state = self.seal(effect, ttl, None)?;
            let request =
                InputRequest::Elicitation(ElicitRequest::new(self.question(effect, expected)));
            self.audit("asked", "mrtr");
            return Err(self.input_required(request, state));
        };
        if sealed.fingerprint != effect.fingerprint() {
            return Err(self.refuse("state_changed", state_changed(effect.target())));
        }
        self.redeem_state(sealed, ttl).await?;
        self.mrtr_answer()
    }

    /// The accept path, in the documented order: schema, typed name, checkbox, rules.
    fn accept(
        &self,
        content: Option<&Value>,
        expected: Option<&str>,
        rules: Option<Rules<F>>,
    ) -> Step<F> {
        let object = validate(F::SPEC, content).map_err(|problems| {
            self.invalid(format!(
                "the form answer is invalid: {}",
                problems.join("; ")
            ))
        })?;
        if let (Some(field), Some(expected)) =
            (F::SPEC.field_with_role(FieldRole::ConfirmText), expected)
        {
            let typed = object
                .get(field.name)
                .and_then(Value::as_str)
                .unwrap_or_default();
            match compare_typed(typed, expected) {
                TypedName::Matches => {}
                TypedName::Invisible => {
                    return Err(self.invalid(format!(
                        "the typed name {typed:?} contains invisible characters (such as \
                         zero-width spaces or joiners); type {expected:?} again without them"
                    )));
                }
                TypedName::Differs => {
                    return Err(self.invalid(format!(
                        "the typed name {typed:?} does not match {expected:?} exactly"
                    )));
                }
            }
        }
        for field in F::SPEC
            .fields
            .iter()
            .filter(|f| f.role == FieldRole::Checkbox)
        {
            if object.get(field.name) != Some(&Value::Bool(true)) {
                return Err(self.invalid(format!(
                    "the confirmation box `{}` was not ticked",
                    field.name
                )));
            }
        }
        let form = F::from_valid(object).map_err(|reason| self.invalid(reason))?;
        if let Some(rules) = rules
            && let Err(reason) = rules(&form)
        {
            return Err(self.invalid(reason));
        }
        Ok(form)
    }
}

impl<'g, F> Flow<'g, F> {
    /// Opens the sealed MRTR state, if the call carries one, bound to `form_name`.
    fn start(
        guard: &'g Guard,
        call: GuardCall,
        spec: &'static ToolSpec,
        form_name: &'static str,
    ) -> Self {
        let opened = call.request_state.as_ref().map(|state| {
            // Arguments with no canonical form were never sealed, so nothing can open here.
            let binding = binding(form_name, spec, &call.arguments)
                .map_err(|_| RequestStateError::IntegrityCheckFailed)?;
            guard.codec().open_json_with::<Sealed>(state, &binding)
        });
        // An answering round continues the asking round's trace.
        let trace_id = match &opened {
            Some(Ok(sealed)) => sealed.trace_id.clone(),
            _ => crate::trace::new_id(),
        };
        Self {
            guard,
            call,
            spec,
            form_name,
            trace_id,
            opened,
            seen: std::sync::Mutex::default(),
            form: PhantomData,
        }
    }

    /// Writes the `accepted` record and waits until the log holds it: an effect never runs
    /// unrecorded, even if the process stops during it. A log that cannot take it ends the
    /// call before the proof exists.
    async fn commit_accepted(&self) -> Step<()> {
        if let Err(error) = self
            .guard
            .record_written(self.event("accepted", "", None))
            .await
        {
            tracing::error!(trace_id = %self.trace_id, tool = self.spec.name, %error, "the confirmation could not be written to the audit log; the effect does not run");
            return Err(self.refuse(
                "audit_failed",
                ToolError::new(
                    codes::UNAVAILABLE,
                    format!(
                        "Nothing was changed: the server could not write the confirmation of {} to its audit log, and nothing runs unrecorded (trace_id {}). Tell the operator, then call the tool again.",
                        self.spec.name, self.trace_id
                    ),
                ),
            ));
        }
        Ok(())
    }

    /// Decline and cancel end the call as outcomes; an accept goes on with its content.
    fn accepted(&self, answer: ElicitResult) -> Step<Option<Value>> {
        match answer.action {
            ElicitationAction::Decline => Err(self.natural(
                "declined",
                self.spec.on_decline.map(str::to_owned).unwrap_or_else(|| {
                    format!(
                        "The user declined; nothing was changed ({} did not run).",
                        self.spec.name
                    )
                }),
            )),
            ElicitationAction::Accept => Ok(answer.content),
            // Cancel, and any action a newer client may invent: nothing runs.
            _ => Err(self.cancelled()),
        }
    }

    /// Only a call guard's exposure dispatched to this very tool goes on. A server that
    /// does not publish through `exposed` (so never stated which tools it offers), and code
    /// that calls the tool's method or drives the flow itself, get no further: nothing is
    /// asked and nothing runs.
    fn published(&self) -> Step<()> {
        if self.call.dispatched.as_deref() == Some(self.spec.name) {
            return Ok(());
        }
        tracing::error!(trace_id = %self.trace_id, tool = self.spec.name, "a guarded tool was called outside a tools/call that guard's exposure dispatched to it (a server without #[tool_handler(router = rmcp_guard::exposed(self, Self::tool_router))], or code calling the tool's method or guard's flow itself); nothing was asked or run");
        Err(self.refuse(
            "not_published",
            ToolError::new(
                codes::UNAVAILABLE,
                format!(
                    "Nothing was changed: this server does not state which tools it publishes, so {} cannot run. Ask the operator (trace_id {}).",
                    self.spec.name, self.trace_id
                ),
            ),
        ))
    }

    /// Step 10: audit the handler's outcome and hand its result back to rmcp.
    pub fn finish(
        &self,
        result: impl IntoCallToolResult,
    ) -> Result<CallToolResponse, rmcp::ErrorData> {
        let response = result.into_call_tool_result();
        let outcome = match &response {
            Ok(CallToolResponse::Complete(r)) if r.is_error == Some(true) => "handler_error",
            Ok(_) => "executed",
            Err(_) => "handler_failed",
        };
        let result = match &response {
            Ok(CallToolResponse::Complete(r)) => serde_json::to_value(r).ok(),
            _ => None,
        };
        self.record(outcome, "", result.as_ref());
        response.map(|r| match r {
            CallToolResponse::Complete(result) => self.tag(result, outcome).into(),
            other => other,
        })
    }

    fn is_mrtr(&self) -> bool {
        self.call
            .request
            .protocol_version()
            .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28)
    }

    /// Form elicitation declared (an empty `elicitation` object means form, per the spec).
    fn client_can_confirm(&self) -> bool {
        self.call
            .request
            .client_capabilities()
            .and_then(|c| c.elicitation)
            .is_some_and(|e| e.form.is_some() || e.url.is_none())
    }

    fn unsupported(&self) -> Box<CallToolResponse> {
        self.natural(
            "unsupported_client",
            format!(
                "Nothing was changed: {} needs the user's confirmation, and this client cannot ask \
                 for it (it did not declare form elicitation). Ask the user to run this from a \
                 client that supports confirmation.",
                self.spec.name
            ),
        )
    }

    fn cancelled(&self) -> Box<CallToolResponse> {
        self.natural(
            "cancelled",
            self.spec.on_cancel.map(str::to_owned).unwrap_or_else(|| {
                format!(
                    "The confirmation was cancelled; nothing was changed ({} did not run).",
                    self.spec.name
                )
            }),
        )
    }

    /// The client cancelled the call, or its connection closed: an outcome, and nothing ran.
    fn cancelled_by_client(&self) -> Box<CallToolResponse> {
        self.natural(
            "cancelled_by_client",
            format!(
                "The client cancelled the call; nothing was changed ({} did not run).",
                self.spec.name
            ),
        )
    }

    /// Pushes the question and waits for the answer, the timeout, or the client cancelling
    /// the call (`notifications/cancelled`, or the connection closing), whichever comes
    /// first. A cancelled call withdraws its question, so a later answer never reaches a body.
    async fn ask_push(&self, question: ElicitRequestParams) -> Step<ElicitResult> {
        if !self.client_can_confirm() {
            return Err(self.unsupported());
        }
        let cancelled = &self.call.request.ct;
        if cancelled.is_cancelled() {
            return Err(self.cancelled_by_client());
        }
        let peer = &self.call.request.peer;
        let timeout = self.guard.timeout(self.spec.timeout);
        let request = ServerRequest::ElicitRequest(ElicitRequest::new(question));
        let sent = match peer
            .send_request_with_option(request, PeerRequestOptions::with_timeout(timeout))
            .await
        {
            Ok(handle) => {
                let question = handle.id.clone();
                tokio::select! {
                    biased;
                    () = cancelled.cancelled() => {
                        // Close the form on the client: nobody is waiting for its answer.
                        let withdraw = CancelledNotificationParam::new(
                            Some(question),
                            Some("the tool call was cancelled".to_owned()),
                        );
                        if let Err(error) = peer.notify_cancelled(withdraw).await {
                            tracing::debug!(trace_id = %self.trace_id, %error, "could not withdraw the question");
                        }
                        return Err(self.cancelled_by_client());
                    }
                    answer = handle.await_response() => answer,
                }
            }
            Err(error) => Err(error),
        };
        let sent = match sent {
            Ok(ClientResult::ElicitResult(answer)) => Ok(answer),
            Ok(_) => Err(ServiceError::UnexpectedResponse),
            Err(error) => Err(error),
        };
        match sent {
            Ok(answer) => Ok(answer),
            // The connection closed or the call was cancelled while the answer was in flight.
            Err(_) if cancelled.is_cancelled() => Err(self.cancelled_by_client()),
            Err(ServiceError::Timeout { .. }) => {
                self.audit("timed_out", "");
                Err(self.cancelled())
            }
            Err(error) => {
                tracing::warn!(trace_id = %self.trace_id, %error, "elicitation failed");
                Err(self.refuse(
                    "elicitation_failed",
                    ToolError::new(
                        codes::INVALID_STATE,
                        format!(
                            "Nothing was changed: the confirmation request could not reach the \
                             user (trace_id {}). Try again.",
                            self.trace_id
                        ),
                    ),
                ))
            }
        }
    }

    /// Seals this round's state, bound to the call's canonical arguments, valid for `ttl`.
    fn seal(&self, effect: &Effect, ttl: Duration, approval: Option<String>) -> Step<String> {
        self.seal_state(effect.fingerprint(), ttl, approval, None)
    }

    /// Seals a state with `fingerprint` (what the human is shown) and, for a batch, the
    /// offer item by item.
    fn seal_state(
        &self,
        fingerprint: String,
        ttl: Duration,
        approval: Option<String>,
        offered: Option<Vec<crate::batch::Offered>>,
    ) -> Step<String> {
        let binding = binding(self.form_name, self.spec, &self.call.arguments).map_err(|e| {
            self.refuse(
                "invalid_arguments",
                ToolError::new(codes::INVALID_INPUT, format!("Nothing was changed: {e}.")),
            )
        })?;
        let sealed = Sealed {
            nonce: crate::trace::new_nonce(),
            fingerprint,
            trace_id: self.trace_id.clone(),
            epoch: self.guard.boot_epoch().map(str::to_owned),
            approval,
            offered,
        };
        self.guard
            .codec()
            .seal_json_with(
                &sealed,
                &SealOptions::new().associated_data(&binding).ttl(ttl),
            )
            .map_err(|e| self.refuse("seal_failed", ToolError::internal(e)))
    }

    /// The first round's answer: guard's one input request, and the sealed state to echo.
    fn input_required(&self, request: InputRequest, state: String) -> Box<CallToolResponse> {
        let requests = InputRequests::from([(INPUT_KEY.to_owned(), request)]);
        Box::new(InputRequiredResult::new(Some(requests), Some(state)).into())
    }

    /// The echoed state of an answering round, verified: sealed by this guard for this call's
    /// tool and arguments, unexpired, and from this boot when used states live in memory.
    /// `None` on a first round.
    fn verified_state(&self) -> Step<Option<&Sealed>> {
        let sealed = match &self.opened {
            None => return Ok(None),
            Some(Ok(sealed)) => sealed,
            Some(Err(RequestStateError::Expired)) => {
                return Err(self.refuse(
                    "expired",
                    ToolError::new(
                        codes::CONFIRMATION_EXPIRED,
                        "The confirmation expired before the answer arrived; nothing was changed. Call the tool again to ask afresh.",
                    ),
                ));
            }
            Some(Err(error)) => {
                tracing::warn!(trace_id = %self.trace_id, %error, "rejected request state");
                return Err(self.bad_state());
            }
        };
        if sealed.epoch.as_deref() != self.guard.boot_epoch() {
            tracing::warn!(trace_id = %self.trace_id, "request state sealed before this server started");
            return Err(self.refuse(
                "restarted",
                ToolError::new(
                    codes::INVALID_STATE,
                    "This confirmation was asked before the server restarted, and the server \
                     cannot tell whether it was already used; nothing was changed. Call the tool \
                     again to ask afresh.",
                ),
            ));
        }
        Ok(Some(sealed))
    }

    fn bad_state(&self) -> Box<CallToolResponse> {
        self.refuse(
            "bad_state",
            ToolError::new(
                codes::INVALID_STATE,
                "The confirmation state does not match this call (altered, or sent with \
                 different arguments); nothing was changed. Call the tool again to ask afresh.",
            ),
        )
    }

    /// Marks the state used; a second round with it is a replay.
    async fn redeem_state(&self, sealed: &Sealed, ttl: Duration) -> Step<()> {
        let redeemed = self.guard.redeem(&sealed.nonce, ttl).await.map_err(|error| {
            tracing::error!(trace_id = %self.trace_id, %error, "could not record a used request state");
            self.refuse(
                "store_failed",
                ToolError::new(
                    codes::UNAVAILABLE,
                    format!(
                        "Nothing was changed: the server could not record this confirmation as used (trace_id {}). Call the tool again to ask afresh.",
                        self.trace_id
                    ),
                ),
            )
        })?;
        if redeemed {
            Ok(())
        } else {
            Err(self.refuse(
                "replayed",
                ToolError::new(
                    codes::INVALID_STATE,
                    "This confirmation was already used; nothing was changed. Call the tool again to ask afresh.",
                ),
            ))
        }
    }

    /// The client's answer to guard's input request, from the retry.
    fn mrtr_answer(&self) -> Step<ElicitResult> {
        let answer = self
            .call
            .input_responses
            .as_ref()
            .and_then(|r| r.get(INPUT_KEY))
            .map(|v| serde_json::from_value::<ElicitResult>(v.clone()));
        match answer {
            Some(Ok(answer)) => Ok(answer),
            _ => Err(self.refuse(
                "no_answer",
                ToolError::new(
                    codes::INVALID_CONFIRMATION,
                    format!(
                        "The retry carried no readable answer under `{INPUT_KEY}`; nothing was changed. Call the tool again to ask afresh."
                    ),
                ),
            )),
        }
    }

    fn invalid(&self, reason: String) -> Box<CallToolResponse> {
        self.refuse(
            "invalid_answer",
            ToolError::new(
                codes::INVALID_CONFIRMATION,
                format!("Nothing was changed: {reason}. Call the tool again to be asked afresh."),
            ),
        )
    }

    /// A non-error result: decline, cancel and unmet preconditions are outcomes.
    fn natural(&self, outcome: &str, text: String) -> Box<CallToolResponse> {
        self.audit(outcome, "");
        let result = CallToolResult::success(vec![ContentBlock::text(text)]);
        Box::new(self.tag(result, outcome).into())
    }

    /// An `isError` result with a stable code; nothing ran.
    fn refuse(&self, outcome: &str, error: ToolError) -> Box<CallToolResponse> {
        self.audit(outcome, error.code());
        Box::new(self.tag(error.into_result(), outcome).into())
    }

    fn tag(&self, mut result: CallToolResult, outcome: &str) -> CallToolResult {
        let mut meta = result.meta.take().unwrap_or_default();
        meta.0.insert(
            "guard".into(),
            json!({"outcome": outcome, "traceId": self.trace_id}),
        );
        result.meta = Some(MetaObject(meta.0));
        result
    }

    fn audit(&self, outcome: &str, code: &str) {
        self.record(outcome, code, None);
    }

    fn record(&self, outcome: &str, code: &str, result: Option<&Value>) {
        self.guard.record(self.event(outcome, code, result));
    }

    /// The call's audit record: the outcome, what the human saw and answered (redacted),
    /// a digest of the arguments and, once the handler ran, of its result.
    fn event(&self, outcome: &str, code: &str, result: Option<&Value>) -> crate::audit::Event {
        let mut event = crate::audit::Event::new(self.spec.name, outcome, self.trace_id.as_str())
            .field("code", (!code.is_empty()).then_some(code))
            .field("protocol", if self.is_mrtr() { "mrtr" } else { "push" })
            .digest("args_sha256", &Value::Object(self.call.arguments.clone()));
        {
            let seen = self.seen();
            if let Some((target, summary)) = &seen.effect {
                event = event
                    .field("target", target.as_str())
                    .field("preview", summary.as_str());
            }
            if let Some(answer) = &seen.answer {
                event = event.field("answer", Value::Object(answer.clone()));
            }
            if let Some(counts) = &seen.counts {
                event = event.field("items", counts.clone());
            }
        }
        if let Some(result) = result {
            event = event.digest("result_sha256", result);
        }
        event
    }

    fn seen(&self) -> std::sync::MutexGuard<'_, Seen> {
        self.seen.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// How a typed name compares with the target it must equal.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum TypedName {
    Matches,
    /// An invisible character (format character, variation selector…) is left inside.
    Invisible,
    Differs,
}

/// Both sides in NFC, White_Space trimmed from the typed text; an invisible character left
/// inside it never matches, whatever the target, so what the human saw is what they typed.
pub(crate) fn compare_typed(typed: &str, expected: &str) -> TypedName {
    let typed: String = typed.nfc().collect();
    let typed = typed.trim();
    let hidden = |c: char| {
        (is_invisible(c) && !c.is_whitespace())
            || matches!(c, '\u{34F}' | '\u{180B}'..='\u{180F}' | '\u{FE00}'..='\u{FE0F}' | '\u{E0100}'..='\u{E01EF}')
    };
    if typed.chars().any(hidden) {
        TypedName::Invisible
    } else if typed.chars().eq(expected.nfc()) {
        TypedName::Matches
    } else {
        TypedName::Differs
    }
}

/// The bytes a seal is bound to: tool, form (or `batch`), confirmation kind and canonical
/// arguments.
fn binding(
    form_name: &str,
    spec: &ToolSpec,
    arguments: &JsonObject,
) -> Result<Vec<u8>, NotCanonical> {
    canonical_json(&json!([
        "guard/v1",
        spec.name,
        form_name,
        spec.confirm.as_str(),
        Value::Object(arguments.clone()),
    ]))
    .map(String::into_bytes)
}

fn state_changed(target: &str) -> ToolError {
    ToolError::new(
        codes::STATE_CHANGED,
        format!(
            "{target} changed after the user confirmed, so nothing was changed: what the user \
             confirmed is not what would run. Call the tool again to show the user the new state."
        ),
    )
}

/// What is wrong with `form`'s roles for `kind`, if anything. A `const fn`, so the macro can
/// make a mismatch a compile error from the same description the flow enforces.
pub const fn roles_problem(form: &FormSpec, kind: ConfirmKind) -> Option<&'static str> {
    let (mut checkboxes, mut typed) = (0, 0);
    let mut i = 0;
    while i < form.fields.len() {
        let field = &form.fields[i];
        match field.role {
            FieldRole::Checkbox => {
                if !matches!(field.kind, FieldKind::Boolean) || field.optional {
                    return Some(
                        "a `#[form(checkbox)]` field must be a plain `bool`: the human ticks it",
                    );
                }
                if matches!(field.default, Some(DefaultValue::Bool(true))) {
                    return Some(
                        "a `#[form(checkbox)]` field cannot default to `true`: a pre-ticked box is consent the human never gave",
                    );
                }
                checkboxes += 1;
            }
            FieldRole::ConfirmText => {
                if !matches!(field.kind, FieldKind::String { .. }) || field.optional {
                    return Some(
                        "a `#[form(confirm_text)]` field must be a plain `String`: the human types the target into it",
                    );
                }
                if field.default.is_some() {
                    return Some(
                        "a `#[form(confirm_text)]` field cannot have a default: a pre-filled name is typed by nobody",
                    );
                }
                typed += 1;
            }
            FieldRole::Plain => {}
        }
        i += 1;
    }
    match kind {
        ConfirmKind::Checkbox if checkboxes != 1 => Some(
            "`confirm = \"checkbox\"` needs a form with exactly one `#[form(checkbox)]` `bool` field: use `rmcp_guard::forms::Checkbox` or mark one field of your form",
        ),
        ConfirmKind::TypeToConfirm if typed != 1 => Some(
            "`confirm = \"type_to_confirm\"` needs a form with exactly one `#[form(confirm_text)]` `String` field: use `rmcp_guard::forms::TypeToConfirm` or mark one field of your form",
        ),
        ConfirmKind::Checkbox | ConfirmKind::Form if typed != 0 => Some(
            "this form asks the human to type the target (`#[form(confirm_text)]`) but the tool never compares it: use `confirm = \"type_to_confirm\", target = <argument>`, or remove the field",
        ),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::{TypedName, compare_typed};

    #[test]
    fn typed_names_compare_in_nfc_after_trimming_white_space() {
        assert_eq!(compare_typed("orders", "orders"), TypedName::Matches);
        assert_eq!(
            compare_typed(" \torders\u{3000}\n", "orders"),
            TypedName::Matches
        );
        assert_eq!(
            compare_typed("cafe\u{301}", "caf\u{E9}"),
            TypedName::Matches
        );
        assert_eq!(
            compare_typed("caf\u{E9}", "cafe\u{301}"),
            TypedName::Matches
        );
        assert_eq!(compare_typed("Orders", "orders"), TypedName::Differs);
        assert_eq!(compare_typed("\u{43e}rders", "orders"), TypedName::Differs);
        assert_eq!(compare_typed("", "orders"), TypedName::Differs);
    }

    #[test]
    fn an_invisible_character_inside_never_matches() {
        for hidden in [
            '\u{200B}', '\u{200D}', '\u{2060}', '\u{FEFF}', '\u{AD}', '\u{202E}', '\u{FE0F}',
            '\u{34F}',
        ] {
            for typed in [
                format!("ord{hidden}ers"),
                format!("{hidden}orders"),
                format!("orders{hidden}"),
            ] {
                assert_eq!(
                    compare_typed(&typed, "orders"),
                    TypedName::Invisible,
                    "{typed:?}"
                );
            }
        }
    }
}
