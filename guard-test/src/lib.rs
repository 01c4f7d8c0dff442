//! Testing [`rmcp-guard`](https://docs.rs/rmcp-guard) servers in process, as `tokio-test` is
//! to tokio: what a server's own tests need, kept out of the crate the server depends on.
//!
//! - [`testing`]: a scripted human ([`ScriptedHuman`](testing::ScriptedHuman)), an rmcp
//!   client that answers each of guard's questions from a queue and records every question
//!   it was shown; one pass of a server's deferred-call runner that runs only what the
//!   database's clock says is due ([`run_due_deferred`](testing::run_due_deferred)); and an
//!   operation store that records the round trips its transactions make
//!   ([`CountingStore`](testing::CountingStore)).
//! - [`honesty`]: the annotation-honesty kit, which runs a tool through eight cases on fresh
//!   fixtures and checks its `readOnlyHint`, `idempotentHint` and `destructiveHint` (and a
//!   disclosing tool's declared class and caps) against what it really changed and showed.
//!
//! # Install
//!
//! A dev-dependency beside `rmcp-guard`, with the same store feature as the server
//! (`sqlite`, the default, or `postgres`):
//!
//! ```toml
//! [dev-dependencies]
//! rmcp-guard-test = "0.1"
//! ```
//!
//! # A scripted human
//!
//! The human accepts the first question with a ticked box; the test then reads what they
//! were shown. The server runs in the same process, over an in-memory pipe:
//!
//! ```no_run
//! use rmcp::{ServerHandler, ServiceExt, model::{CallToolRequestParams, ProtocolVersion}};
//! use rmcp_guard_test::testing::{Answer, ScriptedHuman};
//!
//! async fn delete_after_a_tick(server: impl ServerHandler) -> Result<(), Box<dyn std::error::Error>> {
//!     let (server_io, client_io) = tokio::io::duplex(64 * 1024);
//!     tokio::spawn(async move {
//!         if let Ok(running) = server.serve(server_io).await {
//!             let _ = running.waiting().await;
//!         }
//!     });
//!     let human = ScriptedHuman::new(ProtocolVersion::V_2025_11_25);
//!     human.will(Answer::Accept(serde_json::json!({"confirm": true})));
//!     let client = human.clone().connect(client_io).await?;
//!     let arguments = serde_json::json!({"path": "old.log"});
//!     let params = CallToolRequestParams::new("delete_file")
//!         .with_arguments(arguments.as_object().cloned().unwrap_or_default());
//!     let result = client.call_tool(params).await?;
//!     assert_eq!(result.is_error, Some(false));
//!     assert!(human.shown()[0].message.contains("old.log"));
//!     client.cancel().await?;
//!     Ok(())
//! }
//! ```
//!
//! On protocol 2026-07-28 the same human answers guard's input request: `call_tool` drives
//! the rounds, and a test that answers by hand sends its answer under
//! [`INPUT_KEY`](testing::INPUT_KEY).
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]

pub mod honesty;
pub mod testing;
