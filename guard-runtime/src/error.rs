//! Errors a tool shows the model: a stable code and a sentence that says what to do next.
//! Internal detail (SQL, I/O errors) goes to the log under a trace id, never to the model.

use std::fmt;

use rmcp::{
    handler::server::tool::IntoCallToolResult,
    model::{CallToolResponse, CallToolResult, ContentBlock},
};

/// The stable codes the model can branch on: the first word of every error a tool shows,
/// and the refusal an [`Outcome::Refused`](crate::outcome::Outcome::Refused) records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Code {
    /// The tool's arguments break its rules; the model should correct them.
    InvalidInput,
    /// The human's answer failed revalidation (a type, a range, the typed name, a rule); nothing ran.
    InvalidConfirmation,
    /// The human's answer to an `#[ask]` question failed revalidation (a type, a range, a
    /// `validate` rule); nothing ran, and the tool asks afresh when called again.
    InvalidAnswer,
    /// The target changed between the question and the effect; nothing ran.
    StateChanged,
    /// The human did not answer in time, or the prepared intent expired; ask or prepare again.
    ConfirmationExpired,
    /// The request state or intent cannot be used (replayed, closed, or from before a restart).
    InvalidState,
    /// The caller lacks a required scope, or has no trusted identity on this transport.
    PermissionDenied,
    /// Something failed on the server; details are in the log under the trace id.
    Internal,
    /// The engine refused a write through a read-only handle.
    ReadOnly,
    /// A resource the tool needs (its database) cannot be opened.
    Unavailable,
    /// No operation with this id belongs to the caller (unknown, or another tenant's or user's).
    OperationNotFound,
    /// The caller used up this tool's rate for now.
    RateLimited,
    /// The store failed while a confirm was in flight: it may or may not have committed.
    ResultUnknown,
    /// An idempotency key came back with different arguments than its first call (the
    /// IETF idempotency-key draft answers 422): nothing ran.
    IdempotencyKeyReused,
    /// The first call with this idempotency key is still running (409 in the draft):
    /// nothing ran a second time.
    InProgress,
    /// The undo window closed (its deadline passed, its purge ran, or what it would restore
    /// changed or went away): the effect is final. An author's undo refuses with it when the
    /// undo can never succeed, and the window ends.
    UndoExpired,
    /// A deferred call is no longer waiting (it ran, or came due and was refused), so it
    /// cannot be withdrawn; the answer carries how it ended.
    AlreadyRan,
    /// A code of the server's own for a refusal guard's codes do not name (an order that
    /// does not exist: `ORDER_NOT_FOUND`), made by [`Code::own`].
    Own(OwnCode),
}

/// The spelling of a server's own code; only [`Code::own`] makes one, so every such code is
/// checked where it is declared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct OwnCode(&'static str);

impl Code {
    /// Every code of guard's, in the order above.
    pub const ALL: [Code; 17] = [
        Code::InvalidInput,
        Code::InvalidConfirmation,
        Code::InvalidAnswer,
        Code::StateChanged,
        Code::ConfirmationExpired,
        Code::InvalidState,
        Code::PermissionDenied,
        Code::Internal,
        Code::ReadOnly,
        Code::Unavailable,
        Code::OperationNotFound,
        Code::RateLimited,
        Code::ResultUnknown,
        Code::IdempotencyKeyReused,
        Code::InProgress,
        Code::UndoExpired,
        Code::AlreadyRan,
    ];

    /// The code as the model reads it (`"STATE_CHANGED"`), the same in every release.
    pub const fn as_str(self) -> &'static str {
        match self {
            Code::InvalidInput => "INVALID_INPUT",
            Code::InvalidConfirmation => "INVALID_CONFIRMATION",
            Code::InvalidAnswer => "INVALID_ANSWER",
            Code::StateChanged => "STATE_CHANGED",
            Code::ConfirmationExpired => "CONFIRMATION_EXPIRED",
            Code::InvalidState => "INVALID_STATE",
            Code::PermissionDenied => "PERMISSION_DENIED",
            Code::Internal => "INTERNAL",
            Code::ReadOnly => "READ_ONLY",
            Code::Unavailable => "UNAVAILABLE",
            Code::OperationNotFound => "OPERATION_NOT_FOUND",
            Code::RateLimited => "RATE_LIMITED",
            Code::ResultUnknown => "RESULT_UNKNOWN",
            Code::IdempotencyKeyReused => "IDEMPOTENCY_KEY_REUSED",
            Code::InProgress => "IN_PROGRESS",
            Code::UndoExpired => "UNDO_EXPIRED",
            Code::AlreadyRan => "ALREADY_RAN",
            Code::Own(OwnCode(text)) => text,
        }
    }

    /// A code of the server's own, spelled in capitals, digits and underscores
    /// (`ORDER_NOT_FOUND`) and not one of guard's, so a model that branches on codes never
    /// mistakes it for one. Declare it as a constant, and a bad spelling fails the build:
    /// `const ORDER_NOT_FOUND: Code = Code::own("ORDER_NOT_FOUND");`.
    pub const fn own(text: &'static str) -> Self {
        let bytes = text.as_bytes();
        assert!(
            !bytes.is_empty() && bytes[0].is_ascii_uppercase(),
            "a code starts with a capital letter, as ORDER_NOT_FOUND does"
        );
        let mut i = 0;
        while i < bytes.len() {
            let b = bytes[i];
            assert!(
                b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_',
                "a code is spelled in capitals, digits and underscores, as ORDER_NOT_FOUND is"
            );
            i += 1;
        }
        let mut k = 0;
        while k < Self::ALL.len() {
            assert!(
                !same(Self::ALL[k].as_str(), text),
                "this is one of guard's own codes: use its Code variant instead of Code::own"
            );
            k += 1;
        }
        Code::Own(OwnCode(text))
    }

    /// The code spelled `text`, if it is one of guard's.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|code| code.as_str() == text)
    }
}

/// Whether `a` and `b` are the same text (`==` on `str` is not `const`); the macros' const
/// checks use it too.
pub(crate) const fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A model-visible tool failure. Returning `Err(ToolError)` gives an `isError` result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError {
    code: Code,
    message: String,
}

impl ToolError {
    /// An error with a stable `code` and a message that says what to do next.
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    /// Bad arguments from the model.
    pub fn invalid_input(message: impl Into<String>) -> Self {
        Self::new(Code::InvalidInput, message)
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
            Code::Internal,
            format!(
                "The tool failed internally and changed nothing it could not report. \
                 Quote trace_id {trace_id} to the operator."
            ),
        )
    }

    /// The stable code the model can branch on.
    pub fn code(&self) -> Code {
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

#[cfg(test)]
mod tests {
    use super::{Code, ToolError};

    #[test]
    fn every_code_reads_back_as_itself_and_only_guards_are_parsed() {
        for code in Code::ALL {
            assert_eq!(Code::parse(code.as_str()), Some(code));
        }
        assert_eq!(Code::parse("state_changed"), None);
        assert_eq!(Code::parse("ORDER_NOT_FOUND"), None);
    }

    #[test]
    fn a_servers_own_code_is_spelled_as_declared() {
        const ORDER_NOT_FOUND: Code = Code::own("ORDER_NOT_FOUND");
        let error = ToolError::new(ORDER_NOT_FOUND, "There is no order B1.");
        assert_eq!(error.code().as_str(), "ORDER_NOT_FOUND");
        assert_eq!(error.to_string(), "[ORDER_NOT_FOUND] There is no order B1.");
    }

    #[test]
    #[should_panic(expected = "capitals, digits and underscores")]
    fn an_own_code_with_other_characters_is_refused() {
        let _ = Code::own("ORDER-NOT-FOUND");
    }

    #[test]
    #[should_panic(expected = "starts with a capital")]
    fn a_lowercase_own_code_is_refused() {
        let _ = Code::own("order_not_found");
    }

    #[test]
    #[should_panic(expected = "starts with a capital")]
    fn an_empty_own_code_is_refused() {
        let _ = Code::own("");
    }

    #[test]
    #[should_panic(expected = "one of guard's own codes")]
    fn an_own_code_cannot_pass_for_one_of_guards() {
        let _ = Code::own("STATE_CHANGED");
    }
}
