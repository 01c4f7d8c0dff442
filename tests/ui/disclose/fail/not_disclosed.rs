// A disclosing handler returns its result with its count.

use rmcp::{handler::server::wrapper::Parameters, tool, tool_router};
use rmcp_guard::{Boundary, Guard, Guarded, ToolArgs, ToolError, read_only};

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
    /// Show the build log of a job.
    #[read_only(discloses = "credentials", boundary = Self::log_boundary)]
    #[tool]
    async fn read_build_log(&self, Parameters(args): Parameters<JobArgs>) -> Result<String, ToolError> {
        let _ = args.job;
        Ok(String::from("ok"))
    }

    async fn log_boundary(&self, args: &JobArgs) -> Result<Boundary, ToolError> {
        Ok(Boundary::new(format!("build job {}", args.job), "the full build log").items(3, "log lines"))
    }
}

fn main() {}
