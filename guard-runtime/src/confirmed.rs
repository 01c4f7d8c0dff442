//! The proof value a destructive handler must take: only guard's flow can build one, and it
//! builds one only after the human accepted and every check passed.

use std::ops::Deref;

use crate::{form::Form, preview::Target};

/// The human's accepted, revalidated answer. A handler that takes `Confirmed<F>` cannot be
/// reached without it, so a guarded effect cannot run unconfirmed.
///
/// `F` is checked to be a [`Form`] where the handler is expanded, so a wrong form is one
/// error at the parameter rather than one per use of the proof.
#[derive(Debug)]
pub struct Confirmed<F> {
    form: F,
    target: Target,
    trace_id: String,
    secret: Option<crate::secret::Secret>,
}

impl<F: Form> Confirmed<F> {
    pub(crate) fn new(
        form: F,
        target: Target,
        trace_id: String,
        secret: Option<crate::secret::Secret>,
    ) -> Self {
        Self {
            form,
            target,
            trace_id,
            secret,
        }
    }
}

impl<F> Confirmed<F> {
    /// The accepted form.
    pub fn form(&self) -> &F {
        &self.form
    }

    /// Takes the accepted form out of the proof.
    pub fn into_form(self) -> F {
        self.form
    }

    /// The resolved target the human confirmed (the preview's target, re-checked just
    /// now): act on this, so what the human confirmed is what executes.
    pub fn target(&self) -> &str {
        self.target.pin()
    }

    /// The secret the human gave on the approval page, for a tool with `secret = "..."`
    /// (see [`crate::secret::Secret`]); `None` for every other tool.
    pub fn secret(&self) -> Option<&crate::secret::Secret> {
        self.secret.as_ref()
    }

    /// The id that ties this call's log and audit lines together.
    pub fn trace_id(&self) -> &str {
        &self.trace_id
    }
}

impl<F> Deref for Confirmed<F> {
    type Target = F;

    fn deref(&self) -> &F {
        &self.form
    }
}
