// A `#[read_only]` tool cannot take a write-capable database handle: the fix is `ReadDb`.

use rmcp_guard::{Guard, Guarded, db::WriteDb, read_only};
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
    async fn count_orders(&self, db: WriteDb) -> String {
        let count: i64 = db
            .query_row("SELECT count(*) FROM orders", [], |r| r.get(0))
            .unwrap_or(0);
        count.to_string()
    }
}

fn main() {}
