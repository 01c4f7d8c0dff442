// A read-only tool needs no idempotency claim: `#[idempotent]` and `#[read_only]` conflict.

use rmcp_guard::{idempotent, read_only};
use rmcp::{tool, tool_router};

#[derive(Clone)]
struct S;

#[tool_router(server_handler)]
impl S {
    /// List the tables.
    #[idempotent]
    #[read_only]
    #[tool]
    async fn list_tables(&self) -> String {
        String::from("users: 3 rows")
    }
}

fn main() {}
