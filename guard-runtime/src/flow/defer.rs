//! A deferred tool (`#[destructive(..., defer = "2m")]`): its caller is identified before
//! the human is asked (the call will be theirs), the question says the effect waits and
//! until when it can be withdrawn (`Flow::told`), and after the accept and the re-check
//! guard stores the call instead of running it ([`Flow::defer`]). When the call comes due,
//! a runner hands it to the tool's deferred run, which goes through [`RunFlow`]: the
//! preview again (the target must still be what the human saw), the stored answer
//! revalidated, and only then the proof and the handler.

use std::marker::PhantomData;

use rmcp::{handler::server::tool::IntoCallToolResult, model::CallToolResponse};
use serde_json::{Value, json};

use super::{
    Accepted, Flow, Rules, ToolSpec,
    accept::revalidate,
    finish::{changed_after_confirmed, state_changed},
};
use crate::{
    confirmed::Confirmed,
    defer::{self, Due, Ending},
    error::{Code, ToolError},
    form::Form,
    outcome::{Outcome, Step},
    person::Person,
    preview::{Effect, Preview},
};

impl<F> Flow<'_, F> {
    /// A deferred tool keeps its call in the operation store: without one, nobody is asked,
    /// since the question would promise a wait guard cannot keep.
    pub(super) fn deferrable(&self) -> Step<()> {
        if self.guard.deferred_calls().is_some() {
            return Ok(());
        }
        Err(self.refuse(
            Outcome::Refused(Code::Unavailable),
            ToolError::new(
                Code::Unavailable,
                format!(
                    "Nothing was changed: {} runs its effect later, and this server keeps no deferred calls (its guard has no operation store). The operator must configure Guard::with_operations.",
                    self.spec.name
                ),
            ),
        ))
    }
}

impl<F: Form> Flow<'_, F> {
    /// Step 8 of a deferred tool, then its storing in place of steps 9 and 10: the target
    /// must still be what the human confirmed; the confirmation is committed to the audit
    /// log; then the call (arguments, the accepted form, the caller, the fingerprint of
    /// what the human saw) is stored to run when due, and the model is told when and how
    /// to withdraw it. No proof is built here: only a runner's claimed call gets one.
    pub async fn defer(
        &self,
        accepted: Accepted<F>,
        again: Result<Preview, ToolError>,
    ) -> Result<CallToolResponse, rmcp::ErrorData> {
        let Accepted {
            form,
            caller,
            spec,
            secret,
            // The macro refuses `grant` beside `defer`: nothing is offered to open.
            grant: _,
            unspent,
        } = accepted;
        let owner = caller.person;
        let confirmed = caller.effect;
        let checked = self.deferred_checks(spec, &confirmed, secret, again);
        let result = match checked {
            Ok(after) => {
                self.seen().answer = Some(crate::form::redacted(&form));
                match self.commit_accepted(unspent).await {
                    Ok(()) => self.store_deferred(&form, &confirmed, owner, after).await,
                    Err(done) => done,
                }
            }
            Err(done) => self.spend(unspent, done).await,
        };
        Ok(*result)
    }

    /// Step 8 of a deferred tool: the answer is this tool's, the target is what the human
    /// confirmed, no secret is kept and the guard keeps deferred calls; how long it waits.
    fn deferred_checks(
        &self,
        spec: &'static ToolSpec,
        confirmed: &Effect,
        secret: Option<crate::secret::Secret>,
        again: Result<Preview, ToolError>,
    ) -> Step<std::time::Duration> {
        self.still_asked_by(spec)?;
        match again {
            Ok(Preview::Effect(now)) if now == *confirmed => {}
            Ok(_) => {
                return Err(self.refuse(
                    Outcome::StateChanged,
                    state_changed(confirmed.subject(), self.nothing_done()),
                ));
            }
            Err(error) => return Err(self.refuse(Outcome::PreviewFailed, error)),
        }
        let (Some(after), None) = (self.spec.defer, secret) else {
            // The macro refuses `defer` beside a secret: a secret is never stored.
            return Err(self.refuse(
                Outcome::Misconfigured,
                ToolError::new(
                    Code::InvalidState,
                    format!(
                        "Nothing was changed: {} is misconfigured on the server (a deferred call cannot keep a secret). Tell the operator (trace_id {}).",
                        self.spec.name, self.trace_id
                    ),
                ),
            ));
        };
        self.deferrable()?;
        Ok(after)
    }

    /// The confirmed call (arguments, the accepted form, its owner, the fingerprint of what
    /// the human saw) stored to run `after` from now, and the model told when and how to
    /// withdraw it; or why nothing is scheduled.
    async fn store_deferred(
        &self,
        form: &F,
        confirmed: &Effect,
        owner: Option<Person>,
        after: std::time::Duration,
    ) -> Box<CallToolResponse> {
        let calls = self.guard.deferred_calls();
        let (Some(owner), Some(calls)) = (owner, calls) else {
            return self.unscheduled("the caller or the store is missing".into());
        };
        let arguments = Value::Object(self.call.arguments.clone());
        let answer = Value::Object(form.to_content());
        let fingerprint = confirmed.fingerprint();
        let stored = calls
            .schedule(
                defer::Confirmation {
                    owner: &owner,
                    tool: self.spec.name,
                    target: confirmed.subject().shown(),
                    arguments: &arguments,
                    form: &answer,
                    fingerprint: &fingerprint,
                },
                after,
                &self.trace_id,
            )
            .await;
        let scheduled = match stored {
            Ok(scheduled) => scheduled,
            Err(e) => return self.unscheduled(e.to_string()),
        };
        let mut body = serde_json::Map::new();
        body.insert("tool".into(), self.spec.name.into());
        let target = confirmed.subject().shown();
        body.insert("target".into(), target.into());
        let withdrawable = self.guard.publishes(defer::TOOL);
        let result =
            scheduled.into_result(self.spec.name, target, body, &self.trace_id, withdrawable);
        Box::new(result.into())
    }

    /// The call was confirmed but could not be stored: nothing runs, now or later.
    fn unscheduled(&self, reason: String) -> Box<CallToolResponse> {
        tracing::error!(trace_id = %self.trace_id, tool = self.spec.name, %reason, "a confirmed deferred call could not be stored; nothing runs");
        self.refuse(
            Outcome::Refused(Code::Unavailable),
            ToolError::new(
                Code::Unavailable,
                format!(
                    "Nothing was changed and nothing is scheduled: the server could not store the deferred call of {} (trace_id {}). Call the tool again later, or tell the operator.",
                    self.spec.name, self.trace_id
                ),
            ),
        )
    }
}

/// A due call of one deferred tool on its way to the handler: the stored arguments, the
/// preview run again and compared with what the human saw, the stored answer revalidated,
/// and then the proof. Every step that ends the run returns its [`Ending`], which the
/// runner records with the call.
pub struct RunFlow<F> {
    due: Due,
    spec: &'static ToolSpec,
    form: PhantomData<fn() -> F>,
}

impl<F: Form> RunFlow<F> {
    /// The run of `due`, a call a runner claimed for the tool `spec` describes.
    pub fn new(due: Due, spec: &'static ToolSpec) -> Self {
        Self {
            due,
            spec,
            form: PhantomData,
        }
    }

    /// The call must be this tool's: a due call of another tool runs nothing here.
    fn this_tools(&self) -> Result<(), Ending> {
        if self.due.call.tool == self.spec.name {
            return Ok(());
        }
        Err(Ending::Failed {
            reason: format!(
                "Nothing ran: the deferred call of {} reached the run of {}.",
                self.due.call.tool, self.spec.name
            ),
        })
    }

    /// The stored arguments, as the tool reads them.
    pub fn arguments<T: serde::de::DeserializeOwned>(&self) -> Result<T, Ending> {
        self.this_tools()?;
        T::deserialize(&self.due.arguments).map_err(|e| Ending::Failed {
            reason: format!(
                "Nothing ran: the stored arguments of {} no longer read as the tool's arguments ({e}). Call the tool again.",
                self.spec.name
            ),
        })
    }

    /// The preview again (`again`): the effect must be exactly what the human was shown,
    /// else `STATE_CHANGED` and nothing runs; then the stored answer revalidated as an
    /// accept is; then the proof, for this run only.
    pub fn confirm(
        &self,
        again: Result<Preview, ToolError>,
        expected: Option<&str>,
        rules: Option<Rules<F>>,
    ) -> Result<Confirmed<F>, Ending> {
        self.this_tools()?;
        let now = match again {
            Ok(Preview::Effect(now)) if now.fingerprint() == self.due.fingerprint => now,
            Ok(_) => {
                return Err(Ending::StateChanged {
                    reason: changed_after_confirmed(&self.due.call.target, "nothing was changed")
                        .message()
                        .to_owned(),
                });
            }
            Err(error) => {
                return Err(Ending::Failed {
                    reason: format!(
                        "Nothing ran: the preview of {} failed when the call came due: [{}] {}",
                        self.spec.name,
                        error.code(),
                        error.message()
                    ),
                });
            }
        };
        let form = revalidate::<F>(Some(&self.due.form), expected, rules).map_err(|reason| {
            Ending::Failed {
                reason: format!(
                    "Nothing ran: the answer the user gave no longer passes its checks: {reason}."
                ),
            }
        })?;
        Ok(Confirmed::new(
            form,
            now.subject().clone(),
            self.due.trace_id.clone(),
            None,
        ))
    }

    /// The handler's result, as the runner records it.
    pub fn finish(&self, result: impl IntoCallToolResult) -> Ending {
        match result.into_call_tool_result() {
            Ok(CallToolResponse::Complete(result)) => Ending::Ran {
                outcome: if result.is_error == Some(true) {
                    Outcome::HandlerError
                } else {
                    Outcome::Executed
                },
                result: serde_json::to_value(&result).unwrap_or(Value::Null),
            },
            Ok(_) => Ending::Ran {
                outcome: Outcome::HandlerError,
                result: json!({"error": "the handler asked for input after its call had ended"}),
            },
            Err(error) => Ending::Ran {
                outcome: Outcome::HandlerFailed,
                result: json!({"error": error.message}),
            },
        }
    }
}
