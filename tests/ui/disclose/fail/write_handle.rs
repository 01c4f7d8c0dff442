// A disclosing tool is still read-only: a write handle is refused as for any `#[read_only]` tool.

use rmcp::{handler::server::wrapper::Parameters, tool, tool_router};
use rmcp_guard::{Boundary, Disclosed, Guard, Guarded, ToolArgs, ToolError, db::WriteDb, read_only};

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
    async fn read_build_log(&self, Parameters(args): Parameters<JobArgs>, _db: WriteDb) -> Result<Disclosed<String>, ToolError> {
        let _ = args.job;
        Ok(Disclosed::new(1, String::from("ok")))
    }

    async fn log_boundary(&self, args: &JobArgs) -> Result<Boundary, ToolError> {
        Ok(Boundary::new(format!("build job {}", args.job), "the full build log").items(3, "log lines"))
    }
}

fn main() {}
