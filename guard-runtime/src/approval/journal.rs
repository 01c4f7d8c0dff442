//! The approval's own audit records: opened, each link delivered (or not), each link first
//! viewed, each decision (taken or refused), and how it ended (approved, rejected,
//! withdrawn, expired). Each names the call's trace id, the approval id, the tool and target,
//! the requester and, where one acted, the approver, all in canonical form
//! ([`crate::person`]). They go to the log of the [`Guard`](crate::guard::Guard) the page
//! is handed to, and to the `guard::audit` tracing target like every record.
//!
//! What the log never holds: link tokens, CSRF tokens, typed names or secrets.

#[cfg(any(feature = "sqlite", feature = "postgres"))]
use std::sync::{Arc, OnceLock};

use crate::{audit::Event, outcome::Outcome, person::Person};

/// What every record of one approval names.
#[derive(Debug, Clone)]
pub(crate) struct Subject {
    pub tool: String,
    pub trace_id: String,
    pub approval_id: String,
    pub target: String,
    pub requester: Person,
}

impl Subject {
    /// A record of `outcome` about this approval, by `approver` when one acted.
    pub(crate) fn event(&self, outcome: Outcome, approver: Option<&Person>) -> Event {
        Event::new(self.tool.as_str(), outcome, self.trace_id.as_str())
            .identity(self.requester.tenant(), self.requester.user())
            .field("approval_id", self.approval_id.as_str())
            .field("target", self.target.as_str())
            .field("approver", approver.map(Person::user))
    }
}

/// Where approval records go: the guard's log once the page is handed to a guard with one.
#[derive(Default)]
pub(crate) struct Journal {
    #[cfg(any(feature = "sqlite", feature = "postgres"))]
    log: OnceLock<Arc<crate::audit::Pipeline>>,
}

impl Journal {
    /// Records into `log` from now on. A page handed to a second guard keeps the first log.
    #[cfg(any(feature = "sqlite", feature = "postgres"))]
    pub(crate) fn attach(&self, log: Arc<crate::audit::Pipeline>) {
        if self.log.set(log).is_err() {
            tracing::warn!(
                "this approval page already records into another guard's audit log; it keeps that one (give each guard its own page)"
            );
        }
    }

    pub(crate) fn record(&self, event: Event) {
        event.mirror();
        #[cfg(any(feature = "sqlite", feature = "postgres"))]
        if let Some(log) = self.log.get() {
            log.send(event);
        }
    }
}
