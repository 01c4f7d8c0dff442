// A form of a tool that offers grants cannot have a field named like the choice guard adds
// to the question (`guard_grant`): the human's answer would be ambiguous.
use std::sync::Arc;

use rmcp::{handler::server::wrapper::Parameters, tool, tool_router};
use rmcp_guard::{Confirmed, Form, Guard, Guarded, Preview, ToolArgs, ToolError, destructive};
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

#[derive(Form)]
struct Shadowing {
    /// Looks like guard's own choice.
    guard_grant: String,
}

impl S {
    async fn preview_delete(&self, args: &DeleteArgs) -> Result<Preview, ToolError> {
        Ok(Preview::effect(&args.path, format!("Delete {}", args.path)).scope("files"))
    }
}

#[tool_router(server_handler)]
impl S {
    /// Delete a file.
    #[destructive(form = Shadowing, preview = Self::preview_delete, grant = "10m", grant_calls = 5)]
    #[tool]
    async fn shadowed(
        &self,
        Parameters(args): Parameters<DeleteArgs>,
        _confirmed: Confirmed<Shadowing>,
    ) -> Result<String, ToolError> {
        Ok(args.path)
    }
}

fn main() {}
