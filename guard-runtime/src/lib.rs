//! guard: destructive MCP tools that are safe by construction, on rmcp.
//!
//! `#[destructive(...)]` above an rmcp `#[tool]` method asks the human through the client
//! before the effect runs, handles accept, decline and cancel as outcomes, revalidates the
//! answer on the server, re-checks the target, and only then calls the handler with a
//! [`Confirmed`] proof that nothing else can build. Unsafe handler shapes fail to compile.
//!
//! For business writes, `#[operations]` with `#[prepare]` and `#[confirm]` splits a write in
//! two: the prepare freezes an intent in an operation store, the confirm carries it out once,
//! in one transaction with its audit record (see [`ops`]).
//!
//! # Install
//!
//! `rmcp-guard` is the one guard crate to add (it re-exports the macros of
//! `rmcp-guard-macros`). rmcp's own `#[tool]` macros expand to `rmcp::...` paths, so rmcp is a
//! dependency of its own, from the 3.x line guard is built on; serde and schemars derive the
//! tools' arguments:
//!
//! ```toml
//! [dependencies]
//! rmcp-guard = "0.1"
//! rmcp = { version = "3.11", features = ["server", "macros", "transport-io"] }
//! tokio = { version = "1", features = ["macros", "rt-multi-thread"] }
//! serde = { version = "1", features = ["derive"] }
//! schemars = "1"
//! ```
//!
//! Features: `sqlite` (default: database handles for tools and the embedded operation store),
//! `postgres` (the PostgreSQL store and a read-only handle), `jwt` (identity from a verified
//! bearer token over HTTP), `approval` (the approval page for `approve = "url"`), `witness`
//! (checkpoints witnessed over HTTP).
//!
//! Scripted humans and the annotation-honesty kit, for a server's tests, are in the
//! dev-dependency [`rmcp-guard-test`](https://docs.rs/rmcp-guard-test).
//!
//! # A complete server
//!
//! One read-only tool, one destructive tool behind a checkbox, an allowlist naming the tools
//! to publish, on stdio (`examples/minimal`; run it as
//! `GUARD_ALLOWLIST=allowlist.toml minimal` with `tools = ["list_notes", "delete_note"]` in
//! the file). It serves a client on stdin and stdout, so it is compiled here, not run:
//!
#![doc = concat!("```rust,no_run\n", include_str!("../doc/minimal.rs"), "```")]
//!
//! # Guide
//!
//! The reference, one page per topic, in [`guide`]:
//!
//! - writing guarded tools: [`#[destructive]`](guide::destructive),
//!   [`#[ask]`](guide::ask) (input from the human, no destructive effect),
//!   [the call flow](guide::call_flow), [forms and arguments](guide::forms),
//!   [what fails to compile](guide::compile_errors), [honest annotations](guide::annotations);
//! - other kinds of write: [two-phase operations](guide::two_phase),
//!   [idempotency keys](guide::idempotency), [batches](guide::batches),
//!   [the approval page](guide::approval_page);
//! - around the tools: [the allowlist and read-only mode](guide::exposure),
//!   [identity and scopes](guide::identity), [the file sandbox](guide::sandbox),
//!   [the audit log](guide::audit_log), [protocol eras](guide::protocol_eras),
//!   [installing a server in a client](guide::installing);
//! - and the [threat model](guide::threat_model).
//!
//! # Where things are
//!
//! - The macros: [`destructive`], [`ask`] (whose handler takes an [`Answered`] form),
//!   [`read_only`], [`idempotent`], [`operations`] (with [`prepare`] and [`confirm`]), and the
//!   derives [`Form`](derive@Form),
//!   [`FormEnum`](derive@FormEnum) and [`ToolArgs`](derive@ToolArgs).
//! - [`batch`]: batch tools, where the human picks which matched items the effect touches.
//! - [`Guard`]: the server-wide configuration every guarded tool reads through [`Guarded`].
//! - [`Exposure`] and [`exposed`]: which tools a server publishes (an allowlist that fails
//!   closed, read-only mode).
//! - [`identity`]: who is calling, from trusted context only.
//! - [`ops`]: two-phase operations and their stores ([`ops::SqliteStore`], `ops::PgStore`).
//! - [`db`]: database handles a read-only tool may take.
//! - [`sandbox`]: files reached through a directory handle, never a path walked again.
//! - [`user_dirs`]: where an installed server keeps its database and allowlist.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]

extern crate self as rmcp_guard;

mod allowlist;
mod answered;
#[cfg(feature = "approval")]
pub mod approval;
mod args;
pub mod audit;
pub mod batch;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod blocking;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod budget;
pub mod canonical;
mod confirmed;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
#[cfg_attr(docsrs, doc(cfg(any(feature = "sqlite", feature = "postgres"))))]
pub mod db;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
#[cfg_attr(docsrs, doc(cfg(any(feature = "sqlite", feature = "postgres"))))]
pub mod defer;
pub mod disclose;
mod entry;
mod error;
pub mod exposure;
mod flow;
pub mod form;
pub mod forms;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
#[cfg_attr(docsrs, doc(cfg(any(feature = "sqlite", feature = "postgres"))))]
pub mod grant;
mod guard;
pub mod guide;
pub mod identity;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
#[cfg(any(feature = "sqlite", feature = "postgres"))]
#[cfg_attr(docsrs, doc(cfg(any(feature = "sqlite", feature = "postgres"))))]
pub mod ops;
pub mod outbox;
pub mod outcome;
pub mod person;
pub mod preview;
pub mod read_handle;
mod rfc3339;
#[cfg(unix)]
#[cfg_attr(docsrs, doc(cfg(unix)))]
pub mod sandbox;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod schema;
mod seal;
mod secret;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod store;
#[cfg(feature = "approval")]
#[cfg_attr(docsrs, doc(cfg(feature = "approval")))]
pub mod tasks;
mod trace;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
#[cfg_attr(docsrs, doc(cfg(any(feature = "sqlite", feature = "postgres"))))]
pub mod undo;
mod used;
pub mod user_dirs;
pub mod validate;

pub use answered::Answered;
pub use args::ToolArgs;
pub use confirmed::Confirmed;
pub use disclose::{Boundary, Disclosed};
pub use entry::exposed;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
#[cfg_attr(docsrs, doc(cfg(any(feature = "sqlite", feature = "postgres"))))]
pub use entry::undo::{purge_due_undo_windows, purge_undo_windows};
#[cfg(any(feature = "sqlite", feature = "postgres"))]
#[cfg_attr(docsrs, doc(cfg(any(feature = "sqlite", feature = "postgres"))))]
pub use entry::withdraw::run_deferred;
pub use error::{Code, OwnCode, ToolError};
pub use exposure::Exposure;
pub use form::{Form, FormEnum};
pub use guard::{Guard, GuardError, Guarded};
#[cfg(feature = "jwt")]
#[cfg_attr(docsrs, doc(cfg(feature = "jwt")))]
pub use identity::BearerIdentity;
pub use identity::{EnvIdentity, Identity, IdentityProvider, require_scopes};
pub use outbox::Outbox;
pub use preview::Preview;
/// The rmcp this crate is built on, for naming its types at the version guard uses.
#[doc(no_inline)]
pub use rmcp;
pub use rmcp_guard_macros::{
    Form, FormEnum, ToolArgs, ask, confirm, destructive, idempotent, operations, prepare,
    read_only, tool_router,
};
/// The rusqlite guard's SQLite handles and store are built on, for naming its types
/// (`Connection`, `params!`, `OptionalExtension`) at the version guard uses, without pinning
/// it in your own `Cargo.toml`:
///
/// ```
/// use rmcp_guard::rusqlite::{Connection, params};
///
/// let conn = Connection::open_in_memory()?;
/// conn.execute("CREATE TABLE notes (title TEXT)", params![])?;
/// # Ok::<(), rmcp_guard::rusqlite::Error>(())
/// ```
#[cfg(feature = "sqlite")]
#[cfg_attr(docsrs, doc(cfg(feature = "sqlite")))]
#[doc(no_inline)]
pub use rusqlite;
pub use secret::Secret;
/// The tokio-postgres guard's PostgreSQL handle and store are built on, at the version guard
/// uses.
#[cfg(feature = "postgres")]
#[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
#[doc(no_inline)]
pub use tokio_postgres;
pub use validate::visible_len;

#[cfg(test)]
mod layering;

#[doc(hidden)]
#[path = "private/mod.rs"]
pub mod __private;

/// What `rmcp-guard-test` reaches inside guard (feature `testing`), and nothing else should:
/// neither item decides when an effect runs or makes a proof.
#[cfg(feature = "testing")]
#[doc(hidden)]
pub mod __testing {
    /// One pass of the deferred-call runner: what the database's clock says is due.
    #[cfg(any(feature = "sqlite", feature = "postgres"))]
    pub use crate::entry::withdraw::run_due_deferred;
    /// The key of guard's one input request in an `InputRequiredResult` (2026-07-28).
    pub use crate::flow::INPUT_KEY;
}
