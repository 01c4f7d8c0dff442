// Below `#[destructive]` too, `#[idempotent]` is refused: declare it as an option there.

use rmcp_guard::{
    Confirmed, Preview, ToolArgs, ToolError, destructive, forms::Checkbox, idempotent,
};
use rmcp::{handler::server::wrapper::Parameters, tool, tool_router};

#[derive(serde::Deserialize, schemars::JsonSchema, ToolArgs)]
struct Key {
    key: String,
}

#[derive(Clone)]
struct S {
    guard: std::sync::Arc<rmcp_guard::Guard>,
}

impl rmcp_guard::Guarded for S {
    fn guard(&self) -> &rmcp_guard::Guard {
        &self.guard
    }
}

impl S {
    async fn preview(&self, args: &Key) -> Result<Preview, ToolError> {
        Ok(Preview::effect(&args.key, format!("Clear {}", args.key)))
    }
}

#[tool_router(server_handler)]
impl S {
    /// Clear a key.
    #[destructive(confirm = "checkbox", preview = Self::preview)]
    #[idempotent]
    #[tool]
    async fn clear(&self, Parameters(args): Parameters<Key>, _ok: Confirmed<Checkbox>) -> String {
        args.key
    }
}

fn main() {}
