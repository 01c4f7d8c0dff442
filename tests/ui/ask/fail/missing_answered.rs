// Without the `Answered<_>` parameter the handler would run on nothing the human gave.

use std::sync::Arc;

use rmcp::{tool, tool_router};
use rmcp_guard::{Guard, Guarded, ToolError, ask};

#[derive(Clone)]
struct S {
    guard: Arc<Guard>,
}

impl Guarded for S {
    fn guard(&self) -> &Guard {
        &self.guard
    }
}

#[tool_router(server_handler)]
impl S {
    /// Ask for a name.
    #[ask(message = "Your name?")]
    #[tool]
    async fn ask_name(&self) -> Result<String, ToolError> {
        Ok("nobody".into())
    }
}

fn main() {}
