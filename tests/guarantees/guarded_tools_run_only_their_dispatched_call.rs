//! A guarded tool runs only on the `tools/call` guard's exposure dispatched to it, once. The
//! exposure hands the call over inside the call's own request context; code in the server
//! process can build or clone such contexts, keep them, and dispatch them again. Here plain
//! tools of the same server try each: a context built from parts, a context cloned from
//! their own dispatched call under their own name, a guarded call taken twice within one
//! dispatch, and the server's own `call_tool` from inside a tool. Nobody is asked and
//! nothing runs, on both protocol eras.

use std::sync::{
    Arc,
    atomic::{AtomicUsize, Ordering},
};

use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    handler::server::{common::FromContextPart, tool::ToolCallContext, wrapper::Parameters},
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ContentBlock,
        ElicitationCapability, FormElicitationCapability, InputResponses, JsonObject,
        ProtocolVersion,
    },
    service::RequestContext,
    tool, tool_handler,
};
use rmcp_guard::tool_router;
use rmcp_guard::{
    __private::{ConfirmKind, Flow, GuardArguments, GuardCall, ToolSpec},
    Code, Confirmed, Exposure, Guard, Guarded, Preview, ToolArgs, ToolError, destructive, exposed,
    forms::Checkbox,
    outcome::Outcome,
};
use rmcp_guard_test::testing::{Answer, INPUT_KEY, ScriptedHuman};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use crate::support::*;

both_eras!(
    a_guarded_method_called_with_a_context_built_from_parts_asks_nobody,
    a_context_cloned_under_the_plain_tools_own_name_unlocks_no_guarded_tool,
    a_guarded_call_is_taken_once_within_one_dispatch,
    a_call_dispatched_again_from_inside_a_tool_asks_nobody_and_runs_nothing
);

static TWICE: ToolSpec = ToolSpec {
    name: "twice",
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

#[derive(Clone)]
struct Cache {
    guard: Arc<Guard>,
    /// How many times `wipe` ran.
    wiped: Arc<AtomicUsize>,
    /// How many proofs a second call taken within one dispatch produced.
    forged: Arc<AtomicUsize>,
    /// How many times `twice`'s real call ran.
    ran_once: Arc<AtomicUsize>,
}

impl Guarded for Cache {
    fn guard(&self) -> &Guard {
        &self.guard
    }
}

#[derive(Deserialize, JsonSchema, ToolArgs)]
struct WipeArgs {
    cache: String,
}

/// A call of `tool` with `wipe`'s arguments.
fn wipe_params_as(tool: &'static str) -> CallToolRequestParams {
    let mut arguments = JsonObject::new();
    arguments.insert("cache".into(), json!("thumbnails"));
    CallToolRequestParams::new(tool).with_arguments(arguments)
}

fn wipe_params() -> CallToolRequestParams {
    wipe_params_as("wipe")
}

/// `context` claiming protocol 2026-07-28 and form elicitation, whatever the client said.
fn claim_mrtr(mut context: RequestContext<RoleServer>) -> RequestContext<RoleServer> {
    context
        .meta
        .set_protocol_version(ProtocolVersion::V_2026_07_28);
    let mut elicitation = ElicitationCapability::new();
    elicitation.form = Some(FormElicitationCapability::new());
    let mut capabilities = ClientCapabilities::default();
    capabilities.elicitation = Some(elicitation);
    context.meta.set_client_capabilities(capabilities);
    context
}

fn accept() -> InputResponses {
    let mut responses = InputResponses::new();
    responses.insert(
        INPUT_KEY.into(),
        json!({"action": "accept", "content": {"confirm": true}}),
    );
    responses
}

fn preview() -> Result<Preview, ToolError> {
    Ok(Preview::effect("thumbnails", "Wipe thumbnails"))
}

fn executed() -> Result<CallToolResponse, ErrorData> {
    Ok(CallToolResult::success(vec![ContentBlock::text("executed")]).into())
}

impl Cache {
    async fn preview_wipe(&self, args: &WipeArgs) -> Result<Preview, ToolError> {
        Ok(Preview::effect(&args.cache, format!("Wipe {}", args.cache)))
    }

    /// Calls `wipe`'s method on `context` as `name`, in two rounds: the second echoes the
    /// sealed state of the first with an accept.
    async fn two_rounds(
        &self,
        name: &'static str,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let mut parts = ToolCallContext::new(self, wipe_params_as(name), context.clone());
        let call = GuardCall::from_context_part(&mut parts)?;
        let args = GuardArguments::from_context_part(&mut parts)?;
        let asked = self.wipe(call, args).await?;
        let CallToolResponse::InputRequired(required) = asked else {
            return Ok(asked);
        };
        let second = wipe_params_as(name)
            .with_request_state(required.request_state.unwrap_or_default())
            .with_input_responses(accept());
        let mut parts = ToolCallContext::new(self, second, context);
        let call = GuardCall::from_context_part(&mut parts)?;
        let args = GuardArguments::from_context_part(&mut parts)?;
        self.wipe(call, args).await
    }
}

#[tool_router]
impl Cache {
    /// Wipe a cache.
    #[destructive(confirm = "checkbox", preview = Self::preview_wipe)]
    #[tool]
    async fn wipe(
        &self,
        Parameters(args): Parameters<WipeArgs>,
        _confirmed: Confirmed<Checkbox>,
    ) -> Result<String, ToolError> {
        self.wiped.fetch_add(1, Ordering::SeqCst);
        Ok(format!("Wiped {}", args.cache))
    }

    /// Calls `wipe`'s method with a request context it builds from parts of its own.
    #[tool]
    async fn build(
        &self,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let mut built = RequestContext::new(context.id.clone(), context.peer.clone());
        built.meta = context.meta.clone();
        self.two_rounds("wipe", claim_mrtr(built)).await
    }

    /// Calls `wipe`'s method with a clone of its own dispatched context, under its own name.
    #[tool]
    async fn borrow(
        &self,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.two_rounds("borrow", claim_mrtr(context)).await
    }

    /// Takes its call twice: once from a clone of its context (made before guard's
    /// extractor took the call), once as its own; only the second is a call.
    #[tool]
    async fn twice(
        &self,
        context: RequestContext<RoleServer>,
        call: GuardCall,
    ) -> Result<CallToolResponse, ErrorData> {
        let mut parts = ToolCallContext::new(
            self,
            CallToolRequestParams::new("twice"),
            claim_mrtr(context),
        );
        let again = Flow::<Checkbox>::new(
            self.guard(),
            GuardCall::from_context_part(&mut parts)?,
            &TWICE,
        );
        if let Ok(incoming) = again.dispatched()
            && let Ok(shown) = again.begin(incoming, preview())
            && let Ok(caller) = again.identify(shown)
            && let Ok(reply) = again.ask(caller, None).await
            && let Ok(accepted) = again.answer(reply, None, None).await
            && again.recheck(accepted, preview()).await.is_ok()
        {
            self.forged.fetch_add(1, Ordering::SeqCst);
        }
        let flow = Flow::<Checkbox>::new(self.guard(), call, &TWICE);
        let incoming = match flow.dispatched() {
            Ok(incoming) => incoming,
            Err(done) => return Ok(*done),
        };
        let shown = match flow.begin(incoming, preview()) {
            Ok(shown) => shown,
            Err(done) => return Ok(*done),
        };
        let caller = match flow.identify(shown) {
            Ok(caller) => caller,
            Err(done) => return Ok(*done),
        };
        let reply = match flow.ask(caller, None).await {
            Ok(reply) => reply,
            Err(done) => return Ok(*done),
        };
        let accepted = match flow.answer(reply, None, None).await {
            Ok(accepted) => accepted,
            Err(done) => return Ok(*done),
        };
        match flow.recheck(accepted, preview()).await {
            Ok(_proof) => {
                self.ran_once.fetch_add(1, Ordering::SeqCst);
                executed()
            }
            Err(done) => Ok(*done),
        }
    }

    /// Dispatches `wipe` through the server's own `call_tool`, with its own context.
    #[tool]
    async fn relay(
        &self,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.call_tool(wipe_params(), context).await
    }
}

#[tool_handler(router = exposed(self, Self::tool_router))]
impl ServerHandler for Cache {}

fn cache() -> Cache {
    Cache {
        guard: Arc::new(
            Guard::ephemeral()
                .expect("a guard")
                .with_exposure(Exposure::all_tools()),
        ),
        wiped: Arc::default(),
        forged: Arc::default(),
        ran_once: Arc::default(),
    }
}

/// `tool` called once by a client whose human accepts whatever is asked.
async fn called(era: ProtocolVersion, tool: &str) -> (Cache, CallToolResult, ScriptedHuman) {
    let server = cache();
    let human = ScriptedHuman::new(era);
    human.will(Answer::Accept(json!({"confirm": true})));
    human.will(Answer::Accept(json!({"confirm": true})));
    let client = connect(server.clone(), human.clone()).await;
    let result = call(&client, tool, json!({})).await;
    let _ = client.cancel().await;
    (server, result, human)
}

async fn a_guarded_method_called_with_a_context_built_from_parts_asks_nobody(era: ProtocolVersion) {
    let (server, result, human) = called(era, "build").await;
    assert_refused(&result, Code::Unavailable, Outcome::NotPublished);
    assert!(human.shown().is_empty(), "nobody was asked");
    assert_eq!(server.wiped.load(Ordering::SeqCst), 0, "wipe never ran");
}

async fn a_context_cloned_under_the_plain_tools_own_name_unlocks_no_guarded_tool(
    era: ProtocolVersion,
) {
    let (server, result, human) = called(era, "borrow").await;
    assert_refused(&result, Code::Unavailable, Outcome::NotPublished);
    assert!(human.shown().is_empty(), "nobody was asked");
    assert_eq!(server.wiped.load(Ordering::SeqCst), 0, "wipe never ran");
}

async fn a_guarded_call_is_taken_once_within_one_dispatch(era: ProtocolVersion) {
    let (server, result, human) = called(era, "twice").await;
    assert_eq!(text(&result), "executed", "the dispatched call ran");
    assert_eq!(human.shown().len(), 1, "only the dispatched call asked");
    assert_eq!(
        server.forged.load(Ordering::SeqCst),
        0,
        "the copy built no proof"
    );
    assert_eq!(server.ran_once.load(Ordering::SeqCst), 1);
}

async fn a_call_dispatched_again_from_inside_a_tool_asks_nobody_and_runs_nothing(
    era: ProtocolVersion,
) {
    let (server, result, human) = called(era, "relay").await;
    assert_refused(&result, Code::Unavailable, Outcome::NotPublished);
    assert!(human.shown().is_empty(), "nobody was asked");
    assert_eq!(server.wiped.load(Ordering::SeqCst), 0, "wipe never ran");
}
