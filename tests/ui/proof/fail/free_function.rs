// `#[destructive]` on a free function.

use rmcp_guard::forms::Checkbox;
use std::sync::Arc;

use rmcp_guard::{Confirmed, Guard, Guarded, Preview, ToolArgs, ToolError, destructive};
use rmcp::handler::server::wrapper::Parameters;
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

#[destructive(confirm = "checkbox", preview = S::preview_delete)]
async fn delete_file(
    Parameters(args): Parameters<DeleteArgs>,
    _confirmed: Confirmed<Checkbox>,
) -> Result<String, ToolError> {
    Ok(format!("Deleted {}", args.path))
}

fn main() {}
