// A deferred handler runs after the request ended: it cannot take a request extractor.
use std::sync::Arc;

use rmcp::{
    RoleServer, handler::server::wrapper::Parameters, service::RequestContext, tool, tool_router,
};
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
        Ok(Preview::effect(&args.path, format!("Delete {}", args.path)))
    }
}

#[tool_router(server_handler)]
impl S {
    /// Delete a file, later.
    #[destructive(confirm = "checkbox", preview = Self::preview_delete, defer = "2m")]
    #[tool]
    async fn delete_later(
        &self,
        Parameters(args): Parameters<DeleteArgs>,
        _confirmed: Confirmed<Checkbox>,
        _request: RequestContext<RoleServer>,
    ) -> Result<String, ToolError> {
        Ok(args.path)
    }
}

fn main() {}
