// A custom form with a single-choice enum (titled values) and a server-side business rule.

use std::sync::Arc;

use rmcp_guard::{
    Confirmed, Form, FormEnum, Guard, Guarded, Preview, ToolArgs, ToolError, destructive,
};
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
struct DeployArgs {
    service: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, FormEnum)]
enum ApprovalLevel {
    #[form(title = "Standard")]
    Standard,
    #[form(title = "Urgent (needs a rollback plan)")]
    Urgent,
    #[form(value = "change-board", title = "Change board")]
    ChangeBoard,
}

#[derive(Debug, Form)]
struct DeployConfig {
    #[form(title = "Approval level", default = "standard")]
    approval_level: ApprovalLevel,
    #[form(title = "Rollback plan", max_length = 2000)]
    rollback_plan: Option<String>,
}

fn urgent_needs_rollback_plan(form: &DeployConfig) -> Result<(), String> {
    if form.approval_level == ApprovalLevel::Urgent && form.rollback_plan.is_none() {
        return Err("an urgent deploy needs a rollback plan".into());
    }
    Ok(())
}

impl S {
    async fn preview_deploy(&self, args: &DeployArgs) -> Result<Preview, ToolError> {
        Ok(Preview::effect(
            args.service.clone(),
            format!("Deploy {}", args.service),
        ))
    }
}

#[tool_router(server_handler)]
impl S {
    /// Deploy a service.
    #[destructive(
        form = DeployConfig,
        preview = Self::preview_deploy,
        validate = urgent_needs_rollback_plan,
        timeout = "5m"
    )]
    #[tool]
    async fn deploy(
        &self,
        Parameters(args): Parameters<DeployArgs>,
        confirmed: Confirmed<DeployConfig>,
    ) -> Result<String, ToolError> {
        let level = confirmed.approval_level.as_wire();
        Ok(format!("Deploying {} ({level})", args.service))
    }
}

fn main() {
    let values: Vec<_> = ApprovalLevel::VALUES
        .iter()
        .map(|v| (v.value, v.title))
        .collect();
    assert_eq!(
        values,
        [
            ("standard", Some("Standard")),
            ("urgent", Some("Urgent (needs a rollback plan)")),
            ("change-board", Some("Change board")),
        ]
    );
    assert_eq!(
        ApprovalLevel::from_wire("change-board"),
        Some(ApprovalLevel::ChangeBoard)
    );
    assert_eq!(ApprovalLevel::from_wire("ChangeBoard"), None);
    let router = S::tool_router();
    assert!(router.get("deploy").is_some());
}
