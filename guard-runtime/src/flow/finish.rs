//! Steps 9 and 10, and every other way a call ends: the handler's result audited and
//! tagged, or a natural outcome (decline, cancel, an unmet precondition) or a refusal with a
//! stable code, each with its audit record and guard's `_meta.guard` tag.

use rmcp::{
    handler::server::tool::IntoCallToolResult,
    model::{CallToolResponse, CallToolResult, ContentBlock},
};
use serde_json::Value;

use super::{Flow, Seen};
use crate::{
    error::{Code, ToolError},
    outcome::{self, Outcome},
    preview::Target,
};

impl<F> Flow<'_, F> {
    /// Step 10: audit the handler's outcome and hand its result back to rmcp.
    pub fn finish(
        &self,
        result: impl IntoCallToolResult,
    ) -> Result<CallToolResponse, rmcp::ErrorData> {
        let (response, outcome) = self.settle(result.into_call_tool_result());
        response.map(|r| match r {
            CallToolResponse::Complete(result) => self.tag(result, outcome).into(),
            other => other,
        })
    }

    /// The handler's response audited with its outcome (not tagged yet).
    pub(super) fn settle(
        &self,
        response: Result<CallToolResponse, rmcp::ErrorData>,
    ) -> (Result<CallToolResponse, rmcp::ErrorData>, Outcome) {
        let (outcome, result) = ending(&response);
        self.record(outcome, "", result.as_ref());
        (response, outcome)
    }

    /// [`settle`](Self::settle), waiting until the record is committed: for an effect whose
    /// undo window opens next, so the log never holds an undo before the effect it undoes.
    /// A record that cannot be written is logged by the writer.
    #[cfg(any(feature = "sqlite", feature = "postgres"))]
    pub(super) async fn settle_written(
        &self,
        response: Result<CallToolResponse, rmcp::ErrorData>,
    ) -> (Result<CallToolResponse, rmcp::ErrorData>, Outcome) {
        let (outcome, result) = ending(&response);
        let event = self.event(outcome, "", result.as_ref());
        let _ = self.guard.record_written(event).await;
        (response, outcome)
    }

    /// A non-error result: decline, cancel and unmet preconditions are outcomes.
    pub(super) fn natural(&self, outcome: Outcome, text: String) -> Box<CallToolResponse> {
        self.audit(outcome, "");
        let result = CallToolResult::success(vec![ContentBlock::text(text)]);
        Box::new(self.tag(result, outcome).into())
    }

    /// An `isError` result with a stable code; nothing ran.
    pub(super) fn refuse(&self, outcome: Outcome, error: ToolError) -> Box<CallToolResponse> {
        self.audit(outcome, error.code().as_str());
        Box::new(self.tag(error.into_result(), outcome).into())
    }

    pub(super) fn tag(&self, result: CallToolResult, outcome: Outcome) -> CallToolResult {
        self.tag_operation(result, outcome, None)
    }

    /// The tag, naming `operation_id` if the call made one, and what a grant did in the call.
    pub(super) fn tag_operation(
        &self,
        result: CallToolResult,
        outcome: Outcome,
        operation_id: Option<&str>,
    ) -> CallToolResult {
        let tagged = outcome::tag(result, outcome, &self.trace_id, operation_id);
        #[cfg(any(feature = "sqlite", feature = "postgres"))]
        let tagged = self.note_grant(tagged);
        tagged
    }

    pub(super) fn audit(&self, outcome: Outcome, code: &str) {
        self.record(outcome, code, None);
    }

    pub(super) fn record(&self, outcome: Outcome, code: &str, result: Option<&Value>) {
        self.guard.record(self.event(outcome, code, result));
    }

    /// The call's audit record: the outcome, what the human saw and answered (redacted),
    /// a digest of the arguments and, once the handler ran, of its result.
    pub(super) fn event(
        &self,
        outcome: Outcome,
        code: &str,
        result: Option<&Value>,
    ) -> crate::audit::Event {
        let mut event = crate::audit::Event::new(self.spec.name, outcome, self.trace_id.as_str())
            .field("code", (!code.is_empty()).then_some(code))
            .field("protocol", if self.is_mrtr() { "mrtr" } else { "push" })
            .digest("args_sha256", &Value::Object(self.call.arguments.clone()));
        {
            let seen = self.seen();
            if let Some((target, summary)) = &seen.effect {
                event = event
                    .field("target", target.shown())
                    .field("preview", summary.as_str());
            }
            if let Some(answer) = &seen.answer {
                event = event.field("answer", Value::Object(answer.clone()));
            }
            if let Some(counts) = &seen.counts {
                event = event.field("items", counts.clone());
            }
            if let Some(disclosed) = &seen.disclosed {
                event = event.field("disclosed", disclosed.clone());
            }
            if let Some(requester) = &seen.requester {
                event = event.identity(requester.tenant(), requester.user());
            }
            if let Some((id, approvers)) = &seen.approval {
                event = event.field("approval_id", id.as_str());
                if !approvers.is_empty() {
                    event = event.field("approvers", approvers.clone());
                }
            }
        }
        #[cfg(any(feature = "sqlite", feature = "postgres"))]
        if let Some(grant) = self.grant_id() {
            event = event.field("grant_id", grant);
        }
        if let Some(result) = result {
            event = event.digest("result_sha256", result);
        }
        event
    }

    pub(super) fn seen(&self) -> std::sync::MutexGuard<'_, Seen> {
        self.seen.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The refusal of a call whose target changed after the human answered; `done` is what did
/// not happen (see `Flow::nothing_done`).
pub(super) fn state_changed(target: &Target, done: &str) -> ToolError {
    changed_after_confirmed(target.shown(), done)
}

/// [`state_changed`] of a target known by the words shown only (a stored deferred call's).
pub(super) fn changed_after_confirmed(target: &str, done: &str) -> ToolError {
    ToolError::new(
        Code::StateChanged,
        format!(
            "{target} changed after the user confirmed, so {done}: what the user confirmed is \
             not what would run. Call the tool again to show the user the new state."
        ),
    )
}

/// How the handler's answer ends the call, and the result the record digests.
fn ending(response: &Result<CallToolResponse, rmcp::ErrorData>) -> (Outcome, Option<Value>) {
    match response {
        Ok(CallToolResponse::Complete(r)) => {
            let outcome = if r.is_error == Some(true) {
                Outcome::HandlerError
            } else {
                Outcome::Executed
            };
            (outcome, serde_json::to_value(r).ok())
        }
        Ok(_) => (Outcome::Executed, None),
        Err(_) => (Outcome::HandlerFailed, None),
    }
}
