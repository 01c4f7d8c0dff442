//! Errors a tool shows the model: a stable code and a sentence that says what to do next.
//! Internal detail (SQL, I/O errors) goes to the log under a trace id, never to the model.

use std::fmt;

use rmcp::{
    handler::server::tool::IntoCallToolResult,
    model::{CallToolResponse, CallToolResult, ContentBlock},
};

/// Stable error codes the model can branch on.
pub mod codes {
    /// The tool's arguments break its rules; the model should correct them.
    pub const INVALID_INPUT: &str = "INVALID_INPUT";
    /// The human's answer failed revalidation (a type, a range, the typed name, a rule); nothing ran.
    pub const INVALID_CONFIRMATION: &str = "INVALID_CONFIRMATION";
    /// The target changed between the question and the effect; nothing ran.
    pub const STATE_CHANGED: &str = "STATE_CHANGED";
    /// The human did not answer in time, or the prepared intent expired; ask or prepare again.
    pub const CONFIRMATION_EXPIRED: &str = "CONFIRMATION_EXPIRED";
    /// The request state or intent cannot be used (replayed, closed, or from before a restart).
    pub const INVALID_STATE: &str = "INVALID_STATE";
    /// The caller lacks a required scope, or has no trusted identity on this transport.
    pub const PERMISSION_DENIED: &str = "PERMISSION_DENIED";
    /// Something failed on the server; details are in the log under the trace id.
    pub const INTERNAL: &str = "INTERNAL";
    /// The engine refused a write through a read-only handle.
    pub const READ_ONLY: &str = "READ_ONLY";
    /// A resource the tool needs (its database) cannot be opened.
    pub const UNAVAILABLE: &str = "UNAVAILABLE";
    /// No operation with this id belongs to the caller (unknown, or another tenant's or user's).
    pub const OPERATION_NOT_FOUND: &str = "OPERATION_NOT_FOUND";
    /// The caller used up this tool's rate for now.
    pub const RATE_LIMITED: &str = "RATE_LIMITED";
    /// The store failed while a confirm was in flight: it may or may not have committed.
    pub const RESULT_UNKNOWN: &str = "RESULT_UNKNOWN";
    /// An idempotency key came back with different arguments than its first call (the
    /// IETF idempotency-key draft answers 422): nothing ran.
    pub const IDEMPOTENCY_KEY_REUSED: &str = "IDEMPOTENCY_KEY_REUSED";
    /// The first call with this idempotency key is still running (409 in the draft):
    /// nothing ran a second time.
    pub const IN_PROGRESS: &str = "IN_PROGRESS";
    /// The undo window closed (its deadline passed, or its purge ran): the effect is final.
    pub const UNDO_EXPIRED: &str = "UNDO_EXPIRED";
    /// A deferred call is no longer waiting (it ran, or came due and was refused), so it
    /// cannot be withdrawn; the answer carries how it ended.
    pub const ALREADY_RAN: &str = "ALREADY_RAN";
}

/// A model-visible tool failure. Returning `Err(ToolError)` gives an `isError` result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError {
    code: &'static str,
    message: String,
}

impl ToolError {
    /// An error with a stable `code` (see [`codes`]) and a message that says what to do next.
    pub fn new(code: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    /// Bad arguments from the model.
    pub fn invalid_input(message: impl Into<String>) -> Self {
        Self::new(codes::INVALID_INPUT, message)
    }

    /// Arguments that do not fit `tool`'s input schema (a missing field, a wrong type, an
    /// unknown field the type denies): nothing ran.
    pub(crate) fn arguments_do_not_fit(tool: &str, error: &str) -> Self {
        Self::invalid_input(format!(
            "Nothing was done: the arguments do not fit {tool}: {error}. Call it again with arguments that match its input schema."
        ))
    }

    /// An internal failure: the detail is logged with a trace id; the model gets the id only.
    pub fn internal(detail: impl fmt::Display) -> Self {
        let trace_id = crate::trace::new_id();
        tracing::error!(%trace_id, %detail, "tool failed internally");
        Self::new(
            codes::INTERNAL,
            format!(
                "The tool failed internally and changed nothing it could not report. \
                 Quote trace_id {trace_id} to the operator."
            ),
        )
    }

    /// The stable code the model can branch on.
    pub fn code(&self) -> &'static str {
        self.code
    }

    /// The human-readable reason.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The `isError` result the model sees.
    pub fn into_result(self) -> CallToolResult {
        CallToolResult::error(vec![ContentBlock::text(self.to_string())])
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}] {}", self.code, self.message)
    }
}

impl std::error::Error for ToolError {}

impl IntoCallToolResult for ToolError {
    fn into_call_tool_result(self) -> Result<CallToolResponse, rmcp::ErrorData> {
        Ok(self.into_result().into())
    }
}
