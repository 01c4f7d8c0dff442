//! The one `withdraw` tool of a server whose tools defer their effect
//! (`#[destructive(defer = ...)]`, `#[confirm(defer = ...)]`, or a confirm the deployment
//! defers with `Operations::defer_confirm`), and the runner of their due calls.
//!
//! Each such tool adds its hidden deferred-run route where its router is built
//! ([`deferred_route`], see `hidden`): the route runs the tool's hidden run on the `Due` it
//! is handed, which only a runner builds. The exposure takes those routes out of the router
//! it publishes, and publishes a `withdraw` route beside the tools when one of them defers,
//! filtered by the same exposure (list `withdraw` in the allowlist; read-only mode hides
//! it, as it writes). The route takes `operation_id`, identifies the caller from trusted
//! context, and runs [`crate::defer::DeferredCalls::withdraw`]. [`run_deferred`] takes the
//! hidden routes from the router the server's routes build and runs due calls in the
//! background, each through the route of the tool that deferred it, on a context that
//! reaches no client (see `background`).

use std::{future::Future, pin::Pin, sync::Arc, time::Duration};

use rmcp::schemars::{self, JsonSchema};
use rmcp::{
    RoleServer,
    handler::server::{router::tool::ToolRouter, tool::ToolCallContext},
    model::{CallToolResponse, Tool, ToolAnnotations},
    service::RequestContext,
};
use serde::Deserialize;

use super::{
    background,
    hidden::{self, Handoff, Hidden, invoke},
    own::{OwnTool, Started, with_own_tool},
};
use crate::{
    defer::{Due, Ending, Runner, TOOL},
    guard::Guarded,
    ops::Operations,
};

/// The future of one tool's deferred run.
pub type RunFuture<'a> = Pin<Box<dyn Future<Output = Ending> + Send + 'a>>;

/// `router` with `tool`'s hidden deferred-run route: it runs `run` (the expansion's hidden
/// method, which takes a [`Due`] that only a runner builds) on the due call it is handed.
/// `declared` when the tool declares `defer`; a confirm without it defers only when the
/// deployment says so ([`Operations::defer_confirm`]), and every confirm adds its route, so
/// a call stored while a deployment deferred the tool still runs after the setting
/// changes. The expansion of a tool that may defer calls it where the router is built.
pub fn deferred_route<S, F>(
    router: ToolRouter<S>,
    tool: &'static str,
    declared: bool,
    run: F,
) -> ToolRouter<S>
where
    S: Send + Sync + 'static,
    F: for<'a> Fn(&'a S, Due) -> RunFuture<'a> + Send + Sync + 'static,
{
    let run = Arc::new(run);
    hidden::add(
        router,
        hidden::defer_name(tool),
        Some(hidden::defer_meta(declared)),
        move |context: ToolCallContext<'_, S>| {
            let run = Arc::clone(&run);
            Box::pin(async move {
                let Some((handoff, due)) = Handoff::<Due, Ending>::take(&context.request_context)
                else {
                    return Err(hidden::not_found());
                };
                handoff.answer(run(context.service, due).await);
                Ok(hidden::served())
            })
        },
    )
}

/// `router` with the `withdraw` route when a tool of `hidden` defers its effect (see
/// [`with_own_tool`]).
pub(crate) fn with_withdraw_tool<S>(
    router: ToolRouter<S>,
    hidden: &Hidden<S>,
    operations: Option<&Operations>,
) -> ToolRouter<S>
where
    S: Guarded + Send + Sync + 'static,
{
    with_own_tool(
        router,
        hidden.any_deferring(operations),
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
/// builds the server's router once, for its tools' hidden deferred-run routes. `None` when
/// the guard has no operation store or no tool of `S` defers its effect.
pub fn run_deferred<S>(
    server: S,
    routes: impl FnOnce() -> ToolRouter<S>,
    every: Duration,
) -> Option<Runner>
where
    S: Guarded + Send + Sync + 'static,
{
    let hidden = Hidden::take(&mut routes());
    if !hidden.any_deferred() {
        return None;
    }
    let calls = server.guard().deferred_calls()?;
    let request = background::request();
    let (server, hidden) = (Arc::new(server), Arc::new(hidden));
    Some(calls.run_in_background(every, move |due: Due| {
        let (server, hidden, request) = (Arc::clone(&server), Arc::clone(&hidden), request.clone());
        async move { run_now(&*server, &*hidden, request, due).await }
    }))
}

/// One pass of [`run_deferred`]: the calls the database's clock says are due (for the
/// testing kit's runner pass). `routes` builds the server's router once, for its tools'
/// hidden deferred-run routes. Returns how many calls this pass ended.
#[cfg(feature = "testing")]
pub async fn run_due_deferred<S>(
    server: &S,
    routes: impl FnOnce() -> ToolRouter<S>,
) -> Result<u64, crate::store::StoreError>
where
    S: Guarded + Send + Sync + 'static,
{
    let hidden = Hidden::take(&mut routes());
    let Some(calls) = server.guard().deferred_calls() else {
        return Ok(0);
    };
    let request = background::request();
    calls
        .run_due(|due| run_now(server, &hidden, request.clone(), due))
        .await
}

/// The run of the tool that deferred `due`, through its route on `request`; a process
/// without that tool leaves it due.
async fn run_now<S: Send + Sync + 'static>(
    server: &S,
    hidden: &Hidden<S>,
    request: RequestContext<RoleServer>,
    due: Due,
) -> Ending {
    let tool = due.tool().to_owned();
    let ended = match hidden.deferred(&tool) {
        Some(route) => invoke(route, server, request, due).await,
        None => None,
    };
    ended.unwrap_or_else(|| Ending::NotHere {
        reason: format!(
            "no tool {tool} defers its effect in this process; the call stays due until one does"
        ),
    })
}
