// A keyed tool returning a type alias of `Result`.

use rmcp_guard::{Guard, Guarded, ToolArgs, ToolError, idempotent, ops::Keyed};
use std::sync::Arc;

use rmcp::{handler::server::wrapper::Parameters, tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Clone)]
struct S {
    guard: Arc<Guard>,
}

impl Guarded for S {
    fn guard(&self) -> &Guard {
        &self.guard
    }
}

type ToolResult<T> = Result<T, ToolError>;

#[derive(Serialize, Deserialize, JsonSchema, ToolArgs)]
struct OpenArgs {
    request_id: String,
    subject: String,
}

#[tool_router(server_handler)]
impl S {
    #[idempotent(key = request_id, ttl = "24h")]
    #[tool(description = "Open a ticket once per request_id.")]
    async fn open_ticket(
        &self,
        _keyed: &mut Keyed,
        Parameters(args): Parameters<OpenArgs>,
    ) -> ToolResult<String> {
        Ok(args.subject)
    }
}

fn main() {
    let router = S::tool_router();
    assert!(router.get("open_ticket").is_some());
}
