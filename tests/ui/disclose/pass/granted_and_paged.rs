// A disclosing tool may offer a grant over the scope its boundary states, or be approved on
// guard's page by other people; not both.

use rmcp::{handler::server::wrapper::Parameters, tool, tool_router};
use rmcp_guard::{Boundary, Disclosed, Guard, Guarded, ToolArgs, ToolError, read_only};

#[derive(Clone)]
struct S {
    guard: std::sync::Arc<Guard>,
}

impl Guarded for S {
    fn guard(&self) -> &Guard {
        &self.guard
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema, ToolArgs)]
struct JobArgs {
    /// The build job.
    job: u32,
}

#[tool_router(server_handler)]
impl S {
    /// Show the build log of a job; a grant may cover the next few.
    #[read_only(discloses = "credentials", boundary = Self::log_boundary, max_items = 2000, grant = "10m", grant_calls = 5)]
    #[tool]
    async fn read_build_log(&self, Parameters(args): Parameters<JobArgs>) -> Result<Disclosed<String>, ToolError> {
        let _ = args.job;
        Ok(Disclosed::new(1, String::from("ok")))
    }

    /// Show the variables of a job, once two other people approved on the page.
    #[read_only(discloses = "credentials", boundary = Self::log_boundary, approve = "url", approvers = 2)]
    #[tool]
    async fn read_variables(&self, Parameters(args): Parameters<JobArgs>) -> Result<Disclosed<String>, ToolError> {
        let _ = args.job;
        Ok(Disclosed::new(1, String::from("ok")))
    }

    async fn log_boundary(&self, args: &JobArgs) -> Result<Boundary, ToolError> {
        Ok(Boundary::new(format!("build job {}", args.job), "the full build log")
            .items(3, "log lines")
            .grant_scope("any build log"))
    }
}

fn main() {}
