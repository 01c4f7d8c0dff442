//! Seals for the traits whose impls assert a safety property. Their derives implement these;
//! a hand-written impl has to name an item of `rmcp_guard::__private`, which is no API.

/// Implemented by `#[derive(Form)]` only, after its compile-time checks passed.
#[diagnostic::on_unimplemented(
    message = "`{Self}` implements `Form` by hand, so guard never checked it",
    label = "not a `#[derive(rmcp_guard::Form)]` struct",
    note = "remove the hand-written impl and add `#[derive(rmcp_guard::Form)]` to `{Self}`: the derive checks that the form is flat, collects no secrets and that its confirmation roles are real fields"
)]
pub trait FormDerived {}

/// Implemented by `#[derive(FormEnum)]` only.
#[diagnostic::on_unimplemented(
    message = "`{Self}` implements `FormEnum` by hand, so guard never checked it",
    label = "not a `#[derive(rmcp_guard::FormEnum)]` enum",
    note = "remove the hand-written impl and add `#[derive(rmcp_guard::FormEnum)]` to `{Self}`: the derive checks that it is unit-only and that its wire values are distinct"
)]
pub trait FormEnumDerived {}

/// A value only guard names: the hidden method of `FieldValue` takes one, so only guard's
/// own impls (for the flat kinds) exist.
pub struct FlatKind(());
