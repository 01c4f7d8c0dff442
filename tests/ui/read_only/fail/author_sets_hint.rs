// guard owns the read-only annotations; the author cannot contradict them.

use rmcp_guard::read_only;
use rmcp::{tool, tool_router};

#[derive(Clone)]
struct S;

#[tool_router(server_handler)]
impl S {
    /// List the tables.
    #[read_only]
    #[tool(annotations(read_only_hint = false))]
    async fn list_tables(&self) -> String {
        String::from("users: 3 rows")
    }
}

fn main() {}
