//! Step 8: the re-check. The preview runs again and must find exactly what the human
//! confirmed, the answer must be this tool's and the call still wanted; the confirmation is
//! then committed to the audit log (spending its request state in the same commit) before
//! the proof exists, so an effect never runs unrecorded. Only a [`Rechecked`] call yields
//! the [`Confirmed`] proof.

use super::{Flow, ToolSpec, answer::Accepted, finish::state_changed};
use crate::{
    answered::Answered,
    confirmed::Confirmed,
    error::{Code, ToolError},
    form::Form,
    outcome::{Outcome, Step},
    person::Person,
    preview::{Preview, Target},
};

/// A call the re-check passed and the audit log holds the confirmation of. Only
/// [`Flow::recheck`] builds one.
pub struct Rechecked<F> {
    confirmed: Confirmed<F>,
    owner: Owner,
}

/// Who owns what the effect leaves to undo, and on which target: the caller identified at
/// step 3 and the target the re-check found, for the undo window `Flow::finish_reversible`
/// opens (without a store feature no tool declares an undo, and nothing reads it). Only a
/// [`Rechecked`] call hands one out.
#[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
pub struct Owner {
    pub(super) person: Option<Person>,
    pub(super) target: Target,
}

impl<F> Rechecked<F> {
    /// The proof for the handler, and the owner of what its effect leaves to undo.
    pub fn confirmed(self) -> (Confirmed<F>, Owner) {
        (self.confirmed, self.owner)
    }
}

impl<F: Form> Flow<'_, F> {
    /// Step 8: the target must still be exactly what the human confirmed (`again` is the
    /// preview run once more), and the answer must be this tool's. A grant the human chose
    /// opens over the scope the re-checked preview states.
    pub async fn recheck(
        &self,
        accepted: Accepted<F>,
        again: Result<Preview, ToolError>,
    ) -> Step<Rechecked<F>> {
        let Accepted {
            form,
            caller,
            spec,
            secret,
            grant,
            unspent,
        } = accepted;
        let checked = self.still_asked_by(spec).and_then(|()| match again {
            Ok(Preview::Effect(now)) if now == caller.effect => Ok(now),
            Ok(_) => Err(self.refuse(
                Outcome::StateChanged,
                state_changed(caller.effect.subject(), self.nothing_done()),
            )),
            Err(error) => Err(self.refuse(Outcome::PreviewFailed, error)),
        });
        let now = match checked {
            Ok(now) => now,
            Err(done) => return Err(self.spend(unspent, done).await),
        };
        self.seen().answer = Some(crate::form::redacted(&form));
        self.commit_accepted(unspent).await?;
        #[cfg(any(feature = "sqlite", feature = "postgres"))]
        if let Some(answer) = grant {
            self.open_grant(&now, caller.person.as_ref(), &answer).await;
        }
        #[cfg(not(any(feature = "sqlite", feature = "postgres")))]
        let _ = grant;
        let target = now.subject().clone();
        Ok(Rechecked {
            confirmed: Confirmed::new(form, target.clone(), self.trace_id.clone(), secret),
            owner: Owner {
                person: caller.person,
                target,
            },
        })
    }

    /// Steps 8 and 9 of an `#[ask]` tool, which has no effect to re-check: the answer must be
    /// this tool's and the call still wanted; the answer is committed to the audit log before
    /// the handler sees it, as a confirmation is.
    pub async fn answered(&self, accepted: Accepted<F>) -> Step<Answered<F>> {
        if let Err(done) = self.still_asked_by(accepted.spec) {
            return Err(self.spend(accepted.unspent, done).await);
        }
        self.seen().answer = Some(crate::form::redacted(&accepted.form));
        self.commit_accepted(accepted.unspent).await?;
        Ok(Answered::new(accepted.form, self.trace_id.clone()))
    }
}

impl<F> Flow<'_, F> {
    /// The last checks before a handler runs: a call the client cancelled (or whose connection
    /// closed) after the human answered must not reach it, and an answer given to another
    /// tool's question never does.
    pub(super) fn still_asked_by(&self, spec: &'static ToolSpec) -> Step<()> {
        if self.call.request.ct.is_cancelled() {
            return Err(self.cancelled_by_client());
        }
        if !std::ptr::eq(spec, self.spec) {
            tracing::error!(trace_id = %self.trace_id, tool = self.spec.name, answered = spec.name, "an answer given to another tool reached this tool's re-check");
            return Err(self.refuse(
                Outcome::WrongTool,
                ToolError::new(
                    Code::InvalidConfirmation,
                    format!(
                        "{}: the confirmation was given for {}, not {}. Call the tool again to ask the user.",
                        self.nothing_done_first(),
                        spec.name, self.spec.name
                    ),
                ),
            ));
        }
        Ok(())
    }
}
