// `defer` is a bounded duration, and it refuses what a stored call cannot honour: a batch,
// an undo window, a secret.
use std::sync::Arc;

use rmcp::{handler::server::wrapper::Parameters, tool, tool_router};
use rmcp_guard::batch::{Batch, Picked, Report};
use rmcp_guard::forms::Checkbox;
use rmcp_guard::undo::{Reversible, Window};
use rmcp_guard::{Confirmed, Guard, Guarded, Preview, ToolArgs, ToolError, destructive};
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
    /// Path of the file.
    path: String,
}

impl S {
    async fn preview_delete(&self, args: &DeleteArgs) -> Result<Preview, ToolError> {
        Ok(Preview::effect(&args.path, format!("Delete {}", args.path)))
    }

    async fn preview_many(&self, args: &DeleteArgs) -> Result<Batch, ToolError> {
        Ok(Batch::new(&args.path, format!("Delete under {}", args.path)))
    }

    async fn undo_delete(&self, window: Window) -> Result<serde_json::Value, ToolError> {
        let trashed: String = window.data()?;
        Ok(serde_json::json!({ "restored": trashed }))
    }
}

#[tool_router(server_handler)]
impl S {
    /// Delete a file.
    #[destructive(confirm = "checkbox", preview = Self::preview_delete, defer = "0s")]
    #[tool]
    async fn zero(
        &self,
        Parameters(args): Parameters<DeleteArgs>,
        _confirmed: Confirmed<Checkbox>,
    ) -> Result<String, ToolError> {
        Ok(args.path)
    }

    /// Delete a file.
    #[destructive(confirm = "checkbox", preview = Self::preview_delete, defer = "soon")]
    #[tool]
    async fn unreadable(
        &self,
        Parameters(args): Parameters<DeleteArgs>,
        _confirmed: Confirmed<Checkbox>,
    ) -> Result<String, ToolError> {
        Ok(args.path)
    }

    /// Delete a file.
    #[destructive(confirm = "checkbox", preview = Self::preview_delete, defer = "2d")]
    #[tool]
    async fn too_long(
        &self,
        Parameters(args): Parameters<DeleteArgs>,
        _confirmed: Confirmed<Checkbox>,
    ) -> Result<String, ToolError> {
        Ok(args.path)
    }

    /// Delete files.
    #[destructive(batch, preview = Self::preview_many, defer = "2m")]
    #[tool]
    async fn batch(&self, Parameters(_args): Parameters<DeleteArgs>, picked: Picked) -> Report {
        picked.act(|item| async move { Ok(item.title().to_owned()) }).await
    }

    /// Delete a file.
    #[destructive(
        confirm = "checkbox",
        preview = Self::preview_delete,
        undo = Self::undo_delete,
        undo_within = "10m",
        defer = "2m",
    )]
    #[tool]
    async fn with_undo(
        &self,
        Parameters(args): Parameters<DeleteArgs>,
        _confirmed: Confirmed<Checkbox>,
    ) -> Result<Reversible<String, String>, ToolError> {
        Ok(Reversible::new(format!("Deleted {}", args.path), args.path.clone()))
    }

    /// Delete a file with a token.
    #[destructive(
        confirm = "checkbox",
        preview = Self::preview_delete,
        approve = "url",
        secret = "Deploy token",
        defer = "2m",
    )]
    #[tool]
    async fn with_secret(
        &self,
        Parameters(args): Parameters<DeleteArgs>,
        _confirmed: Confirmed<Checkbox>,
    ) -> Result<String, ToolError> {
        Ok(args.path)
    }
}

fn main() {}
