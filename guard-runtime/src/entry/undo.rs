//! The one `undo` tool of a server whose tools declare an undo (`#[destructive(undo = ...)]`).
//!
//! Each such tool registers its undo and purge functions for its server type when its route
//! is built (its input schema is claimed then, see `claims`); the router [`crate::exposed`]
//! publishes then carries an `undo` route beside the tools, filtered by the same exposure
//! (list `undo` in the allowlist; read-only mode hides it, as it writes). The route takes
//! `operation_id`, identifies the caller from trusted context, and runs
//! [`crate::undo::UndoWindows::undo`] with the undo of the tool that opened the window.

use std::{future::Future, pin::Pin, sync::Arc, time::Duration};

use rmcp::schemars::{self, JsonSchema};
use rmcp::{
    handler::server::{router::tool::ToolRouter, tool::ToolCallContext},
    model::{CallToolResponse, Tool, ToolAnnotations},
};
use serde::Deserialize;

use super::{
    caller::no_store,
    own::{OwnTool, Registry, Started, with_own_tool},
};
use crate::{
    error::{Code, ToolError},
    guard::Guarded,
    undo::{Purger, Restored, TOOL, Window},
};

type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;
type UndoFn<S> = Arc<dyn for<'a> Fn(&'a S, Window) -> BoxFuture<'a, Restored> + Send + Sync>;
type PurgeFn<S> =
    Arc<dyn for<'a> Fn(&'a S, Window) -> BoxFuture<'a, Result<(), String>> + Send + Sync>;

/// One tool's undo and purge.
struct Registered<S> {
    undo: UndoFn<S>,
    purge: Option<PurgeFn<S>>,
}

impl<S> Clone for Registered<S> {
    fn clone(&self) -> Self {
        Self {
            undo: Arc::clone(&self.undo),
            purge: self.purge.clone(),
        }
    }
}

/// The registered tools' undos and purges, each a `Registered<S>`.
static REGISTRY: Registry = Registry::new();

/// An author's async function `fn(&self, Window) -> impl Future<Output = O>`, for every
/// borrow of the server. Implemented for every function of that shape; the bound that
/// `undo = ...` and `purge = ...` name, so a wrong signature is reported there.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an undo or purge function of this server",
    label = "expected `async fn(&self, window: rmcp_guard::undo::Window) -> {O}`",
    note = "an `undo` function is `async fn undo_x(&self, window: Window) -> Result<serde_json::Value, ToolError>` (refuse with a `STATE_CHANGED` ToolError when the target is no longer as the effect left it); a `purge` function is `async fn purge_x(&self, window: Window) -> Result<(), String>`"
)]
pub trait WindowFn<'a, S: 'a, O> {
    /// The future the function returns for this borrow.
    type Fut: Future<Output = O> + Send + 'a;
    /// Calls the function.
    fn call(&self, server: &'a S, window: Window) -> Self::Fut;
}

impl<'a, S: 'a, O, F, Fut> WindowFn<'a, S, O> for F
where
    F: Fn(&'a S, Window) -> Fut,
    Fut: Future<Output = O> + Send + 'a,
{
    type Fut = Fut;
    fn call(&self, server: &'a S, window: Window) -> Fut {
        self(server, window)
    }
}

/// Pins the closure to the higher-ranked signature the registry stores.
fn boxed<S, O, C>(c: C) -> C
where
    C: for<'a> Fn(&'a S, Window) -> BoxFuture<'a, O>,
{
    c
}

/// Checks `undo` against the undo signature; the expansion calls it at `undo = ...`.
pub const fn assert_undo<S, F: for<'a> WindowFn<'a, S, Restored>>(_: &F) {}

/// Checks `purge` against the purge signature; the expansion calls it at `purge = ...`.
pub const fn assert_purge<S, F: for<'a> WindowFn<'a, S, Result<(), String>>>(_: &F) {}

/// Registers the undo (and purge, if any) of `S`'s tool `tool`; the last registration of a
/// tool stands (a router built again registers the same functions).
pub fn register_undo<S, U, P>(tool: &'static str, undo: U, purge: Option<P>)
where
    S: Send + Sync + 'static,
    U: for<'a> WindowFn<'a, S, Restored> + Send + Sync + 'static,
    P: for<'a> WindowFn<'a, S, Result<(), String>> + Send + Sync + 'static,
{
    let undo: UndoFn<S> = Arc::new(boxed(move |s: &S, w| Box::pin(undo.call(s, w))));
    let purge = purge
        .map(|purge| -> PurgeFn<S> { Arc::new(boxed(move |s: &S, w| Box::pin(purge.call(s, w)))) });
    REGISTRY.insert::<S, _>(tool, Registered { undo, purge });
}

/// The undo and purge `S`'s tool `tool` registered.
fn registered<S: 'static>(tool: &str) -> Option<Registered<S>> {
    REGISTRY.get::<S, Registered<S>>(tool)
}

/// Whether any tool of `S` declares an undo.
fn any_registered<S: 'static>() -> bool {
    REGISTRY.any::<S>()
}

/// `router` with the `undo` route when a tool of `S` declares an undo (see
/// [`with_own_tool`]).
pub(crate) fn with_undo_tool<S>(router: ToolRouter<S>) -> ToolRouter<S>
where
    S: Guarded + Send + Sync + 'static,
{
    with_own_tool(
        router,
        any_registered::<S>(),
        tool(),
        "the tools that declare an undo",
        |context: ToolCallContext<'_, S>| Box::pin(call(context)),
    )
}

/// The `undo` tool, as its calls start.
const UNDO: OwnTool = OwnTool {
    name: TOOL,
    nothing: "Nothing was restored",
    takes: "one argument, `operation_id`, the id the effect's result named",
};

/// The `undo` tool as the client lists it.
fn tool() -> Tool {
    let schema = rmcp::handler::server::common::schema_for_type::<UndoArgs>();
    // It writes (it restores what an effect removed), so it is not read-only; the author's
    // undo may touch what it restores, so it is not claimed harmless; a repeat answers with
    // the first undo's result and changes nothing, so it is idempotent; it acts inside the
    // server only.
    let annotations = ToolAnnotations::new()
        .read_only(false)
        .destructive(true)
        .idempotent(true)
        .open_world(false);
    Tool::new(
        TOOL,
        "Undo the effect of an earlier tool call by the operation_id its result named, while its undo window is open. Only the person who caused the effect can undo it, once; undoing again answers with the first result.",
        schema,
    )
    .annotate(annotations)
}

/// The arguments of `undo`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct UndoArgs {
    /// The operation_id the effect's result named.
    operation_id: String,
}

/// One `undo` call: identify the caller, then undo their window once.
async fn call<S>(context: ToolCallContext<'_, S>) -> Result<CallToolResponse, rmcp::ErrorData>
where
    S: Guarded + Send + Sync + 'static,
{
    let trace_id = crate::trace::new_id();
    let server = context.service;
    let windows = server.guard().undo_windows();
    let Started {
        args: UndoArgs { operation_id },
        owner,
        service: windows,
    } = match UNDO.start(&context, &trace_id, windows, no_store) {
        Ok(started) => started,
        Err(refused) => return Ok(*refused),
    };
    let answer = windows
        .undo(&owner, &operation_id, &trace_id, |window| async move {
            match registered::<S>(&window.tool) {
                Some(r) => (r.undo)(server, window).await,
                None => Err(ToolError::new(
                    Code::Unavailable,
                    format!(
                        "The tool {} no longer declares an undo in this server.",
                        window.tool
                    ),
                )),
            }
        })
        .await;
    match answer {
        Ok(answer) => Ok(answer.into_result(&operation_id, &trace_id).into()),
        Err(error) => Ok(UNDO.failed(&operation_id, &trace_id, error)),
    }
}

/// Runs the purges of `S`'s tools every `every` in the background, for as long as the
/// returned [`Purger`] lives: each window whose deadline passed is purged once, across
/// restarts and processes sharing the store . `routes`
/// builds the server's router once, so every tool's purge is registered. `None` when the
/// guard has no operation store or no tool of `S` declares an undo.
pub fn purge_undo_windows<S>(
    server: S,
    routes: impl FnOnce() -> ToolRouter<S>,
    every: Duration,
) -> Option<Purger>
where
    S: Guarded + Send + Sync + 'static,
{
    drop(routes());
    if !any_registered::<S>() {
        return None;
    }
    let windows = server.guard().undo_windows()?;
    let server = Arc::new(server);
    Some(windows.purge_in_background(every, move |window: Window| {
        let server = Arc::clone(&server);
        async move { purge_now::<S>(&server, window).await }
    }))
}

/// One pass of [`purge_undo_windows`], at `now` (ms since the Unix epoch): for a deployment
/// that schedules purges itself. `routes` builds the server's router once, so every tool's
/// purge is registered. Returns how many windows this pass purged.
pub async fn purge_due_undo_windows<S>(
    server: &S,
    routes: impl FnOnce() -> ToolRouter<S>,
    now: i64,
) -> Result<u64, crate::store::StoreError>
where
    S: Guarded + Send + Sync + 'static,
{
    drop(routes());
    let Some(windows) = server.guard().undo_windows() else {
        return Ok(0);
    };
    windows
        .purge_due(now, |window| purge_now::<S>(server, window))
        .await
}

/// The purge of the tool that opened `window`; a tool without one has nothing to make final.
pub(crate) async fn purge_now<S: 'static>(server: &S, window: Window) -> Result<(), String> {
    match registered::<S>(&window.tool) {
        Some(Registered {
            purge: Some(purge), ..
        }) => purge(server, window).await,
        Some(_) => Ok(()),
        None => Err(format!(
            "no tool {} declares an undo in this process; the window stays open until one does",
            window.tool
        )),
    }
}
