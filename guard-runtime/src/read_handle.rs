//! What a `#[read_only]` tool may take as a parameter.
//!
//! `#[read_only]` asserts [`ReadHandle`] for the type of every parameter, at that
//! parameter's span. The check is on the type, not on how it is spelled, so a type alias
//! (`type Db = WriteDb;`), a renamed import (`use rmcp_guard::db::WriteDb as Db;`) or a
//! full path still names the write handle and still fails to compile.
//!
//! The trait is sealed: its supertrait lives in `rmcp_guard::__private`, so a type can
//! only become a read handle here, or by code that deliberately names that private item.
//!
//! `#[ask]` asserts the same of every parameter besides its arguments and its answer
//! (`ask::AskHandle`, a read handle under a message of its own): an `#[ask]` tool runs
//! with no preview and no re-check, so it must not be able to write either.

use rmcp::{
    Peer, RoleServer,
    handler::server::{
        common::Extension,
        tool::RequestId,
        tool::{InputResponses, RequestState, ToolName},
        wrapper::Parameters,
    },
    model::{Extensions, JsonObject, RequestMetaObject},
    service::RequestContext,
};

/// A parameter a `#[read_only]` tool may take: a handle that cannot write, or request data.
///
/// Implemented by [`crate::db::ReadDb`], [`crate::db::PgReadDb`] and rmcp's read-only
/// extractors: `Parameters<T>`, `JsonObject`, `RequestContext<RoleServer>`,
/// `Peer<RoleServer>`, `Extensions`, `RequestMetaObject`, `RequestId`, `ToolName`,
/// `RequestState`, `InputResponses`, and `Extension<ReadDb>` or `Extension<http::request::Parts>`
/// (the HTTP request parts rmcp's streamable HTTP server provides). An extension holds
/// whatever a layer put there, so no other `Extension<T>` counts, not even
/// `Extension<Parameters<T>>`. `WriteDb` is not one.
#[diagnostic::on_unimplemented(
    message = "a `#[read_only]` tool may only take read handles, and `{Self}` is not one",
    label = "not a read handle",
    note = "take `rmcp_guard::db::ReadDb` (SQLite) or `rmcp_guard::db::PgReadDb` (PostgreSQL): the database engine opens them read-only, so the tool cannot write even by mistake",
    note = "if the tool does write, it is not read-only: replace `#[read_only]` with `#[destructive(...)]` or `#[idempotent]`"
)]
pub trait ReadHandle: Sealed {}

/// The seal lives in a module of its own, so no public path of the runtime names it.
pub(crate) mod seal {
    /// The seal of [`ReadHandle`](super::ReadHandle); reachable only as `rmcp_guard::__private::ReadHandleSeal`.
    #[diagnostic::on_unimplemented(
        message = "`{Self}` cannot be declared a read handle: `ReadHandle` is sealed",
        label = "not one of guard's read handles",
        note = "only handles the database engine keeps read-only (`rmcp_guard::db::ReadDb`, `rmcp_guard::db::PgReadDb`) and rmcp's request data are read handles; take one of those in the `#[read_only]` tool instead"
    )]
    pub trait Sealed {}
}
pub(crate) use seal::Sealed;

/// What an `#[ask]` tool may take besides its arguments and its answer.
pub(crate) mod ask {
    /// A read handle, as an `#[ask]` tool's parameter; reachable only as
    /// `rmcp_guard::__private::AskHandle`. Its own trait so that the refusal names the fix
    /// for an `#[ask]` tool, not a `#[read_only]` one; every read handle is one, and nothing
    /// else.
    #[diagnostic::on_unimplemented(
        message = "an `#[ask]` tool may only take read handles, and `{Self}` is not one",
        label = "not a read handle",
        note = "an `#[ask]` tool is published with `destructiveHint: false` and runs its handler with no preview and no re-check, so it cannot take a handle that writes",
        note = "if the tool changes something with the answer, make it `#[destructive(preview = Self::preview_fn, ...)]` and take `Confirmed<YourForm>`: the human sees the effect before it runs, and it is re-checked once they answered",
        note = "if it only reads, take `rmcp_guard::db::ReadDb` (SQLite) or `rmcp_guard::db::PgReadDb` (PostgreSQL), which the database engine keeps read-only"
    )]
    pub trait AskHandle {}
    impl<T: super::ReadHandle + ?Sized> AskHandle for T {}
}

impl<T> Sealed for Parameters<T> {}
impl<T> ReadHandle for Parameters<T> {}
impl Sealed for JsonObject {}
impl ReadHandle for JsonObject {}
impl Sealed for RequestContext<RoleServer> {}
impl ReadHandle for RequestContext<RoleServer> {}
impl Sealed for Peer<RoleServer> {}
impl ReadHandle for Peer<RoleServer> {}
impl Sealed for Extensions {}
impl ReadHandle for Extensions {}
impl Sealed for RequestMetaObject {}
impl ReadHandle for RequestMetaObject {}
impl Sealed for RequestId {}
impl ReadHandle for RequestId {}
impl Sealed for ToolName {}
impl ReadHandle for ToolName {}
impl Sealed for RequestState {}
impl ReadHandle for RequestState {}
impl Sealed for InputResponses {}
impl ReadHandle for InputResponses {}
// An `Extension` holds whatever a layer put in the request, so only the read handles
// themselves count, never a wrapper such as `Parameters<T>` that can carry anything.
impl Sealed for Extension<http::request::Parts> {}
impl ReadHandle for Extension<http::request::Parts> {}
/// The HTTP request parts rmcp's streamable HTTP server puts into the extensions.
impl Sealed for http::request::Parts {}
impl ReadHandle for http::request::Parts {}
