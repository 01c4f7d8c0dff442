// A prepare returning a type alias of `Result`: guard reads the return type through the
// compiler, not its spelling.

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

type ToolResult<T> = Result<T, ToolError>;
type Prepared = Result<Intent<Cancel>, ToolError>;

#[derive(Deserialize, JsonSchema, ToolArgs)]
struct CancelArgs {
    order_no: String,
}

#[derive(Clone, Serialize, Deserialize)]
struct Cancel {
    order_no: String,
}

impl S {
    async fn still_open(&self, _locked: &mut Locked<Cancel>) -> ToolResult<Recheck> {
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
        _prepare: &mut Prepare,
        Parameters(args): Parameters<CancelArgs>,
    ) -> ToolResult<Intent<Cancel>> {
        let order_no = args.order_no.clone();
        Ok(Intent::new(order_no.clone(), Cancel { order_no }))
    }

    #[confirm(op = "order_cancel", recheck = Self::still_open)]
    #[tool(description = "Cancel the order prepared by prepare_cancel.")]
    async fn confirm_cancel(&self, approved: &mut Approved<Cancel>) -> ToolResult<String> {
        Ok(format!("cancelled {}", approved.payload().order_no))
    }

    #[prepare(op = "order_hold", ttl = "10m")]
    #[tool(description = "Prepare holding an order.")]
    async fn prepare_hold(
        &self,
        _prepare: &mut Prepare,
        Parameters(args): Parameters<CancelArgs>,
    ) -> Prepared {
        let order_no = args.order_no.clone();
        Ok(Intent::new(order_no.clone(), Cancel { order_no }))
    }

    #[confirm(op = "order_hold", recheck = Self::still_open)]
    #[tool(description = "Hold the order prepared by prepare_hold.")]
    async fn confirm_hold(&self, approved: &mut Approved<Cancel>) -> ToolResult<String> {
        Ok(format!("held {}", approved.payload().order_no))
    }
}

fn main() {
    let mut names: Vec<_> = S::tool_router().list_all().into_iter().map(|t| t.name).collect();
    names.sort();
    assert_eq!(
        names,
        ["confirm_cancel", "confirm_hold", "get_operation_result", "prepare_cancel", "prepare_hold"]
    );
}
