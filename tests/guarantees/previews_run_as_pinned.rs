//! How often a form tool's preview runs, per round, on both eras: once to show the human
//! the effect, and once more right before the effect (the re-check that refuses a changed
//! target). On 2026-07-28 the retry re-runs it to compare with the sealed fingerprint, then
//! the re-check runs it again, after the state is redeemed and the answer revalidated.

use std::sync::{
    Arc,
    atomic::{AtomicUsize, Ordering},
};

use crate::support::*;
use rmcp::{
    ServerHandler,
    handler::server::wrapper::Parameters,
    model::{CallToolResponse, ServerCapabilities, ServerConfig},
    tool, tool_handler,
};
use rmcp_guard::tool_router;
use rmcp_guard::{
    Confirmed, Exposure, Guard, Guarded, Preview, ToolArgs, ToolError, destructive, exposed,
    forms::Checkbox,
};
use rmcp_guard_test::testing::{Answer, ScriptedHuman};
use serde_json::json;

#[derive(Clone)]
struct Files {
    guard: Arc<Guard>,
    previews: Arc<AtomicUsize>,
    deleted: Arc<AtomicUsize>,
}

impl Guarded for Files {
    fn guard(&self) -> &Guard {
        &self.guard
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema, ToolArgs)]
struct PathArgs {
    /// The file to delete.
    path: String,
}

#[tool_router]
impl Files {
    /// Delete a file, after the user ticks a box.
    #[destructive(confirm = "checkbox", preview = Self::preview_delete)]
    #[tool]
    async fn delete_file(
        &self,
        Parameters(args): Parameters<PathArgs>,
        _confirmed: Confirmed<Checkbox>,
    ) -> Result<String, ToolError> {
        self.deleted.fetch_add(1, Ordering::SeqCst);
        Ok(format!("Deleted {}.", args.path))
    }

    async fn preview_delete(&self, args: &PathArgs) -> Result<Preview, ToolError> {
        self.previews.fetch_add(1, Ordering::SeqCst);
        Ok(Preview::effect(&args.path, format!("Delete {}", args.path)))
    }
}

#[tool_handler(router = exposed(self, Self::tool_router))]
impl ServerHandler for Files {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

impl Files {
    fn new() -> Self {
        let guard = Guard::ephemeral()
            .expect("guard")
            .with_exposure(Exposure::all_tools());
        Self {
            guard: Arc::new(guard),
            previews: Arc::default(),
            deleted: Arc::default(),
        }
    }

    fn previews(&self) -> usize {
        self.previews.swap(0, Ordering::SeqCst)
    }
}

#[tokio::test]
async fn push_runs_the_preview_before_asking_and_before_the_effect() {
    let server = Files::new();
    let human = ScriptedHuman::new(PUSH);
    human.will(Answer::Accept(json!({"confirm": true})));
    let client = connect(server.clone(), human).await;
    let result = call(&client, "delete_file", json!({"path": "old.log"})).await;
    assert!(!is_error(&result), "{}", text(&result));
    assert_eq!(server.deleted.load(Ordering::SeqCst), 1);
    assert_eq!(server.previews(), 2, "one call: shown, then re-checked");
}

#[tokio::test]
async fn mrtr_runs_the_preview_once_to_ask_and_twice_on_the_accepted_retry() {
    let server = Files::new();
    let human = ScriptedHuman::new(MRTR);
    human.will(Answer::Accept(json!({"confirm": true})));
    let client = connect(server.clone(), human).await;

    let first = call_once(&client, params("delete_file", json!({"path": "old.log"}))).await;
    assert!(matches!(first, CallToolResponse::InputRequired(_)));
    assert_eq!(server.previews(), 1, "the asking round shows the effect");

    let result = call(&client, "delete_file", json!({"path": "old.log"})).await;
    assert!(!is_error(&result), "{}", text(&result));
    assert_eq!(server.deleted.load(Ordering::SeqCst), 1);
    assert_eq!(
        server.previews(),
        1 + 2,
        "asking round: 1; accepted retry: the fingerprint check and the re-check"
    );
}
