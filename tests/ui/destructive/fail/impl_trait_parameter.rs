// A guarded tool names each parameter's type, so guard can tell the arguments, the proof
// and rmcp's extractors apart.

use rmcp_guard::forms::Checkbox;
use rmcp_guard::{Confirmed, Guard, Guarded, Preview, ToolError, destructive};
use std::sync::Arc;

use rmcp::{handler::server::wrapper::Parameters, tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Clone)]
struct S {
    guard: Arc<Guard>,
}

impl Guarded for S {
    fn guard(&self) -> &Guard {
        &self.guard
    }
}

impl S {
    async fn preview_all(&self) -> Result<Preview, ToolError> {
        Ok(Preview::effect("everything", "Delete everything"))
    }
}

#[tool_router(server_handler)]
impl S {
    /// Delete everything.
    #[destructive(confirm = "checkbox", preview = Self::preview_all)]
    #[tool]
    async fn delete_all(
        &self,
        _extra: impl Send,
        _confirmed: Confirmed<Checkbox>,
    ) -> Result<String, ToolError> {
        Ok("done".into())
    }
}

fn main() {}
