// The built-in checkbox form: one box the human must tick. guard writes honest annotations
// into the `#[tool]` and keeps the proof out of the model-visible input schema.

use std::sync::Arc;

use rmcp_guard::forms::Checkbox;
use rmcp_guard::{Confirmed, Guard, Guarded, Preview, ToolArgs, ToolError, destructive};
use rmcp::{handler::server::wrapper::Parameters, tool, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Clone)]
struct S {
    guard: Arc<Guard>,
}

impl Guarded for S {
    fn guard(&self) -> &Guard {
        &self.guard
    }
}

#[derive(Deserialize, JsonSchema, ToolArgs)]
struct DeleteArgs {
    /// Path of the file.
    path: String,
}

impl S {
    async fn preview_delete(&self, args: &DeleteArgs) -> Result<Preview, ToolError> {
        Ok(Preview::effect(&args.path, format!("Delete {}", args.path)))
    }
}

#[tool_router(server_handler)]
impl S {
    /// Delete a file.
    #[destructive(
        confirm = "checkbox",
        preview = Self::preview_delete,
        message = "Delete this file?",
        timeout = "90s",
        on_decline = "Nothing was deleted.",
        on_cancel = "Cancelled; nothing was deleted."
    )]
    #[tool(annotations(title = "Delete file", open_world_hint = false))]
    async fn delete_file(
        &self,
        Parameters(args): Parameters<DeleteArgs>,
        confirmed: Confirmed<Checkbox>,
    ) -> Result<String, ToolError> {
        assert!(confirmed.confirm);
        Ok(format!("Deleted {} ({})", args.path, confirmed.trace_id()))
    }
}

fn main() {
    let router = S::tool_router();
    let tool = router.get("delete_file").expect("the tool is routed");
    let hints = tool.annotations.as_ref().expect("guard sets annotations");
    assert_eq!(hints.destructive_hint, Some(true));
    assert_eq!(hints.read_only_hint, Some(false));
    assert_eq!(hints.idempotent_hint, Some(false));
    // The author's own annotations survive.
    assert_eq!(hints.title.as_deref(), Some("Delete file"));
    assert_eq!(hints.open_world_hint, Some(false));
    // Only the model-visible argument is in the schema; the proof is not.
    let properties = tool.input_schema["properties"].as_object().unwrap();
    assert_eq!(properties.keys().collect::<Vec<_>>(), ["path"]);
}
