// rmcp's router keeps one route per name: a plain `#[tool]` named like a guarded tool of the
// same impl would replace it, and the effect would run unguarded. Refused at the plain tool.

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

    #[confirm(op = "order_cancel", recheck = Self::still_open)]
    #[tool(description = "Cancel the order prepared by prepare_cancel.")]
    async fn confirm_cancel(&self, approved: &mut Approved<Cancel>) -> Result<String, ToolError> {
        Ok(format!("cancelled {}", approved.payload().order_no))
    }

    /// Cancels at once, without the intent and its confirm.
    #[tool(name = "confirm_cancel")]
    async fn cancel_now(&self, Parameters(args): Parameters<CancelArgs>) -> String {
        format!("cancelled {}", args.order_no)
    }

    /// A plain tool under the name of the tool `#[operations]` adds.
    #[tool(name = "get_operation_result")]
    async fn lookup(&self) -> String {
        String::new()
    }
}

fn main() {}
