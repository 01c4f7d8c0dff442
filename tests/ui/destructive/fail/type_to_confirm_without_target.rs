// Type-to-confirm needs to know which argument the human retypes.

use std::sync::Arc;

use rmcp_guard::forms::TypeToConfirm;
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
struct DropTableArgs {
    table: String,
}

impl S {
    async fn preview_drop(&self, args: &DropTableArgs) -> Result<Preview, ToolError> {
        Ok(Preview::effect(
            args.table.to_string(),
            format!("Drop table {}", args.table),
        ))
    }
}

#[tool_router(server_handler)]
impl S {
    /// Drop a table.
    #[destructive(confirm = "type_to_confirm", preview = Self::preview_drop)]
    #[tool]
    async fn drop_table(
        &self,
        Parameters(args): Parameters<DropTableArgs>,
        confirmed: Confirmed<TypeToConfirm>,
    ) -> Result<String, ToolError> {
        Ok(format!("Dropped {} ({})", args.table, confirmed.typed_name))
    }
}

fn main() {}
