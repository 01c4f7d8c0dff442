// A reference to a write handle is no read handle.

use rmcp_guard::db::WriteDb;
use rmcp_guard::{Guard, Guarded, read_only};
use rmcp::{tool, tool_router};

#[derive(Clone)]
struct S {
    guard: std::sync::Arc<Guard>,
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
    async fn count_orders(&self, db: &WriteDb) -> String {
        let _ = db;
        String::from("4")
    }
}

fn main() {}
