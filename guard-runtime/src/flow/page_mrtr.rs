//! The approval page on protocol 2026-07-28, where a server sends no requests, holds no
//! request open for long, and a call asks by MRTR rounds instead.
//!
//! The first round opens the approval and answers with an `InputRequiredResult` whose one
//! input request is a URL-mode elicitation; its sealed state (nonce, effect fingerprint, trace
//! id, boot epoch, bound to the canonical arguments like a form round's) also names the
//! approval and counts the rounds. The client shows the URL and retries with `accept` once
//! the human went to the page, or with `decline`/`cancel`, which withdraw the approval.
//!
//! A retry waits for the page's decision at most [`ROUND_WAIT`](crate::approval::ROUND_WAIT) (or the deadline, or the
//! client cancelling the call). Decided in that time, the call ends like a push call, through
//! the same [`Flow::accept`] and re-check, without `notifications/elicitation/complete`,
//! which this revision does not have. Still pending, it answers another
//! `InputRequiredResult` with the same URL and a fresh state naming the same approval, for
//! at most [`WAITING_ROUNDS`] rounds: rmcp's client drives at most ten rounds per call
//! (`DEFAULT_MRTR_MAX_ROUNDS` in rmcp 3.11's `model/mrtr.rs`) and fails the call after
//! that, so the ninth request ends with a natural `approval_pending` result: nothing ran,
//! how many approved so far, until when the approval stays open, and to call again.
//!
//! Calling again takes the approval up: a call without a state, from the same requester
//! (compared as people) with the same binding (tool, form and canonical arguments), while
//! the approval is pending before its deadline, answers with the same URL instead of opening
//! another, so approvers may take longer than any request lasts. The link is derived from
//! the approval id under the guard's key, so any replica sharing that key (and the server
//! after a restart) sends the requester back to it; one that cannot derive it, and one whose
//! preview shows another effect than the approvers saw, withdraws it and opens a new one.
//! An approval approved while nobody waited runs on that call, once: the store marks it
//! used in the same transaction that hands the answer over, and refuses a second use.
//!
//! The approval lives in the operation store: a retry that reaches a restarted server, or
//! another replica on the same store, finds it there; one naming an approval the store does
//! not hold is refused and runs nothing. A retry is taken only
//! from the requester who opened the approval, for the same tool and arguments; checked before
//! the state is marked used, so someone else's retry cannot use up the requester's.

use rmcp::model::{ElicitRequest, ElicitationAction, InputRequest};

use serde_json::Value;

use super::{ApprovalSpec, Flow, finish::state_changed, page::Earlier};
use crate::approval::{ApprovalPage, Claim, Status, WAITING_ROUNDS};
use crate::entry::dispatch::TaskMode;
use crate::{
    error::{Code, ToolError},
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
        let desk = &page.shared().desk;
        if let TaskMode::Run(id) = &self.call.task {
            return self.run_task(page, effect, id).await;
        }
        let Some(sealed) = self.verified_state().await? else {
            if !self.client_can_open_urls() {
                return Err(self.no_url_mode());
            }
            let (id, url) = match self.earlier(page, effect).await? {
                Earlier::Approved(id) => return self.decided(&id, Status::Approved, desk).await,
                Earlier::Pending(id, url, _) => (id, url),
                Earlier::None => {
                    let (opened, url) = self
                        .open_approval(page, effect, expected, approval, self.bound_to()?)
                        .await?;
                    (opened.id, url)
                }
            };
            self.audit(Outcome::Asked, "url");
            if self.offers_task() {
                return Err(self.task_created(page, &id).await);
            }
            return Err(self.page_round(page, effect, approval, &id, &url, 0).await);
        };
        // A state sealed for a form question never names an approval.
        let Some(id) = sealed.approval.as_deref() else {
            return Err(self.bad_state());
        };
        let requester = self.requester(page)?;
        let deadline = desk
            .watch(id, &requester, &self.bound_to()?)
            .await
            .map_err(|claim| self.unclaimed(&claim))?
            .expires_at;
        self.seen().approval = Some((id.to_owned(), Vec::new()));
        if sealed.fingerprint != effect.fingerprint() {
            desk.close(id, Status::Withdrawn).await;
            return Err(self.refuse(
                Outcome::StateChanged,
                state_changed(effect.subject(), self.nothing_done()),
            ));
        }
        let round = sealed.round.unwrap_or(0);
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
        let deadline = super::page::until_instant(deadline);
        let until = (tokio::time::Instant::now() + self.guard.round_wait()).min(deadline);
        match self.decision(id, deadline, until, desk).await? {
            Status::Pending => {
                let url = desk.derived_token(id).map(|t| page.shared().link(&t));
                match url {
                    Some(url) if round + 1 < WAITING_ROUNDS => Err(self
                        .page_round(page, effect, approval, id, &url, round + 1)
                        .await),
                    _ => self.approval_pending(id, desk).await,
                }
            }
            decided => self.decided(id, decided, desk).await,
        }
    }

    /// A round that asks the client to send the human to approval `id` at `url`, with a
    /// state naming the approval and counting `round`.
    async fn page_round(
        &self,
        page: &ApprovalPage,
        effect: &Effect,
        approval: ApprovalSpec,
        id: &str,
        url: &url::Url,
        round: u8,
    ) -> Box<rmcp::model::CallToolResponse> {
        let ttl = self.guard.timeout(self.spec.timeout);
        match self
            .seal_state(
                effect.fingerprint(),
                ttl,
                Some((id.to_owned(), round)),
                None,
            )
            .await
        {
            Ok(state) => {
                let question = self.url_question(effect, approval, url, id);
                self.input_required(
                    InputRequest::Elicitation(ElicitRequest::new(question)),
                    state,
                )
            }
            Err(refused) => {
                page.shared().desk.close(id, Status::Withdrawn).await;
                refused
            }
        }
    }

    /// The call's last round found approval `id` still pending: nothing ran, and the
    /// requester's next call with the same arguments continues it. (Decided in the meantime,
    /// it ends as decided.)
    pub(super) async fn approval_pending(
        &self,
        id: &str,
        desk: &crate::approval::Desk,
    ) -> Step<(Value, Option<crate::secret::Secret>)> {
        let standing = match desk.standing(id).await {
            Ok(Some(standing)) => standing,
            Ok(None) => return Err(self.unclaimed(&Claim::Unknown)),
            Err(error) => {
                tracing::error!(trace_id = %self.trace_id, %error, "the approval store could not be read");
                return Err(self.unclaimed(&Claim::Unavailable));
            }
        };
        if standing.status != Status::Pending {
            return self.decided(id, standing.status, desk).await;
        }
        let until = chrono::DateTime::<chrono::Utc>::from(standing.expires_at)
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        Err(self.natural(
            Outcome::ApprovalPending,
            format!(
                "Nothing ran yet: {} is waiting for approval on the approval page ({} of {} approvals so far). The approval stays open until {until}; call the tool again with the same arguments to keep waiting (the same approval continues; nothing new is asked of the approvers).",
                self.spec.name, standing.given, standing.required
            ),
        ))
    }

    /// Why a retry may not wait for the approval its state names.
    pub(super) fn unclaimed(&self, claim: &Claim) -> Box<rmcp::model::CallToolResponse> {
        match claim {
            Claim::Unknown => {
                tracing::warn!(trace_id = %self.trace_id, tool = self.spec.name, "a retry named an approval the store does not hold");
                self.refuse(
                    Outcome::ApprovalUnknown,
                    ToolError::new(
                        Code::InvalidState,
                        format!(
                            "{}: the approval this retry waits for is not known to this server (it ended long ago, or it was kept by another server's own store), so {} cannot run on it. Call the tool again to open a new approval.",
                            self.nothing_done_first(),
                            self.spec.name
                        ),
                    ),
                )
            }
            Claim::Unavailable => self.refuse(
                Outcome::ApprovalUnknown,
                ToolError::new(
                    Code::Unavailable,
                    format!(
                        "{}: the server cannot read the approval this retry waits for right now (trace_id {}). Retry the same call in a moment.",
                        self.nothing_done_first(),
                        self.trace_id
                    ),
                ),
            ),
            Claim::NotYours => {
                tracing::warn!(trace_id = %self.trace_id, tool = self.spec.name, "a retry named an approval opened for another call");
                self.refuse(
                    Outcome::ApprovalMismatch,
                    ToolError::new(
                        Code::PermissionDenied,
                        format!(
                            "{}: this retry names an approval opened for another call (another person, tool or arguments), so {} cannot run on it. Call the tool again to ask for your own approval.",
                            self.nothing_done_first(),
                            self.spec.name
                        ),
                    ),
                )
            }
        }
    }
}
