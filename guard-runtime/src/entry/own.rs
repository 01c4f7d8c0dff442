//! What guard's own tools (`undo`, `withdraw`) share: their route beside the author's
//! tools, published when the router's hidden routes (see `hidden`) call for it, and the
//! start of each call (its arguments, the dispatched call, the caller from trusted
//! context), so each tool's file holds only what it does.

use rmcp::{
    handler::server::{
        router::tool::{ToolRoute, ToolRouter},
        tool::ToolCallContext,
    },
    model::{CallToolResponse, Tool},
};
use serde::de::DeserializeOwned;

use super::caller::caller;
use crate::{
    error::{Code, ToolError},
    guard::{Guard, Guarded},
    outcome::{Outcome, Step, tag},
    person::Person,
};

/// The answer of a call of one of guard's own tools, as rmcp routes it.
pub(crate) type Answer<'a> = std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<CallToolResponse, rmcp::ErrorData>> + Send + 'a>,
>;

/// `router` with guard's own tool `tool` routed to `call`, when `wanted` (a tool of the
/// server needs it). A route of the server's own with that name is not replaced
/// silently: the router then publishes nothing (like a guarded name another route took,
/// see `claims`); `for_what` says which tools guard publishes it for.
pub(crate) fn with_own_tool<S, C>(
    mut router: ToolRouter<S>,
    wanted: bool,
    tool: Tool,
    for_what: &str,
    call: C,
) -> ToolRouter<S>
where
    S: Send + Sync + 'static,
    C: for<'a> Fn(ToolCallContext<'a, S>) -> Answer<'a> + Send + Sync + 'static,
{
    if !wanted {
        return router;
    }
    let name = tool.name.clone();
    if router.has_route(&name) {
        tracing::error!(
            "no tool is published: this server has a tool named `{name}`, and guard publishes its own `{name}` tool for {for_what}; rename the server's tool"
        );
        return ToolRouter::new();
    }
    router.add_route(ToolRoute::new_dyn(tool, call));
    router
}

/// A call of one of guard's own tools, started: its arguments, its caller, and what of the
/// guard serves it.
pub(crate) struct Started<A, T> {
    pub args: A,
    pub owner: Person,
    pub service: T,
}

/// One of guard's own tools, as its calls start.
pub(crate) struct OwnTool {
    /// Its name.
    pub name: &'static str,
    /// What the model is told nothing was (`Nothing was restored`).
    pub nothing: &'static str,
    /// How its arguments are spelt, for a call that spelt them otherwise.
    pub takes: &'static str,
}

impl OwnTool {
    /// The start of a call under `trace_id`: its arguments as `A`, the call guard's exposure
    /// dispatched, the `service` that serves it (`missing` says why a guard without one
    /// cannot) and the caller from trusted context. Any of them wrong ends the call with its
    /// refusal, audited.
    pub(crate) fn start<S: Guarded, A: DeserializeOwned, T>(
        &self,
        context: &ToolCallContext<'_, S>,
        trace_id: &str,
        service: Option<T>,
        missing: impl FnOnce() -> String,
    ) -> Step<Started<A, T>> {
        let guard = context.service.guard();
        let arguments = context.arguments.clone().unwrap_or_default();
        let Ok(args) = serde_json::from_value(serde_json::Value::Object(arguments)) else {
            let message = format!("{}: `{}` takes {}.", self.nothing, self.name, self.takes);
            return Err(self.refuse(guard, trace_id, Code::InvalidInput, message));
        };
        let Some(incoming) = super::dispatch::take(&context.request_context, self.name) else {
            let message = format!(
                "{}: this call did not come through the server's published tools.",
                self.nothing
            );
            return Err(self.refuse(guard, trace_id, Code::PermissionDenied, message));
        };
        let Some(service) = service else {
            return Err(self.refuse(guard, trace_id, Code::Unavailable, missing()));
        };
        match caller(guard, &incoming.request) {
            Ok(owner) => Ok(Started {
                args,
                owner,
                service,
            }),
            Err(error) => {
                let message = error.message().to_owned();
                Err(self.refuse(guard, trace_id, error.code(), message))
            }
        }
    }

    /// A refusal with `code` before anything was looked up, audited.
    fn refuse(
        &self,
        guard: &Guard,
        trace_id: &str,
        code: Code,
        message: String,
    ) -> Box<CallToolResponse> {
        let event = crate::audit::Event::new(self.name, Outcome::Refused(code), trace_id);
        guard.record(event);
        let error = ToolError::new(code, message);
        Box::new(tag(error.into_result(), Outcome::Refused(code), trace_id, None).into())
    }

    /// The answer when the store failed under the call of `operation_id`: an internal
    /// error, its detail in the log under `trace_id`.
    pub(crate) fn failed(
        &self,
        operation_id: &str,
        trace_id: &str,
        error: impl std::fmt::Display,
    ) -> CallToolResponse {
        let error = ToolError::internal(format!("{} {operation_id}: {error}", self.name));
        tag(
            error.into_result(),
            Outcome::Refused(Code::Internal),
            trace_id,
            Some(operation_id),
        )
        .into()
    }
}
