// `#[read_only]` marks an rmcp tool, so the method needs `#[tool]` below it (`ping` keeps
// the router non-empty, so guard's own check is the one that fires).

use rmcp_guard::read_only;
use rmcp::{tool, tool_router};

#[derive(Clone)]
struct S;

#[tool_router(server_handler)]
impl S {
    /// List the tables.
    #[read_only]
    async fn list_tables(&self) -> String {
        String::from("users: 3 rows")
    }

    /// Check the service is up.
    #[tool]
    async fn ping(&self) -> String {
        String::from("pong")
    }
}

fn main() {}
