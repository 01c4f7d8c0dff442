// A read-only tool cannot reach a write transaction through guard's operation store: the
// store behind `Guard::operations()` is guard's own.

use rmcp_guard::{Guard, Guarded, ToolError, read_only};
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

#[tool_router(server_handler)]
impl S {
    /// Count the orders.
    #[read_only]
    #[tool]
    async fn count_orders(&self) -> Result<String, ToolError> {
        let ops = self.guard().operations().expect("operations are configured");
        let _tx = ops.store().begin().await;
        Ok("0".into())
    }
}

fn main() {}
