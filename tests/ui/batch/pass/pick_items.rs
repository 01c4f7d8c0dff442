// A batch tool: the preview returns the items a rule selected, the human picks some, and the
// handler acts on the picked ones only, through the `Picked` proof. The proof stays out of the
// model-visible input schema and the annotations are honest.

use std::sync::Arc;

use rmcp_guard::batch::{Batch, Item, Picked, Report};
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
struct PruneArgs {
    /// Which branches, as a glob.
    pattern: String,
}

impl S {
    async fn preview_prune(&self, args: &PruneArgs) -> Result<Batch, ToolError> {
        Ok(Batch::new(format!("`{}`", args.pattern), "Each picked branch is deleted.")
            .item(Item::new("feature/a", "feature/a (3 days old)").with_state("c0ffee")))
    }

    async fn preview_all(&self) -> Result<Batch, ToolError> {
        Ok(Batch::new("every cache entry", "Each picked entry is evicted."))
    }
}

#[tool_router(server_handler)]
impl S {
    /// Delete branches.
    #[destructive(
        batch,
        max_items = 50,
        preview = Self::preview_prune,
        message = "Prune branches?",
        timeout = "2m",
        on_decline = "Nothing was pruned."
    )]
    #[tool]
    async fn prune_branches(
        &self,
        Parameters(_args): Parameters<PruneArgs>,
        picked: Picked,
    ) -> Report {
        let trace = picked.trace_id().to_owned();
        picked
            .act(|item| {
                let trace = trace.clone();
                async move { Ok(format!("Deleted {} at {} ({trace})", item.key(), item.state())) }
            })
            .await
    }

    /// Evict cache entries: no arguments, the default cap.
    #[destructive(batch, preview = Self::preview_all)]
    #[tool]
    async fn evict(&self, picked: Picked) -> Report {
        picked.act(|item| async move { Ok(item.title().to_owned()) }).await
    }
}

fn main() {
    let router = S::tool_router();
    for name in ["prune_branches", "evict"] {
        let tool = router.get(name).expect("the tool is routed");
        let hints = tool.annotations.as_ref().expect("guard sets annotations");
        assert_eq!(hints.destructive_hint, Some(true));
        assert_eq!(hints.read_only_hint, Some(false));
    }
    let tool = router.get("prune_branches").unwrap();
    let properties = tool.input_schema["properties"].as_object().unwrap();
    assert_eq!(properties.keys().collect::<Vec<_>>(), ["pattern"]);
}
