// Two ops in one impl: each prepare pairs with the confirm of its own op, each confirm
// re-checks through its own hook, and the impl gets one `get_operation_result` tool.

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
    reason: String,
}

#[derive(Deserialize, JsonSchema, ToolArgs)]
struct RefundArgs {
    order_no: String,
    cents: u64,
}

#[derive(Clone, Serialize, Deserialize)]
struct Cancel {
    order_no: String,
    reason: String,
}

#[derive(Clone, Serialize, Deserialize)]
struct Refund {
    order_no: String,
    cents: u64,
}

impl S {
    async fn not_shipped(&self, locked: &mut Locked<Cancel>) -> Result<Recheck, ToolError> {
        let _ = locked.tx();
        Ok(Recheck::Unchanged)
    }

    async fn still_paid(&self, locked: &mut Locked<Refund>) -> Result<Recheck, ToolError> {
        if locked.payload().cents == 0 {
            return Ok(Recheck::Changed("nothing left to refund".into()));
        }
        Ok(Recheck::Unchanged)
    }
}

#[operations]
#[tool_router(server_handler)]
impl S {
    #[prepare(
        op = "order_cancel",
        ttl = "10m",
        scope = "orders.cancel",
        rate = "5/min"
    )]
    #[tool(description = "Prepare cancelling an order.")]
    async fn prepare_cancel(
        &self,
        prepare: &mut Prepare,
        Parameters(args): Parameters<CancelArgs>,
    ) -> Result<Intent<Cancel>, ToolError> {
        let _ = prepare.tx();
        Ok(Intent::new(
            args.order_no.clone(),
            Cancel {
                order_no: args.order_no,
                reason: args.reason,
            },
        )
        .summary("cancel"))
    }

    #[confirm(op = "order_cancel", recheck = Self::not_shipped)]
    #[tool(description = "Cancel the order prepared by prepare_cancel.")]
    async fn confirm_cancel(&self, approved: &mut Approved<Cancel>) -> Result<String, ToolError> {
        Ok(format!("cancelled {}", approved.payload().order_no))
    }

    #[prepare(
        op = "order_refund",
        ttl = "90s",
        scope = "orders.refund payments.write"
    )]
    #[tool(description = "Prepare refunding an order.")]
    async fn prepare_refund(
        &self,
        prepare: &mut Prepare,
        Parameters(args): Parameters<RefundArgs>,
    ) -> Result<Intent<Refund>, ToolError> {
        let _ = prepare.caller();
        Ok(Intent::new(
            args.order_no.clone(),
            Refund {
                order_no: args.order_no,
                cents: args.cents,
            },
        ))
    }

    #[confirm(op = "order_refund", recheck = Self::still_paid)]
    #[tool(description = "Refund the order prepared by prepare_refund.")]
    async fn confirm_refund(&self, approved: &mut Approved<Refund>) -> Result<u64, ToolError> {
        Ok(approved.payload().cents)
    }

    #[tool(description = "An ordinary tool beside the two-phase ones.")]
    async fn ping(&self) -> String {
        "pong".into()
    }
}

fn main() {
    let router = S::tool_router();
    let mut names: Vec<String> = router
        .list_all()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "confirm_cancel",
            "confirm_refund",
            "get_operation_result",
            "ping",
            "prepare_cancel",
            "prepare_refund",
        ]
    );
}
