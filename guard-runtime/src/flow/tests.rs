//! The flow's core on calls handed off as guard's exposure hands them: no macro, no router
//! and no client, only a request context and the hand-off it carries.

use rmcp::{
    RoleServer, ServerHandler,
    handler::server::{common::FromContextPart, tool::ToolCallContext},
    model::{
        CallToolRequestParams, CallToolResponse, ClientCapabilities, ElicitationCapability,
        FormElicitationCapability, Implementation, InitializeRequestParams, InputResponses,
        NumberOrString, ProtocolVersion,
    },
    service::{Peer, RequestContext, RunningService, serve_directly},
};
use serde_json::json;

use super::{ConfirmKind, Flow, GuardCall, ToolSpec, mrtr::INPUT_KEY};
use crate::{entry::dispatch, forms::Checkbox, guard::Guard, outcome::Outcome, preview::Preview};

static WIPE: ToolSpec = ToolSpec {
    name: "wipe",
    confirm: ConfirmKind::Checkbox,
    message: None,
    timeout: None,
    on_decline: None,
    on_cancel: None,
    approval: None,
    undo_within: None,
    defer: None,
    grant: None,
};

/// The server a call's request context belongs to; it is never asked anything.
struct Nobody;

impl ServerHandler for Nobody {}

static NOBODY: Nobody = Nobody;

/// A served connection whose peer the request contexts name.
struct Session {
    _running: RunningService<RoleServer, Nobody>,
    _client: tokio::io::DuplexStream,
    peer: Peer<RoleServer>,
}

impl Session {
    fn new() -> Self {
        let (server, client) = tokio::io::duplex(4096);
        let info = InitializeRequestParams::new(
            ClientCapabilities::default(),
            Implementation::new("unit", "0"),
        );
        let running = serve_directly(Nobody, server, Some(info));
        let peer = running.peer().clone();
        Self {
            _running: running,
            _client: client,
            peer,
        }
    }

    /// A request on `era` from a client that declared form elicitation, or nothing.
    fn request(&self, era: ProtocolVersion, can_ask: bool) -> RequestContext<RoleServer> {
        let mut request = RequestContext::new(NumberOrString::Number(1), self.peer.clone());
        request.meta.set_protocol_version(era);
        let mut capabilities = ClientCapabilities::default();
        if can_ask {
            let mut elicitation = ElicitationCapability::new();
            elicitation.form = Some(FormElicitationCapability::new());
            capabilities.elicitation = Some(elicitation);
        }
        request.meta.set_client_capabilities(capabilities);
        request
    }
}

fn params(tool: &'static str) -> CallToolRequestParams {
    let mut arguments = rmcp::model::JsonObject::new();
    arguments.insert("cache".into(), json!("thumbnails"));
    CallToolRequestParams::new(tool).with_arguments(arguments)
}

/// `params` on `request`, handed off as guard's exposure hands a call rmcp dispatched.
fn handed_off(
    request: RequestContext<RoleServer>,
    params: CallToolRequestParams,
) -> ToolCallContext<'static, Nobody> {
    let mut context = ToolCallContext::new(&NOBODY, params, request);
    dispatch::hand_off(&mut context, false);
    context
}

fn guard_call(context: &mut ToolCallContext<'_, Nobody>) -> GuardCall {
    match GuardCall::from_context_part(context) {
        Ok(call) => call,
        Err(error) => panic!("the extractor never refuses: {error:?}"),
    }
}

fn target() -> Result<Preview, crate::error::ToolError> {
    Ok(Preview::effect("thumbnails", "Wipe the thumbnails cache"))
}

fn outcome(done: Box<CallToolResponse>) -> Option<Outcome> {
    match *done {
        CallToolResponse::Complete(result) => Outcome::of(&result),
        _ => None,
    }
}

fn accept() -> InputResponses {
    let mut responses = InputResponses::new();
    responses.insert(
        INPUT_KEY.into(),
        json!({"action": "accept", "content": {"confirm": true}}),
    );
    responses
}

/// The first round of `call` on 2026-07-28: the sealed state the client must echo.
async fn first_round(guard: &Guard, call: GuardCall) -> String {
    let flow = Flow::<Checkbox>::new(guard, call, &WIPE);
    let Ok(incoming) = flow.dispatched() else {
        panic!("the exposure handed the call over")
    };
    let Ok(shown) = flow.begin(incoming, target()) else {
        panic!("the preview states an effect")
    };
    let Ok(caller) = flow.identify(shown) else {
        panic!("the tool keeps nothing for its caller")
    };
    let Err(done) = flow.ask(caller, None).await else {
        panic!("nobody answered yet")
    };
    match *done {
        CallToolResponse::InputRequired(required) => required.request_state.expect("sealed"),
        other => panic!("the human is asked first, got {other:?}"),
    }
}

/// What a call ends with when it goes no further than asking: a call guard's exposure did
/// not hand over ends at the first step, before the preview's finding is used.
async fn ending_of(guard: &Guard, call: GuardCall) -> Option<Outcome> {
    let flow = Flow::<Checkbox>::new(guard, call, &WIPE);
    let incoming = match flow.dispatched() {
        Ok(incoming) => incoming,
        Err(done) => return outcome(done),
    };
    let shown = match flow.begin(incoming, target()) {
        Ok(shown) => shown,
        Err(done) => return outcome(done),
    };
    let caller = match flow.identify(shown) {
        Ok(caller) => caller,
        Err(done) => return outcome(done),
    };
    match flow.ask(caller, None).await {
        Ok(_) => panic!("the call went past the question"),
        Err(done) => outcome(done),
    }
}

#[tokio::test]
async fn a_handed_off_call_asks_once_and_its_accept_reaches_the_proof() {
    let session = Session::new();
    let guard = Guard::ephemeral().expect("a guard");
    let mut context = handed_off(
        session.request(ProtocolVersion::V_2026_07_28, true),
        params("wipe"),
    );
    let state = first_round(&guard, guard_call(&mut context)).await;

    let retry = params("wipe")
        .with_request_state(state)
        .with_input_responses(accept());
    let mut context = handed_off(session.request(ProtocolVersion::V_2026_07_28, true), retry);
    let flow = Flow::<Checkbox>::new(&guard, guard_call(&mut context), &WIPE);
    let Ok(incoming) = flow.dispatched() else {
        panic!("the exposure handed the call over")
    };
    let Ok(shown) = flow.begin(incoming, target()) else {
        panic!("the preview states an effect")
    };
    let Ok(caller) = flow.identify(shown) else {
        panic!("the tool keeps nothing for its caller")
    };
    let Ok(asked) = flow.ask(caller, None).await else {
        panic!("the retry carries the human's reply")
    };
    let Ok(accepted) = flow.answer(asked, None, None).await else {
        panic!("the echoed accept is this call's answer")
    };
    let Ok(rechecked) = flow.recheck(accepted, target()).await else {
        panic!("the target did not change")
    };
    let (confirmed, _owner) = rechecked.confirmed();
    assert!(confirmed.confirm);
    assert_eq!(confirmed.target(), "thumbnails");
}

#[tokio::test]
async fn an_accept_for_a_target_that_changed_since_is_state_changed() {
    let session = Session::new();
    let guard = Guard::ephemeral().expect("a guard");
    let mut context = handed_off(
        session.request(ProtocolVersion::V_2026_07_28, true),
        params("wipe"),
    );
    let state = first_round(&guard, guard_call(&mut context)).await;
    let retry = params("wipe")
        .with_request_state(state)
        .with_input_responses(accept());
    let mut context = handed_off(session.request(ProtocolVersion::V_2026_07_28, true), retry);
    let flow = Flow::<Checkbox>::new(&guard, guard_call(&mut context), &WIPE);
    let Ok(incoming) = flow.dispatched() else {
        panic!("the exposure handed the call over")
    };
    let Ok(shown) = flow.begin(incoming, target()) else {
        panic!("the preview states an effect")
    };
    let Ok(caller) = flow.identify(shown) else {
        panic!("the tool keeps nothing for its caller")
    };
    let Ok(asked) = flow.ask(caller, None).await else {
        panic!("the retry carries the human's reply")
    };
    let Ok(accepted) = flow.answer(asked, None, None).await else {
        panic!("the echoed accept is this call's answer")
    };
    let changed = Ok(Preview::effect(
        "thumbnails",
        "Wipe the thumbnails and the originals",
    ));
    let Err(done) = flow.recheck(accepted, changed).await else {
        panic!("a changed target builds no proof")
    };
    assert_eq!(outcome(done), Some(Outcome::StateChanged));
}

#[tokio::test]
async fn a_client_that_cannot_ask_ends_the_handed_off_call_unasked() {
    let session = Session::new();
    let guard = Guard::ephemeral().expect("a guard");
    for era in [ProtocolVersion::V_2025_11_25, ProtocolVersion::V_2026_07_28] {
        let mut context = handed_off(session.request(era, false), params("wipe"));
        let call = guard_call(&mut context);
        assert_eq!(
            ending_of(&guard, call).await,
            Some(Outcome::UnsupportedClient)
        );
    }
}

#[tokio::test]
async fn a_context_built_in_process_is_no_call_and_asks_nobody() {
    let session = Session::new();
    let guard = Guard::ephemeral().expect("a guard");
    let mut built = ToolCallContext::new(
        &NOBODY,
        params("wipe").with_input_responses(accept()),
        session.request(ProtocolVersion::V_2026_07_28, true),
    );
    let call = guard_call(&mut built);
    assert_eq!(ending_of(&guard, call).await, Some(Outcome::NotPublished));
}

#[tokio::test]
async fn a_hand_off_is_taken_once_whichever_clone_of_the_context_asks() {
    let session = Session::new();
    let guard = Guard::ephemeral().expect("a guard");
    for clone_first in [false, true] {
        let mut context = handed_off(
            session.request(ProtocolVersion::V_2026_07_28, true),
            params("wipe"),
        );
        let mut clone =
            ToolCallContext::new(&NOBODY, params("wipe"), context.request_context.clone());
        let (first, second) = if clone_first {
            (guard_call(&mut clone), guard_call(&mut context))
        } else {
            (guard_call(&mut context), guard_call(&mut clone))
        };
        assert!(
            context
                .request_context
                .extensions
                .get::<dispatch::Dispatched>()
                .is_none()
                && clone
                    .request_context
                    .extensions
                    .get::<dispatch::Dispatched>()
                    .is_none(),
            "the extractor removes the hand-off"
        );
        assert_eq!(ending_of(&guard, second).await, Some(Outcome::NotPublished));
        first_round(&guard, first).await;
    }
}

#[tokio::test]
async fn a_hand_off_serves_only_the_tool_it_was_dispatched_to() {
    let session = Session::new();
    let guard = Guard::ephemeral().expect("a guard");
    let dispatched = handed_off(
        session.request(ProtocolVersion::V_2026_07_28, true),
        params("list"),
    );
    // Under the guarded tool's name, and under the dispatched tool's own name.
    for tool in ["wipe", "list"] {
        let mut borrowed =
            ToolCallContext::new(&NOBODY, params(tool), dispatched.request_context.clone());
        let call = guard_call(&mut borrowed);
        assert_eq!(ending_of(&guard, call).await, Some(Outcome::NotPublished));
    }
}

#[tokio::test]
async fn a_context_dispatched_again_from_inside_a_call_hands_off_nothing() {
    let session = Session::new();
    let guard = Guard::ephemeral().expect("a guard");
    let dispatched = handed_off(
        session.request(ProtocolVersion::V_2026_07_28, true),
        params("list"),
    );
    let mut relayed = handed_off(dispatched.request_context.clone(), params("wipe"));
    assert!(
        relayed
            .request_context
            .extensions
            .get::<dispatch::Dispatched>()
            .is_none()
    );
    let call = guard_call(&mut relayed);
    assert_eq!(ending_of(&guard, call).await, Some(Outcome::NotPublished));
}

#[cfg(feature = "approval")]
#[tokio::test]
async fn a_task_run_is_guards_mark_and_is_taken_off_before_the_tool_runs() {
    use crate::entry::dispatch::TaskMode;

    let session = Session::new();
    let mut request = session.request(ProtocolVersion::V_2026_07_28, true);
    dispatch::run_of_task(&mut request, "task-1".into());
    let mut context = handed_off(request, params("wipe"));
    assert!(
        context
            .request_context
            .extensions
            .get::<dispatch::TaskRun>()
            .is_none()
    );
    let call = guard_call(&mut context);
    assert_eq!(call.task, TaskMode::Run("task-1".into()));
    assert!(call.request.extensions.get::<dispatch::TaskRun>().is_none());

    let unmarked = handed_off(
        session.request(ProtocolVersion::V_2026_07_28, true),
        params("wipe"),
    );
    let mut unmarked = unmarked;
    assert_eq!(guard_call(&mut unmarked).task, TaskMode::Rounds);
}
