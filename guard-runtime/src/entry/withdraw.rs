//! The one `withdraw` tool of a server whose tools defer their effect
//! (`#[destructive(defer = ...)]`, `#[confirm(defer = ...)]`, or a confirm the deployment
//! defers with `Operations::defer_confirm`), and the runner of their due calls.
//!
//! Each such tool registers its deferred run for its server type when its route is built
//! (as an undo registers, see `undo`); the router [`crate::exposed`] publishes then carries
//! a `withdraw` route beside the tools, filtered by the same exposure (list `withdraw` in
//! the allowlist; read-only mode hides it, as it writes). The route takes `operation_id`,
//! identifies the caller from trusted context, and runs
//! [`crate::defer::DeferredCalls::withdraw`]. [`run_deferred`] runs due calls in the
//! background, each through the run of the tool that deferred it.

use std::{future::Future, pin::Pin, sync::Arc, time::Duration};

use rmcp::schemars::{self, JsonSchema};
use rmcp::{
    handler::server::{router::tool::ToolRouter, tool::ToolCallContext},
    model::{CallToolResponse, Tool, ToolAnnotations},
};
use serde::Deserialize;

use super::own::{OwnTool, Registry, Started, with_own_tool};
use crate::{
    defer::{Due, Ending, Runner, TOOL},
    guard::Guarded,
    ops::Operations,
};

/// The future of one tool's deferred run.
pub type RunFuture<'a> = Pin<Box<dyn Future<Output = Ending> + Send + 'a>>;
type RunFn<S> = Arc<dyn for<'a> Fn(&'a S, Due) -> RunFuture<'a> + Send + Sync>;

/// The registered runs of tools that always defer, each a `RunFn<S>`.
static REGISTRY: Registry = Registry::new();

/// The registered runs of confirm tools, each a `ConfirmRun<S>`: they defer when they
/// declare `defer` or the deployment sets a wait
/// ([`Operations::defer_confirm`](crate::ops::Operations::defer_confirm)).
static CONFIRMS: Registry = Registry::new();

/// A confirm tool's run, and whether the tool declares `defer`.
type ConfirmRun<S> = (RunFn<S>, bool);

/// Registers the deferred run of `S`'s tool `tool` (the expansion's hidden method, which
/// takes a [`Due`] that only a runner builds); the last registration of a tool stands.
pub fn register_deferred<S, F>(tool: &'static str, run: F)
where
    S: Send + Sync + 'static,
    F: for<'a> Fn(&'a S, Due) -> RunFuture<'a> + Send + Sync + 'static,
{
    let run: RunFn<S> = Arc::new(run);
    REGISTRY.insert::<S, _>(tool, run);
}

/// Registers the deferred run of `S`'s confirm tool `tool` (the expansion's hidden method,
/// which takes a [`Due`] that only a runner builds); `declared` when the tool declares
/// `defer`. Every confirm registers one, so a call stored while a deployment deferred the
/// tool still runs after the setting changes.
pub fn register_deferred_confirm<S, F>(tool: &'static str, declared: bool, run: F)
where
    S: Send + Sync + 'static,
    F: for<'a> Fn(&'a S, Due) -> RunFuture<'a> + Send + Sync + 'static,
{
    let run: RunFn<S> = Arc::new(run);
    CONFIRMS.insert::<S, ConfirmRun<S>>(tool, (run, declared));
}

/// The deferred run of `S`'s tool `tool`.
fn registered<S: 'static>(tool: &str) -> Option<RunFn<S>> {
    REGISTRY
        .get::<S, RunFn<S>>(tool)
        .or_else(|| CONFIRMS.get::<S, ConfirmRun<S>>(tool).map(|(run, _)| run))
}

/// Whether any tool of `S` may have a deferred call to run.
fn any_registered<S: 'static>() -> bool {
    REGISTRY.any::<S>() || CONFIRMS.any::<S>()
}

/// Whether a tool of `S` defers its effect on this server: a deferred tool, or a confirm
/// that declares `defer` or that `operations` defers.
fn any_deferring<S: 'static>(operations: Option<&Operations>) -> bool {
    REGISTRY.any::<S>()
        || CONFIRMS.any_where::<S, ConfirmRun<S>>(|tool, (_, declared)| {
            *declared || operations.is_some_and(|ops| ops.defers(tool))
        })
}

/// `router` with the `withdraw` route when a tool of `S` defers its effect (see
/// [`with_own_tool`]).
pub(crate) fn with_withdraw_tool<S>(
    router: ToolRouter<S>,
    operations: Option<&Operations>,
) -> ToolRouter<S>
where
    S: Guarded + Send + Sync + 'static,
{
    with_own_tool(
        router,
        any_deferring::<S>(operations),
        tool(),
        "the tools that defer their effect",
        |context: ToolCallContext<'_, S>| Box::pin(call(context)),
    )
}

/// The `withdraw` tool, as its calls start.
const WITHDRAW: OwnTool = OwnTool {
    name: TOOL,
    nothing: "Nothing was withdrawn",
    takes: "one argument, `operation_id`, the id the deferred call's result named",
};

/// The `withdraw` tool as the client lists it.
fn tool() -> Tool {
    let schema = rmcp::handler::server::common::schema_for_type::<WithdrawArgs>();
    // It writes (a call's status), but it only ever stops an effect, never causes one, so
    // it is not destructive; a repeat answers like the first and changes nothing, so it is
    // idempotent; it acts inside the server only.
    let annotations = ToolAnnotations::new()
        .read_only(false)
        .destructive(false)
        .idempotent(true)
        .open_world(false);
    Tool::new(
        TOOL,
        "Withdraw a deferred tool call by the operation_id its result named, before it runs: it then never runs. Only the person who made the call can withdraw it; withdrawing again answers like the first time, and a call that already ran answers ALREADY_RAN with its outcome.",
        schema,
    )
    .annotate(annotations)
}

/// The arguments of `withdraw`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct WithdrawArgs {
    /// The operation_id the deferred call's result named.
    operation_id: String,
}

/// One `withdraw` call: identify the caller, then withdraw their call.
async fn call<S>(context: ToolCallContext<'_, S>) -> Result<CallToolResponse, rmcp::ErrorData>
where
    S: Guarded + Send + Sync + 'static,
{
    let trace_id = crate::trace::new_id();
    let calls = context.service.guard().deferred_calls();
    let no_store = || {
        "Nothing was withdrawn: this server keeps no deferred calls (its guard has no operation store). The operator must configure Guard::with_operations.".to_owned()
    };
    let Started {
        args: WithdrawArgs { operation_id },
        owner,
        service: calls,
    } = match WITHDRAW.start(&context, &trace_id, calls, no_store) {
        Ok(started) => started,
        Err(refused) => return Ok(*refused),
    };
    match calls.withdraw(&owner, &operation_id, &trace_id).await {
        Ok(answer) => Ok(answer.into_result(&operation_id, &trace_id).into()),
        Err(error) => Ok(WITHDRAW.failed(&operation_id, &trace_id, error)),
    }
}

/// Runs the due calls of `S`'s deferred tools every `every` in the background, for as long
/// as the returned [`Runner`] lives: each call runs once when due, across restarts and
/// processes sharing the store. What is due is the database's clock's to say, against the
/// due time stored with the call: nothing a caller passes makes a call run early. `routes`
/// builds the server's router once, so every tool's run is registered. `None` when the
/// guard has no operation store or no tool of `S` defers its effect.
pub fn run_deferred<S>(
    server: S,
    routes: impl FnOnce() -> ToolRouter<S>,
    every: Duration,
) -> Option<Runner>
where
    S: Guarded + Send + Sync + 'static,
{
    drop(routes());
    if !any_registered::<S>() {
        return None;
    }
    let calls = server.guard().deferred_calls()?;
    let server = Arc::new(server);
    Some(calls.run_in_background(every, move |due: Due| {
        let server = Arc::clone(&server);
        async move { run_now::<S>(&server, due).await }
    }))
}

/// One pass of [`run_deferred`]: the calls the database's clock says are due (for the
/// testing kit's runner pass). `routes` builds the server's router once, so every tool's
/// run is registered. Returns how many calls this pass ended.
#[cfg(feature = "testing")]
pub async fn run_due_deferred<S>(
    server: &S,
    routes: impl FnOnce() -> ToolRouter<S>,
) -> Result<u64, crate::store::StoreError>
where
    S: Guarded + Send + Sync + 'static,
{
    drop(routes());
    let Some(calls) = server.guard().deferred_calls() else {
        return Ok(0);
    };
    calls.run_due(|due| run_now::<S>(server, due)).await
}

/// The run of the tool that deferred `due`; a process without that tool leaves it due.
async fn run_now<S: 'static>(server: &S, due: Due) -> Ending {
    match registered::<S>(due.tool()) {
        Some(run) => run(server, due).await,
        None => Ending::NotHere {
            reason: format!(
                "no tool {} defers its effect in this process; the call stays due until one does",
                due.tool()
            ),
        },
    }
}
