// A tool that declares an undo must hand guard what undoing needs.
use std::sync::Arc;

use rmcp_guard::forms::Checkbox;
use rmcp_guard::undo::Window;
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

    async fn undo_delete(&self, window: Window) -> Result<serde_json::Value, ToolError> {
        let trashed: String = window.data()?;
        Ok(serde_json::json!({ "restored": trashed }))
    }

    async fn purge_delete(&self, _window: Window) -> Result<(), String> {
        Ok(())
    }
}

#[tool_router(server_handler)]
impl S {
    /// Delete a file.
    #[destructive(
        confirm = "checkbox",
        preview = Self::preview_delete,
        undo = Self::undo_delete,
        undo_within = "10m",
    )]
    #[tool]
    async fn delete_file(
        &self,
        Parameters(args): Parameters<DeleteArgs>,
        _confirmed: Confirmed<Checkbox>,
    ) -> Result<String, ToolError> {
        Ok(args.path)
    }
}

fn main() {}
