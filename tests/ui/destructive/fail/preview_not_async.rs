// A preview must be an `async fn`: guard awaits it before asking and again before the
// effect runs. A plain `fn` is refused with the signature to write, with or without
// arguments, and for a batch tool.

use std::sync::Arc;

use rmcp::{handler::server::wrapper::Parameters, tool, tool_router};
use rmcp_guard::{
    Confirmed, Guard, Guarded, Preview, ToolArgs, ToolError, batch::{Batch, Picked, Report},
    destructive, forms::Checkbox,
};
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
    fn preview_delete(&self, args: &DeleteArgs) -> Result<Preview, ToolError> {
        Ok(Preview::effect(&args.path, "Delete it"))
    }

    fn preview_cache(&self) -> Result<Preview, ToolError> {
        Ok(Preview::effect("cache", "Empty the cache"))
    }

    fn preview_logs(&self) -> Result<Batch, ToolError> {
        Ok(Batch::new("every log", "Each picked log is deleted."))
    }
}

#[tool_router(server_handler)]
impl S {
    /// Delete a file.
    #[destructive(confirm = "checkbox", preview = Self::preview_delete)]
    #[tool]
    async fn delete_file(
        &self,
        Parameters(args): Parameters<DeleteArgs>,
        _confirmed: Confirmed<Checkbox>,
    ) -> Result<String, ToolError> {
        Ok(format!("Deleted {}", args.path))
    }

    /// Empty the cache.
    #[destructive(confirm = "checkbox", preview = Self::preview_cache)]
    #[tool]
    async fn empty_cache(&self, _confirmed: Confirmed<Checkbox>) -> Result<String, ToolError> {
        Ok("Emptied".into())
    }

    /// Delete old logs.
    #[destructive(batch, preview = Self::preview_logs)]
    #[tool]
    async fn delete_logs(&self, picked: Picked) -> Report {
        picked.act(|item| async move { Ok(item.title().to_owned()) }).await
    }
}

fn main() {}
