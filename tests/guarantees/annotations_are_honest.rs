//! Tool annotations follow from guard's attributes; a tool without one keeps the spec's
//! conservative defaults (no annotations: readOnlyHint false, destructiveHint true,
//! idempotentHint false).

use std::sync::Arc;

use rmcp::{ServiceExt, handler::server::wrapper::Parameters, model::ProtocolVersion, tool};
use rmcp_guard::tool_router;
use rmcp_guard::{
    Confirmed, Guard, Guarded, Preview, ToolArgs, ToolError, destructive, forms::Checkbox,
    read_only,
};
use rmcp_guard_test::testing::ScriptedHuman;
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Clone)]
struct Hints {
    guard: Arc<Guard>,
}

impl Guarded for Hints {
    fn guard(&self) -> &Guard {
        &self.guard
    }
}

#[derive(Deserialize, JsonSchema, ToolArgs)]
struct Key {
    key: String,
}

impl Hints {
    async fn preview(&self, args: &Key) -> Result<Preview, ToolError> {
        Ok(Preview::effect(&args.key, format!("Remove {}", args.key)))
    }
}

#[tool_router(server_handler)]
impl Hints {
    #[destructive(confirm = "checkbox", preview = Self::preview)]
    #[tool(description = "Remove a key")]
    async fn remove(&self, Parameters(args): Parameters<Key>, _ok: Confirmed<Checkbox>) -> String {
        args.key
    }

    #[destructive(confirm = "checkbox", preview = Self::preview, idempotent)]
    #[tool(annotations(title = "Clear a key", open_world_hint = false))]
    async fn clear(&self, Parameters(args): Parameters<Key>, _ok: Confirmed<Checkbox>) -> String {
        args.key
    }

    #[read_only]
    #[tool(description = "Read a key")]
    async fn read(&self, Parameters(args): Parameters<Key>) -> String {
        args.key
    }

    #[tool(description = "Unguarded")]
    async fn plain(&self, Parameters(args): Parameters<Key>) -> String {
        args.key
    }
}

#[tokio::test]
async fn annotations_are_honest_and_unguarded_tools_keep_spec_defaults() {
    let server = Hints {
        guard: Arc::new(Guard::ephemeral().unwrap()),
    };
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    let client = ScriptedHuman::new(ProtocolVersion::V_2025_11_25)
        .connect(client_io)
        .await
        .unwrap();
    let tools = client.list_all_tools().await.unwrap();
    let hints = |name: &str| {
        let tool = tools.iter().find(|t| t.name == name).unwrap();
        tool.annotations.clone()
    };

    let remove = hints("remove").expect("guarded tools are annotated");
    assert_eq!(remove.read_only_hint, Some(false));
    assert_eq!(remove.destructive_hint, Some(true));
    assert_eq!(remove.idempotent_hint, Some(false));

    let clear = hints("clear").expect("guarded tools are annotated");
    assert_eq!(clear.idempotent_hint, Some(true), "declared idempotent");
    assert_eq!(clear.destructive_hint, Some(true));
    assert_eq!(
        clear.title.as_deref(),
        Some("Clear a key"),
        "author's title kept"
    );
    assert_eq!(
        clear.open_world_hint,
        Some(false),
        "author's open-world hint kept"
    );

    let read = hints("read").expect("read-only tools are annotated");
    assert_eq!(read.read_only_hint, Some(true));
    assert_eq!(read.destructive_hint, Some(false));

    assert!(
        hints("plain").is_none(),
        "an unguarded tool claims nothing, so clients apply the spec's conservative defaults"
    );
}
