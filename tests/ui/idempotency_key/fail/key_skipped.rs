// The model cannot send a skipped key field, so every call would share one default key.

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

#[derive(Serialize, Deserialize, JsonSchema, ToolArgs)]
struct OpenArgs {
    #[serde(skip)]
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
    ) -> Result<String, ToolError> {
        Ok(args.subject)
    }
}

fn main() {}
