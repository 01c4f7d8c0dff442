// `form = ...` spelled with a full path names the same type as `Confirmed<Checkbox>`;
// rmcp's `Parameters` spelled with its full path and request context both work.

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

#[tool_router(server_handler)]
impl S {
    /// Delete a file.
    #[destructive(form = rmcp_guard::forms::Checkbox, preview = Self::preview_delete)]
    #[tool]
    async fn delete_file(
        &self,
        request: rmcp::service::RequestContext<rmcp::RoleServer>,
        rmcp::handler::server::wrapper::Parameters(args): rmcp::handler::server::wrapper::Parameters<DeleteArgs>,
        confirmed: Confirmed<Checkbox>,
    ) -> Result<String, ToolError> {
        let _ = request.id;
        if args.path.is_empty() {
            // An early return inside the body returns from the body, not the tool.
            return Err(ToolError::new(rmcp_guard::Code::InvalidInput, "no path"));
        }
        let n: u32 = "1".parse().map_err(ToolError::internal)?;
        Ok(format!("Deleted {} ({n}, {})", args.path, confirmed.confirm))
    }
}

fn main() {
    let router = S::tool_router();
    let tool = router.get("delete_file").expect("the tool is routed");
    let properties = tool.input_schema["properties"].as_object().unwrap();
    assert_eq!(properties.keys().collect::<Vec<_>>(), ["path"]);
}
