// A batch report belongs to the call whose `Picked` built it: it cannot be cloned, so a
// handler cannot keep one to return from a later call.

use rmcp_guard::batch::{Batch, Picked, Report};
use rmcp_guard::{Guard, Guarded, ToolError, destructive};
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

impl S {
    async fn preview_all(&self) -> Result<Batch, ToolError> {
        Ok(Batch::new("every cache entry", "Each picked entry is evicted."))
    }
}

#[tool_router(server_handler)]
impl S {
    /// Evict cache entries.
    #[destructive(batch, preview = Self::preview_all)]
    #[tool]
    async fn evict(&self, picked: Picked) -> Report {
        let report = picked.act(|item| async move { Ok(item.title().to_owned()) }).await;
        let _kept = report.clone();
        report
    }
}

fn main() {}
