// guard checks each parameter's type, so a `#[read_only]` tool spells it out.

use rmcp_guard::read_only;
use rmcp::{tool, tool_router};

#[derive(Clone)]
struct S;

#[tool_router(server_handler)]
impl S {
    /// Count the orders.
    #[read_only]
    #[tool]
    async fn count_orders(&self, db: impl Send) -> String {
        let _ = db;
        String::from("4")
    }
}

fn main() {}
