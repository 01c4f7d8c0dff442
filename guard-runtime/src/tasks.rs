//! Approvals on guard's page as MCP Tasks (SEP-2663) on protocol 2026-07-28.
//!
//! A server opts in with three delegations and one capability, in the `impl ServerHandler`
//! it already writes for [`exposed`](crate::exposed):
//!
//! ```rust,ignore
//! use rmcp::{ErrorData, RoleServer, service::RequestContext, model::*};
//!
//! #[tool_handler(router = exposed(self, Self::tool_router))]
//! impl ServerHandler for MyServer {
//!     fn get_info(&self) -> ServerConfig {
//!         ServerConfig::new(rmcp_guard::tasks::advertise(
//!             ServerCapabilities::builder().enable_tools().build(),
//!         ))
//!     }
//!     async fn get_task(&self, request: GetTaskParams, context: RequestContext<RoleServer>)
//!         -> Result<GetTaskResult, ErrorData> {
//!         rmcp_guard::tasks::get(self, request, context).await
//!     }
//!     async fn update_task(&self, request: UpdateTaskParams, context: RequestContext<RoleServer>)
//!         -> Result<(), ErrorData> {
//!         rmcp_guard::tasks::update(self, request, context).await
//!     }
//!     async fn cancel_task(&self, request: CancelTaskParams, context: RequestContext<RoleServer>)
//!         -> Result<(), ErrorData> {
//!         rmcp_guard::tasks::cancel(self, request, context).await
//!     }
//! }
//! ```
//!
//! Then a call of a tool with `approve = "url"`, from a client that declared the Tasks
//! extension on 2026-07-28, answers with a task (`resultType: "task"`) instead of MRTR
//! rounds. Its id is the approval's; `tasks/get` answers `input_required` with the URL
//! elicitation while people decide, and once they did, runs the call once (the first
//! `tasks/get` after the decision claims the run, on whichever replica) and answers
//! `completed` with the tool's natural result: executed, `state_changed`, rejected by whom,
//! expired, or `approval_used` when a later call of the requester ran it first. A task the
//! client cancels (`tasks/cancel`, or `decline` through `tasks/update`) is `cancelled`, its
//! approval withdrawn and recorded, and nothing runs on it afterwards. Everything a task
//! answers is read from the approval's rows in the operation store: it outlives a restart,
//! and replicas sharing the store and `GUARD_HMAC_KEY` serve it. Only its requester sees
//! it; anyone else (another person, the same name in another tenant) gets the answer for an
//! id never issued.
//!
//! A server that does not advertise the extension keeps MRTR rounds; so does a client that
//! did not declare it, and 2025-11-25 keeps push elicitation. See the guide's approval page
//! chapter for what an expiry or a cancellation means.

pub use crate::flow::task::{POLL_INTERVAL, RUN_TAKEN_OVER_AFTER, advertise, cancel, get, update};
