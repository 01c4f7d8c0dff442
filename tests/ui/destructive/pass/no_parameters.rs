// A destructive tool with no model-visible arguments: the preview takes only `&self`.

use std::sync::Arc;

use rmcp_guard::forms::Checkbox;
use rmcp_guard::{Confirmed, Guard, Guarded, Preview, ToolError, destructive};
use rmcp::{tool, tool_router};

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
    async fn preview_purge(&self) -> Result<Preview, ToolError> {
        Ok(Preview::effect("cache", "Purge the whole cache"))
    }
}

#[tool_router(server_handler)]
impl S {
    /// Purge the cache.
    #[destructive(confirm = "checkbox", preview = Self::preview_purge)]
    #[tool]
    async fn purge_cache(&self, confirmed: Confirmed<Checkbox>) -> Result<String, ToolError> {
        Ok(format!("Purged ({})", confirmed.trace_id()))
    }
}

fn main() {
    let router = S::tool_router();
    let tool = router.get("purge_cache").expect("the tool is routed");
    assert_eq!(
        tool.annotations.as_ref().unwrap().destructive_hint,
        Some(true)
    );
    let properties = tool.input_schema.get("properties");
    assert!(
        properties.is_none_or(|p| p.as_object().is_some_and(|p| p.is_empty())),
        "no model-visible arguments: {properties:?}"
    );
}
