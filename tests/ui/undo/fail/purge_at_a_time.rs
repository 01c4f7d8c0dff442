// An undo window is purged when the database's clock says its deadline passed, never at a
// time code passes: no purge pass takes one. This would have purged every window now,
// while its human was still told they could undo it.
#![allow(dead_code)]

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp_guard::Guarded;

async fn purge_everything_now<S: Guarded + Send + Sync + 'static>(
    server: &S,
    routes: impl FnOnce() -> ToolRouter<S>,
) {
    let _ = rmcp_guard::purge_due_undo_windows(server, routes, i64::MAX).await;
}

fn main() {}
