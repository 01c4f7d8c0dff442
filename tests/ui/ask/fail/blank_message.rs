// A `message` the human cannot read is refused: empty, spaces only, or invisible characters
// only (a zero-width space, a byte order mark, a word joiner). The same holds for the
// header of a `#[destructive]` question.

use std::sync::Arc;

use rmcp::{handler::server::wrapper::Parameters, tool, tool_router};
use rmcp_guard::{
    Answered, Confirmed, Form, Guard, Guarded, Preview, ToolArgs, ToolError, ask, destructive,
    forms::Checkbox,
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

#[derive(Form)]
struct Name {
    name: String,
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
    /// Ask for a name.
    #[ask(message = "   ")]
    #[tool]
    async fn ask_name(&self, answered: Answered<Name>) -> Result<String, ToolError> {
        Ok(answered.into_form().name)
    }

    /// Ask for another name.
    #[ask(message = "\u{200B}\u{FEFF}\u{2060}")]
    #[tool]
    async fn ask_other_name(&self, answered: Answered<Name>) -> Result<String, ToolError> {
        Ok(answered.into_form().name)
    }

    /// Ask for a third name.
    #[ask(message = "")]
    #[tool]
    async fn ask_third_name(&self, answered: Answered<Name>) -> Result<String, ToolError> {
        Ok(answered.into_form().name)
    }

    /// Delete a file.
    #[destructive(confirm = "checkbox", preview = Self::preview_delete, message = " \t ")]
    #[tool]
    async fn delete_file(
        &self,
        Parameters(args): Parameters<DeleteArgs>,
        _confirmed: Confirmed<Checkbox>,
    ) -> Result<String, ToolError> {
        Ok(format!("Deleted {}", args.path))
    }
}

fn main() {}
