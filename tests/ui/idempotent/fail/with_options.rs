// `#[idempotent]` with options keys the tool; an option it does not know is named, and
// the valid ones are listed.

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
