// No code outside guard can build the proof: `Confirmed` has no public constructor.

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

fn forge() -> Confirmed<Checkbox> {
    Confirmed::new(Checkbox { confirm: true }, "/etc/passwd".to_owned(), "t".to_owned())
}

fn forge_literal() -> Confirmed<Checkbox> {
    Confirmed { form: Checkbox { confirm: true }, target: String::new(), trace_id: String::new() }
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
}

fn main() {
    let _ = (forge, forge_literal);
}
