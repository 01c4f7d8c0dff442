//! The routes a router carries for guard alone: a tool that declares an undo adds
//! `rmcp-guard:undo/<tool>` (its undo, and its purge), a tool that defers its effect adds
//! `rmcp-guard:defer/<tool>` (its deferred run). Each tool's expansion adds its own, in a
//! hidden associated function that guard's `#[tool_router]` calls where the router is
//! built, so they travel with the router through clones, `+` and `merge`, as claims do
//! (see `claims`).
//!
//! They are disabled, so rmcp neither lists nor calls them, and the exposure takes them out
//! ([`Hidden::take`]) before it publishes the router: a client that names one gets the
//! answer for an unknown tool. guard calls one by its route ([`invoke`]) with a request
//! context carrying a [`Handoff`], a value of a crate-private type holding the typed input
//! (the `Window`, the `Due` only a runner builds) and, once the route ran, its typed output:
//! nothing crosses as JSON, and no code outside guard can hand a route its input.

use std::{
    borrow::Cow,
    collections::HashMap,
    sync::{Arc, Mutex},
};

use rmcp::{
    RoleServer,
    handler::server::{
        router::tool::{ToolRoute, ToolRouter},
        tool::ToolCallContext,
    },
    model::{CallToolRequestParams, CallToolResponse, CallToolResult, JsonObject, Tool},
    service::RequestContext,
};

use crate::ops::Operations;

/// How an undo's route is named: this, then the tool's name.
const UNDO: &str = "rmcp-guard:undo/";

/// How a deferred run's route is named: this, then the tool's name.
const DEFER: &str = "rmcp-guard:defer/";

/// The key of a deferred run's tool `_meta` that says whether the tool declares `defer`
/// (a confirm without it defers only when the deployment says so).
const DECLARED: &str = "declared";

/// A route's input, and its output once it ran: what guard hands a hidden route inside the
/// request context. Clones share one slot.
pub(crate) struct Handoff<I, O>(Arc<Slot<I, O>>);

struct Slot<I, O> {
    input: Mutex<Option<I>>,
    output: Mutex<Option<O>>,
}

impl<I, O> Clone for Handoff<I, O> {
    fn clone(&self) -> Self {
        Self(Arc::clone(&self.0))
    }
}

impl<I: Send + 'static, O: Send + 'static> Handoff<I, O> {
    /// The hand-off `request` carries for a route taking `I` and giving `O`, and its input,
    /// taken once.
    pub(crate) fn take(request: &RequestContext<RoleServer>) -> Option<(Self, I)> {
        let handoff = request.extensions.get::<Self>()?.clone();
        let input = lock(&handoff.0.input).take()?;
        Some((handoff, input))
    }

    /// What the route gives back.
    pub(crate) fn answer(&self, output: O) {
        *lock(&self.0.output) = Some(output);
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

/// `router` with the hidden route `name` (an undo's or a deferred run's, see [`undo_name`]
/// and [`defer_name`]) serving `serve`, disabled; `meta` is what guard reads about it
/// without calling it.
pub(crate) fn add<S, C>(
    mut router: ToolRouter<S>,
    name: String,
    meta: Option<JsonObject>,
    serve: C,
) -> ToolRouter<S>
where
    S: Send + Sync + 'static,
    C: for<'a> Fn(ToolCallContext<'a, S>) -> super::own::Answer<'a> + Send + Sync + 'static,
{
    let name: Cow<'static, str> = name.into();
    let mut tool = Tool::new(name.clone(), "", Arc::new(JsonObject::new()));
    tool.meta = meta.map(rmcp::model::MetaObject);
    // Inserted past rmcp's name check, which would warn about a name no client is meant to
    // see, and disabled, so rmcp neither lists nor calls it.
    router
        .map
        .insert(name.clone(), ToolRoute::new_dyn(tool, serve));
    router.disable_route(name);
    router
}

/// The name of `tool`'s undo route.
pub(crate) fn undo_name(tool: &str) -> String {
    format!("{UNDO}{tool}")
}

/// The name of `tool`'s deferred run's route.
pub(crate) fn defer_name(tool: &str) -> String {
    format!("{DEFER}{tool}")
}

/// The `_meta` of a deferred run's route: whether the tool declares `defer`.
pub(crate) fn defer_meta(declared: bool) -> JsonObject {
    JsonObject::from_iter([(DECLARED.to_owned(), serde_json::Value::Bool(declared))])
}

/// The answer a hidden route gives a call that carries no hand-off for it: rmcp's own for
/// a name it does not have.
pub(crate) fn not_found() -> rmcp::ErrorData {
    rmcp::ErrorData::invalid_params("tool not found", None)
}

/// What a hidden route answers once it put its output in the hand-off.
pub(crate) fn served() -> CallToolResponse {
    CallToolResult::success(Vec::new()).into()
}

/// The hidden routes taken out of a router, by tool.
pub(crate) struct Hidden<S> {
    undo: HashMap<String, ToolRoute<S>>,
    /// Each deferring tool's run, and whether the tool declares `defer`.
    deferred: HashMap<String, (ToolRoute<S>, bool)>,
}

impl<S: Send + Sync + 'static> Hidden<S> {
    /// Takes the hidden routes out of `router`, which keeps the rest.
    pub(crate) fn take(router: &mut ToolRouter<S>) -> Self {
        let names: Vec<Cow<'static, str>> = router
            .map
            .keys()
            .filter(|name| name.starts_with(UNDO) || name.starts_with(DEFER))
            .cloned()
            .collect();
        let mut hidden = Self {
            undo: HashMap::new(),
            deferred: HashMap::new(),
        };
        for name in names {
            let Some(route) = router.map.remove(&name) else {
                continue;
            };
            router.enable_route(&name);
            if let Some(tool) = name.strip_prefix(UNDO) {
                hidden.undo.insert(tool.to_owned(), route);
            } else if let Some(tool) = name.strip_prefix(DEFER) {
                let declared = route
                    .attr
                    .meta
                    .as_ref()
                    .and_then(|meta| meta.0.get(DECLARED))
                    .and_then(serde_json::Value::as_bool)
                    .unwrap_or(true);
                hidden.deferred.insert(tool.to_owned(), (route, declared));
            }
        }
        hidden
    }

    /// The undo route of `tool`, if it declares an undo.
    pub(crate) fn undo(&self, tool: &str) -> Option<&ToolRoute<S>> {
        self.undo.get(tool)
    }

    /// Whether any tool declares an undo.
    pub(crate) fn any_undo(&self) -> bool {
        !self.undo.is_empty()
    }

    /// The deferred run's route of `tool`, if it may defer.
    pub(crate) fn deferred(&self, tool: &str) -> Option<&ToolRoute<S>> {
        self.deferred.get(tool).map(|(route, _)| route)
    }

    /// Whether any tool may have a deferred call to run.
    pub(crate) fn any_deferred(&self) -> bool {
        !self.deferred.is_empty()
    }

    /// Whether a tool defers its effect on this server: one that declares `defer`, or a
    /// confirm that `operations` defers.
    pub(crate) fn any_deferring(&self, operations: Option<&Operations>) -> bool {
        self.deferred.iter().any(|(tool, (_, declared))| {
            *declared || operations.is_some_and(|ops| ops.defers(tool))
        })
    }
}

/// Calls the hidden `route` of `server` with `input`, on `request` (the context of the call
/// it serves, or a runner's, see `background`), and returns what it gave back; `None` when
/// the route gave nothing back (it is not one of guard's).
pub(crate) async fn invoke<S, I, O>(
    route: &ToolRoute<S>,
    server: &S,
    mut request: RequestContext<RoleServer>,
    input: I,
) -> Option<O>
where
    I: Send + 'static,
    O: Send + 'static,
{
    let handoff = Handoff(Arc::new(Slot {
        input: Mutex::new(Some(input)),
        output: Mutex::new(None),
    }));
    request.extensions.insert(handoff.clone());
    let params = CallToolRequestParams::new(route.attr.name.clone());
    let context = ToolCallContext::new(server, params, request);
    if (route.call)(context).await.is_err() {
        return None;
    }
    lock(&handoff.0.output).take()
}
