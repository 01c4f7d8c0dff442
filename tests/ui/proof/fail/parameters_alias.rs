// Arguments behind an alias are refused: guard recognises the arguments by type, and any
// parameter that is not `Parameters<...>` written out must be server-side context.

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

type Args = Parameters<DeleteArgs>;

#[tool_router(server_handler)]
impl S {
    /// Delete a file.
    #[destructive(confirm = "checkbox", preview = Self::preview_delete)]
    #[tool]
    async fn delete_file(
        &self,
        args: Args,
        _confirmed: Confirmed<Checkbox>,
    ) -> Result<String, ToolError> {
        Ok(format!("Deleted {}", args.0.path))
    }
}

fn main() {}
