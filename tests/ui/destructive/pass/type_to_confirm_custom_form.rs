// Type-to-confirm with a custom form: the human retypes the table name and names an
// approver; `idempotent` is announced in the annotations.

use std::sync::Arc;

use rmcp_guard::{
    Confirmed, Form, Guard, Guarded, Preview, ToolArgs, ToolError, destructive, form::FieldRole,
};
use rmcp::{handler::server::wrapper::Parameters, tool, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;

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
struct DropTableArgs {
    /// Name of the table to drop.
    table: String,
}

#[derive(Debug, Form)]
struct DropTableConfirmation {
    /// Type the table name exactly to confirm.
    #[form(confirm_text, title = "Table name")]
    typed_name: String,
    #[form(title = "Approver", min_length = 1, max_length = 100)]
    approver: String,
}

/// The typed-name role is read from the form's description.
fn is_type_to_confirm<F: Form>() -> bool {
    F::SPEC.field_with_role(FieldRole::ConfirmText).is_some()
}

impl S {
    async fn preview_drop(&self, args: &DropTableArgs) -> Result<Preview, ToolError> {
        Ok(Preview::effect(
            args.table.clone(),
            format!("Drop table {}", args.table),
        ))
    }
}

#[tool_router(server_handler)]
impl S {
    /// Drop a table.
    #[destructive(
        confirm = "type_to_confirm",
        target = table,
        preview = Self::preview_drop,
        idempotent
    )]
    #[tool]
    async fn drop_table(
        &self,
        Parameters(args): Parameters<DropTableArgs>,
        confirmed: Confirmed<DropTableConfirmation>,
    ) -> Result<String, ToolError> {
        assert_eq!(confirmed.typed_name, args.table);
        Ok(format!("Dropped {} ({})", args.table, confirmed.approver))
    }
}

fn main() {
    assert!(is_type_to_confirm::<DropTableConfirmation>());
    let router = S::tool_router();
    let tool = router.get("drop_table").expect("the tool is routed");
    let hints = tool.annotations.as_ref().unwrap();
    assert_eq!(hints.destructive_hint, Some(true));
    assert_eq!(hints.idempotent_hint, Some(true));
    let names: Vec<_> = DropTableConfirmation::SPEC
        .fields
        .iter()
        .map(|f| f.name)
        .collect();
    assert_eq!(names, ["typed_name", "approver"]);
}
