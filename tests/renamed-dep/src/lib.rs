//! guard under another name: this crate depends on rmcp-guard as `g` and also reaches it
//! through a re-export (`crate::guard`). Every guard macro expands here, which the tests at
//! the bottom check through the router rmcp builds.

use std::sync::Arc;

use g::tool_router;
use g::{
    Confirmed, Form, FormEnum, Guard, Guarded, Preview, ToolArgs, ToolError, destructive,
    forms::Checkbox,
    ops::{Approved, Intent, Locked, Prepare, Recheck},
};
use rmcp::{handler::server::wrapper::Parameters, tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// guard as a crate of one's own might re-export it.
pub mod guard {
    pub use g::*;
}

#[derive(Clone)]
pub struct Renamed {
    guard: Arc<Guard>,
}

impl Guarded for Renamed {
    fn guard(&self) -> &Guard {
        &self.guard
    }
}

#[derive(Deserialize, JsonSchema, ToolArgs)]
pub struct DeleteArgs {
    pub path: String,
    pub mode: Mode,
}

#[derive(Deserialize, JsonSchema, ToolArgs)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    Soft,
    Hard,
}

#[derive(FormEnum)]
pub enum Level {
    Low,
    High,
}

#[derive(Form)]
pub struct Reason {
    #[form(title = "Why", min_length = 1)]
    pub why: String,
    #[form(title = "Level")]
    pub level: Level,
}

#[derive(Deserialize, JsonSchema, ToolArgs)]
pub struct CancelArgs {
    pub order_no: String,
}

#[derive(Clone, Serialize, Deserialize)]
pub struct Cancel {
    pub order_no: String,
}

impl Renamed {
    async fn preview_delete(&self, args: &DeleteArgs) -> Result<Preview, ToolError> {
        Ok(Preview::effect(&args.path, format!("Delete {}", args.path)))
    }

    async fn preview_delete_all(&self) -> Result<guard::batch::Batch, ToolError> {
        Ok(guard::batch::Batch::new("every file", "Delete"))
    }

    async fn still_open(&self, locked: &mut Locked<Cancel>) -> Result<Recheck, ToolError> {
        let _ = locked.payload();
        Ok(Recheck::Unchanged)
    }
}

#[g::operations]
#[tool_router(vis = "pub")]
impl Renamed {
    /// Delete a file.
    #[destructive(confirm = "checkbox", preview = Self::preview_delete)]
    #[tool]
    async fn delete_file(
        &self,
        Parameters(args): Parameters<DeleteArgs>,
        _confirmed: Confirmed<Checkbox>,
    ) -> Result<String, ToolError> {
        Ok(format!("Deleted {}", args.path))
    }

    /// Delete a file, asking why, through the re-export.
    #[guard::destructive(crate = "crate::guard", form = Reason, preview = Self::preview_delete)]
    #[tool]
    async fn delete_with_reason(
        &self,
        Parameters(args): Parameters<DeleteArgs>,
        confirmed: Confirmed<Reason>,
    ) -> Result<String, ToolError> {
        Ok(format!("Deleted {}: {}", args.path, confirmed.why))
    }

    /// Delete the picked files, through the re-export.
    #[guard::destructive(crate = "crate::guard", batch, preview = Self::preview_delete_all)]
    #[tool]
    async fn delete_picked(&self, picked: guard::batch::Picked) -> guard::batch::Report {
        picked
            .act(|item| async move { Ok(item.key().to_owned()) })
            .await
    }

    /// List nothing.
    #[g::read_only]
    #[tool]
    async fn list(&self) -> String {
        String::new()
    }

    /// Prepare a cancellation.
    #[g::prepare(op = "order_cancel", ttl = "10m")]
    #[tool]
    async fn prepare_cancel(
        &self,
        _prepare: &mut Prepare,
        Parameters(args): Parameters<CancelArgs>,
    ) -> Result<Intent<Cancel>, ToolError> {
        Ok(Intent::new(
            args.order_no.clone(),
            Cancel {
                order_no: args.order_no,
            },
        ))
    }

    /// Confirm a cancellation.
    #[g::confirm(op = "order_cancel", recheck = Self::still_open)]
    #[tool]
    async fn confirm_cancel(&self, approved: &mut Approved<Cancel>) -> Result<String, ToolError> {
        Ok(format!("cancelled {}", approved.payload().order_no))
    }
}

/// Names of the author's own that happen to be `rmcp_guard`: guard quotes its crate path
/// into what it generates and leaves the author's code alone, so these compile under a
/// renamed dependency.
pub struct Shadowed {
    guard: Arc<Guard>,
}

impl Guarded for Shadowed {
    fn guard(&self) -> &Guard {
        &self.guard
    }
}

#[derive(Deserialize, JsonSchema, ToolArgs)]
pub struct TagArgs {
    pub rmcp_guard: String,
}

#[derive(Form)]
pub struct TagNote {
    #[form(title = "Note")]
    pub rmcp_guard: String,
}

#[tool_router(vis = "pub")]
impl Shadowed {
    /// Tag a file.
    #[destructive(form = TagNote, preview = Self::preview_tag)]
    #[tool]
    async fn tag_file(
        &self,
        Parameters(args): Parameters<TagArgs>,
        confirmed: Confirmed<TagNote>,
    ) -> Result<String, ToolError> {
        let rmcp_guard = format!("{}: {}", args.rmcp_guard, confirmed.rmcp_guard);
        Ok(rmcp_guard)
    }

    async fn preview_tag(&self, args: &TagArgs) -> Result<Preview, ToolError> {
        let rmcp_guard = &args.rmcp_guard;
        Ok(Preview::effect(rmcp_guard, format!("Tag {rmcp_guard}.")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_is_routed_with_guard_annotations() {
        let router = Renamed::tool_router();
        let mut names: Vec<_> = router
            .list_all()
            .into_iter()
            .map(|t| t.name.to_string())
            .collect();
        names.sort();
        assert_eq!(
            names,
            [
                "confirm_cancel",
                "delete_file",
                "delete_picked",
                "delete_with_reason",
                "get_operation_result",
                "list",
                "prepare_cancel"
            ]
        );
        let hints = |name: &str| {
            router
                .get(name)
                .and_then(|t| t.annotations.clone())
                .unwrap()
        };
        assert_eq!(hints("delete_file").destructive_hint, Some(true));
        assert_eq!(hints("delete_with_reason").destructive_hint, Some(true));
        assert_eq!(hints("delete_picked").destructive_hint, Some(true));
        assert_eq!(hints("list").read_only_hint, Some(true));
        assert_eq!(hints("confirm_cancel").destructive_hint, Some(true));
        assert_eq!(Reason::SPEC.fields.len(), 2);
        assert_eq!(<Level as FormEnum>::VALUES.len(), 2);
    }

    #[test]
    fn names_of_the_authors_own_called_rmcp_guard_compile() {
        let router = Shadowed::tool_router();
        let hints = router
            .get("tag_file")
            .and_then(|t| t.annotations.clone())
            .unwrap();
        assert_eq!(hints.destructive_hint, Some(true));
        assert_eq!(TagNote::SPEC.fields[0].name, "rmcp_guard");
    }
}
