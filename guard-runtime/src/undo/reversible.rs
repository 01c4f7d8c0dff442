//! What a tool that declares an undo returns: its result for the model and what undoing
//! needs. The expansion of `#[destructive(undo = ...)]` accepts only these shapes, and a tool
//! without an undo cannot return one (it is no tool result), so the declaration and the
//! handler agree at compile time.

use rmcp::{
    handler::server::tool::IntoCallToolResult,
    model::{CallToolResponse, CallToolResult},
};
use serde::Serialize;
use serde_json::Value;

/// A reversible effect's result: what the model is told (`result`) and what the author's
/// undo needs to reverse it (`undo_data`, kept as canonical JSON in the operation store until
/// the window closes). Build it at the end of a handler of a tool with `undo = ...`.
#[derive(Debug, Clone)]
pub struct Reversible<R, D> {
    result: R,
    undo_data: D,
}

impl<R, D: Serialize> Reversible<R, D> {
    /// The effect ran: `result` for the model, `undo_data` for the undo.
    pub fn new(result: R, undo_data: D) -> Self {
        Self { result, undo_data }
    }
}

/// The handler's result, split into the model's result and, when the effect ran, what
/// undoing it needs.
pub struct Ran {
    /// The model's result, as rmcp would make it.
    pub response: Result<CallToolResponse, rmcp::ErrorData>,
    /// What undoing needs, when the handler succeeded (`Err` when it has no JSON).
    pub undo_data: Option<Result<Value, String>>,
}

mod sealed {
    pub trait Sealed {}
    impl<R, D> Sealed for super::Reversible<R, D> {}
    impl<R, D, E> Sealed for Result<super::Reversible<R, D>, E> {}
}

/// What the handler of a tool with `undo = ...` may return: [`Reversible`], or a `Result`
/// of one. Sealed: the undo data cannot be left out.
#[diagnostic::on_unimplemented(
    message = "a tool with `undo = ...` must hand guard what undoing needs: return `rmcp_guard::undo::Reversible<R, D>` (or `Result<Reversible<R, D>, E>`), not `{Self}`",
    label = "this handler declares an undo, so its result must carry the undo data",
    note = "end the handler with `Ok(Reversible::new(result, undo_data))`, where `undo_data` is what the undo function reads back with `window.data::<D>()`"
)]
pub trait IntoReversible: sealed::Sealed {
    /// Splits the handler's return value.
    fn into_ran(self) -> Ran;
}

impl<R: IntoCallToolResult, D: Serialize> IntoReversible for Reversible<R, D> {
    fn into_ran(self) -> Ran {
        let response = self.result.into_call_tool_result();
        let ran = matches!(&response, Ok(CallToolResponse::Complete(CallToolResult { is_error, .. })) if *is_error != Some(true));
        let undo_data = ran.then(|| {
            serde_json::to_value(&self.undo_data)
                .map_err(|e| format!("the undo data has no JSON form: {e}"))
        });
        Ran {
            response,
            undo_data,
        }
    }
}

impl<R: IntoCallToolResult, D: Serialize, E: IntoCallToolResult> IntoReversible
    for Result<Reversible<R, D>, E>
{
    fn into_ran(self) -> Ran {
        match self {
            Ok(reversible) => reversible.into_ran(),
            Err(error) => Ran {
                // rmcp's own conversion: an `Err` is an `isError` result.
                response: Err::<CallToolResult, E>(error).into_call_tool_result(),
                undo_data: None,
            },
        }
    }
}

impl super::Window {
    /// What undoing needs, as the effect handed it to [`Reversible::new`]; a stored value
    /// that does not read as `D` is an internal error (the tool changed its undo data's type
    /// while windows were open).
    pub fn data<D: serde::de::DeserializeOwned>(&self) -> Result<D, crate::error::ToolError> {
        D::deserialize(&self.data).map_err(|e| {
            crate::error::ToolError::internal(format!(
                "the undo data of window {} does not read as {}: {e}",
                self.operation_id,
                std::any::type_name::<D>()
            ))
        })
    }
}
