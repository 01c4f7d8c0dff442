//! Step 6 on protocol 2025-11-25: the question is pushed to the client
//! (`elicitation/create`) within the call, and the call waits for the answer, the timeout or
//! the client cancelling it.

use rmcp::{
    ServiceError,
    model::{
        CallToolResponse, CancelledNotificationParam, ClientResult, ElicitRequest,
        ElicitRequestParams, ElicitResult, ServerRequest,
    },
    service::PeerRequestOptions,
};

use super::{Flow, caller::Caller};
use crate::{
    error::{Code, ToolError},
    form::Form,
    outcome::{Outcome, Step},
};

/// `text` with its first letter in upper case.
fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|first| first.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

impl<F: Form> Flow<'_, F> {
    /// The question for `caller`'s call: the header, the effect and its terms, the name to
    /// retype, and the form (with a grant's choice, when one is offered to the caller).
    pub(super) fn question(&self, caller: &Caller, expected: Option<&str>) -> ElicitRequestParams {
        let effect = &caller.effect;
        let mut message = String::new();
        if let Some(header) = self.spec.message {
            message.push_str(header);
            message.push_str("\n\n");
        }
        message.push_str(&self.told(effect));
        if let Some(text) = expected {
            message.push_str(&format!("\n\nTo confirm, type {text} exactly."));
        }
        let requested_schema = F::requested_schema();
        #[cfg(any(feature = "sqlite", feature = "postgres"))]
        let requested_schema = self.offering(caller, requested_schema);
        ElicitRequestParams::FormElicitationParams {
            meta: None,
            message,
            requested_schema,
        }
    }
}

impl<F> Flow<'_, F> {
    /// What a call that ended before its handler did not do: a disclosure showed nothing,
    /// every other call changed nothing.
    pub(super) fn nothing_done(&self) -> &'static str {
        if self.seen().shows {
            "nothing was shown"
        } else {
            "nothing was changed"
        }
    }

    /// [`Flow::nothing_done`] opening a sentence.
    pub(super) fn nothing_done_first(&self) -> String {
        capitalised(self.nothing_done())
    }

    /// Form elicitation declared (an empty `elicitation` object means form, per the spec).
    pub(super) fn client_can_confirm(&self) -> bool {
        self.call
            .request
            .client_capabilities()
            .and_then(|c| c.elicitation)
            .is_some_and(|e| e.form.is_some() || e.url.is_none())
    }

    pub(super) fn unsupported(&self) -> Box<CallToolResponse> {
        self.natural(
            Outcome::UnsupportedClient,
            format!(
                "{}: {} needs the user's confirmation, and this client cannot ask \
                 for it (it did not declare form elicitation). Ask the user to run this from a \
                 client that supports confirmation.",
                self.nothing_done_first(),
                self.spec.name
            ),
        )
    }

    pub(super) fn cancelled(&self) -> Box<CallToolResponse> {
        let asked = if self.seen().question {
            "question"
        } else {
            "confirmation"
        };
        self.natural(
            Outcome::Cancelled,
            self.spec.on_cancel.map(str::to_owned).unwrap_or_else(|| {
                format!(
                    "The {asked} was cancelled; {} ({} did not run).",
                    self.nothing_done(),
                    self.spec.name
                )
            }),
        )
    }

    /// The client cancelled the call, or its connection closed: an outcome, and nothing ran.
    pub(super) fn cancelled_by_client(&self) -> Box<CallToolResponse> {
        self.natural(
            Outcome::CancelledByClient,
            format!(
                "The client cancelled the call; {} ({} did not run).",
                self.nothing_done(),
                self.spec.name
            ),
        )
    }

    /// Pushes the question and waits for the answer, the timeout, or the client cancelling
    /// the call (`notifications/cancelled`, or the connection closing), whichever comes
    /// first. A cancelled call withdraws its question, so a later answer never reaches a body.
    pub(super) async fn ask_push(&self, question: ElicitRequestParams) -> Step<ElicitResult> {
        if !self.client_can_confirm() {
            return Err(self.unsupported());
        }
        let cancelled = &self.call.request.ct;
        if cancelled.is_cancelled() {
            return Err(self.cancelled_by_client());
        }
        let peer = &self.call.request.peer;
        let timeout = self.guard.timeout(self.spec.timeout);
        let request = ServerRequest::ElicitRequest(ElicitRequest::new(question));
        let sent = match peer
            .send_request_with_option(request, PeerRequestOptions::with_timeout(timeout))
            .await
        {
            Ok(handle) => {
                let question = handle.id.clone();
                tokio::select! {
                    biased;
                    () = cancelled.cancelled() => {
                        // Close the form on the client: nobody is waiting for its answer.
                        let withdraw = CancelledNotificationParam::new(
                            Some(question),
                            Some("the tool call was cancelled".to_owned()),
                        );
                        if let Err(error) = peer.notify_cancelled(withdraw).await {
                            tracing::debug!(trace_id = %self.trace_id, %error, "could not withdraw the question");
                        }
                        return Err(self.cancelled_by_client());
                    }
                    answer = handle.await_response() => answer,
                }
            }
            Err(error) => Err(error),
        };
        let sent = match sent {
            Ok(ClientResult::ElicitResult(answer)) => Ok(answer),
            Ok(_) => Err(ServiceError::UnexpectedResponse),
            Err(error) => Err(error),
        };
        match sent {
            Ok(answer) => Ok(answer),
            // The connection closed or the call was cancelled while the answer was in flight.
            Err(_) if cancelled.is_cancelled() => Err(self.cancelled_by_client()),
            Err(ServiceError::Timeout { .. }) => {
                self.audit(Outcome::TimedOut, "");
                Err(self.cancelled())
            }
            Err(error) => {
                tracing::warn!(trace_id = %self.trace_id, %error, "elicitation failed");
                Err(self.refuse(
                    Outcome::ElicitationFailed,
                    ToolError::new(
                        Code::InvalidState,
                        format!(
                            "{}: the confirmation request could not reach the \
                             user (trace_id {}). Try again.",
                            self.nothing_done_first(),
                            self.trace_id
                        ),
                    ),
                ))
            }
        }
    }
}
