// An idempotent write tool is announced as such: it writes (readOnlyHint false) and a repeat
// changes nothing more (idempotentHint true). The author may still set a title.

use rmcp_guard::idempotent;
use rmcp::{tool, tool_router};

#[derive(Clone)]
struct S;

#[tool_router(server_handler)]
impl S {
    /// Set the status of a test order to cancelled.
    #[idempotent]
    #[tool(annotations(title = "Cancel test order"))]
    async fn cancel_test_order(&self) -> String {
        String::from("cancelled")
    }

    /// Without a title.
    #[idempotent]
    #[tool]
    async fn mark_paid(&self) -> String {
        String::from("paid")
    }
}

fn main() {
    let router = S::tool_router();
    for name in ["cancel_test_order", "mark_paid"] {
        let tool = router.get(name).expect("the tool is routed");
        let hints = tool.annotations.as_ref().expect("guard sets annotations");
        assert_eq!(hints.idempotent_hint, Some(true), "{name}");
        assert_eq!(hints.read_only_hint, Some(false), "{name}");
        assert_ne!(
            hints.destructive_hint,
            Some(false),
            "{name}: no safety claim is added"
        );
    }
    let tool = router.get("cancel_test_order").unwrap();
    assert_eq!(
        tool.annotations.as_ref().unwrap().title.as_deref(),
        Some("Cancel test order")
    );
}
