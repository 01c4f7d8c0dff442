//! Step 3: who is calling, from trusted context only (an environment variable on stdio, a
//! verified bearer token over HTTP), never from the arguments. A guarded tool identifies
//! its caller only where guard keeps something for them (an undo window, a deferred call,
//! a grant), after the preview and before the human is asked.

use super::{Flow, previewed::Previewed};
use crate::{outcome::Step, person::Person, preview::Effect};

/// The previewed effect and who is calling, where guard keeps something for them. Only
/// [`Flow::identify`] builds one, and only [`Flow::ask`] takes it.
pub struct Caller {
    pub(super) effect: Effect,
    /// The caller as a person: who will own the undo window, the deferred call or a grant
    /// the call opens. `None` where the tool keeps nothing for anyone, or where only a
    /// grant would be kept and the caller has no usable identity (they are asked, and
    /// offered no grant).
    pub(super) person: Option<Person>,
}

impl<F> Flow<'_, F> {
    /// Step 3: an undoable or deferred tool's caller must be known, since the window or the
    /// call will be theirs: a caller without a usable identity ends the call here, before
    /// anyone is asked, and so does a deferred tool on a guard that keeps no deferred
    /// calls. A tool that offers grants identifies its caller too, to look for and open
    /// their grants; a caller without an identity is simply asked.
    pub fn identify(&self, shown: Previewed) -> Step<Caller> {
        let effect = shown.effect;
        let person = match self.owner()? {
            Some(owner) => Some(owner),
            None => self.grant_holder(&effect),
        };
        Ok(Caller { effect, person })
    }

    /// The owner of what an undoable or deferred tool keeps; `None` for any other tool.
    /// Without a store feature no tool declares either.
    #[cfg(any(feature = "sqlite", feature = "postgres"))]
    fn owner(&self) -> Step<Option<Person>> {
        if self.spec.defer.is_some() {
            self.deferrable()?;
        } else if self.undoable().is_none() {
            return Ok(None);
        }
        crate::entry::caller::caller(self.guard, &self.call.request)
            .map(Some)
            .map_err(|error| self.refuse(crate::outcome::Outcome::Refused(error.code()), error))
    }

    #[cfg(not(any(feature = "sqlite", feature = "postgres")))]
    fn owner(&self) -> Step<Option<Person>> {
        Ok(None)
    }

    /// Whom a grant over `effect` would be bound to: the tool offers grants, the preview
    /// states a scope and the guard keeps grants.
    #[cfg(any(feature = "sqlite", feature = "postgres"))]
    fn grant_holder(&self, effect: &Effect) -> Option<Person> {
        self.spec.grant?;
        effect.subject().grant_scope()?;
        self.guard.grants()?;
        crate::entry::caller::caller(self.guard, &self.call.request).ok()
    }

    #[cfg(not(any(feature = "sqlite", feature = "postgres")))]
    fn grant_holder(&self, _effect: &Effect) -> Option<Person> {
        None
    }
}
