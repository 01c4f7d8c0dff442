// A preview with the wrong signature is one spanned error that states the expected one:
// here it takes the path as a `String` instead of the tool's arguments, and in the second
// tool it is not `async`.

use rmcp_guard::forms::Checkbox;
use std::sync::Arc;

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
    path: String,
}

impl S {
    async fn preview_delete(&self, args: &DeleteArgs) -> Result<Preview, ToolError> {
        Ok(Preview::effect(&args.path, format!("Delete {}", args.path)))
    }
}


impl S {
    async fn preview_by_path(&self, path: &String) -> Result<Preview, ToolError> {
        Ok(Preview::effect(path, "Delete it"))
    }

    fn preview_sync(&self, args: &DeleteArgs) -> Result<Preview, ToolError> {
        Ok(Preview::effect(&args.path, "Delete it"))
    }
}

#[tool_router(server_handler)]
impl S {
    /// Delete a file.
    #[destructive(confirm = "checkbox", preview = Self::preview_by_path)]
    #[tool]
    async fn delete_file(
        &self,
        Parameters(args): Parameters<DeleteArgs>,
        _confirmed: Confirmed<Checkbox>,
    ) -> Result<String, ToolError> {
        Ok(format!("Deleted {}", args.path))
    }

    /// Delete another file.
    #[destructive(confirm = "checkbox", preview = Self::preview_sync)]
    #[tool]
    async fn delete_other(
        &self,
        Parameters(args): Parameters<DeleteArgs>,
        _confirmed: Confirmed<Checkbox>,
    ) -> Result<String, ToolError> {
        Ok(format!("Deleted {}", args.path))
    }
}

fn main() {}
