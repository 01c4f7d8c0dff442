//! The one `undo` tool of a server whose tools declare an undo (`#[destructive(undo = ...)]`).
//!
//! Each such tool adds its hidden undo route where its router is built ([`undo_route`], see
//! `hidden`): the route calls the author's undo, or purge, on the window guard hands it.
//! The exposure takes those routes out of the router it publishes, and publishes an `undo`
//! route beside the tools when there is one, filtered by the same exposure (list `undo` in
//! the allowlist; read-only mode hides it, as it writes). The route takes `operation_id`,
//! identifies the caller from trusted context, and runs [`crate::undo::UndoWindows::undo`]
//! with the undo route of the tool that opened the window, on its own request context. The
//! purge runners take the hidden routes from the router the server's routes build, and call
//! them on a context that reaches no client (see `background`).

use std::{sync::Arc, time::Duration};

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
    caller::no_store,
    hidden::{self, Handoff, Hidden, invoke},
    own::{OwnTool, Started, with_own_tool},
};
use crate::{
    error::{Code, ToolError},
    guard::Guarded,
    undo::{Purger, Restored, TOOL, Window},
};

/// What a purge gives back: `Err` with the reason the window stays open.
type Purged = Result<(), String>;

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

/// Checks `undo` against the undo signature; the expansion calls it at `undo = ...`.
pub const fn assert_undo<S, F: for<'a> WindowFn<'a, S, Restored>>(_: &F) {}

/// Checks `purge` against the purge signature; the expansion calls it at `purge = ...`.
pub const fn assert_purge<S, F: for<'a> WindowFn<'a, S, Result<(), String>>>(_: &F) {}

/// `router` with `tool`'s hidden undo route: it runs `undo` on the window it is handed, or
/// `purge` when it is handed one to make final (a tool without a purge has nothing to make
/// final). The expansion of a tool that declares an undo calls it where the router is built.
pub fn undo_route<S, U, P>(
    router: ToolRouter<S>,
    tool: &'static str,
    undo: U,
    purge: Option<P>,
) -> ToolRouter<S>
where
    S: Send + Sync + 'static,
    U: for<'a> WindowFn<'a, S, Restored> + Send + Sync + 'static,
    P: for<'a> WindowFn<'a, S, Purged> + Send + Sync + 'static,
{
    let undo = Arc::new(undo);
    let purge = purge.map(Arc::new);
    hidden::add(
        router,
        hidden::undo_name(tool),
        None,
        move |context: ToolCallContext<'_, S>| {
            let (undo, purge) = (Arc::clone(&undo), purge.clone());
            Box::pin(async move {
                let server = context.service;
                let request = &context.request_context;
                if let Some((handoff, window)) = Handoff::<Window, Restored>::take(request) {
                    handoff.answer(undo.call(server, window).await);
                } else if let Some((handoff, window)) = Handoff::<Window, Purged>::take(request) {
                    let purged = match &purge {
                        Some(purge) => purge.call(server, window).await,
                        None => Ok(()),
                    };
                    handoff.answer(purged);
                } else {
                    return Err(hidden::not_found());
                }
                Ok(hidden::served())
            })
        },
    )
}

/// `router` with the `undo` route when a tool of `hidden` declares an undo (see
/// [`with_own_tool`]); its calls undo through `hidden`'s routes.
pub(crate) fn with_undo_tool<S>(router: ToolRouter<S>, hidden: &Arc<Hidden<S>>) -> ToolRouter<S>
where
    S: Guarded + Send + Sync + 'static,
{
    let routes = Arc::clone(hidden);
    with_own_tool(
        router,
        hidden.any_undo(),
        tool(),
        "the tools that declare an undo",
        move |context: ToolCallContext<'_, S>| Box::pin(call(context, Arc::clone(&routes))),
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

/// One `undo` call: identify the caller, then undo their window once, through the undo
/// route of the tool that opened it.
async fn call<S>(
    context: ToolCallContext<'_, S>,
    hidden: Arc<Hidden<S>>,
) -> Result<CallToolResponse, rmcp::ErrorData>
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
    let request = context.request_context.clone();
    let answer = windows
        .undo(&owner, &operation_id, &trace_id, |window| async move {
            let tool = window.tool.clone();
            let restored = match hidden.undo(&tool) {
                Some(route) => invoke(route, server, request, window).await,
                None => None,
            };
            restored.unwrap_or_else(|| {
                Err(ToolError::new(
                    Code::Unavailable,
                    format!("The tool {tool} no longer declares an undo in this server."),
                ))
            })
        })
        .await;
    match answer {
        Ok(answer) => Ok(answer.into_result(&operation_id, &trace_id).into()),
        Err(error) => Ok(UNDO.failed(&operation_id, &trace_id, error)),
    }
}

/// Runs the purges of `S`'s tools every `every` in the background, for as long as the
/// returned [`Purger`] lives: each window whose deadline passed is purged once, across
/// restarts and processes sharing the store. What is due is the database's clock's to say,
/// against the deadline stored with the window: neither a caller nor this process's clock
/// makes a window close early. `routes` builds the server's router once, for
/// its tools' hidden undo routes. `None` when the guard has no operation store or no tool
/// of `S` declares an undo.
pub fn purge_undo_windows<S>(
    server: S,
    routes: impl FnOnce() -> ToolRouter<S>,
    every: Duration,
) -> Option<Purger>
where
    S: Guarded + Send + Sync + 'static,
{
    let hidden = Hidden::take(&mut routes());
    if !hidden.any_undo() {
        return None;
    }
    let windows = server.guard().undo_windows()?;
    let request = background::request();
    let (server, hidden) = (Arc::new(server), Arc::new(hidden));
    Some(windows.purge_in_background(every, move |window: Window| {
        let (server, hidden, request) = (Arc::clone(&server), Arc::clone(&hidden), request.clone());
        async move { purge_now(&*server, &*hidden, request, window).await }
    }))
}

/// One pass of [`purge_undo_windows`]: the windows the database's clock says are due, for a
/// deployment that schedules purges itself. It takes no time: a window the human was told
/// they could still undo is never purged, whatever the caller's clock says. `routes` builds
/// the server's router once, for its tools' hidden undo routes. Returns how many windows
/// this pass purged.
pub async fn purge_due_undo_windows<S>(
    server: &S,
    routes: impl FnOnce() -> ToolRouter<S>,
) -> Result<u64, crate::store::StoreError>
where
    S: Guarded + Send + Sync + 'static,
{
    let hidden = Hidden::take(&mut routes());
    let Some(windows) = server.guard().undo_windows() else {
        return Ok(0);
    };
    let request = background::request();
    windows
        .purge_due(|window| purge_now(server, &hidden, request.clone(), window))
        .await
}

/// The purge of the tool that opened `window`, through its undo route on `request`.
async fn purge_now<S: Send + Sync + 'static>(
    server: &S,
    hidden: &Hidden<S>,
    request: RequestContext<RoleServer>,
    window: Window,
) -> Purged {
    let tool = window.tool.clone();
    let purged = match hidden.undo(&tool) {
        Some(route) => invoke(route, server, request, window).await,
        None => None,
    };
    purged.unwrap_or_else(|| {
        Err(format!(
            "no tool {tool} declares an undo in this process; the window stays open until one does"
        ))
    })
}
