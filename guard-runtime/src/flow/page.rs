//! Steps 5–7 for a tool with `approve = "url"`: the human decides on guard's approval page,
//! reached through a URL-mode elicitation, and the page's approval becomes the same answer a
//! form would give, revalidated by the same [`Flow::accept`]. Only guard's desk says a call
//! was approved, and only once the required approvals really happened.
//!
//! This module holds the push era (2025-11-25: `elicitation/create` with `mode: "url"`, then
//! `notifications/elicitation/complete`) and the steps both eras share; `page_mrtr` holds
//! the 2026-07-28 rounds, which never send that notification.
//!
//! A push call waits on its open request until the page decides or the approval's deadline.
//! A call whose requester already has an approval for the same binding (a call that ended
//! with the server's restart, or on another replica) takes it up ([`Flow::earlier`]): while
//! pending it sends the same link again and waits; approved and not yet used, it runs now,
//! once. An approval whose effect differs from this call's preview is withdrawn instead.

use serde_json::Value;

use super::{ApprovalSpec, Flow};
use crate::{
    error::{Code, ToolError},
    form::Form,
    outcome::{Outcome, Step},
    preview::Effect,
};

impl<F: Form> Flow<'_, F> {
    /// Without the `approval` feature there is no page to send the human to: refuse.
    #[cfg(not(feature = "approval"))]
    pub(super) async fn ask_page(
        &self,
        _effect: &Effect,
        _expected: Option<&str>,
        _approval: ApprovalSpec,
    ) -> Step<(Value, Option<crate::secret::Secret>)> {
        Err(self.no_page("rmcp-guard is built without its `approval` feature"))
    }

    /// Opens the approval, sends the client to the page, waits for the decision, and
    /// completes the elicitation. On 2026-07-28 the same happens over MRTR rounds.
    #[cfg(feature = "approval")]
    pub(super) async fn ask_page(
        &self,
        effect: &Effect,
        expected: Option<&str>,
        approval: ApprovalSpec,
    ) -> Step<(Value, Option<crate::secret::Secret>)> {
        use crate::approval::Status;
        use rmcp::model::{ClientResult, ElicitRequest, ElicitationAction, ServerRequest};
        use rmcp::service::PeerRequestOptions;

        let Some(page) = self.guard.approval_page() else {
            return Err(self.no_page("the guard has no approval page (Guard::with_approval_page)"));
        };
        if self.is_mrtr() {
            return self.ask_page_mrtr(page, effect, expected, approval).await;
        }
        if !self.client_can_open_urls() {
            return Err(self.no_url_mode());
        }
        let cancelled = &self.call.request.ct;
        if cancelled.is_cancelled() {
            return Err(self.cancelled_by_client());
        }
        let desk = &page.shared().desk;
        // A call after a restart (or on another replica) takes up its earlier approval.
        let (id, url, until) = match self.earlier(page, effect).await? {
            Earlier::Approved(id) => return self.decided(&id, Status::Approved, desk).await,
            Earlier::Pending(id, url, until) => (id, url, until),
            Earlier::None => {
                let (opened, url) = self
                    .open_approval(page, effect, expected, approval, self.bound_to()?)
                    .await?;
                (opened.id, url, opened.expires_at)
            }
        };
        let deadline = until_instant(until);
        let left = deadline - tokio::time::Instant::now();
        self.audit(Outcome::Asked, "url");
        let params = self.url_question(effect, approval, &url, &id);
        let peer = &self.call.request.peer;
        let sent = match peer
            .send_request_with_option(
                ServerRequest::ElicitRequest(ElicitRequest::new(params)),
                PeerRequestOptions::with_timeout(left),
            )
            .await
        {
            Ok(handle) => tokio::select! {
                biased;
                () = cancelled.cancelled() => {
                    desk.close(&id, Status::Withdrawn).await;
                    return Err(self.cancelled_by_client());
                }
                answer = handle.await_response() => answer,
            },
            Err(error) => Err(error),
        };
        // The client's answer only says whether the human went to the page.
        match sent {
            Ok(ClientResult::ElicitResult(answer)) => match answer.action {
                ElicitationAction::Accept => {}
                ElicitationAction::Decline => {
                    desk.close(&id, Status::Withdrawn).await;
                    return Err(self.page_declined());
                }
                _ => {
                    desk.close(&id, Status::Withdrawn).await;
                    return Err(self.cancelled());
                }
            },
            Ok(_) | Err(_) if cancelled.is_cancelled() => {
                desk.close(&id, Status::Withdrawn).await;
                return Err(self.cancelled_by_client());
            }
            Ok(_) | Err(_) => {
                // No usable answer (a timeout, a broken client): the page decides, or the
                // deadline does.
                tracing::debug!(trace_id = %self.trace_id, "no answer to the URL elicitation; waiting for the page");
            }
        }
        let status = self.decision(&id, deadline, deadline, desk).await?;
        self.complete(&id).await;
        self.decided(&id, status, desk).await
    }

    /// The canonical binding of this call (tool, form, confirmation kind, arguments), which
    /// the approval records so that only a later round of this very call, or a later call
    /// of the same requester with the same arguments, can claim it.
    #[cfg(feature = "approval")]
    pub(super) fn bound_to(&self) -> Step<String> {
        super::binding(self.form_name, self.spec, &self.call.arguments)
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
            .map_err(|e| {
                self.refuse(
                    Outcome::InvalidArguments,
                    ToolError::new(
                        Code::InvalidInput,
                        format!("{}: {e}.", self.nothing_done_first()),
                    ),
                )
            })
    }

    /// Identifies the requester and opens the approval on the desk; the requester's URL.
    #[cfg(feature = "approval")]
    pub(super) async fn open_approval(
        &self,
        page: &crate::approval::ApprovalPage,
        effect: &Effect,
        expected: Option<&str>,
        approval: ApprovalSpec,
        bound_to: String,
    ) -> Step<(crate::approval::Opened, url::Url)> {
        let requester = self.requester(page)?;
        let request = crate::approval::Request {
            tool: self.spec.name,
            message: self.spec.message,
            target: effect.subject().shown().to_owned(),
            summary: self.told(effect),
            requester,
            trace_id: self.trace_id.clone(),
            expected: expected.map(str::to_owned),
            required: approval.approvers,
            secret: approval.secret,
            valid_for: self.guard.timeout(self.spec.timeout),
            bound_to,
            fingerprint: effect.fingerprint(),
        };
        let opened = page.shared().open(request).await.map_err(|problem| {
            tracing::error!(trace_id = %self.trace_id, tool = self.spec.name, %problem, "cannot open an approval");
            self.refuse(
                Outcome::Misconfigured,
                ToolError::new(
                    Code::InvalidState,
                    format!(
                        "{}: {} cannot be sent for approval on this server (trace_id {}). Tell the operator.",
                        self.nothing_done_first(),
                        self.spec.name, self.trace_id
                    ),
                ),
            )
        })?;
        self.seen().approval = Some((opened.0.id.clone(), Vec::new()));
        Ok(opened)
    }

    /// The approval this call's requester opened before for the same binding, if a new call
    /// takes it up instead of opening another: pending with the same effect (answered with
    /// the same link), or approved and not yet used (run now, once). One whose effect
    /// differs from what this call's preview shows now is withdrawn, so approvers never
    /// approve something other than what runs; so is one whose link this server cannot
    /// derive (its replicas do not share the guard's key), and a new one opens.
    #[cfg(feature = "approval")]
    pub(super) async fn earlier(
        &self,
        page: &crate::approval::ApprovalPage,
        effect: &Effect,
    ) -> Step<Earlier> {
        use crate::approval::Status;
        let requester = self.requester(page)?;
        let desk = &page.shared().desk;
        let found = desk
            .find(&requester, &self.bound_to()?)
            .await
            .map_err(|error| {
                tracing::error!(trace_id = %self.trace_id, %error, "the approval store could not be read");
                self.refuse(
                    Outcome::StoreFailed,
                    ToolError::new(
                        Code::Unavailable,
                        format!(
                            "{}: the server cannot read its approvals right now (trace_id {}). Call the tool again in a moment.",
                            self.nothing_done_first(),
                            self.trace_id
                        ),
                    ),
                )
            })?;
        let Some(found) = found else {
            return Ok(Earlier::None);
        };
        if found.fingerprint.as_deref() != Some(effect.fingerprint().as_str()) {
            tracing::info!(trace_id = %self.trace_id, approval_id = %found.id, "the effect changed since the approvers saw it; the earlier approval is withdrawn");
            desk.close(&found.id, Status::Withdrawn).await;
            return Ok(Earlier::None);
        }
        self.seen().approval = Some((found.id.clone(), Vec::new()));
        match (found.status, found.requester_token) {
            (Status::Approved, _) => Ok(Earlier::Approved(found.id)),
            (_, Some(token)) => Ok(Earlier::Pending(
                found.id,
                page.shared().link(&token),
                found.expires_at,
            )),
            (_, None) => {
                tracing::warn!(trace_id = %self.trace_id, approval_id = %found.id, "the earlier approval's link cannot be derived here (the servers do not share the guard key); it is withdrawn and a new one opens");
                desk.close(&found.id, Status::Withdrawn).await;
                Ok(Earlier::None)
            }
        }
    }

    /// The requester, as the page's identity provider names them, in canonical form: the
    /// person every approver is compared with, and whom the call's records name.
    #[cfg(feature = "approval")]
    pub(super) fn requester(
        &self,
        page: &crate::approval::ApprovalPage,
    ) -> Step<crate::person::Person> {
        let identity = page
            .shared()
            .identify(&self.call.request)
            .map_err(|error| self.refuse(Outcome::PermissionDenied, error))?;
        let person = crate::person::Person::new(&identity.tenant, &identity.user).map_err(|problem| {
            tracing::warn!(trace_id = %self.trace_id, tool = self.spec.name, %problem, "the requester's name cannot be compared with the approvers'");
            self.refuse(
                Outcome::PermissionDenied,
                ToolError::new(
                    Code::PermissionDenied,
                    format!(
                        "{}: the identity provider names the caller in a way guard refuses ({problem}), so {} cannot be approved for them. Ask the operator to fix the account (trace_id {}).",
                        self.nothing_done_first(),
                        self.spec.name, self.trace_id
                    ),
                ),
            )
        })?;
        self.seen().requester = Some(person.clone());
        Ok(person)
    }

    /// The URL-mode question: the effect, who must approve, and the requester's link.
    #[cfg(feature = "approval")]
    pub(super) fn url_question(
        &self,
        effect: &Effect,
        approval: ApprovalSpec,
        url: &url::Url,
        id: &str,
    ) -> rmcp::model::ElicitRequestParams {
        let message =
            crate::approval::question(self.spec.message, &self.told(effect), approval.approvers);
        rmcp::model::ElicitRequestParams::UrlElicitationParams {
            meta: None,
            message,
            url: url.to_string(),
            elicitation_id: id.to_owned(),
        }
    }

    /// Waits for the page's decision, the deadline, the client cancelling the call, or
    /// `until` (a round's bound, answered as still pending), whichever comes first; a
    /// cancelled call withdraws its approval. A decision taken in this process wakes it at
    /// once; one taken by another process (a replica, or this server before a restart) is
    /// read from the store every [`POLL`](crate::approval::POLL).
    #[cfg(feature = "approval")]
    pub(super) async fn decision(
        &self,
        id: &str,
        deadline: tokio::time::Instant,
        until: tokio::time::Instant,
        desk: &crate::approval::Desk,
    ) -> Step<crate::approval::Status> {
        use crate::approval::Status;
        let cancelled = &self.call.request.ct;
        let mut changes = desk.changes();
        loop {
            match desk.status(id).await {
                Ok(Status::Pending) => {}
                Ok(now) => return Ok(now),
                Err(error) => {
                    tracing::warn!(trace_id = %self.trace_id, %error, "the approval store could not be read; trying again");
                }
            }
            tokio::select! {
                biased;
                () = cancelled.cancelled() => {
                    desk.close(id, Status::Withdrawn).await;
                    return Err(self.cancelled_by_client());
                }
                () = tokio::time::sleep_until(deadline) => return Ok(desk.close(id, Status::Expired).await),
                () = tokio::time::sleep_until(until), if until < deadline => return Ok(Status::Pending),
                _ = changes.changed() => {}
                () = tokio::time::sleep(crate::approval::POLL) => {}
            }
        }
    }

    /// Tells the client the out-of-band interaction is over (best effort: a client that
    /// misses it still gets the call's result). Push era only: 2026-07-28 has no such
    /// notification, and its rounds never send it.
    #[cfg(feature = "approval")]
    async fn complete(&self, id: &str) {
        use rmcp::model::{CustomNotification, ServerNotification};
        let complete = CustomNotification::new(
            "notifications/elicitation/complete",
            Some(serde_json::json!({ "elicitationId": id })),
        );
        if let Err(error) = self
            .call
            .request
            .peer
            .send_notification(ServerNotification::CustomNotification(complete))
            .await
        {
            tracing::debug!(trace_id = %self.trace_id, %error, "could not send notifications/elicitation/complete");
        }
    }

    /// The decision as the model sees it: an approval becomes the form answer it stands
    /// for; a rejection, an expiry or a withdrawal is a natural outcome.
    #[cfg(feature = "approval")]
    pub(super) async fn decided(
        &self,
        id: &str,
        status: crate::approval::Status,
        desk: &crate::approval::Desk,
    ) -> Step<(Value, Option<crate::secret::Secret>)> {
        use crate::approval::Status;
        match status {
            Status::Approved => match desk.take_answer(id, &self.trace_id).await {
                crate::approval::Taken::Answer(typed, secret, given) => {
                    let approvers = given.iter().map(|g| g.who.user().to_owned()).collect();
                    self.seen().approval = Some((id.to_owned(), approvers));
                    Ok((page_answer::<F>(typed), secret))
                }
                crate::approval::Taken::Used => Err(self.natural(
                    Outcome::ApprovalUsed,
                    format!(
                        "This approval of {} was already used: the approved action ran once, for another call of yours. Nothing more was changed; call the tool again to ask for a new approval if it must run again.",
                        self.spec.name
                    ),
                )),
                crate::approval::Taken::NotApproved {
                    counted,
                    required,
                    forged,
                } => Err(self.not_approved(counted, required, forged)),
                crate::approval::Taken::Missing => Err(self.cancelled()),
            },
            Status::Rejected { by } => Err(self.natural(
                Outcome::Rejected,
                format!(
                    "{by} rejected {} on the approval page; {}.",
                    self.spec.name,
                    self.nothing_done()
                ),
            )),
            Status::Expired => Err(self.natural(
                Outcome::Expired,
                format!(
                    "The approval for {} expired before enough people approved; {}. Call the tool again to ask afresh.",
                    self.spec.name,
                    self.nothing_done()
                ),
            )),
            Status::Withdrawn | Status::Pending => Err(self.cancelled()),
        }
    }

    /// The store marks the approval approved, but only `counted` of the `required`
    /// approvals are decisions guard took on the page (`forged` rows it ignored, each in
    /// the audit log): nothing runs.
    #[cfg(feature = "approval")]
    fn not_approved(
        &self,
        counted: usize,
        required: u8,
        forged: usize,
    ) -> Box<rmcp::model::CallToolResponse> {
        tracing::error!(trace_id = %self.trace_id, tool = self.spec.name, counted, required, forged, "an approval the store marks approved lacks the decisions taken on the page");
        self.refuse(
            Outcome::NotApproved,
            ToolError::new(
                Code::PermissionDenied,
                format!(
                    "{}: {} was not approved. The server's database marks its approval as approved, but only {counted} of the {required} approvals it needs were given on the approval page ({forged} decision rows there were not written by the page and were ignored; the audit log names them). Call the tool again to ask for a new approval, and tell the operator that something other than guard writes to the approval tables (trace_id {}).",
                    self.nothing_done_first(),
                    self.spec.name,
                    self.trace_id
                ),
            ),
        )
    }

    /// URL elicitation declared.
    #[cfg(feature = "approval")]
    pub(super) fn client_can_open_urls(&self) -> bool {
        self.call
            .request
            .client_capabilities()
            .and_then(|c| c.elicitation)
            .is_some_and(|e| e.url.is_some())
    }

    #[cfg(feature = "approval")]
    pub(super) fn no_url_mode(&self) -> Box<rmcp::model::CallToolResponse> {
        self.natural(
            Outcome::UnsupportedClient,
            format!(
                "{}: {} must be approved on a web page, and this client cannot send the \
                 user to one (it did not declare URL elicitation). Ask the user to run this \
                 from a client that supports it.",
                self.nothing_done_first(),
                self.spec.name
            ),
        )
    }

    #[cfg(feature = "approval")]
    pub(super) fn page_declined(&self) -> Box<rmcp::model::CallToolResponse> {
        self.natural(
            Outcome::Declined,
            self.spec.on_decline.map(str::to_owned).unwrap_or_else(|| {
                format!(
                    "The user declined to open the approval page; {} ({} did not run).",
                    self.nothing_done(),
                    self.spec.name
                )
            }),
        )
    }

    #[cfg_attr(feature = "approval", allow(dead_code))]
    fn no_page(&self, why: &str) -> Box<rmcp::model::CallToolResponse> {
        tracing::error!(trace_id = %self.trace_id, tool = self.spec.name, why, "a tool approved on the page has no page to send the human to");
        self.refuse(
            Outcome::Misconfigured,
            ToolError::new(
                Code::InvalidState,
                format!(
                    "{}: {} is approved on a web page that this server does not serve (trace_id {}). Tell the operator.",
                    self.nothing_done_first(),
                    self.spec.name, self.trace_id
                ),
            ),
        )
    }
}

/// An approval a new call of its requester takes up, or none.
#[cfg(feature = "approval")]
pub(super) enum Earlier {
    /// None to take up: open a new one.
    None,
    /// Pending: its id, the requester's link, and its deadline.
    Pending(String, url::Url, std::time::SystemTime),
    /// Approved while nobody waited, not yet used.
    Approved(String),
}

/// `at` on tokio's clock.
#[cfg(feature = "approval")]
pub(super) fn until_instant(at: std::time::SystemTime) -> tokio::time::Instant {
    tokio::time::Instant::now()
        + at.duration_since(std::time::SystemTime::now())
            .unwrap_or_default()
}

/// The form answer the page's approval stands for: the typed name in the confirm-text field,
/// `true` in the checkbox. [`Flow::accept`] then checks it like any form answer.
#[cfg(feature = "approval")]
fn page_answer<F: Form>(typed: Option<String>) -> Value {
    use crate::form::FieldRole;
    let mut content = serde_json::Map::new();
    for field in F::SPEC.fields {
        match field.role {
            FieldRole::ConfirmText => {
                content.insert(
                    field.name.to_owned(),
                    Value::String(typed.clone().unwrap_or_default()),
                );
            }
            FieldRole::Checkbox => {
                content.insert(field.name.to_owned(), Value::Bool(true));
            }
            FieldRole::Plain => {}
        }
    }
    Value::Object(content)
}
