//! The baseline guard is measured against: a plain rmcp server with one `delete_file(path)`
//! tool doing what a careful author would write by hand. It resolves the path in a sandbox
//! root (canonicalize; refuse `..`, absolute paths and escapes), checks the file exists, asks
//! once with `elicitation/create` and the same form as guard's checkbox (`{confirm, reason?}`),
//! handles accept, decline and cancel, requires `confirm == true`, re-checks the file (type,
//! size, modification time) and deletes it. It answers with the same texts as safe-ops.

use std::{
    path::{Component, Path, PathBuf},
    time::Duration,
};

use rmcp::{
    ErrorData, Peer, RoleServer, ServiceError,
    handler::server::wrapper::Parameters,
    model::{
        CallToolResult, ContentBlock, ElicitRequestParams, ElicitationAction, ElicitationSchema,
    },
    tool, tool_router,
};
use schemars::JsonSchema;
use serde::Deserialize;

/// How long the human has to answer; guard's default, used by both sides.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(300);

/// The server: a canonical sandbox root.
#[derive(Clone)]
pub struct HandWritten {
    /// Canonical sandbox root.
    root: PathBuf,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct DeleteFileArgs {
    /// Path of the file, relative to the sandbox root.
    pub path: String,
}

/// The answer to the confirmation form.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Confirmation {
    #[serde(default)]
    pub confirm: bool,
    #[serde(default)]
    pub reason: Option<String>,
}

/// The same `requestedSchema` as guard's checkbox form for `delete_file`.
pub fn confirmation_schema() -> ElicitationSchema {
    ElicitationSchema::builder()
        .optional_bool_with("confirm", |b| {
            b.title("Confirm deletion")
                .description("Delete the file.")
                .with_default(false)
        })
        .optional_string_with("reason", |s| {
            s.title("Reason")
                .description("Why (optional, for the audit log).")
                .max_length(500)
        })
        .build_unchecked()
}

fn text(text: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(text)])
}

fn refuse(text: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(text)])
}

impl HandWritten {
    /// Serves files under `root`, which must exist.
    pub fn new(root: &Path) -> std::io::Result<Self> {
        Ok(Self {
            root: root.canonicalize()?,
        })
    }

    /// `Ok(None)` when nothing is there; `Err` when the path leaves the root or is not a
    /// regular file.
    pub fn resolve(&self, requested: &str) -> Result<Option<PathBuf>, String> {
        let path = Path::new(requested);
        if requested.trim().is_empty() || path.is_absolute() {
            return Err(format!("`{requested}` must be a path inside the sandbox"));
        }
        if path.components().any(|c| c == Component::ParentDir) {
            return Err(format!("`{requested}` contains `..`"));
        }
        let joined = self.root.join(path);
        if std::fs::symlink_metadata(&joined).is_err() {
            return Ok(None);
        }
        let real = joined
            .canonicalize()
            .map_err(|e| format!("cannot resolve `{requested}`: {e}"))?;
        if !real.starts_with(&self.root) {
            return Err(format!("`{requested}` leads outside the sandbox"));
        }
        if !real.is_file() {
            return Err(format!("`{requested}` is not a regular file"));
        }
        Ok(Some(real))
    }
}

#[tool_router(server_handler)]
impl HandWritten {
    /// Delete a file inside the sandbox root. The user confirms in a form first.
    #[tool]
    async fn delete_file(
        &self,
        Parameters(args): Parameters<DeleteFileArgs>,
        peer: Peer<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let file = match self.resolve(&args.path) {
            Ok(Some(file)) => file,
            Ok(None) => {
                return Ok(text(format!(
                    "File not found, nothing to delete: {}",
                    args.path
                )));
            }
            Err(reason) => return Ok(refuse(reason)),
        };
        let Ok(before) = std::fs::metadata(&file) else {
            return Ok(text(format!(
                "File not found, nothing to delete: {}",
                args.path
            )));
        };
        let question = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: format!(
                "Delete file {} ({} bytes). This cannot be undone.",
                file.display(),
                before.len()
            ),
            requested_schema: confirmation_schema(),
        };
        let answer = match peer
            .create_elicitation_with_timeout(question, Some(ANSWER_TIMEOUT))
            .await
        {
            Ok(answer) => answer,
            Err(ServiceError::Timeout { .. }) => {
                return Ok(text("The confirmation was cancelled; nothing was deleted."));
            }
            Err(error) => {
                return Ok(refuse(format!(
                    "Nothing was deleted: the confirmation could not reach the user ({error})."
                )));
            }
        };
        match answer.action {
            ElicitationAction::Accept => {}
            ElicitationAction::Decline => {
                return Ok(text("The user declined; nothing was deleted."));
            }
            _ => {
                return Ok(text("The confirmation was cancelled; nothing was deleted."));
            }
        }
        let form: Confirmation = match answer.content.map(serde_json::from_value) {
            Some(Ok(form)) => form,
            _ => return Ok(refuse("Nothing was deleted: the form answer is invalid.")),
        };
        if !form.confirm {
            return Ok(refuse(
                "Nothing was deleted: the confirmation box was not ticked.",
            ));
        }
        if form
            .reason
            .as_ref()
            .is_some_and(|r| r.chars().count() > 500)
        {
            return Ok(refuse(
                "Nothing was deleted: the reason is longer than 500 characters.",
            ));
        }
        // The file must still be the one the user confirmed.
        match std::fs::symlink_metadata(&file) {
            Ok(now)
                if now.is_file()
                    && now.len() == before.len()
                    && now.modified().ok() == before.modified().ok() => {}
            _ => {
                return Ok(refuse(format!(
                    "{} changed after the user confirmed; nothing was deleted.",
                    args.path
                )));
            }
        }
        if let Err(error) = std::fs::remove_file(&file) {
            return Ok(refuse(format!("Could not delete {}: {error}", args.path)));
        }
        let reason = form
            .reason
            .map(|r| format!(" Reason: {r}."))
            .unwrap_or_default();
        Ok(text(format!("Deleted {}.{reason}", args.path)))
    }
}
