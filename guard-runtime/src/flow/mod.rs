//! The guarded call that `#[destructive]`, `#[ask]` and a disclosing `#[read_only]` expand
//! into, as a pipeline of steps. Each step is a function from the previous step's value to
//! the next one's, returning a [`Step`]: the value the next step needs, or the model's
//! result, already audited and tagged, and nothing after it runs.
//!
//! The values form a chain that only this module can build, numbered as in ARCHITECTURE.md
//! ("A guarded call, step by step"):
//!
//! - [`Flow::dispatched`] gives the [`Incoming`](incoming::Incoming) call (`incoming.rs`,
//!   step 2), which [`Flow::arguments`] and [`Flow::begin`] take;
//! - [`Flow::begin`] gives the [`Previewed`] effect (`previewed.rs`, step 4), whose target is
//!   a [`Target`](crate::preview::Target);
//! - [`Flow::identify`] gives the [`Caller`](caller::Caller) (`caller.rs`, step 3: who is
//!   calling, where guard keeps something for them, after the preview);
//! - [`Flow::ask`] gives the human's [`Asked`](asked::Asked) reply (`asked.rs`, steps 5 and
//!   6: the page, a grant, `push.rs` or `mrtr.rs`);
//! - [`Flow::answer`] gives the [`Accepted`] answer (`answer.rs` and `accept.rs`, step 7);
//! - [`Flow::recheck`] gives the [`Rechecked`](rechecked::Rechecked) call (`rechecked.rs`,
//!   step 8), which alone yields the [`Confirmed`](crate::confirmed::Confirmed) proof and the
//!   [`Owner`](rechecked::Owner) of an undo window;
//! - `finish.rs` and `undo.rs` end the call (steps 9 and 10).
//!
//! No step takes a form value from its caller, and every constructor is private, so no code
//! can skip a step or mint a proof without a human. Features add their steps beside these:
//! `page.rs`, `page_mrtr.rs` and `task.rs` (approval on guard's page), `grant.rs`,
//! `defer.rs`, `disclose.rs` and `batch.rs` (its own chain: `ShownBatch`, `Chosen`,
//! `Picked`).
//!
//! What every ending needs, whichever step ends the call, stays in the flow ([`Seen`]): the
//! audit record's facts (the effect as shown, the redacted answer, a batch's counts, what a
//! disclosure showed, the grant, the page's requester and approval), the grant's note in the
//! model's result, and whether the endings say "nothing was shown" or "nothing was changed".

use std::{marker::PhantomData, time::Duration};

use rmcp::model::{JsonObject, RequestStateError};
use serde_json::Value;

use crate::{
    form::Form,
    guard::Guard,
    preview::{Effect, Terms},
};

mod accept;
mod answer;
mod asked;
mod batch;
mod caller;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod defer;
mod disclose;
mod finish;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod grant;
mod incoming;
mod mrtr;
mod page;
#[cfg(feature = "approval")]
mod page_mrtr;
mod previewed;
mod push;
mod rechecked;
#[cfg(feature = "approval")]
pub(crate) mod task;
#[cfg(test)]
mod tests;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod undo;

pub use crate::entry::dispatch::GuardCall;
pub use accept::roles_problem;
pub use answer::Accepted;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub use defer::RunFlow;
pub use incoming::Incoming;
#[cfg(feature = "testing")]
pub use mrtr::INPUT_KEY;
use mrtr::{SealedState, binding};
pub use previewed::Previewed;

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

/// The parts of a call's story known only as it goes on, which every ending writes into its
/// audit record, its tag or its words; what one step hands the next travels in the step
/// values instead.
#[derive(Default)]
struct Seen {
    /// The target and the preview's summary, as shown.
    effect: Option<(crate::preview::Target, String)>,
    /// The accepted answer, redacted field by field.
    answer: Option<JsonObject>,
    /// A batch's per-item counts, once the handler reported.
    counts: Option<Value>,
    /// The call's boundary states data to show: every ending says nothing was shown, not
    /// that nothing was changed.
    shows: bool,
    /// The call asks an `#[ask]` question: nothing is confirmed, so a cancel ends "the
    /// question" and an invalid answer is `INVALID_ANSWER`.
    question: bool,
    /// What a disclosing tool showed (or withheld): its class, items and bytes, and the
    /// session's totals.
    disclosed: Option<Value>,
    /// The grant this call opened or ran under, once known.
    #[cfg(any(feature = "sqlite", feature = "postgres"))]
    grant: Option<grant::Note>,
    /// Who asked, where guard's approval page identified them.
    #[cfg_attr(not(feature = "approval"), allow(dead_code))]
    requester: Option<crate::person::Person>,
    /// The approval on guard's page, and who approved it (canonical), once opened.
    #[cfg_attr(not(feature = "approval"), allow(dead_code))]
    approval: Option<(String, Vec<String>)>,
}

/// The author's business rules on an accepted form.
pub type Rules<F> = fn(&F) -> Result<(), String>;

impl<'g, F: Form> Flow<'g, F> {
    /// Starts one guarded call: opens the sealed MRTR state, if the call carries one.
    pub fn new(guard: &'g Guard, call: GuardCall, spec: &'static ToolSpec) -> Self {
        Self::start(guard, call, spec, F::SPEC.name)
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
