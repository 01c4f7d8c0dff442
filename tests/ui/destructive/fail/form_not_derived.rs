// The proof's form must derive `Form`; a plain struct has no checked schema.

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

struct Approval {
    reason: String,
}

#[tool_router(server_handler)]
impl S {
    /// Delete a file.
    #[destructive(form = Approval, preview = Self::preview_delete)]
    #[tool]
    async fn delete_file(
        &self,
        Parameters(args): Parameters<DeleteArgs>,
        confirmed: Confirmed<Approval>,
    ) -> Result<String, ToolError> {
        Ok(format!("Deleted {} ({})", args.path, confirmed.reason))
    }
}

fn main() {}
