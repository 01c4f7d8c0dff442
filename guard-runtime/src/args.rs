//! Compile-time contracts on a guarded tool's model-visible arguments.

/// Arguments the model fills in. `#[derive(ToolArgs)]` rejects, at compile time, fields that
/// would let the model confirm on the human's behalf (`confirmed`, `approved`, …) or claim an
/// identity (`user_id`, `tenant_id`, …): identity comes from trusted context, consent from
/// the human.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is the argument type of a guarded tool but guard has not checked it",
    label = "missing `#[derive(guard_runtime::ToolArgs)]`",
    note = "add `#[derive(guard_runtime::ToolArgs)]` to `{Self}`: it rejects confirmation flags and identity fields, which the model must never supply"
)]
pub trait ToolArgs {}

/// The argument a human retypes for `confirm = "type_to_confirm"`.
#[diagnostic::on_unimplemented(
    message = "the type-to-confirm target must be a string argument, but it is `{Self}`",
    label = "not a `String`",
    note = "point `target = ...` at a `String` field of the tool's arguments: the human retypes that exact text"
)]
pub trait TargetText {
    fn target_text(&self) -> &str;
}

impl TargetText for String {
    fn target_text(&self) -> &str {
        self
    }
}

impl TargetText for &str {
    fn target_text(&self) -> &str {
        self
    }
}
