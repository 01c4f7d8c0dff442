//! Step 1: the `tools/call` rmcp dispatched, as the flow takes it from guard's exposure.

use rmcp::{
    RoleServer,
    handler::server::{common::FromContextPart, tool::ToolCallContext},
    model::{InputResponses, JsonObject},
    service::RequestContext,
};

use super::Flow;
use crate::{
    args::GuardArguments,
    error::{ToolError, codes},
    outcome::{Outcome, Step},
};

/// The parts of a `tools/call` the flow needs: the request context, the raw arguments (to
/// bind MRTR state to them) and the MRTR echo. They come from the call rmcp dispatched
/// through guard's exposure (see `crate::entry::dispatch`), never from the context handed to the
/// extractor, which code in the process can build; without a dispatched call for this tool
/// the flow asks nobody and runs nothing.
pub struct GuardCall {
    pub(super) request: RequestContext<RoleServer>,
    pub(super) arguments: JsonObject,
    pub(super) request_state: Option<String>,
    pub(super) input_responses: Option<InputResponses>,
    /// The tool rmcp dispatched this call to, if guard's exposure dispatched it.
    pub(super) dispatched: Option<String>,
    /// Whether an approval on the page answers with a task, or this call runs one.
    #[cfg_attr(not(feature = "approval"), allow(dead_code))]
    pub(super) task: crate::entry::dispatch::TaskMode,
}

impl<S> FromContextPart<ToolCallContext<'_, S>> for GuardCall {
    fn from_context_part(context: &mut ToolCallContext<'_, S>) -> Result<Self, rmcp::ErrorData> {
        let arguments = context.arguments.clone().unwrap_or_default();
        let tool = context.name().to_owned();
        Ok(match crate::entry::dispatch::take(&tool) {
            Some(incoming) => Self {
                request: incoming.request,
                arguments,
                request_state: incoming.request_state,
                input_responses: incoming.input_responses,
                dispatched: Some(tool),
                task: incoming.task,
            },
            None => Self {
                request: context.request_context.clone(),
                arguments,
                request_state: None,
                input_responses: None,
                dispatched: None,
                task: crate::entry::dispatch::TaskMode::Rounds,
            },
        })
    }
}

impl<F> Flow<'_, F> {
    /// Step 1: the arguments, deserialised by guard. A wrong shape ends the call
    /// (`invalid_arguments`, `INVALID_INPUT`), audited and tagged, before the preview or
    /// anything else runs.
    pub fn arguments<T>(&self, given: GuardArguments<T>) -> Step<T> {
        given.parsed().map_err(|error| {
            self.refuse(
                Outcome::InvalidArguments,
                ToolError::arguments_do_not_fit(self.spec.name, &error),
            )
        })
    }

    /// Only a call guard's exposure dispatched to this very tool goes on. A server that
    /// does not publish through `exposed` (so never stated which tools it offers), and code
    /// that calls the tool's method or drives the flow itself, get no further: nothing is
    /// asked and nothing runs.
    pub(super) fn published(&self) -> Step<()> {
        if self.call.dispatched.as_deref() == Some(self.spec.name) {
            return Ok(());
        }
        tracing::error!(trace_id = %self.trace_id, tool = self.spec.name, "a guarded tool was called outside a tools/call that guard's exposure dispatched to it (a server without #[tool_handler(router = rmcp_guard::exposed(self, Self::tool_router))], or code calling the tool's method or guard's flow itself); nothing was asked or run");
        Err(self.refuse(
            Outcome::NotPublished,
            ToolError::new(
                codes::UNAVAILABLE,
                format!(
                    "{}: this server does not state which tools it publishes, so {} cannot run. Ask the operator (trace_id {}).",
                    self.nothing_done_first(),
                    self.spec.name, self.trace_id
                ),
            ),
        ))
    }
}
