//! Step 1: the `tools/call` rmcp dispatched, as the flow takes it from guard's exposure.

use super::Flow;
use crate::{
    args::GuardArguments,
    error::{Code, ToolError},
    outcome::{Outcome, Step},
};

impl<F> Flow<'_, F> {
    /// Step 1: the arguments, deserialised by guard, of a call guard's exposure dispatched
    /// to this tool ([`Flow::published`]). A wrong shape ends the call (`invalid_arguments`,
    /// `INVALID_INPUT`), audited and tagged, before the preview or anything else runs.
    pub fn arguments<T>(&self, given: GuardArguments<T>) -> Step<T> {
        self.published()?;
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
        tracing::error!(trace_id = %self.trace_id, tool = self.spec.name, "a guarded tool was called outside a tools/call that guard's exposure dispatched to it (a server without #[tool_handler(router = rmcp_guard::exposed(self, Self::tool_router))], code calling the tool's method or guard's flow itself, or a tool dispatching its own call's context again through the server's call_tool); nothing was asked or run");
        Err(self.refuse(
            Outcome::NotPublished,
            ToolError::new(
                Code::Unavailable,
                format!(
                    "{}: this server does not state which tools it publishes, so {} cannot run. Ask the operator (trace_id {}).",
                    self.nothing_done_first(),
                    self.spec.name, self.trace_id
                ),
            ),
        ))
    }
}
