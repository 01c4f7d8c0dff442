//! The approval page on protocol 2026-07-28, where a server sends no requests and a call
//! asks by MRTR rounds instead.
//!
//! The first round opens the approval and answers with an `InputRequiredResult` whose one
//! input request is a URL-mode elicitation; its sealed state (nonce, effect fingerprint, trace
//! id, boot epoch, bound to the canonical arguments like a form round's) also names the
//! approval. The client shows the URL and retries with `accept` once the human went to the
//! page, or with `decline`/`cancel`, which withdraw the approval.
//!
//! The retry waits for the page's decision, the deadline or the client cancelling the call,
//! then sends `notifications/elicitation/complete` on its own stream and ends like a push
//! call, through the same [`Flow::accept`] and re-check. It does not answer the same input
//! request again while the approval is pending: a client would show the human the same URL
//! again on every round and spend its round limit (rmcp stops after ten) while approvers take
//! minutes, and completion would depend on how often it polls. A retry sent before anyone
//! approved therefore simply ends with whatever the page decides, a rejection included.
//!
//! The approval lives in the operation store: a retry that reaches a restarted server, or
//! another replica on the same store, finds it there; one naming an approval the store does
//! not hold is refused and runs nothing. A retry is taken only
//! from the requester who opened the approval, for the same tool and arguments; checked before
//! the state is marked used, so someone else's retry cannot use up the requester's.

use rmcp::model::{ElicitRequest, ElicitationAction, InputRequest};

use serde_json::Value;

use super::{ApprovalSpec, Flow, finish::state_changed};
use crate::approval::{ApprovalPage, Claim, Status};
use crate::{
    error::{ToolError, codes},
    form::Form,
    outcome::{Outcome, Step},
    preview::Effect,
};

impl<F: Form> Flow<'_, F> {
    /// One MRTR round of a call approved on the page.
    pub(super) async fn ask_page_mrtr(
        &self,
        page: &ApprovalPage,
        effect: &Effect,
        expected: Option<&str>,
        approval: ApprovalSpec,
    ) -> Step<(Value, Option<crate::secret::Secret>)> {
        let ttl = self.guard.timeout(self.spec.timeout);
        let Some(sealed) = self.verified_state()? else {
            return Err(
                match self.open_page_round(page, effect, expected, approval).await {
                    Ok(asked) | Err(asked) => asked,
                },
            );
        };
        // A state sealed for a form question never names an approval.
        let Some(id) = sealed.approval.as_deref() else {
            return Err(self.bad_state());
        };
        let desk = &page.shared().desk;
        let requester = self.requester(page)?;
        let (deadline, _) = desk
            .watch(id, &requester, &self.bound_to()?)
            .await
            .map_err(|claim| self.unclaimed(&claim))?;
        self.seen().approval = Some((id.to_owned(), Vec::new()));
        if sealed.fingerprint != effect.fingerprint() {
            desk.close(id, Status::Withdrawn).await;
            return Err(self.refuse(Outcome::StateChanged, state_changed(effect.target())));
        }
        // A replay is refused here and leaves the approval to the round already waiting.
        self.redeem_state(sealed, ttl).await?;
        let answer = match self.mrtr_answer() {
            Ok(answer) => answer,
            Err(refused) => {
                desk.close(id, Status::Withdrawn).await;
                return Err(refused);
            }
        };
        match answer.action {
            ElicitationAction::Accept => {}
            ElicitationAction::Decline => {
                desk.close(id, Status::Withdrawn).await;
                return Err(self.page_declined());
            }
            // Cancel, and any action a newer client may invent: nothing runs.
            _ => {
                desk.close(id, Status::Withdrawn).await;
                return Err(self.cancelled());
            }
        }
        let left = deadline
            .duration_since(std::time::SystemTime::now())
            .unwrap_or_default();
        let status = self
            .decision(id, tokio::time::Instant::now() + left, desk)
            .await?;
        self.complete(id).await;
        self.decided(id, status, desk).await
    }

    /// The first round: opens the approval and asks the client to send the human to it.
    /// `Ok` is the input request, `Err` a refusal; either ends this round.
    async fn open_page_round(
        &self,
        page: &ApprovalPage,
        effect: &Effect,
        expected: Option<&str>,
        approval: ApprovalSpec,
    ) -> Step<Box<rmcp::model::CallToolResponse>> {
        if !self.client_can_open_urls() {
            return Err(self.no_url_mode());
        }
        let ttl = self.guard.timeout(self.spec.timeout);
        let (opened, url) = self
            .open_approval(page, effect, expected, approval, self.bound_to()?)
            .await?;
        let state = match self.seal(effect, ttl, Some(opened.id.clone())) {
            Ok(state) => state,
            Err(refused) => {
                page.shared()
                    .desk
                    .close(&opened.id, Status::Withdrawn)
                    .await;
                return Err(refused);
            }
        };
        let question = self.url_question(effect, approval, &url, &opened.id);
        self.audit(Outcome::Asked, "url");
        Ok(self.input_required(
            InputRequest::Elicitation(ElicitRequest::new(question)),
            state,
        ))
    }

    /// Why a retry may not wait for the approval its state names.
    fn unclaimed(&self, claim: &Claim) -> Box<rmcp::model::CallToolResponse> {
        match claim {
            Claim::Unknown => {
                tracing::warn!(trace_id = %self.trace_id, tool = self.spec.name, "a retry named an approval the store does not hold");
                self.refuse(
                    Outcome::ApprovalUnknown,
                    ToolError::new(
                        codes::INVALID_STATE,
                        format!(
                            "Nothing was changed: the approval this retry waits for is not known to this server (it ended long ago, or it was kept by another server's own store), so {} cannot run on it. Call the tool again to open a new approval.",
                            self.spec.name
                        ),
                    ),
                )
            }
            Claim::Unavailable => self.refuse(
                Outcome::ApprovalUnknown,
                ToolError::new(
                    codes::UNAVAILABLE,
                    format!(
                        "Nothing was changed: the server cannot read the approval this retry waits for right now (trace_id {}). Retry the same call in a moment.",
                        self.trace_id
                    ),
                ),
            ),
            Claim::NotYours => {
                tracing::warn!(trace_id = %self.trace_id, tool = self.spec.name, "a retry named an approval opened for another call");
                self.refuse(
                    Outcome::ApprovalMismatch,
                    ToolError::new(
                        codes::PERMISSION_DENIED,
                        format!(
                            "Nothing was changed: this retry names an approval opened for another call (another person, tool or arguments), so {} cannot run on it. Call the tool again to ask for your own approval.",
                            self.spec.name
                        ),
                    ),
                )
            }
        }
    }
}
