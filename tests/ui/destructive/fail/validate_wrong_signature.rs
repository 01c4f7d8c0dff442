// `validate` with the wrong signature: a spanned type mismatch naming the expected
// `fn(&Form) -> Result<(), String>`; a closure that captures is refused the same way.

use std::sync::Arc;

use rmcp_guard::{Confirmed, Form, Guard, Guarded, Preview, ToolArgs, ToolError, destructive};
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
struct DeleteArgs {
    path: String,
}

impl S {
    async fn preview_delete(&self, args: &DeleteArgs) -> Result<Preview, ToolError> {
        Ok(Preview::effect(&args.path, format!("Delete {}", args.path)))
    }
}


#[derive(Form)]
struct Reason {
    #[form(title = "Why", min_length = 1)]
    why: String,
}

fn rules_returning_bool(form: &Reason) -> bool {
    !form.why.is_empty()
}

#[tool_router(server_handler)]
impl S {
    /// Delete a file.
    #[destructive(form = Reason, preview = Self::preview_delete, validate = rules_returning_bool)]
    #[tool]
    async fn delete_file(
        &self,
        Parameters(args): Parameters<DeleteArgs>,
        confirmed: Confirmed<Reason>,
    ) -> Result<String, ToolError> {
        Ok(format!("Deleted {} ({})", args.path, confirmed.why))
    }

    /// Delete another file; inline rules that need no capture work.
    #[destructive(
        form = Reason,
        preview = Self::preview_delete,
        validate = |r: &Reason| if r.why.len() > 3 { Ok(()) } else { Err("say more".into()) }
    )]
    #[tool]
    async fn delete_other(
        &self,
        Parameters(args): Parameters<DeleteArgs>,
        confirmed: Confirmed<Reason>,
    ) -> Result<String, ToolError> {
        Ok(format!("Deleted {} ({})", args.path, confirmed.why))
    }
}

fn main() {}
