// A grant is short and counted: `grant` and `grant_calls` go together, the duration is at
// most 8h, and the count is from 1 to 100.
use std::sync::Arc;

use rmcp::{handler::server::wrapper::Parameters, tool, tool_router};
use rmcp_guard::forms::Checkbox;
use rmcp_guard::{Confirmed, Guard, Guarded, Preview, ToolArgs, ToolError, destructive};
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
        Ok(Preview::effect(&args.path, format!("Delete {}", args.path)).scope("files"))
    }
}

#[tool_router(server_handler)]
impl S {
    /// Delete a file.
    #[destructive(confirm = "checkbox", preview = Self::preview_delete, grant = "10m")]
    #[tool]
    async fn no_count(
        &self,
        Parameters(args): Parameters<DeleteArgs>,
        _confirmed: Confirmed<Checkbox>,
    ) -> Result<String, ToolError> {
        Ok(args.path)
    }

    /// Delete a file.
    #[destructive(confirm = "checkbox", preview = Self::preview_delete, grant_calls = 5)]
    #[tool]
    async fn no_duration(
        &self,
        Parameters(args): Parameters<DeleteArgs>,
        _confirmed: Confirmed<Checkbox>,
    ) -> Result<String, ToolError> {
        Ok(args.path)
    }

    /// Delete a file.
    #[destructive(confirm = "checkbox", preview = Self::preview_delete, grant = "1d", grant_calls = 5)]
    #[tool]
    async fn too_long(
        &self,
        Parameters(args): Parameters<DeleteArgs>,
        _confirmed: Confirmed<Checkbox>,
    ) -> Result<String, ToolError> {
        Ok(args.path)
    }

    /// Delete a file.
    #[destructive(confirm = "checkbox", preview = Self::preview_delete, grant = "10m", grant_calls = 0)]
    #[tool]
    async fn no_calls(
        &self,
        Parameters(args): Parameters<DeleteArgs>,
        _confirmed: Confirmed<Checkbox>,
    ) -> Result<String, ToolError> {
        Ok(args.path)
    }

    /// Delete a file.
    #[destructive(confirm = "checkbox", preview = Self::preview_delete, grant = "10m", grant_calls = 101)]
    #[tool]
    async fn too_many(
        &self,
        Parameters(args): Parameters<DeleteArgs>,
        _confirmed: Confirmed<Checkbox>,
    ) -> Result<String, ToolError> {
        Ok(args.path)
    }
}

fn main() {}
