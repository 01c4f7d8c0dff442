//! Where a call enters: the router a server publishes ([`exposed`]), which keeps only the
//! tools its [`Exposure`] allows, audits calls of the others, and hands each dispatched
//! `tools/call` to the tool it names, inside the call's own request context (see
//! `dispatch`). Guarded tools, operation tools and keyed tools take their call from that
//! hand-off, never from a context code in the process could have built.

#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod background;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) mod caller;
pub(crate) mod claims;
pub(crate) mod dispatch;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) mod hidden;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod own;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) mod undo;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) mod withdraw;

use std::{any::TypeId, collections::BTreeSet, sync::Arc};

use rmcp::{
    handler::server::{router::tool::ToolRouter, tool::ToolCallContext},
    model::CallToolResponse,
};

use crate::{
    allowlist::Exposure,
    audit::{Recorder, recorder_key},
    guard::{Guard, Guarded},
    outcome::Outcome,
};

/// The server's tools as its [`Exposure`] allows: use it as rmcp's router,
/// `#[tool_handler(router = rmcp_guard::exposed(self, Self::tool_router))]`.
/// A guard without an exposure enables no tool (fail closed), and says so in the log.
/// Calls of tools that are not published are audited (see [`Exposed`]).
///
/// Given the router's function (`Self::tool_router`), the filtered router is built once and
/// shared by every call until a reload changes the listed tools; given a router already
/// built (`Self::tool_router()`), it is filtered again on every call.
pub fn exposed<S, R>(server: &S, routes: R) -> Arc<Exposed<S>>
where
    S: Guarded + Send + Sync + 'static,
    R: Routes<S>,
{
    match server.guard().exposure() {
        Some(exposure) => routes.exposed_by(exposure, server.guard()),
        None => {
            // Said once: every call of a server without one would say it again.
            static SAID: std::sync::Once = std::sync::Once::new();
            SAID.call_once(|| {
                crate::allowlist::no_tool_enabled(
                    "this guard states no exposure; configure one with Guard::with_exposure(Exposure::allowlist(FILE)), or Exposure::all_tools() to publish every tool on purpose",
                );
            });
            Arc::new(Exposed::new(None, routes.build()).audited(server.guard().recorder()))
        }
    }
}

/// What [`exposed`] takes: the router's function (built once per allowlist generation) or a
/// router (filtered on every call).
pub trait Routes<S>: routes::Sealed {
    #[doc(hidden)]
    fn exposed_by(self, exposure: &Exposure, guard: &Guard) -> Arc<Exposed<S>>;
    #[doc(hidden)]
    fn build(self) -> ToolRouter<S>;
}

mod routes {
    pub trait Sealed {}
    impl<S> Sealed for rmcp::handler::server::router::tool::ToolRouter<S> {}
    impl<S, F: FnOnce() -> rmcp::handler::server::router::tool::ToolRouter<S>> Sealed for F {}
}

impl<S: Guarded + Send + Sync + 'static> Routes<S> for ToolRouter<S> {
    fn exposed_by(self, exposure: &Exposure, guard: &Guard) -> Arc<Exposed<S>> {
        Arc::new(
            Exposed::new(Some(exposure), with_guards_tools(self, guard)).audited(guard.recorder()),
        )
    }

    fn build(self) -> ToolRouter<S> {
        self
    }
}

impl<S, F> Routes<S> for F
where
    S: Guarded + Send + Sync + 'static,
    F: FnOnce() -> ToolRouter<S> + 'static,
{
    fn exposed_by(self, exposure: &Exposure, guard: &Guard) -> Arc<Exposed<S>> {
        let audit = guard.recorder();
        // A shared exposure may serve guards with different audit logs: one router each.
        let log = audit.as_ref().map_or(0, recorder_key);
        let key = (TypeId::of::<S>(), TypeId::of::<F>(), log);
        exposure.cached(key, |exposure| {
            let exposed =
                Exposed::new(Some(exposure), with_guards_tools(self(), guard)).audited(audit);
            let generation = exposed.generation;
            (Arc::new(exposed), generation)
        })
    }

    fn build(self) -> ToolRouter<S> {
        self()
    }
}

/// The author's routes without the hidden routes their tools added (see `hidden`), and
/// the tools guard adds to them: `undo`, when a tool declares one, and `withdraw`, when a
/// tool defers its effect, if the guard has a store to keep undo windows and deferred calls
/// in. The `undo` route keeps the hidden routes it undoes through.
#[cfg_attr(
    not(any(feature = "sqlite", feature = "postgres")),
    allow(unused_mut, unused_variables)
)]
fn with_guards_tools<S: Guarded + Send + Sync + 'static>(
    mut router: ToolRouter<S>,
    guard: &Guard,
) -> ToolRouter<S> {
    #[cfg(any(feature = "sqlite", feature = "postgres"))]
    {
        let hidden = Arc::new(hidden::Hidden::take(&mut router));
        if guard.operations().is_some() {
            let router = undo::with_undo_tool(router, &hidden);
            return withdraw::with_withdraw_tool(router, &hidden, guard.operations());
        }
    }
    router
}

/// The tools a server publishes, as [`exposed`](crate::exposed) returns them: rmcp's
/// router with only the enabled routes, used by `#[tool_handler(router = …)]` exactly like
/// a [`ToolRouter`] (it dereferences to one). A call of a hidden or unknown tool gets
/// rmcp's own answer for a name it never had, and leaves a `guard::audit` event.
pub struct Exposed<S> {
    router: ToolRouter<S>,
    /// The tools the server defines but does not publish now.
    hidden: BTreeSet<String>,
    /// The generation of the listed tools this was built from.
    generation: u64,
    /// The guard's audit log, for calls of tools that are not published.
    #[cfg(any(feature = "sqlite", feature = "postgres"))]
    audit: Recorder,
}

/// How much of a called name an audit event keeps: the model chooses it (control
/// characters are replaced, so it cannot forge log lines).
const AUDITED_NAME_CHARS: usize = 128;

impl<S: Send + Sync + 'static> Exposed<S> {
    /// The enabled routes of `all`, as `exposure` allows (`None`: no tool).
    pub(crate) fn new(exposure: Option<&Exposure>, all: ToolRouter<S>) -> Self {
        let defined: Vec<String> = all.list_all().into_iter().map(|t| t.name.into()).collect();
        let (router, generation) = match exposure {
            Some(exposure) => exposure.apply_at(all),
            None => (ToolRouter::new(), 0),
        };
        let hidden = defined
            .into_iter()
            .filter(|name| !router.has_route(name))
            .collect();
        Self {
            router,
            hidden,
            generation,
            #[cfg(any(feature = "sqlite", feature = "postgres"))]
            audit: None,
        }
    }

    /// Records refused calls in `log` too.
    #[cfg_attr(
        not(any(feature = "sqlite", feature = "postgres")),
        allow(unused_mut, unused_variables)
    )]
    pub(crate) fn audited(mut self, log: Recorder) -> Self {
        #[cfg(any(feature = "sqlite", feature = "postgres"))]
        {
            self.audit = log;
        }
        self
    }

    /// rmcp's call, audited when the name is not published. A server whose `get_info`
    /// advertises the Tasks extension (see [`crate::tasks`]) has its page approvals answered
    /// as tasks, for clients that declared the extension.
    pub async fn call(
        &self,
        mut context: ToolCallContext<'_, S>,
    ) -> Result<CallToolResponse, rmcp::ErrorData>
    where
        S: rmcp::ServerHandler,
    {
        let name = context.name();
        if !self.router.has_route(name) {
            let outcome = if self.hidden.contains(name) {
                Outcome::HiddenTool
            } else {
                Outcome::UnknownTool
            };
            let shown: String = name
                .chars()
                .take(AUDITED_NAME_CHARS)
                .map(|c| if c.is_control() { '?' } else { c })
                .collect();
            let event = crate::audit::Event::new(shown, outcome, crate::trace::new_id());
            event.mirror();
            #[cfg(any(feature = "sqlite", feature = "postgres"))]
            if let Some(log) = &self.audit {
                log.send(event);
            }
        }
        let serves_tasks = context.service.get_info().capabilities.supports_tasks();
        dispatch::hand_off(&mut context, serves_tasks);
        self.router.call(context).await
    }
}

impl<S> std::ops::Deref for Exposed<S> {
    type Target = ToolRouter<S>;
    fn deref(&self) -> &ToolRouter<S> {
        &self.router
    }
}
