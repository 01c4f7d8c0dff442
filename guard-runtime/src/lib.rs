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

extern crate self as guard_runtime;

mod args;
mod canonical;
mod confirmed;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub mod db;
mod error;
pub mod exposure;
mod flow;
mod form;
pub mod forms;
mod guard;
pub mod identity;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub mod ops;
mod outbox;
mod preview;
mod trace;
mod validate;

#[cfg(feature = "testing")]
pub mod honesty;
#[cfg(feature = "testing")]
pub mod testing;

pub use args::{TargetText, ToolArgs};
pub use canonical::canonical_json;
pub use confirmed::Confirmed;
pub use error::{ToolError, codes};
pub use exposure::Exposure;
pub use flow::{ConfirmKind, INPUT_KEY, ToolSpec};
pub use form::{
    CheckboxForm, DefaultValue, EnumValue, FieldKind, FieldRole, FieldSpec, FieldValue, Form,
    FormEnum, FormSpec, Format, TypeToConfirmForm,
};
pub use guard::{Guard, GuardError, Guarded, KEY_ENV, exposed};
pub use guard_macros::{
    Form, FormEnum, ToolArgs, confirm, destructive, idempotent, operations, prepare, read_only,
};
#[cfg(feature = "jwt")]
pub use identity::BearerIdentity;
pub use identity::{EnvIdentity, Identity, IdentityProvider, require_scopes};
pub use outbox::{Outbound, Outbox};
pub use preview::{Effect, Preview};
pub use validate::validate;

/// Items the macros expand to. Not a stable API.
#[doc(hidden)]
pub mod __private {
    pub use crate::flow::{Flow, GuardCall, Rules};
    pub use rmcp;
    pub use serde_json;

    /// Pins a guarded tool's argument type to `ToolArgs` at the span of its `Parameters<_>`.
    pub const fn assert_tool_args<T: crate::ToolArgs>() {}
    /// Pins a handler's form to `Form`.
    pub const fn assert_form<T: crate::Form>() {}
    pub const fn assert_checkbox_form<T: crate::CheckboxForm>() {}
    pub const fn assert_type_to_confirm_form<T: crate::TypeToConfirmForm>() {}
    pub const fn assert_guarded<T: crate::Guarded + ?Sized>() {}
    /// Hands the proof, locked as the payload its prepare's `Intent<P>` froze, to a confirm
    /// taking `Approved<P>`; pins the two payload types to be the same. The intent is locked
    /// as the prepare's type, so a mismatch is this one error, not also the recheck's.
    #[cfg(any(feature = "sqlite", feature = "postgres"))]
    pub fn same_payload<Prepared, Confirmed>(
        approved: &mut crate::ops::Approved<Prepared>,
    ) -> &mut crate::ops::Approved<Confirmed>
    where
        Prepared: SamePayload<Confirmed>,
    {
        Prepared::same(approved)
    }

    #[cfg(any(feature = "sqlite", feature = "postgres"))]
    #[diagnostic::on_unimplemented(
        message = "the confirm takes `Approved<{T}>` but its prepare returns `Intent<{Self}>`",
        label = "not the payload the prepare froze",
        note = "a confirm acts on exactly what its prepare stored and the user saw: use the same payload type in both"
    )]
    pub trait SamePayload<T>: Sized {
        fn same(approved: &mut crate::ops::Approved<Self>) -> &mut crate::ops::Approved<T>;
    }
    #[cfg(any(feature = "sqlite", feature = "postgres"))]
    impl<T> SamePayload<T> for T {
        fn same(approved: &mut crate::ops::Approved<T>) -> &mut crate::ops::Approved<T> {
            approved
        }
    }
}
