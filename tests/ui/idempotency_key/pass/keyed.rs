// A creating tool keyed by a model-visible `request_id`: the handler takes the keyed call
// and its arguments, and returns what guard stores under the key.

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
    #[idempotent(key = request_id, ttl = "24h")]
    #[tool(description = "Open a ticket once per request_id.")]
    async fn open_ticket(
        &self,
        keyed: &mut Keyed,
        Parameters(args): Parameters<OpenArgs>,
    ) -> Result<Opened, ToolError> {
        let _ = (keyed.caller().user.clone(), keyed.remote_key(), args.subject);
        let _ = keyed.tx();
        Ok(Opened { ticket_id: 1 })
    }
}

fn main() {
    let router = S::tool_router();
    let tool = router.get("open_ticket").expect("open_ticket is routed");
    let hints = tool.annotations.as_ref().expect("annotations");
    assert_eq!(hints.idempotent_hint, Some(true));
}
