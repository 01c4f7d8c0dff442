//! What the safe-ops tools take: their arguments, the forms the human fills in, and the
//! rules both are checked by on the server.

use rmcp_guard::{Form, FormEnum, ToolArgs, ToolError};
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Debug, Deserialize, JsonSchema, ToolArgs)]
pub struct DeleteFileArgs {
    /// Path of the file, relative to the sandbox root (an absolute path beneath the root also
    /// works).
    pub path: String,
}

#[derive(Debug, Deserialize, JsonSchema, ToolArgs)]
pub struct DeleteFilesArgs {
    /// Which files, relative to the sandbox root: `*` and `?` match within one directory
    /// level (for example `logs/*.log` or `reports/2024-??.csv`).
    pub pattern: String,
}

#[derive(Debug, Form)]
pub struct DeleteConfirmation {
    /// Delete the file.
    #[form(checkbox, title = "Confirm deletion", default = false)]
    pub confirm: bool,
    /// Why (optional, for the audit log).
    #[form(title = "Reason", max_length = 500)]
    pub reason: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema, ToolArgs)]
pub struct DropTableArgs {
    /// Name of the table to drop.
    pub table: String,
}

#[derive(Debug, Form)]
pub struct DropTableConfirmation {
    /// Type the table name exactly to confirm.
    #[form(confirm_text, title = "Table name")]
    pub typed_name: String,
    /// Who approves this drop.
    // Kept in the audit record (free text is redacted by default): who approved is the
    // first question an incident review asks.
    #[form(title = "Approver", min_length = 1, max_length = 100, redact = false)]
    pub approver: String,
}

#[derive(Debug, Deserialize, JsonSchema, ToolArgs)]
pub struct DeployArgs {
    /// Name of the service to deploy.
    pub service: String,
    /// Where to deploy: `staging`, the default and the only environment this tool deploys
    /// to. Production deploys go through `deploy_production`.
    #[serde(default)]
    pub environment: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema, ToolArgs)]
pub struct DeployProductionArgs {
    /// Name of the service to deploy to production.
    pub service: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, FormEnum)]
pub enum ApprovalLevel {
    #[form(title = "Standard")]
    Standard,
    #[form(title = "Urgent")]
    Urgent,
}

#[derive(Debug, Form)]
pub struct DeployConfig {
    /// Approval level.
    #[form(title = "Approval level", default = "standard")]
    pub approval_level: ApprovalLevel,
    /// Summary of the rollback plan.
    #[form(title = "Rollback plan", min_length = 1, max_length = 2000)]
    pub rollback_plan: String,
}

/// Server-side business rule: the client's form checks are only a first filter.
pub(super) fn urgent_needs_rollback_plan(form: &DeployConfig) -> Result<(), String> {
    // Counted as guard counts `min_length`: visible characters only, so padding with
    // zero-width or other invisible characters does not make a plan.
    if form.approval_level == ApprovalLevel::Urgent
        && rmcp_guard::visible_len(&form.rollback_plan) < 10
    {
        return Err(
            "an urgent deploy needs a rollback plan of at least 10 visible characters".into(),
        );
    }
    Ok(())
}

/// Service and table names: letters, digits, `_` and `-`, as the tools promise.
pub(super) fn check_name(kind: &str, name: &str) -> Result<(), ToolError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if ok {
        Ok(())
    } else {
        Err(ToolError::invalid_input(format!(
            "{kind} name {name:?} is not valid: use 1-64 letters, digits, `_` or `-`"
        )))
    }
}
