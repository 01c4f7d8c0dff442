//! Step 4: the author's preview, as the human will read it.

use super::Flow;
use super::incoming::Incoming;
use crate::{
    error::ToolError,
    outcome::{Outcome, Step},
    preview::{Effect, Preview},
};

/// The effect the preview found, about to be shown to the human. Only [`Flow::begin`]
/// builds one, from an [`Incoming`] call.
pub struct Previewed {
    pub(super) effect: Effect,
}

impl<F> Flow<'_, F> {
    /// Step 4: a failed precondition or a preview error ends the call without asking.
    pub fn begin(
        &self,
        _incoming: Incoming,
        preview: Result<Preview, ToolError>,
    ) -> Step<Previewed> {
        match preview {
            Ok(Preview::Effect(effect)) => {
                let mut seen = self.seen();
                seen.effect = Some((effect.subject().clone(), effect.summary().to_owned()));
                seen.question = effect.is_question();
                drop(seen);
                Ok(Previewed { effect })
            }
            Ok(Preview::Nothing(text)) => Err(self.natural(Outcome::PreconditionFailed, text)),
            Err(error) => Err(self.refuse(Outcome::PreviewFailed, error)),
        }
    }
}
