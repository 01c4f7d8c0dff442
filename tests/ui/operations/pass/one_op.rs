// The smallest two-phase server: one prepare, its confirm and the confirm's recheck. It
// routes three tools (the two, plus `get_operation_result`) with honest annotations, and
// the confirm's only model-visible argument is `operation_id`.

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
        ["confirm_cancel", "get_operation_result", "prepare_cancel"]
    );

    let hints = |name: &str| {
        let a = router.get(name).unwrap().annotations.clone().unwrap();
        (a.read_only_hint, a.destructive_hint, a.idempotent_hint)
    };
    assert_eq!(
        hints("prepare_cancel"),
        (Some(false), Some(false), Some(false))
    );
    assert_eq!(
        hints("confirm_cancel"),
        (Some(false), Some(true), Some(true))
    );
    assert_eq!(hints("get_operation_result").0, Some(true));

    let schema = &router.get("confirm_cancel").unwrap().input_schema;
    let properties = schema["properties"].as_object().unwrap();
    assert_eq!(properties.keys().collect::<Vec<_>>(), ["operation_id"]);
}
