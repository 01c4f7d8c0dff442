//! Getting each approver's link to them, through a channel the requester does not control,
//! and recording that it happened.
//!
//! Each link is sent on its own task, so a slow channel never holds up the call that asked.
//! A failed attempt is recorded and tried again after a growing pause (1, 2, 4, 8 s), at most
//! [`ATTEMPTS`] times and never after the approval expires; the last word is recorded too,
//! delivered or given up. A receiver may see one link more than once (an attempt that
//! arrived but whose answer was lost): each carries the same approval id for it to notice.

use std::{future::Future, pin::Pin, sync::Arc, time::Duration};

use super::{
    ApproverLink,
    journal::{Journal, Subject},
};
use crate::{
    outcome::{ApprovalEvent, Outcome},
    person::Person,
};

/// How many times one link is tried.
pub(crate) const ATTEMPTS: u32 = 5;

/// The pause before the first retry; it doubles after each failure.
const FIRST_PAUSE: Duration = Duration::from_secs(1);

/// What one delivery attempt returns: delivered, or why not.
pub type Delivery<'a> = Pin<Box<dyn Future<Output = Result<(), String>> + Send + 'a>>;

/// A channel that brings one approver their link, out of the requester's reach: a signed
/// webhook ([`super::WebhookNotifier`]), a file only the approvers' side reads
/// ([`super::FileDropNotifier`]), or the deployment's own (mail, chat).
pub trait Notifier: Send + Sync + 'static {
    /// Where links go, for the audit log: never a secret or a token.
    fn channel(&self) -> String;

    /// One attempt to deliver `link`; an error is recorded and the attempt repeated.
    fn deliver<'a>(&'a self, link: &'a ApproverLink) -> Delivery<'a>;
}

impl<N: Notifier + ?Sized> Notifier for Box<N> {
    fn channel(&self) -> String {
        (**self).channel()
    }

    fn deliver<'a>(&'a self, link: &'a ApproverLink) -> Delivery<'a> {
        (**self).deliver(link)
    }
}

/// A function of the deployment's that takes the link and never fails.
pub(super) struct Function<F>(F);

impl<F> Function<F> {
    pub(super) fn new(deliver: F) -> Self {
        Self(deliver)
    }
}

impl<F: Fn(ApproverLink) + Send + Sync + 'static> Notifier for Function<F> {
    fn channel(&self) -> String {
        "the deployment's deliver_links function".to_owned()
    }

    fn deliver<'a>(&'a self, link: &'a ApproverLink) -> Delivery<'a> {
        (self.0)(link.clone());
        Box::pin(std::future::ready(Ok(())))
    }
}

/// Sends `link` to `approver` through `notifier` on a task of its own, recording each
/// failed attempt and the outcome.
pub(super) fn send(
    notifier: Arc<dyn Notifier>,
    journal: Arc<Journal>,
    subject: Subject,
    approver: Person,
    link: ApproverLink,
) {
    tokio::spawn(async move {
        let channel = notifier.channel();
        let record = |outcome: Outcome, attempt: u32| {
            subject
                .event(outcome, Some(&approver))
                .field("channel", channel.as_str())
                .field("attempt", attempt)
        };
        let mut pause = FIRST_PAUSE;
        for attempt in 1..=ATTEMPTS {
            let error = match notifier.deliver(&link).await {
                Ok(()) => {
                    journal.record(record(
                        Outcome::Approval(ApprovalEvent::LinkDelivered),
                        attempt,
                    ));
                    return;
                }
                Err(error) => error,
            };
            let expired = std::time::SystemTime::now() + pause >= link.expires_at;
            let again = attempt < ATTEMPTS && !expired;
            tracing::warn!(trace_id = %subject.trace_id, approver = approver.user(), attempt, %error, again, "an approver link was not delivered");
            journal.record(
                record(
                    Outcome::Approval(ApprovalEvent::LinkDeliveryFailed),
                    attempt,
                )
                .field("error", error.as_str())
                .field("retrying", again),
            );
            if !again {
                journal.record(record(
                    Outcome::Approval(ApprovalEvent::LinkUndelivered),
                    attempt,
                ));
                return;
            }
            tokio::time::sleep(pause).await;
            pause *= 2;
        }
    });
}
