// A fully qualified path to `WriteDb` is still `WriteDb`.

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
    async fn count_orders(&self, db: rmcp_guard::db::WriteDb) -> String {
        let _ = db;
        String::from("4")
    }
}

fn main() {}
