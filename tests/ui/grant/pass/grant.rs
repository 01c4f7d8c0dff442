// A tool that offers bounded grants: a checkbox and a custom form, each with a duration and
// a count; the preview states the scope a grant covers.
use std::sync::Arc;

use rmcp::{handler::server::wrapper::Parameters, tool, tool_router};
use rmcp_guard::forms::Checkbox;
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
struct Why {
    /// Why the file goes.
    reason: String,
}

impl S {
    async fn preview_delete(&self, args: &DeleteArgs) -> Result<Preview, ToolError> {
        Ok(Preview::effect(&args.path, format!("Delete {}", args.path)).scope("files in logs/"))
    }
}

#[tool_router(server_handler)]
impl S {
    /// Delete a file.
    #[destructive(confirm = "checkbox", preview = Self::preview_delete, grant = "10m", grant_calls = 20)]
    #[tool]
    async fn delete_file(
        &self,
        Parameters(args): Parameters<DeleteArgs>,
        _confirmed: Confirmed<Checkbox>,
    ) -> Result<String, ToolError> {
        Ok(args.path)
    }

    /// Delete a file, saying why.
    #[destructive(form = Why, preview = Self::preview_delete, grant = "8h", grant_calls = 100)]
    #[tool]
    async fn delete_with_reason(
        &self,
        Parameters(args): Parameters<DeleteArgs>,
        confirmed: Confirmed<Why>,
    ) -> Result<String, ToolError> {
        Ok(format!("{} ({})", args.path, confirmed.form().reason))
    }
}

fn main() {}
