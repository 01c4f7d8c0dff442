//! Step 6 on protocol 2026-07-28 (multi round-trip requests): the first round answers with
//! an `InputRequiredResult` and an HMAC-sealed request state bound to the call's tool and
//! canonical arguments; the retry echoes the state with the human's answer, and the state is
//! spent once: an accept in its confirmation's commit (`commit_accepted`), any other answer
//! (and any ending before that commit, `spend`) before the client hears how the call ended.

use std::time::Duration;

use rmcp::model::{
    CallToolResponse, ElicitRequest, ElicitResult, InputRequest, InputRequests,
    InputRequiredResult, JsonObject, ProtocolVersion, RequestStateError, SealOptions,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{Flow, ToolSpec, asked::Unspent, caller::Caller, finish::state_changed};
use crate::{
    canonical::{NotCanonical, canonical_json},
    error::{Code, ToolError},
    form::Form,
    guard::Issuer,
    outcome::{Outcome, Step},
    preview::Effect,
};

/// The key of guard's one input request in an MRTR round.
pub const INPUT_KEY: &str = "guard_confirm";

/// The sealed MRTR state: which question was asked, and what the human was shown.
#[derive(Serialize, Deserialize)]
pub(super) struct SealedState {
    pub(super) nonce: String,
    pub(super) fingerprint: String,
    /// Carried across rounds so the asking and answering calls share one trace id.
    pub(super) trace_id: String,
    /// Where the state's use is recorded: the sealing guard's operation store, or the
    /// guard itself when it keeps used states in memory only. Anywhere else a state cannot
    /// be checked for use, so it is refused there.
    pub(super) issuer: Issuer,
    /// The approval a call approved on the page waits for (see `page_mrtr`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) approval: Option<String>,
    /// How many rounds of that approval already waited and found it pending (see
    /// `page_mrtr`): the client's round limit is counted here, not by the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) round: Option<u8>,
    /// A batch question's offer, item by item: the answering round judges the picks
    /// against it, so a retry cannot widen what was offered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) offered: Option<Vec<crate::batch::Offered>>,
}

impl<F: Form> Flow<'_, F> {
    /// The answer of this round, and its request state when the spend waits for the
    /// confirmation's commit; a first round ends with the question.
    pub(super) async fn ask_mrtr(
        &self,
        caller: &Caller,
        expected: Option<&str>,
    ) -> Step<(ElicitResult, Option<Unspent>)> {
        let effect = &caller.effect;
        let ttl = self.guard.timeout(self.spec.timeout);
        let Some(sealed) = self.verified_state().await? else {
            if !self.client_can_confirm() {
                return Err(self.unsupported());
            }
            let state = self.seal(effect, ttl).await?;
            let request =
                InputRequest::Elicitation(ElicitRequest::new(self.question(caller, expected)));
            self.audit(Outcome::Asked, "mrtr");
            return Err(self.input_required(request, state));
        };
        if sealed.fingerprint != effect.fingerprint() {
            return Err(self.refuse(
                Outcome::StateChanged,
                state_changed(effect.subject(), self.nothing_done()),
            ));
        }
        let unspent = if self.answers_accept() && self.guard.spends_in_log() {
            // Spent with the confirmation, in one commit; an ending before it spends first.
            Some(Unspent {
                nonce: sealed.nonce.clone(),
                ttl,
            })
        } else {
            self.redeem_state(sealed, ttl).await?;
            None
        };
        match self.mrtr_answer() {
            Ok(answer) => Ok((answer, unspent)),
            Err(done) => Err(self.spend(unspent, done).await),
        }
    }
}

impl<F> Flow<'_, F> {
    pub(super) fn is_mrtr(&self) -> bool {
        self.call
            .request
            .protocol_version()
            .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28)
    }

    /// Seals this round's state, bound to the call's canonical arguments, valid for `ttl`.
    pub(super) async fn seal(&self, effect: &Effect, ttl: Duration) -> Step<String> {
        self.seal_state(effect.fingerprint(), ttl, None, None).await
    }

    /// Seals a state with `fingerprint` (what the human is shown) and, for a batch, the
    /// offer item by item, naming this guard's [`Issuer`].
    pub(super) async fn seal_state(
        &self,
        fingerprint: String,
        ttl: Duration,
        approval: Option<(String, u8)>,
        offered: Option<Vec<crate::batch::Offered>>,
    ) -> Step<String> {
        let binding = binding(self.form_name, self.spec, &self.call.arguments).map_err(|e| {
            self.refuse(
                Outcome::InvalidArguments,
                ToolError::new(
                    Code::InvalidInput,
                    format!("{}: {e}.", self.nothing_done_first()),
                ),
            )
        })?;
        let sealed = SealedState {
            nonce: crate::trace::new_nonce(),
            fingerprint,
            trace_id: self.trace_id.clone(),
            issuer: self.issuer().await?,
            round: approval.as_ref().map(|(_, round)| *round),
            approval: approval.map(|(id, _)| id),
            offered,
        };
        self.guard
            .codec()
            .seal_json_with(
                &sealed,
                &SealOptions::new().associated_data(&binding).ttl(ttl),
            )
            .map_err(|e| self.refuse(Outcome::SealFailed, ToolError::internal(e)))
    }

    /// The first round's answer: guard's one input request, and the sealed state to echo.
    pub(super) fn input_required(
        &self,
        request: InputRequest,
        state: String,
    ) -> Box<CallToolResponse> {
        let requests = InputRequests::from([(INPUT_KEY.to_owned(), request)]);
        Box::new(InputRequiredResult::new(Some(requests), Some(state)).into())
    }

    /// The echoed state of an answering round, verified: sealed for this call's tool and
    /// arguments, unexpired, and issued here (by this guard's operation store, or by this
    /// guard when used states live in memory). `None` on a first round.
    pub(super) async fn verified_state(&self) -> Step<Option<&SealedState>> {
        let sealed = match &self.opened {
            None => return Ok(None),
            Some(Ok(sealed)) => sealed,
            Some(Err(RequestStateError::Expired)) => {
                return Err(self.refuse(
                    Outcome::Expired,
                    ToolError::new(
                        Code::ConfirmationExpired,
                        format!(
                            "The confirmation expired before the answer arrived; {}. Call the tool again to ask afresh.",
                            self.nothing_done()
                        ),
                    ),
                ));
            }
            Some(Err(error)) => {
                tracing::warn!(trace_id = %self.trace_id, %error, "rejected request state");
                return Err(self.bad_state());
            }
        };
        let here = self.issuer().await?;
        if sealed.issuer != here {
            return Err(self.issued_elsewhere(&sealed.issuer, &here));
        }
        Ok(Some(sealed))
    }

    /// This guard's issuer, or the refusal when its operation store cannot say which it is.
    async fn issuer(&self) -> Step<Issuer> {
        self.guard.issuer().await.map_err(|error| {
            tracing::error!(trace_id = %self.trace_id, %error, "could not read the operation store's identity");
            self.refuse(
                Outcome::StoreFailed,
                ToolError::new(
                    Code::Unavailable,
                    format!(
                        "{}: the server could not read its operation store, where confirmations are recorded (trace_id {}). Call the tool again shortly; if it keeps failing, tell the operator.",
                        self.nothing_done_first(),
                        self.trace_id
                    ),
                ),
            )
        })
    }

    /// The refusal of a state issued `there`, answered `here`: this server cannot see
    /// whether it was used, so it is not answered here, whatever it says.
    fn issued_elsewhere(&self, there: &Issuer, here: &Issuer) -> Box<CallToolResponse> {
        if let (Issuer::Process(_), Issuer::Process(_)) = (there, here) {
            tracing::warn!(trace_id = %self.trace_id, "request state sealed by another process or before this server started");
            return self.refuse(
                Outcome::Restarted,
                ToolError::new(
                    Code::InvalidState,
                    format!(
                        "This confirmation was asked before the server restarted (or by another \
                         server process), and this server keeps used confirmations in its memory \
                         only, so it cannot tell whether it was already used; {}. Call the tool \
                         again to ask afresh.",
                        self.nothing_done()
                    ),
                ),
            );
        }
        tracing::warn!(trace_id = %self.trace_id, sealed_by = ?there, here = ?here, "request state issued for another operation store");
        let recorded = match (there, here) {
            (Issuer::Store(_), Issuer::Store(_)) => "in another operation store than this server's",
            (Issuer::Store(_), Issuer::Process(_)) => {
                "in an operation store, and this server has none"
            }
            (Issuer::Process(_), _) => {
                "in that server's memory, not in this server's operation store"
            }
        };
        self.refuse(
            Outcome::OtherStore,
            ToolError::new(
                Code::InvalidState,
                format!(
                    "This confirmation was asked by another server, which records used \
                     confirmations {recorded}, so this server cannot tell whether it was already \
                     used; {}. Servers that answer each other's confirmations must share one \
                     operation store (the same SQLite file, or the same PostgreSQL database and \
                     schema). Call the tool again to ask afresh.",
                    self.nothing_done()
                ),
            ),
        )
    }

    pub(super) fn bad_state(&self) -> Box<CallToolResponse> {
        self.refuse(
            Outcome::BadState,
            ToolError::new(
                Code::InvalidState,
                format!(
                    "The confirmation state does not match this call (altered, or sent with \
                     different arguments); {}. Call the tool again to ask afresh.",
                    self.nothing_done()
                ),
            ),
        )
    }

    /// Whether the retry's answer says accept (read as the client sent it; the answer is
    /// parsed and judged afterwards, whatever it says).
    fn answers_accept(&self) -> bool {
        self.call
            .input_responses
            .as_ref()
            .and_then(|r| r.get(INPUT_KEY))
            .and_then(|answer| answer.get("action"))
            .and_then(Value::as_str)
            == Some("accept")
    }

    /// The ending `done` of a call whose accepted state's spend waited for the
    /// confirmation (see `ask_mrtr`): the state is spent first, so every answer spends its
    /// state before the client hears how the call ended.
    pub(super) async fn spend(
        &self,
        unspent: Option<Unspent>,
        done: Box<CallToolResponse>,
    ) -> Box<CallToolResponse> {
        if let Some(Unspent { nonce, ttl }) = unspent
            && let Err(error) = self.guard.redeem(&nonce, ttl).await
        {
            tracing::error!(trace_id = %self.trace_id, %error, "could not record a used request state");
        }
        done
    }

    /// Marks the state used; a second round with it is a replay.
    pub(super) async fn redeem_state(&self, sealed: &SealedState, ttl: Duration) -> Step<()> {
        let redeemed = self.guard.redeem(&sealed.nonce, ttl).await.map_err(|error| {
            tracing::error!(trace_id = %self.trace_id, %error, "could not record a used request state");
            self.refuse(
                Outcome::StoreFailed,
                ToolError::new(
                    Code::Unavailable,
                    format!(
                        "{}: the server could not record this confirmation as used (trace_id {}). Call the tool again to ask afresh.",
                        self.nothing_done_first(),
                        self.trace_id
                    ),
                ),
            )
        })?;
        if redeemed {
            Ok(())
        } else {
            Err(self.replayed())
        }
    }

    /// The refusal of a retry whose state was already spent.
    pub(super) fn replayed(&self) -> Box<CallToolResponse> {
        self.refuse(
            Outcome::Replayed,
            ToolError::new(
                Code::InvalidState,
                format!(
                    "This confirmation was already used; {}. Call the tool again to ask afresh.",
                    self.nothing_done()
                ),
            ),
        )
    }

    /// The client's answer to guard's input request, from the retry.
    pub(super) fn mrtr_answer(&self) -> Step<ElicitResult> {
        let answer = self
            .call
            .input_responses
            .as_ref()
            .and_then(|r| r.get(INPUT_KEY))
            .map(|v| serde_json::from_value::<ElicitResult>(v.clone()));
        match answer {
            Some(Ok(answer)) => Ok(answer),
            _ => Err(self.refuse(
                Outcome::NoAnswer,
                ToolError::new(
                    Code::InvalidConfirmation,
                    format!(
                        "The retry carried no readable answer under `{INPUT_KEY}`; {}. Call the tool again to ask afresh.",
                        self.nothing_done()
                    ),
                ),
            )),
        }
    }
}

/// The bytes a seal is bound to: tool, form (or `batch`), confirmation kind and canonical
/// arguments.
pub(super) fn binding(
    form_name: &str,
    spec: &ToolSpec,
    arguments: &JsonObject,
) -> Result<Vec<u8>, NotCanonical> {
    canonical_json(&json!([
        "guard/v1",
        spec.name,
        form_name,
        spec.confirm.as_str(),
        Value::Object(arguments.clone()),
    ]))
    .map(String::into_bytes)
}
