//! The `tools/call` that rmcp really dispatched. guard's exposure layer ([`crate::exposed`])
//! records the incoming call — its request context and MRTR echo — for as long as the tool
//! runs, and a guarded tool takes its call from that record: once, and only under its own
//! name. (The arguments are not copied: a sealed MRTR state only opens with the arguments it
//! was sealed over, so arguments of one's own gain nothing.)
//!
//! rmcp's `ToolCallContext` and `RequestContext` are public, so code in the server process can
//! build a context with any protocol era, capabilities, MRTR state or answer. Such a context
//! never reaches guard's flow: a plain tool that calls a guarded tool's method, or that drives
//! the flow by hand a second time with an answer it wrote, finds no dispatched call for it.

use std::sync::Mutex;

use rmcp::{
    RoleServer, handler::server::tool::ToolCallContext, model::InputResponses,
    service::RequestContext,
};

tokio::task_local! {
    static DISPATCHED: Dispatched;
    /// The approval whose decided call guard's `tasks/get` runs now (see [`running_task`]).
    static TASK_RUN: String;
}

/// What the MCP Tasks extension means for one call approved on guard's page.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) enum TaskMode {
    /// MRTR rounds (or push), as without tasks.
    #[default]
    Rounds,
    /// The server serves guard's tasks (it advertises the extension) and the client declared
    /// it: a call approved on the page on 2026-07-28 answers with a task.
    Offer,
    /// guard's `tasks/get` runs the call of the decided approval with this id: it ends as
    /// that approval was decided, and runs the effect only on that approval.
    Run(String),
}

/// The call being dispatched, until a guarded step takes it.
struct Dispatched {
    tool: String,
    call: Mutex<Option<Incoming>>,
}

/// What the client sent with one `tools/call`.
pub(crate) struct Incoming {
    pub request: RequestContext<RoleServer>,
    pub request_state: Option<String>,
    pub input_responses: Option<InputResponses>,
    pub task: TaskMode,
}

/// What `context` carries, to put on record with [`within`]; `serves_tasks` says whether
/// the server advertises the Tasks extension.
pub(crate) fn record<S>(
    context: &ToolCallContext<'_, S>,
    serves_tasks: bool,
) -> (String, Incoming) {
    let task = match TASK_RUN.try_with(Clone::clone) {
        Ok(id) => TaskMode::Run(id),
        Err(_)
            if serves_tasks
                && context
                    .request_context
                    .client_capabilities()
                    .is_some_and(|c| c.supports_tasks()) =>
        {
            TaskMode::Offer
        }
        Err(_) => TaskMode::Rounds,
    };
    let incoming = Incoming {
        request: context.request_context.clone(),
        request_state: context.request_state.clone(),
        input_responses: context.input_responses.clone(),
        task,
    };
    (context.name().to_owned(), incoming)
}

/// Runs `dispatch` (guard's `tasks/get` calling the server's `call_tool`) as the run of the
/// decided approval `id`: the call it dispatches ends as that approval was decided. Only
/// guard sets this; nothing a client sends can.
#[cfg(feature = "approval")]
pub(crate) async fn running_task<T>(id: String, dispatch: impl Future<Output = T>) -> T {
    TASK_RUN.scope(id, dispatch).await
}

/// Runs `dispatch` (rmcp routing the call to `tool`) with `incoming` on record.
pub(crate) async fn within<T>(
    (tool, incoming): (String, Incoming),
    dispatch: impl Future<Output = T>,
) -> T {
    let dispatched = Dispatched {
        tool,
        call: Mutex::new(Some(incoming)),
    };
    DISPATCHED.scope(dispatched, dispatch).await
}

/// The dispatched call, if one is on record for `tool` and nothing took it yet.
pub(crate) fn take(tool: &str) -> Option<Incoming> {
    DISPATCHED
        .try_with(|d| {
            if d.tool != tool {
                return None;
            }
            d.call.lock().unwrap_or_else(|p| p.into_inner()).take()
        })
        .ok()
        .flatten()
}
