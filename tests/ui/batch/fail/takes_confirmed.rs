// A batch handler takes the `Picked` proof; a `Confirmed` form proof is refused.
use std::sync::Arc;

use rmcp_guard::batch::{Batch, Picked, Report};
use rmcp_guard::{Guard, Guarded, ToolArgs, ToolError, destructive};
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
struct Args {
    /// A glob.
    pattern: String,
}

impl S {
    async fn preview(&self, args: &Args) -> Result<Batch, ToolError> {
        Ok(Batch::new(args.pattern.clone(), "Each picked item is deleted."))
    }
}


#[tool_router(server_handler)]
impl S {
    /// Delete files.
    #[destructive(batch, preview = Self::preview)]
    #[tool]
    async fn delete_files(
        &self,
        Parameters(_args): Parameters<Args>,
        confirmed: rmcp_guard::Confirmed<rmcp_guard::forms::Checkbox>,
    ) -> Report {
        let _ = confirmed;
        panic!("only Picked::act builds a Report")
    }
}

fn main() {}
