//! The value an `#[ask]` handler takes: the human's accepted, revalidated answer to a form,
//! for tools that collect input without a destructive effect. Only guard's flow builds one,
//! after a real accept, so a handler cannot be reached with input the human never gave.

use std::ops::Deref;

use crate::form::Form;

/// The human's accepted answer, revalidated on the server against the form's schema (and the
/// tool's `validate` rules). Decline and cancel never reach the handler: they end the call
/// with a natural result.
#[derive(Debug)]
pub struct Answered<F> {
    form: F,
    trace_id: String,
}

impl<F: Form> Answered<F> {
    pub(crate) fn new(form: F, trace_id: String) -> Self {
        Self { form, trace_id }
    }
}

impl<F> Answered<F> {
    /// The accepted form.
    pub fn form(&self) -> &F {
        &self.form
    }

    /// Takes the accepted form out.
    pub fn into_form(self) -> F {
        self.form
    }

    /// The id that ties this call's log and audit lines together.
    pub fn trace_id(&self) -> &str {
        &self.trace_id
    }
}

impl<F> Deref for Answered<F> {
    type Target = F;

    fn deref(&self) -> &F {
        &self.form
    }
}
