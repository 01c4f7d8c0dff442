// An `#[ask]` tool is published as not destructive and runs with no preview, no re-check and
// no terms: a tick in a checkbox and a write handle would make it a destructive tool in
// disguise. It takes read handles only; a tool that writes is `#[destructive]`.

use std::sync::Arc;

use rmcp::{tool, tool_router};
use rmcp_guard::{Answered, Guard, Guarded, ToolError, ask, db::WriteDb, forms};

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
    /// Empty the orders table.
    #[ask(message = "Go on?")]
    #[tool]
    async fn empty_orders(
        &self,
        db: WriteDb,
        _tick: Answered<forms::Checkbox>,
    ) -> Result<String, ToolError> {
        db.execute("DELETE FROM orders", [])?;
        Ok("done".into())
    }
}

fn main() {}
