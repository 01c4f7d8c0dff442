//! The `tools/call` that rmcp really dispatched, handed from guard's exposure to the tool it
//! names inside the call itself. [`hand_off`] (run by [`crate::exposed`]'s `Exposed::call`)
//! puts a [`Dispatched`] into the call's request-context extensions: the incoming call — its
//! request context and MRTR echo — for the tool rmcp routes it to; a guarded tool takes it
//! back ([`take`]): once, and only under that tool's name. (The arguments are not copied: a
//! sealed MRTR state only opens with the arguments it was sealed over, so arguments of one's
//! own gain nothing.)
//!
//! rmcp's `ToolCallContext` and `RequestContext` are public, so code in the server process can
//! build a context with any protocol era, capabilities, MRTR state or answer. Such a context
//! never reaches guard's flow: [`Dispatched`] is a private type of this crate, so nothing
//! outside guard can make or name one, and rmcp fills a request's extensions only from its
//! transport and its own `_meta` types, never from what a client sends. A context cloned
//! from a dispatched call carries the same hand-off, which one take empties for every clone,
//! and it names the tool it was dispatched to: a plain tool that calls a guarded tool's
//! method, or that drives the flow by hand a second time with an answer it wrote, finds no
//! call for it. A context that already carried a hand-off and is dispatched again (a tool
//! relaying its own context to the server's `call_tool`) gets none.

use std::sync::{Arc, Mutex};

use rmcp::{
    RoleServer,
    handler::server::{common::FromContextPart, tool::ToolCallContext},
    model::{InputResponses, JsonObject},
    service::RequestContext,
};

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

/// The call being dispatched, until a guarded step takes it. Clones of a request context
/// share one slot, so the call is taken once whichever clone asks first.
#[derive(Clone)]
pub(crate) struct Dispatched(Arc<Slot>);

/// The tool rmcp routes the call to, and the call until it is taken.
struct Slot {
    tool: String,
    call: Mutex<Option<Incoming>>,
}

/// The mark guard's `tasks/get` puts on the call it dispatches to run the decided approval
/// with this id (see [`run_of_task`]).
#[derive(Clone)]
pub(crate) struct TaskRun(String);

/// What the client sent with one `tools/call`.
pub(crate) struct Incoming {
    pub request: RequestContext<RoleServer>,
    pub request_state: Option<String>,
    pub input_responses: Option<InputResponses>,
    pub task: TaskMode,
}

/// Hands the call in `context` to the tool it names, inside the context itself; `serves_tasks`
/// says whether the server advertises the Tasks extension. A context that already carried a
/// hand-off was dispatched once and is being dispatched again from inside a tool: it is
/// handed to no tool, so guarded tools refuse it.
pub(crate) fn hand_off<S>(context: &mut ToolCallContext<'_, S>, serves_tasks: bool) {
    let extensions = &mut context.request_context.extensions;
    let run = extensions.remove::<TaskRun>();
    if extensions.remove::<Dispatched>().is_some() {
        return;
    }
    let task = match run {
        Some(TaskRun(id)) => TaskMode::Run(id),
        None if serves_tasks
            && context
                .request_context
                .client_capabilities()
                .is_some_and(|c| c.supports_tasks()) =>
        {
            TaskMode::Offer
        }
        None => TaskMode::Rounds,
    };
    // Recorded before the hand-off goes in, so the recorded context does not hold itself.
    let incoming = Incoming {
        request: context.request_context.clone(),
        request_state: context.request_state.clone(),
        input_responses: context.input_responses.clone(),
        task,
    };
    let dispatched = Dispatched(Arc::new(Slot {
        tool: context.name().to_owned(),
        call: Mutex::new(Some(incoming)),
    }));
    context.request_context.extensions.insert(dispatched);
}

/// Marks `request` as guard's `tasks/get` dispatching the call of the decided approval `id`:
/// the call it dispatches ends as that approval was decided. Only guard marks a request; the
/// mark is taken off when the exposure hands the call on, so no tool sees it.
#[cfg(feature = "approval")]
pub(crate) fn run_of_task(request: &mut RequestContext<RoleServer>, id: String) {
    request.extensions.insert(TaskRun(id));
}

/// The call `request` carries, if it was handed to `tool` and nothing took it yet; emptied
/// for every clone of `request`.
pub(crate) fn take(request: &RequestContext<RoleServer>, tool: &str) -> Option<Incoming> {
    let dispatched = request.extensions.get::<Dispatched>()?;
    if dispatched.0.tool != tool {
        return None;
    }
    let mut call = dispatched.0.call.lock().unwrap_or_else(|p| p.into_inner());
    call.take()
}

/// [`take`], and the hand-off removed from `request`: what an extractor does.
pub(crate) fn take_out(request: &mut RequestContext<RoleServer>, tool: &str) -> Option<Incoming> {
    let taken = take(request, tool);
    request.extensions.remove::<Dispatched>();
    taken
}

/// The parts of a `tools/call` the flow needs: the request context, the raw arguments (to
/// bind MRTR state to them) and the MRTR echo. They come from the call rmcp dispatched
/// through guard's exposure, which travels inside the call's request context (see
/// `crate::entry::dispatch`), never from the context handed to the extractor, which code in
/// the process can build; without a dispatched call for this tool the flow asks nobody and
/// runs nothing.
pub struct GuardCall {
    pub(crate) request: RequestContext<RoleServer>,
    pub(crate) arguments: JsonObject,
    pub(crate) request_state: Option<String>,
    pub(crate) input_responses: Option<InputResponses>,
    /// The tool rmcp dispatched this call to, if guard's exposure dispatched it.
    pub(crate) dispatched: Option<String>,
    /// Whether an approval on the page answers with a task, or this call runs one.
    #[cfg_attr(not(feature = "approval"), allow(dead_code))]
    pub(crate) task: TaskMode,
}

impl<S> FromContextPart<ToolCallContext<'_, S>> for GuardCall {
    /// Takes the dispatched call out of the context: a second `GuardCall` from the same
    /// context, or from a clone of it, finds none.
    fn from_context_part(context: &mut ToolCallContext<'_, S>) -> Result<Self, rmcp::ErrorData> {
        let arguments = context.arguments.clone().unwrap_or_default();
        let tool = context.name().to_owned();
        Ok(match take_out(&mut context.request_context, &tool) {
            Some(incoming) => Self {
                request: incoming.request,
                arguments,
                request_state: incoming.request_state,
                input_responses: incoming.input_responses,
                dispatched: Some(tool),
                task: incoming.task,
            },
            None => Self {
                request: context.request_context.clone(),
                arguments,
                request_state: None,
                input_responses: None,
                dispatched: None,
                task: TaskMode::Rounds,
            },
        })
    }
}

impl GuardCall {
    /// The dispatched request, if guard's exposure dispatched this call to `tool`: where an
    /// operation or keyed tool reads its caller from.
    #[cfg(any(feature = "sqlite", feature = "postgres"))]
    pub(crate) fn request_of(&self, tool: &str) -> Option<&RequestContext<RoleServer>> {
        (self.dispatched.as_deref() == Some(tool)).then_some(&self.request)
    }
}
