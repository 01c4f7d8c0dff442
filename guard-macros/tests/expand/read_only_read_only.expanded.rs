use rmcp::{tool, tool_router};
#[derive(Clone)]
struct S;
#[tool_router(server_handler)]
impl S {
    /// List the tables.
    #[tool(
        annotations(
            title = "List tables",
            read_only_hint = true,
            destructive_hint = false
        )
    )]
    async fn list_tables(&self) -> String {
        String::from("users: 3 rows")
    }
}
fn main() {
    let router = S::tool_router();
    let tool = router.get("list_tables").expect("the tool is routed");
    let hints = tool.annotations.as_ref().expect("guard sets annotations");
    assert_eq!(hints.read_only_hint, Some(true));
    assert_eq!(hints.destructive_hint, Some(false));
    assert_eq!(hints.title.as_deref(), Some("List tables"));
}
