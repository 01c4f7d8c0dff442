//! Step 2: the `tools/call` rmcp dispatched, as the flow takes it from guard's exposure.
//! [`Flow::dispatched`] is the first step of every guarded call, and the only one that
//! builds an [`Incoming`]: the arguments and the preview take it, so no later step can run
//! for a call guard's exposure did not hand over.

use super::Flow;
use crate::{
    args::{GuardArguments, ToolArgsDerived},
    error::{Code, ToolError},
    outcome::{Outcome, Step},
};

/// A call guard's exposure dispatched to this very tool. Only [`Flow::dispatched`] builds
/// one, and [`Flow::arguments`] and [`Flow::begin`] take it.
pub struct Incoming {
    _dispatched: (),
}

impl<F> Flow<'_, F> {
    /// Only a call guard's exposure dispatched to this very tool goes on. A server that
    /// does not publish through `exposed` (so never stated which tools it offers), and code
    /// that calls the tool's method or drives the flow itself, get no further: nothing is
    /// read, asked or run.
    pub fn dispatched(&self) -> Step<Incoming> {
        if self.call.dispatched.as_deref() == Some(self.spec.name) {
            return Ok(Incoming { _dispatched: () });
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

    /// The arguments, deserialised by guard, of the call `incoming` stands for. A wrong
    /// shape, or a name the tool does not take, ends the call (`invalid_arguments`, `INVALID_INPUT`), audited and tagged,
    /// before the preview or anything else runs.
    pub fn arguments<T: ToolArgsDerived>(
        &self,
        _incoming: &Incoming,
        given: GuardArguments<T>,
    ) -> Step<T> {
        given.parsed().map_err(|error| {
            self.refuse(
                Outcome::InvalidArguments,
                ToolError::arguments_do_not_fit(self.spec.name, &error),
            )
        })
    }
}
