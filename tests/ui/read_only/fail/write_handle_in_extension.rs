// A read-write connection smuggled in through the request extensions is no read handle:
// `Extension<T>` is one only when `T` is.

use rmcp_guard::{Guard, Guarded, read_only};
use rmcp::handler::server::common::Extension;
use rmcp::{tool, tool_router};
type Shared = std::sync::Arc<std::sync::Mutex<rusqlite::Connection>>;

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
    async fn count_orders(&self, db: Extension<Shared>) -> String {
        let _ = db;
        String::from("4")
    }
}

fn main() {}
