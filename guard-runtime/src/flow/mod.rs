//! The guarded call flow that `#[destructive]` expands into: preview, capability, one
//! elicitation (push or MRTR), the three outcomes, revalidation, re-check, then the handler.
//! Every step that ends the call returns the model's result; nothing after it runs.
//!
//! The steps form a chain of values that only this module can build: [`Flow::begin`] gives a
//! [`Previewed`] effect, only [`Flow::ask`] (which really asks the human) turns it into an
//! [`Accepted`] answer, and only [`Flow::recheck`] turns that into the [`Confirmed`] proof.
//! No step takes a form value from its caller, so no code can mint a proof without a human.
//!
//! Each file is one step of the call, numbered as in ARCHITECTURE.md ("A guarded call, step by
//! step"): `call` (the dispatched call, step 1), this file (steps 4, 7 and 8 in order),
//! `push` and `mrtr` (step 6 in each protocol era), `accept` (step 7), `page` and
//! `page_mrtr` (approval on guard's page), `task` (those approvals as MCP Tasks), `batch`
//! (batch tools) and `finish` (steps 9 and 10, and every other way a call ends).

use std::{marker::PhantomData, time::Duration};

use rmcp::model::{ElicitResult, JsonObject, RequestStateError};
use serde_json::Value;

use crate::{
    answered::Answered,
    confirmed::Confirmed,
    error::{Code, ToolError},
    form::Form,
    guard::Guard,
    outcome::{Outcome, Step},
    preview::{Effect, Preview, Terms},
};

mod accept;
mod batch;
mod call;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod defer;
mod disclose;
mod finish;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod grant;
mod mrtr;
mod page;
#[cfg(feature = "approval")]
mod page_mrtr;
mod push;
#[cfg(feature = "approval")]
pub(crate) mod task;
#[cfg(test)]
mod tests;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod undo;

pub use crate::entry::dispatch::GuardCall;
pub use accept::roles_problem;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub use defer::RunFlow;
use finish::state_changed;
#[cfg(feature = "testing")]
pub use mrtr::INPUT_KEY;
use mrtr::{SealedState, binding};

/// What the human is asked to do besides filling the form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfirmKind {
    /// Only the form (and its `validate` rules).
    Form,
    /// A checkbox that must be ticked.
    Checkbox,
    /// The target, retyped exactly.
    TypeToConfirm,
    /// The human picks which of a batch's items the effect touches (see [`crate::batch`]).
    Pick,
}

impl ConfirmKind {
    fn as_str(self) -> &'static str {
        match self {
            ConfirmKind::Form => "form",
            ConfirmKind::Checkbox => "checkbox",
            ConfirmKind::TypeToConfirm => "type_to_confirm",
            ConfirmKind::Pick => "pick",
        }
    }
}

/// A guarded tool's options, fixed at compile time by `#[destructive]`.
#[derive(Debug)]
pub struct ToolSpec {
    /// The tool's name as rmcp routes it.
    pub name: &'static str,
    /// How the human confirms.
    pub confirm: ConfirmKind,
    /// A header above the preview in the question.
    pub message: Option<&'static str>,
    /// How long the human has, if not the guard's default.
    pub timeout: Option<Duration>,
    /// The text the model gets when the human declines.
    pub on_decline: Option<&'static str>,
    /// The text the model gets when the human cancels.
    pub on_cancel: Option<&'static str>,
    /// Approved on guard's approval page (`approve = "url"`) instead of a form in the client.
    pub approval: Option<ApprovalSpec>,
    /// How long the effect stays undoable (`undo_within`), for a tool that declares an undo.
    pub undo_within: Option<Duration>,
    /// How long the confirmed effect waits before it runs (`defer`), for a deferred tool.
    pub defer: Option<Duration>,
    /// What a grant the human opens may cover (`grant`, `grant_calls`), for a tool that
    /// offers one.
    pub grant: Option<GrantSpec>,
}

/// What a tool's declaration lets a grant cover: `grant = "10m", grant_calls = 20`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GrantSpec {
    /// How long a grant lasts from when the human opened it.
    pub within: Duration,
    /// How many more calls it covers.
    pub calls: u32,
}

impl GrantSpec {
    /// The choice the question offers, in the words the human reads.
    pub fn offer(&self, tool: &str, scope: &str) -> String {
        let calls = match self.calls {
            1 => "1 more call".to_owned(),
            n => format!("up to {n} more calls"),
        };
        format!(
            "This and {calls} of {tool} on {scope}, for {}, without asking again",
            crate::rfc3339::span(self.within)
        )
    }
}

/// How a tool with `approve = "url"` is approved on the page.
#[derive(Debug, Clone, Copy)]
pub struct ApprovalSpec {
    /// How many people must approve; above one, none of them the requester.
    pub approvers: u8,
    /// The label of a secret the page asks for, handed to the handler as a [`crate::secret::Secret`].
    pub secret: Option<&'static str>,
}

/// One guarded call in progress.
pub struct Flow<'g, F> {
    guard: &'g Guard,
    call: GuardCall,
    spec: &'static ToolSpec,
    /// The name the sealed state is bound to: the form's, or `batch`.
    form_name: &'static str,
    trace_id: String,
    /// The echoed MRTR state, opened (verified) once when the call arrives.
    opened: Option<Result<SealedState, RequestStateError>>,
    /// What the audit record says the human saw and answered (redacted), once known.
    seen: std::sync::Mutex<Seen>,
    form: PhantomData<fn() -> F>,
}

/// The parts of a call's story known only as it goes on.
#[derive(Default)]
struct Seen {
    /// The target and the preview's summary, as shown.
    effect: Option<(String, String)>,
    /// The accepted answer, redacted field by field.
    answer: Option<JsonObject>,
    /// A batch's per-item counts, once the handler reported.
    counts: Option<Value>,
    /// A disclosing tool's stated count and what its items are, as the human was told.
    stated: Option<(u64, crate::disclose::Noun)>,
    /// What a disclosing tool showed (or withheld): its class, items and bytes, and the
    /// session's totals.
    disclosed: Option<Value>,
    /// The caller as a person, identified from trusted context before the human is asked:
    /// who will own the undo window, the deferred call or a grant the call opens.
    #[cfg(any(feature = "sqlite", feature = "postgres"))]
    caller: Option<crate::person::Person>,
    /// The grant this call opened or ran under, once known.
    #[cfg(any(feature = "sqlite", feature = "postgres"))]
    grant: Option<grant::Note>,
    /// An accepted 2026-07-28 answer's request state (nonce, lifetime), whose spend waits
    /// for the confirmation's commit (`commit_accepted`); any other ending spends it first
    /// (`spent_unless`).
    unspent: Option<(String, Duration)>,
    /// Who asked, where guard's approval page identified them.
    #[cfg_attr(not(feature = "approval"), allow(dead_code))]
    requester: Option<crate::person::Person>,
    /// The approval on guard's page, and who approved it (canonical), once opened.
    #[cfg_attr(not(feature = "approval"), allow(dead_code))]
    approval: Option<(String, Vec<String>)>,
}

/// The effect the preview found, about to be shown to the human. Only [`Flow::begin`]
/// builds one.
pub struct Previewed {
    effect: Effect,
}

/// The human's accepted and revalidated answer to one tool's question, before the re-check.
/// Only [`Flow::ask`] builds one, and only after a real accept.
pub struct Accepted<F> {
    form: F,
    effect: Effect,
    spec: &'static ToolSpec,
    secret: Option<crate::secret::Secret>,
    /// The human chose to open a grant with this answer (its content as they gave it).
    grant: Option<Value>,
}

/// The author's business rules on an accepted form.
pub type Rules<F> = fn(&F) -> Result<(), String>;

impl<'g, F: Form> Flow<'g, F> {
    /// Starts one guarded call: opens the sealed MRTR state, if the call carries one.
    pub fn new(guard: &'g Guard, call: GuardCall, spec: &'static ToolSpec) -> Self {
        Self::start(guard, call, spec, F::SPEC.name)
    }

    /// Step 4: a failed precondition or a preview error ends the call without asking. A
    /// call guard's exposure did not dispatch ends here too, whatever the preview found.
    pub fn begin(&self, preview: Result<Preview, ToolError>) -> Step<Previewed> {
        self.published()?;
        match preview {
            Ok(Preview::Effect(effect)) => {
                self.seen().effect =
                    Some((effect.target().to_owned(), effect.summary().to_owned()));
                Ok(Previewed { effect })
            }
            Ok(Preview::Nothing(text)) => Err(self.natural(Outcome::PreconditionFailed, text)),
            Err(error) => Err(self.refuse(Outcome::PreviewFailed, error)),
        }
    }

    /// Steps 5–7: capability, one elicitation, the outcome, and server-side revalidation.
    /// `expected` is the text a type-to-confirm answer must equal.
    pub async fn ask(
        &self,
        shown: Previewed,
        expected: Option<&str>,
        rules: Option<Rules<F>>,
    ) -> Step<Accepted<F>> {
        self.roles_hold(expected)?;
        self.undo_owner()?;
        let effect = shown.effect;
        if let Some(approval) = self.spec.approval {
            let (content, secret) = self.ask_page(&effect, expected, approval).await?;
            let form = self.accept(Some(&content), expected, rules)?;
            return Ok(Accepted {
                form,
                effect,
                spec: self.spec,
                secret,
                grant: None,
            });
        }
        #[cfg(any(feature = "sqlite", feature = "postgres"))]
        if let Some(covered) = self.granted(&effect, rules).await? {
            return Ok(covered);
        }
        let answer = if self.is_mrtr() {
            self.ask_mrtr(&effect, expected).await
        } else {
            self.ask_push(self.question(&effect, expected)).await
        };
        let answered = answer.and_then(|answer| self.answer_form(&effect, answer, expected, rules));
        let (form, grant) = self.spent_unless(answered).await?;
        Ok(Accepted {
            form,
            effect,
            spec: self.spec,
            secret: None,
            grant,
        })
    }

    /// Step 7's outcome and revalidation of `answer`: the form, and a grant's answer if the
    /// human chose one.
    fn answer_form(
        &self,
        effect: &Effect,
        answer: ElicitResult,
        expected: Option<&str>,
        rules: Option<Rules<F>>,
    ) -> Step<(F, Option<Value>)> {
        let content = self.accepted(answer)?;
        #[cfg(any(feature = "sqlite", feature = "postgres"))]
        let (content, grant) = self.grant_choice(effect, content)?;
        #[cfg(not(any(feature = "sqlite", feature = "postgres")))]
        let (grant, _) = (None, effect);
        Ok((self.accept(content.as_ref(), expected, rules)?, grant))
    }

    /// Step 8: the target must still be exactly what the human confirmed, and the answer
    /// must be this tool's. The confirmation is then committed to the audit log before the
    /// proof exists, so an effect never runs unrecorded, even if the process stops during it.
    pub async fn recheck(
        &self,
        accepted: Accepted<F>,
        again: Result<Preview, ToolError>,
    ) -> Step<Confirmed<F>> {
        let confirmed = self.confirm(accepted, again).await;
        self.spent_unless(confirmed).await
    }

    async fn confirm(
        &self,
        accepted: Accepted<F>,
        again: Result<Preview, ToolError>,
    ) -> Step<Confirmed<F>> {
        let Accepted {
            form,
            effect: confirmed,
            spec,
            secret,
            grant,
        } = accepted;
        self.still_asked_by(spec)?;
        match again {
            Ok(Preview::Effect(now)) if now == confirmed => {
                self.seen().answer = Some(crate::form::redacted(&form));
                self.commit_accepted().await?;
                #[cfg(any(feature = "sqlite", feature = "postgres"))]
                if let Some(answer) = grant {
                    self.open_grant(&now, &answer).await;
                }
                #[cfg(not(any(feature = "sqlite", feature = "postgres")))]
                let _ = grant;
                Ok(Confirmed::new(
                    form,
                    now.target().to_owned(),
                    self.trace_id.clone(),
                    secret,
                ))
            }
            Ok(_) => Err(self.refuse(
                Outcome::StateChanged,
                state_changed(confirmed.target(), self.nothing_done()),
            )),
            Err(error) => Err(self.refuse(Outcome::PreviewFailed, error)),
        }
    }

    /// Steps 8 and 9 of an `#[ask]` tool, which has no effect to re-check: the answer must be
    /// this tool's and the call still wanted; the answer is committed to the audit log before
    /// the handler sees it, as a confirmation is.
    pub async fn answered(&self, accepted: Accepted<F>) -> Step<Answered<F>> {
        let answered = async {
            self.still_asked_by(accepted.spec)?;
            self.seen().answer = Some(crate::form::redacted(&accepted.form));
            self.commit_accepted().await?;
            Ok(Answered::new(accepted.form, self.trace_id.clone()))
        };
        self.spent_unless(answered.await).await
    }

    /// The last checks before a handler runs: a call the client cancelled (or whose connection
    /// closed) after the human answered must not reach it, and an answer given to another
    /// tool's question never does.
    fn still_asked_by(&self, spec: &'static ToolSpec) -> Step<()> {
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

impl<F> Flow<'_, F> {
    /// The effect as the human is told it: the preview's summary, then the terms of
    /// reversing it, which guard composes from the declaration (see [`Flow::terms`]); an
    /// `#[ask]` question has no effect and no terms.
    fn told(&self, effect: &Effect) -> String {
        if effect.asks_only() {
            return effect.summary().to_owned();
        }
        match self.deferral() {
            Some(when) => format!("{}\n\n{when} {}", effect.summary(), self.terms().sentence()),
            None => format!("{}\n\n{}", effect.summary(), self.terms().sentence()),
        }
    }

    /// For a deferred tool, the sentence that says the effect waits and until when it can
    /// be withdrawn, composed by guard from the declaration. The time is counted from now,
    /// and the call is stored later, so it runs no earlier than the time stated.
    fn deferral(&self) -> Option<String> {
        #[cfg(any(feature = "sqlite", feature = "postgres"))]
        if let Some(after) = self.spec.defer {
            let at = crate::store::now_ms()
                .saturating_add(i64::try_from(after.as_millis()).unwrap_or(i64::MAX));
            let at = crate::rfc3339::minute(at);
            let tool = crate::defer::TOOL;
            return Some(if self.guard.publishes(tool) {
                format!(
                    "This does not happen now: it runs at {at} at the earliest, and until then it can be withdrawn with {tool}, and then nothing happens."
                )
            } else {
                format!(
                    "This does not happen now: it runs at {at} at the earliest, and it cannot be withdrawn."
                )
            });
        }
        None
    }

    /// The terms of reversing the effect, from the tool's declaration and the guard: final,
    /// or undoable with `undo` for `undo_within` when the guard has a store to keep the
    /// window in (without one, guard makes the effect final at once, see
    /// `Flow::finish_reversible`). The deadline is counted from now, and the window opens
    /// when the effect runs, later, so it lasts at least until the time stated.
    fn terms(&self) -> Terms {
        #[cfg(any(feature = "sqlite", feature = "postgres"))]
        if let Some(within) = self.undoable() {
            return Terms::Until {
                tool: crate::undo::TOOL,
                deadline: crate::store::now_ms()
                    .saturating_add(i64::try_from(within.as_millis()).unwrap_or(i64::MAX)),
            };
        }
        Terms::Final
    }

    /// A window will be opened for the caller before the human is asked, so the caller
    /// must be known: a caller without a usable identity ends the call here. Without a
    /// store feature no tool declares an undo.
    fn undo_owner(&self) -> Step<()> {
        #[cfg(any(feature = "sqlite", feature = "postgres"))]
        if self.spec.defer.is_some() {
            self.deferrable()?;
            return self.identify_caller();
        }
        #[cfg(any(feature = "sqlite", feature = "postgres"))]
        if self.undoable().is_some() {
            return self.identify_caller();
        }
        Ok(())
    }
}

impl<'g, F> Flow<'g, F> {
    /// Opens the sealed MRTR state, if the call carries one, bound to `form_name`.
    fn start(
        guard: &'g Guard,
        call: GuardCall,
        spec: &'static ToolSpec,
        form_name: &'static str,
    ) -> Self {
        let opened = call.request_state.as_ref().map(|state| {
            // Arguments with no canonical form were never sealed, so nothing can open here.
            let binding = binding(form_name, spec, &call.arguments)
                .map_err(|_| RequestStateError::IntegrityCheckFailed)?;
            guard.codec().open_json_with::<SealedState>(state, &binding)
        });
        // An answering round continues the asking round's trace.
        let trace_id = match &opened {
            Some(Ok(sealed)) => sealed.trace_id.clone(),
            _ => crate::trace::new_id(),
        };
        Self {
            guard,
            call,
            spec,
            form_name,
            trace_id,
            opened,
            seen: std::sync::Mutex::default(),
            form: PhantomData,
        }
    }
}
