// A guarded tool written by a `macro_rules!` macro, with the proof's form and the
// `target` field passed in from the caller: guard's own locals are named at the macro's
// call site, so the caller's hygiene does not hide them.

use rmcp_guard::forms::TypeToConfirm;
use rmcp_guard::{Confirmed, Guard, Guarded, Preview, ToolArgs, ToolError, destructive};
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
struct DropArgs {
    table: String,
}

impl S {
    async fn preview_drop(&self, args: &DropArgs) -> Result<Preview, ToolError> {
        Ok(Preview::effect(&args.table, format!("Drop {}", args.table)))
    }
}

macro_rules! drop_tool {
    ($name:ident, $form:ty, $target:ident) => {
        #[tool_router(server_handler)]
        impl S {
            /// Drop a table.
            #[destructive(confirm = "type_to_confirm", target = $target, preview = Self::preview_drop)]
            #[tool]
            async fn $name(
                &self,
                Parameters(args): Parameters<DropArgs>,
                _typed: Confirmed<$form>,
            ) -> Result<String, ToolError> {
                Ok(format!("Dropped {}", args.$target))
            }
        }
    };
}

drop_tool!(drop_table, TypeToConfirm, table);

fn main() {
    let router = S::tool_router();
    let tool = router.get("drop_table").expect("the tool is routed");
    assert_eq!(tool.annotations.as_ref().unwrap().destructive_hint, Some(true));
}
