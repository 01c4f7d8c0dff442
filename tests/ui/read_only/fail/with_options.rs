// Options on `#[read_only]` declare a disclosure; `idempotent` is not one of them.

use rmcp_guard::read_only;
use rmcp::{tool, tool_router};

#[derive(Clone)]
struct S;

#[tool_router(server_handler)]
impl S {
    /// List the tables.
    #[read_only(idempotent)]
    #[tool]
    async fn list_tables(&self) -> String {
        String::from("users: 3 rows")
    }
}

fn main() {}
