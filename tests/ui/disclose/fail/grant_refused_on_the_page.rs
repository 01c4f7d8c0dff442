// A grant would let the requester alone go on where the page needs other people; `grant`
// without `grant_calls`, and `approvers` without the page, say what is missing.

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
    /// Approved on the page, with a grant.
    #[read_only(discloses = "credentials", boundary = Self::log_boundary, approve = "url", grant = "10m", grant_calls = 5)]
    #[tool]
    async fn paged(&self, Parameters(args): Parameters<JobArgs>) -> Result<Disclosed<String>, ToolError> {
        let _ = args.job;
        Ok(Disclosed::new(1, String::from("ok")))
    }

    /// A grant without its count.
    #[read_only(discloses = "credentials", boundary = Self::log_boundary, grant = "10m")]
    #[tool]
    async fn uncounted(&self, Parameters(args): Parameters<JobArgs>) -> Result<Disclosed<String>, ToolError> {
        let _ = args.job;
        Ok(Disclosed::new(1, String::from("ok")))
    }

    /// Approvers without the page.
    #[read_only(discloses = "credentials", boundary = Self::log_boundary, approvers = 2)]
    #[tool]
    async fn unpaged(&self, Parameters(args): Parameters<JobArgs>) -> Result<Disclosed<String>, ToolError> {
        let _ = args.job;
        Ok(Disclosed::new(1, String::from("ok")))
    }

    async fn log_boundary(&self, args: &JobArgs) -> Result<Boundary, ToolError> {
        Ok(Boundary::new(format!("build job {}", args.job), "the full build log"))
    }
}

fn main() {}
