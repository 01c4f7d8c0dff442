// A form that asks the human to type the target is refused on a tool that never compares
// what they typed: with `confirm = "checkbox"` and with a custom `form = ...`.

use std::sync::Arc;

use rmcp_guard::{Confirmed, Form, Guard, Guarded, Preview, ToolArgs, ToolError, destructive};
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

#[derive(Form)]
struct TickAndType {
    #[form(checkbox, title = "I understand")]
    confirm: bool,
    #[form(confirm_text, title = "Type the file name")]
    typed: String,
}

#[derive(Form)]
struct TypeOnly {
    #[form(confirm_text, title = "Type the file name")]
    typed: String,
}

#[tool_router(server_handler)]
impl S {
    /// Delete a file.
    #[destructive(confirm = "checkbox", preview = Self::preview_delete)]
    #[tool]
    async fn delete_file(
        &self,
        Parameters(args): Parameters<DeleteArgs>,
        _confirmed: Confirmed<TickAndType>,
    ) -> Result<String, ToolError> {
        Ok(format!("Deleted {}", args.path))
    }

    /// Delete another file.
    #[destructive(form = TypeOnly, preview = Self::preview_delete)]
    #[tool]
    async fn delete_other(
        &self,
        Parameters(args): Parameters<DeleteArgs>,
        _confirmed: Confirmed<TypeOnly>,
    ) -> Result<String, ToolError> {
        Ok(format!("Deleted {}", args.path))
    }
}

fn main() {}
