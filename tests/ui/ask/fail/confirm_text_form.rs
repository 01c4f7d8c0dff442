// A form that asks the human to retype a target belongs to `#[destructive(confirm =
// "type_to_confirm")]`: an `#[ask]` tool has no target to compare it with.

use std::sync::Arc;

use rmcp::{tool, tool_router};
use rmcp_guard::{Answered, Form, Guard, Guarded, ToolError, ask};

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
struct Retype {
    #[form(confirm_text)]
    typed_name: String,
}

#[tool_router(server_handler)]
impl S {
    /// Ask for a name.
    #[ask(message = "Type the name")]
    #[tool]
    async fn ask_name(&self, answered: Answered<Retype>) -> Result<String, ToolError> {
        Ok(answered.into_form().typed_name)
    }
}

fn main() {}
