//! Ready-made forms for the two common confirmations.

use rmcp_guard_macros::Form;

/// A single box the human must tick. Its title promises nothing about undoing: the question
/// ends with the terms guard composes from the tool's declaration.
#[derive(Debug, Form)]
pub struct Checkbox {
    #[form(checkbox, title = "I understand what this will do")]
    /// Ticked: the human agreed.
    pub confirm: bool,
}

/// A text field where the human retypes the target's name.
#[derive(Debug, Form)]
pub struct TypeToConfirm {
    #[form(confirm_text, title = "Type the name to confirm")]
    /// The name the human typed; equal to the tool's target when the handler runs.
    pub typed_name: String,
}
