// A type-to-confirm target the model may leave out would be `""`, and an empty answer
// would match it: `#[serde(default)]` on the target is refused.

use rmcp_guard::forms::TypeToConfirm;
use rmcp_guard::{Confirmed, Guard, Guarded, Preview, ToolArgs, ToolError, destructive};
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

#[derive(Deserialize, JsonSchema, ToolArgs)]
struct DropArgs {
    #[serde(default)]
    table: String,
}

impl S {
    async fn preview_drop(&self, args: &DropArgs) -> Result<Preview, ToolError> {
        Ok(Preview::effect(&args.table, format!("Drop {}", args.table)))
    }
}

#[tool_router(server_handler)]
impl S {
    /// Drop a table.
    #[destructive(confirm = "type_to_confirm", target = table, preview = Self::preview_drop)]
    #[tool]
    async fn drop_table(
        &self,
        Parameters(args): Parameters<DropArgs>,
        _typed: Confirmed<TypeToConfirm>,
    ) -> Result<String, ToolError> {
        Ok(format!("Dropped {}", args.table))
    }
}

fn main() {}
