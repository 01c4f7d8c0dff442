// The key names a field the arguments do not have.

use std::sync::Arc;

use rmcp::{handler::server::wrapper::Parameters, tool, tool_router};
use rmcp_guard::{Guard, Guarded, ToolArgs, ToolError, idempotent, ops::Keyed};
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

#[derive(Serialize, Deserialize, JsonSchema, ToolArgs)]
struct OpenArgs {
    request_id: String,
    subject: String,
}

#[derive(Serialize)]
struct Opened {
    ticket_id: i64,
}

#[tool_router(server_handler)]
impl S {
    #[idempotent(key = request_key, ttl = "24h")]
    #[tool(description = "Open a ticket once per request_id.")]
    async fn open_ticket(
        &self,
        keyed: &mut Keyed,
        Parameters(args): Parameters<OpenArgs>,
    ) -> Result<Opened, ToolError> {
        let _ = (keyed.caller(), args);
        Ok(Opened { ticket_id: 1 })
    }
}

fn main() {}
