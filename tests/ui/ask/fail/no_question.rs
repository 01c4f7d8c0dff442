// The human must read what is asked: `message` or `question` is required.

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
struct Name {
    name: String,
}

#[tool_router(server_handler)]
impl S {
    /// Ask for a name.
    #[ask(timeout = "1m")]
    #[tool]
    async fn ask_name(&self, answered: Answered<Name>) -> Result<String, ToolError> {
        Ok(answered.into_form().name)
    }
}

fn main() {}
