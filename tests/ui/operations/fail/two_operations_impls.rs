// One `get_operation_result` answers for a server's two-phase tools, so they all go in one
// `#[operations]` impl: a second one on the same server is refused once, by name.

use rmcp_guard::{
    Guard, Guarded, ToolArgs, ToolError, operations,
    ops::{Approved, Intent, Locked, Prepare, Recheck},
};
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

#[derive(Deserialize, JsonSchema, ToolArgs)]
struct CancelArgs {
    order_no: String,
}

#[derive(Clone, Serialize, Deserialize)]
struct Cancel {
    order_no: String,
}

impl S {
    async fn still_open(&self, _locked: &mut Locked<Cancel>) -> Result<Recheck, ToolError> {
        Ok(Recheck::Unchanged)
    }
}

#[operations]
#[tool_router(router = cancel_router)]
impl S {
    #[prepare(op = "order_cancel", ttl = "10m")]
    #[tool(description = "Prepare cancelling an order.")]
    async fn prepare_cancel(
        &self,
        _prepare: &mut Prepare,
        Parameters(args): Parameters<CancelArgs>,
    ) -> Result<Intent<Cancel>, ToolError> {
        let order_no = args.order_no.clone();
        Ok(Intent::new(order_no.clone(), Cancel { order_no }))
    }

    #[confirm(op = "order_cancel", recheck = Self::still_open)]
    #[tool(description = "Cancel the order prepared by prepare_cancel.")]
    async fn confirm_cancel(&self, approved: &mut Approved<Cancel>) -> Result<String, ToolError> {
        Ok(format!("cancelled {}", approved.payload().order_no))
    }
}

#[operations]
#[tool_router(router = hold_router)]
impl S {
    #[prepare(op = "order_hold", ttl = "10m")]
    #[tool(description = "Prepare holding an order.")]
    async fn prepare_hold(
        &self,
        _prepare: &mut Prepare,
        Parameters(args): Parameters<CancelArgs>,
    ) -> Result<Intent<Cancel>, ToolError> {
        let order_no = args.order_no.clone();
        Ok(Intent::new(order_no.clone(), Cancel { order_no }))
    }

    #[confirm(op = "order_hold", recheck = Self::still_open)]
    #[tool(description = "Hold the order prepared by prepare_hold.")]
    async fn confirm_hold(&self, approved: &mut Approved<Cancel>) -> Result<String, ToolError> {
        Ok(format!("held {}", approved.payload().order_no))
    }
}

fn main() {
    let _ = (S::cancel_router(), S::hold_router());
}
