// A form that cannot play the confirmation `confirm` names is refused with what the form
// lacks and which form to take: guard's checkbox on a typed-name tool, guard's typed name
// on a checkbox tool.

use std::sync::Arc;

use rmcp::{handler::server::wrapper::Parameters, tool, tool_router};
use rmcp_guard::{
    Confirmed, Guard, Guarded, Preview, ToolArgs, ToolError, destructive,
    forms::{Checkbox, TypeToConfirm},
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
    async fn preview_delete(&self, args: &DeleteArgs) -> Result<Preview, ToolError> {
        Ok(Preview::effect(&args.path, format!("Delete {}", args.path)))
    }
}

#[tool_router(server_handler)]
impl S {
    /// Delete a file.
    #[destructive(confirm = "type_to_confirm", target = path, preview = Self::preview_delete)]
    #[tool]
    async fn delete_file(
        &self,
        Parameters(args): Parameters<DeleteArgs>,
        _confirmed: Confirmed<Checkbox>,
    ) -> Result<String, ToolError> {
        Ok(format!("Deleted {}", args.path))
    }

    /// Delete another file.
    #[destructive(confirm = "checkbox", preview = Self::preview_delete)]
    #[tool]
    async fn delete_other_file(
        &self,
        Parameters(args): Parameters<DeleteArgs>,
        _confirmed: Confirmed<TypeToConfirm>,
    ) -> Result<String, ToolError> {
        Ok(format!("Deleted {}", args.path))
    }
}

fn main() {}
