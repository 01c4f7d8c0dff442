// A deferred call runs when the database's clock says it is due, never at a time code
// passes: no public pass takes one. This would have run every scheduled call now, before
// the time its human was told and while it could still be withdrawn.
#![allow(dead_code)]

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp_guard::Guarded;

async fn run_everything_now<S: Guarded + Send + Sync + 'static>(
    server: &S,
    routes: impl FnOnce() -> ToolRouter<S>,
) {
    let _ = rmcp_guard::run_due_deferred(server, routes, i64::MAX).await;
}

async fn run_everything_now_in_tests<S: Guarded + Send + Sync + 'static>(
    server: &S,
    routes: impl FnOnce() -> ToolRouter<S>,
) {
    let _ = rmcp_guard_test::testing::run_due_deferred(server, routes, i64::MAX).await;
}

fn main() {}
