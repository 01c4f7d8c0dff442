// A disclosing tool without a boundary: the human would not see what is shown.

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
    /// Show the build log of a job.
    #[read_only(discloses = "sensitive")]
    #[tool]
    async fn read_build_log(&self, Parameters(args): Parameters<JobArgs>) -> Result<Disclosed<String>, ToolError> {
        let _ = args.job;
        Ok(Disclosed::new(1, String::from("ok")))
    }

    async fn log_boundary(&self, args: &JobArgs) -> Result<Boundary, ToolError> {
        Ok(Boundary::new(format!("build job {}", args.job), "the full build log").items(3, "log lines"))
    }
}

fn main() {}
