// A read-only tool that discloses nothing has nothing to approve: `approve` goes with `discloses`.

use rmcp_guard::read_only;
use rmcp::{tool, tool_router};

#[derive(Clone)]
struct S;

#[tool_router(server_handler)]
impl S {
    /// List the tables.
    #[read_only(approve = "url")]
    #[tool]
    async fn list_tables(&self) -> String {
        String::from("users: 3 rows")
    }
}

fn main() {}
