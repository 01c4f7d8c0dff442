//! What guard keeps for a tool's undo and deferred run travels with the router the tool is
//! in, not with its server's type: each tool adds hidden routes where its `#[tool_router]`
//! is built, and they survive `+` like the tools do. A server whose undoable and deferred
//! tools sit in two impl blocks added together publishes `undo` and `withdraw` and serves
//! both; a runner, started with no client connected, runs the due call. A router without
//! the deferred tool publishes no `withdraw` and gets no runner, whatever other routers of
//! the same server type were built. The hidden routes are never a client's to call: each
//! name answers like a tool that does not exist, and nothing runs.

use std::{
    collections::BTreeSet,
    path::Path,
    sync::{Arc, Mutex},
    time::Duration,
};

use crate::support::{deferred::SOON_DUE, *};
use rmcp::{
    ServerHandler,
    handler::server::{router::tool::ToolRouter, wrapper::Parameters},
    model::{CallToolResult, ErrorCode, ProtocolVersion, ServerCapabilities, ServerConfig},
    tool, tool_handler,
};
use rmcp_guard::tool_router;
use rmcp_guard::{
    Confirmed, Exposure, Guard, Guarded, Preview, ToolArgs, ToolError, destructive, exposed,
    forms::Checkbox,
    ops::{Operations, SqliteStore},
    outcome::Outcome,
    undo::{Reversible, Window},
};
use rmcp_guard_test::testing::{Answer, ScriptedHuman};
use serde_json::{Value, json};

both_eras!(
    undo_and_withdraw_serve_tools_of_two_routers_added_together,
    a_client_cannot_call_a_hidden_route,
);

/// A desk of notes: `shred_note` can be undone for ten minutes, `file_note` files a note
/// two seconds after the human confirms. Each is in its own `#[tool_router]`.
#[derive(Clone)]
struct Desk {
    guard: Arc<Guard>,
    /// The routes it publishes.
    routes: fn() -> ToolRouter<Desk>,
    notes: Arc<Mutex<BTreeSet<String>>>,
    filed: Arc<Mutex<Vec<String>>>,
}

impl Guarded for Desk {
    fn guard(&self) -> &Guard {
        &self.guard
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema, ToolArgs)]
struct NoteArgs {
    /// The note.
    note: String,
}

#[tool_router(router = undoable_tools)]
impl Desk {
    /// Shred a note; it can be undone for ten minutes.
    #[destructive(
        confirm = "checkbox",
        preview = Self::preview_note,
        undo = Self::unshred,
        undo_within = "10m",
    )]
    #[tool]
    async fn shred_note(
        &self,
        Parameters(args): Parameters<NoteArgs>,
        _confirmed: Confirmed<Checkbox>,
    ) -> Result<Reversible<String, String>, ToolError> {
        self.notes.lock().unwrap().remove(&args.note);
        Ok(Reversible::new(
            format!("Shredded {}.", args.note),
            args.note,
        ))
    }
}

#[tool_router(router = deferred_tools)]
impl Desk {
    /// File a note away, two seconds after the user confirms.
    #[destructive(confirm = "checkbox", preview = Self::preview_note, defer = "2s")]
    #[tool]
    async fn file_note(
        &self,
        Parameters(args): Parameters<NoteArgs>,
        _confirmed: Confirmed<Checkbox>,
    ) -> Result<String, ToolError> {
        self.notes.lock().unwrap().remove(&args.note);
        self.filed.lock().unwrap().push(args.note.clone());
        Ok(format!("Filed {}.", args.note))
    }
}

impl Desk {
    /// A desk with the notes `groceries` and `taxes`, its undo windows and deferred calls in `store`,
    /// calls made by `alice`.
    fn new(store: SqliteStore) -> Self {
        let guard = Guard::ephemeral()
            .expect("guard key")
            .with_exposure(Exposure::all_tools())
            .with_operations(Operations::new(store, local_identity("alice")));
        Self {
            guard: Arc::new(guard),
            routes: Self::tool_router,
            notes: Arc::new(Mutex::new(BTreeSet::from([
                "groceries".to_owned(),
                "taxes".to_owned(),
            ]))),
            filed: Arc::default(),
        }
    }

    /// Both impls' tools in one router.
    fn tool_router() -> ToolRouter<Self> {
        Self::undoable_tools() + Self::deferred_tools()
    }

    async fn preview_note(&self, args: &NoteArgs) -> Result<Preview, ToolError> {
        if !self.notes.lock().unwrap().contains(&args.note) {
            return Ok(Preview::nothing(format!("There is no note {}.", args.note)));
        }
        Ok(Preview::effect(
            &args.note,
            format!("Put away {}.", args.note),
        ))
    }

    async fn unshred(&self, window: Window) -> Result<Value, ToolError> {
        let note: String = window.data()?;
        self.notes.lock().unwrap().insert(note.clone());
        Ok(json!({ "restored": note }))
    }

    fn has(&self, note: &str) -> bool {
        self.notes.lock().unwrap().contains(note)
    }

    fn filed(&self) -> Vec<String> {
        self.filed.lock().unwrap().clone()
    }
}

#[tool_handler(router = exposed(self, self.routes))]
impl ServerHandler for Desk {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

fn store_at(dir: &Path) -> SqliteStore {
    SqliteStore::open(dir.join("operations.db")).expect("operation store")
}

/// `tool` of `note`, the human ticking the box, on a fresh connection.
async fn put_away(desk: &Desk, era: &ProtocolVersion, tool: &str, note: &str) -> CallToolResult {
    let human = ScriptedHuman::new(era.clone());
    human.will(Answer::Accept(json!({"confirm": true})));
    let client = connect(desk.clone(), human).await;
    let result = call(&client, tool, json!({"note": note})).await;
    let _ = client.cancel().await;
    result
}

/// The id guard's tag on `result` names.
fn operation_id(result: &CallToolResult) -> String {
    let meta = serde_json::to_value(&result.meta).expect("meta");
    meta["guard"]["operationId"]
        .as_str()
        .unwrap_or_else(|| panic!("the result names no operation: {meta}"))
        .to_owned()
}

async fn undo_and_withdraw_serve_tools_of_two_routers_added_together(era: ProtocolVersion) {
    let dir = tempfile::tempdir().expect("dir");
    let desk = Desk::new(store_at(dir.path()));
    let client = connect(desk.clone(), ScriptedHuman::new(era.clone())).await;
    assert_eq!(
        tool_names(&client).await,
        ["file_note", "shred_note", "undo", "withdraw"],
        "guard's own tools, for the tools of both routers; no hidden route is listed"
    );
    let _ = client.cancel().await;

    let shredded = put_away(&desk, &era, "shred_note", "groceries").await;
    assert_natural(&shredded, Outcome::Executed);
    assert!(!desk.has("groceries"), "shredded");
    let client = connect(desk.clone(), ScriptedHuman::new(era.clone())).await;
    let id = operation_id(&shredded);
    let undone = call(&client, "undo", json!({"operation_id": id})).await;
    let _ = client.cancel().await;
    assert_natural(&undone, Outcome::Undone);
    assert!(
        desk.has("groceries"),
        "the undo of the first router's tool ran"
    );

    let scheduled = put_away(&desk, &era, "file_note", "groceries").await;
    assert_natural(&scheduled, Outcome::Scheduled);
    assert!(desk.filed().is_empty(), "nothing ran yet");
    // Started with no client connected: the run's context reaches no one, and needs no one.
    let _runner =
        rmcp_guard::run_deferred(desk.clone(), Desk::tool_router, Duration::from_millis(100))
            .expect("a runner: the desk has a deferred tool and a store");
    tokio::time::sleep(SOON_DUE).await;
    for _ in 0..50 {
        if !desk.filed().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        desk.filed(),
        ["groceries"],
        "the second router's tool ran, once due"
    );
    assert!(!desk.has("groceries"));
}

async fn a_client_cannot_call_a_hidden_route(era: ProtocolVersion) {
    let dir = tempfile::tempdir().expect("dir");
    let desk = Desk::new(store_at(dir.path()));
    let shredded = put_away(&desk, &era, "shred_note", "groceries").await;
    assert_natural(&shredded, Outcome::Executed);
    let id = operation_id(&shredded);
    let scheduled = put_away(&desk, &era, "file_note", "taxes").await;
    assert_natural(&scheduled, Outcome::Scheduled);

    let client = connect(desk.clone(), ScriptedHuman::new(era.clone())).await;
    let unknown = call_error(&client, "no_such_tool", json!({})).await;
    assert_eq!(unknown.code, ErrorCode::INVALID_PARAMS, "{unknown:?}");
    for (hidden, args) in [
        ("rmcp-guard:undo/shred_note", json!({"operation_id": id})),
        ("rmcp-guard:undo/shred_note", json!({})),
        ("rmcp-guard:defer/file_note", json!({})),
        ("rmcp-guard:claim/shred_note", json!({})),
    ] {
        let refused = call_error(&client, hidden, args).await;
        assert_eq!(
            (&refused.code, &refused.message, &refused.data),
            (&unknown.code, &unknown.message, &unknown.data),
            "{hidden} must answer like a tool that does not exist"
        );
    }
    let _ = client.cancel().await;
    assert!(!desk.has("groceries"), "nothing was undone");
    assert!(desk.has("taxes") && desk.filed().is_empty(), "nothing ran");
}

/// Built from one of the two routers only, the desk has the undo of its tool and no deferred
/// run: `withdraw` is not published and no runner starts, though the full router of the
/// same server type was built in this process.
#[tokio::test]
async fn guards_tools_follow_the_router_not_the_server_type() {
    let dir = tempfile::tempdir().expect("dir");
    let built = Desk::tool_router();
    assert!(
        built.has_route("file_note"),
        "the deferred tool's router was built"
    );
    let desk = Desk {
        routes: Desk::undoable_tools,
        ..Desk::new(store_at(dir.path()))
    };
    let client = connect(desk.clone(), ScriptedHuman::new(PUSH)).await;
    assert_eq!(tool_names(&client).await, ["shred_note", "undo"]);
    let _ = client.cancel().await;
    let runner = rmcp_guard::run_deferred(desk, Desk::undoable_tools, Duration::from_secs(1));
    assert!(runner.is_none(), "no tool of this router defers");
}
