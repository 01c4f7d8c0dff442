//! One pass of a server's deferred-call runner, for tests: the calls the database's clock
//! says are due. It takes no time, so a test cannot run a call before the time its human
//! was told; a test that needs a call due waits for it (a tool with a short `defer`).

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp_guard::{Guarded, ops::StoreError};

/// Runs `server`'s deferred calls that are due now on its store's clock, each through the
/// run of the tool that deferred it, as each pass of the runner [`rmcp_guard::run_deferred`]
/// starts does. `routes` builds the server's router once, for its tools' hidden
/// deferred-run routes. Returns how many calls this pass ended (0 without a store).
pub async fn run_due_deferred<S>(
    server: &S,
    routes: impl FnOnce() -> ToolRouter<S>,
) -> Result<u64, StoreError>
where
    S: Guarded + Send + Sync + 'static,
{
    rmcp_guard::__testing::run_due_deferred(server, routes).await
}
