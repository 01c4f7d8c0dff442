// A deferred confirm runs its effect when it comes due, so it must name the re-check that
// looks at the target again then.
use std::sync::Arc;

use rmcp_guard::{
    Guard, Guarded, ToolArgs, ToolError, operations,
    ops::{Approved, Intent, Locked, Prepare, Recheck},
};
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

#[derive(Deserialize, JsonSchema, ToolArgs)]
struct CancelArgs {
    order_no: String,
}

#[derive(Clone, Serialize, Deserialize)]
struct Cancel {
    order_no: String,
}

impl S {
    #[allow(dead_code)]
    async fn still_open(&self, locked: &mut Locked<Cancel>) -> Result<Recheck, ToolError> {
        let _ = locked.payload();
        Ok(Recheck::Unchanged)
    }
}

#[operations]
#[tool_router(server_handler)]
impl S {
    #[prepare(op = "order_cancel", ttl = "10m")]
    #[tool(description = "Prepare cancelling an order.")]
    async fn prepare_cancel(
        &self,
        prepare: &mut Prepare,
        Parameters(args): Parameters<CancelArgs>,
    ) -> Result<Intent<Cancel>, ToolError> {
        let _ = prepare.caller();
        Ok(Intent::new(
            args.order_no.clone(),
            Cancel {
                order_no: args.order_no,
            },
        ))
    }

    #[confirm(op = "order_cancel", defer = "2m")]
    #[tool(description = "Cancel the order prepared by prepare_cancel, two minutes later.")]
    async fn confirm_cancel(&self, approved: &mut Approved<Cancel>) -> Result<String, ToolError> {
        Ok(format!("cancelled {}", approved.payload().order_no))
    }
}

fn main() {}
