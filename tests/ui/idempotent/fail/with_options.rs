// `#[idempotent]` is a marker and takes no options.

use rmcp_guard::idempotent;
use rmcp::{tool, tool_router};

#[derive(Clone)]
struct S;

#[tool_router(server_handler)]
impl S {
    /// Set the status of a test order to cancelled.
    #[idempotent(x)]
    #[tool]
    async fn cancel_test_order(&self) -> String {
        String::from("cancelled")
    }
}

fn main() {}
