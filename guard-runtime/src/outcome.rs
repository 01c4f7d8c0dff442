//! What became of a guarded call, in one vocabulary: the [`Outcome`] that its audit record
//! and its `_meta.guard` tag name, and [`Step`], what each step that may end a call returns.
//!
//! The flow, two-phase operations, idempotency keys and the exposure all end calls; they
//! name the ending here, and the tag the model's result carries is built here, once.

use rmcp::model::{CallToolResponse, CallToolResult, MetaObject};
use serde_json::json;

use crate::{batch::ItemOutcome, error::Code};

/// A step either continues with a value or ends the call with the model's result.
pub type Step<T> = Result<T, Box<CallToolResponse>>;

/// How a call ended (or how far it got), as its audit record and the `outcome` of its
/// `_meta.guard` tag spell it.
///
/// Guarded tools' outcomes are lowercase words (`declined`, `state_changed`); two-phase
/// operations and keyed tools name theirs by status (`PREPARED`, `SUBMITTED`) or, when they
/// refuse, by the stable error code ([`Outcome::Refused`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Outcome {
    /// The question went to the human (`protocol` says how: push, MRTR or the page).
    Asked,
    /// The human's answer passed every check and is in the log; the effect runs next.
    Accepted,
    /// The handler ran and returned a result.
    Executed,
    /// The handler ran and returned an `isError` result.
    HandlerError,
    /// The handler ran and failed with a protocol error.
    HandlerFailed,
    /// The human declined.
    Declined,
    /// The human cancelled, or did not answer in time.
    Cancelled,
    /// The client cancelled the call, or its connection closed, before the effect.
    CancelledByClient,
    /// The human did not answer before the timeout (followed by [`Outcome::Cancelled`]).
    TimedOut,
    /// The preview found nothing to do; nobody was asked.
    PreconditionFailed,
    /// The author's preview failed; nobody was asked.
    PreviewFailed,
    /// The target changed between the question and the effect.
    StateChanged,
    /// The client did not declare form elicitation, so nobody could be asked.
    UnsupportedClient,
    /// The answer failed revalidation (types, ranges, the typed name, a rule).
    InvalidAnswer,
    /// An answer given to another tool reached this tool's re-check.
    WrongTool,
    /// The tool's form does not fit its confirmation kind.
    Misconfigured,
    /// The confirmation could not be written to the audit log, so nothing ran.
    AuditFailed,
    /// The tool was called outside a `tools/call` that guard's exposure dispatched to it.
    NotPublished,
    /// The question could not reach the human.
    ElicitationFailed,
    /// The arguments have no canonical form to bind a request state to.
    InvalidArguments,
    /// The request state could not be sealed.
    SealFailed,
    /// The echoed request state expired.
    Expired,
    /// The echoed request state was sealed before this server started (or by another
    /// process; without an operation store, used states are kept in memory).
    Restarted,
    /// The echoed request state names another operation store than this server's (or a
    /// server that keeps used states in memory), where its use would be recorded.
    OtherStore,
    /// The echoed request state does not match this call.
    BadState,
    /// The request state could not be marked used.
    StoreFailed,
    /// The request state was already used.
    Replayed,
    /// The retry carried no readable answer.
    NoAnswer,
    /// The caller lacks a scope the approval page needs.
    PermissionDenied,
    /// The approvers rejected the call on the page.
    Rejected,
    /// The retry names an approval the page does not know.
    ApprovalUnknown,
    /// The retry names an approval given for another call.
    ApprovalMismatch,
    /// The approval is still pending after the last waiting round: nothing ran, and the
    /// requester's next call with the same arguments continues the same approval.
    ApprovalPending,
    /// The approval already let its effect run for another call of the requester.
    ApprovalUsed,
    /// The store marks the approval approved, but fewer decisions than it needs are ones
    /// guard took on the page: nothing ran.
    NotApproved,
    /// A batch's preview matched nothing.
    NothingMatched,
    /// A batch's preview matched more items than it may offer.
    TooMany,
    /// The human picked none of a batch's items.
    NothingPicked,
    /// A disclosing tool would show more than its declared cap (per call or per session),
    /// or more than the human was told: nothing was shown.
    OverDisclosureCap,
    /// One item of a batch, as the handler reported it.
    Item(ItemOutcome),
    /// A tool the allowlist or read-only mode hides was called.
    HiddenTool,
    /// A tool the server does not have was called.
    UnknownTool,
    /// A prepare stored its intent.
    Prepared,
    /// A confirm ran its effect.
    Submitted,
    /// A confirm or a keyed call came back for an operation that had already run.
    AlreadyProcessed,
    /// A keyed call ran and stored its result.
    Completed,
    /// An intent's lifetime ended before its confirm (as a lookup reports it).
    IntentExpired,
    /// An intent was closed without its effect (as a lookup reports it).
    IntentRejected,
    /// `get_operation_result` found the caller's operation.
    LookedUp,
    /// An effect ran and opened its undo window (the record names the deadline).
    UndoOpened,
    /// `undo` ran the author's undo and closed the window.
    Undone,
    /// `undo` came back for a window undone before, and answered with that result.
    AlreadyUndone,
    /// The author's undo refused (the target changed) or failed: nothing was restored.
    UndoRefused,
    /// The window's deadline passed and the author's purge ran: the effect is final.
    UndoPurged,
    /// A confirmed call was stored to run later (the record names when).
    Scheduled,
    /// The human opened a grant: later calls of the tool on the same scope run without
    /// asking, up to its calls and until its expiry (the record names all three).
    GrantOpened,
    /// A call ran under a grant instead of asking (the record names the grant and what is
    /// left of it).
    GrantUsed,
    /// A grant was revoked: it covers no call from then on.
    GrantRevoked,
    /// `withdraw` withdrew a deferred call before it ran: it never runs.
    Withdrawn,
    /// `withdraw` came back for a call withdrawn before, and answered like the first time.
    AlreadyWithdrawn,
    /// A due deferred call could not be run (its arguments or form no longer read, or its
    /// preview failed): nothing ran.
    DeferredFailed,
    /// The call was refused with this stable code.
    Refused(Code),
    /// A step of an approval on the page, recorded beside the call's own records.
    Approval(ApprovalEvent),
}

/// What happened to an approval on the page: its own audit records, which name the call's
/// trace id, the approval id, the target, the requester and the approver who acted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ApprovalEvent {
    /// The approval opened and its links were made.
    Opened,
    /// A link reached its approver's channel.
    LinkDelivered,
    /// One delivery attempt failed; it is retried.
    LinkDeliveryFailed,
    /// Delivery gave up on a link.
    LinkUndelivered,
    /// An approver opened their link for the first time.
    Viewed,
    /// An approver approved.
    Given,
    /// A decision was refused (the requester, a second decision, a wrong sign-in).
    Refused,
    /// Enough approvers approved.
    Approved,
    /// An approver rejected.
    Rejected,
    /// The request was withdrawn before a decision.
    Withdrawn,
    /// The deadline passed without a decision.
    Expired,
    /// A decision row guard never took (unsealed, sealed for another approval, person or
    /// link, or by someone who may not decide) was found and ignored.
    Forged,
}

/// Every outcome without a payload, for reading a spelling back.
const NAMED: [Outcome; 75] = [
    Outcome::Asked,
    Outcome::Accepted,
    Outcome::Executed,
    Outcome::HandlerError,
    Outcome::HandlerFailed,
    Outcome::Declined,
    Outcome::Cancelled,
    Outcome::CancelledByClient,
    Outcome::TimedOut,
    Outcome::PreconditionFailed,
    Outcome::PreviewFailed,
    Outcome::StateChanged,
    Outcome::UnsupportedClient,
    Outcome::InvalidAnswer,
    Outcome::WrongTool,
    Outcome::Misconfigured,
    Outcome::AuditFailed,
    Outcome::NotPublished,
    Outcome::ElicitationFailed,
    Outcome::InvalidArguments,
    Outcome::SealFailed,
    Outcome::Expired,
    Outcome::Restarted,
    Outcome::OtherStore,
    Outcome::BadState,
    Outcome::StoreFailed,
    Outcome::Replayed,
    Outcome::NoAnswer,
    Outcome::PermissionDenied,
    Outcome::Rejected,
    Outcome::ApprovalUnknown,
    Outcome::ApprovalMismatch,
    Outcome::ApprovalPending,
    Outcome::ApprovalUsed,
    Outcome::NotApproved,
    Outcome::NothingMatched,
    Outcome::TooMany,
    Outcome::NothingPicked,
    Outcome::OverDisclosureCap,
    Outcome::Item(ItemOutcome::Done),
    Outcome::Item(ItemOutcome::Skipped),
    Outcome::Item(ItemOutcome::Failed),
    Outcome::HiddenTool,
    Outcome::UnknownTool,
    Outcome::Prepared,
    Outcome::Submitted,
    Outcome::AlreadyProcessed,
    Outcome::Completed,
    Outcome::IntentExpired,
    Outcome::IntentRejected,
    Outcome::LookedUp,
    Outcome::UndoOpened,
    Outcome::Undone,
    Outcome::AlreadyUndone,
    Outcome::UndoRefused,
    Outcome::UndoPurged,
    Outcome::Scheduled,
    Outcome::GrantOpened,
    Outcome::GrantUsed,
    Outcome::GrantRevoked,
    Outcome::Withdrawn,
    Outcome::AlreadyWithdrawn,
    Outcome::DeferredFailed,
    Outcome::Approval(ApprovalEvent::Opened),
    Outcome::Approval(ApprovalEvent::LinkDelivered),
    Outcome::Approval(ApprovalEvent::LinkDeliveryFailed),
    Outcome::Approval(ApprovalEvent::LinkUndelivered),
    Outcome::Approval(ApprovalEvent::Viewed),
    Outcome::Approval(ApprovalEvent::Given),
    Outcome::Approval(ApprovalEvent::Refused),
    Outcome::Approval(ApprovalEvent::Approved),
    Outcome::Approval(ApprovalEvent::Rejected),
    Outcome::Approval(ApprovalEvent::Withdrawn),
    Outcome::Approval(ApprovalEvent::Expired),
    Outcome::Approval(ApprovalEvent::Forged),
];

impl Outcome {
    /// The outcome as the audit log and the `_meta.guard` tag spell it.
    pub const fn as_str(self) -> &'static str {
        match self {
            Outcome::Asked => "asked",
            Outcome::Accepted => "accepted",
            Outcome::Executed => "executed",
            Outcome::HandlerError => "handler_error",
            Outcome::HandlerFailed => "handler_failed",
            Outcome::Declined => "declined",
            Outcome::Cancelled => "cancelled",
            Outcome::CancelledByClient => "cancelled_by_client",
            Outcome::TimedOut => "timed_out",
            Outcome::PreconditionFailed => "precondition_failed",
            Outcome::PreviewFailed => "preview_failed",
            Outcome::StateChanged => "state_changed",
            Outcome::UnsupportedClient => "unsupported_client",
            Outcome::InvalidAnswer => "invalid_answer",
            Outcome::WrongTool => "wrong_tool",
            Outcome::Misconfigured => "misconfigured",
            Outcome::AuditFailed => "audit_failed",
            Outcome::NotPublished => "not_published",
            Outcome::ElicitationFailed => "elicitation_failed",
            Outcome::InvalidArguments => "invalid_arguments",
            Outcome::SealFailed => "seal_failed",
            Outcome::Expired => "expired",
            Outcome::Restarted => "restarted",
            Outcome::OtherStore => "other_store",
            Outcome::BadState => "bad_state",
            Outcome::StoreFailed => "store_failed",
            Outcome::Replayed => "replayed",
            Outcome::NoAnswer => "no_answer",
            Outcome::PermissionDenied => "permission_denied",
            Outcome::Rejected => "rejected",
            Outcome::ApprovalUnknown => "approval_unknown",
            Outcome::ApprovalMismatch => "approval_mismatch",
            Outcome::ApprovalPending => "approval_pending",
            Outcome::ApprovalUsed => "approval_used",
            Outcome::NotApproved => "not_approved",
            Outcome::NothingMatched => "nothing_matched",
            Outcome::TooMany => "too_many",
            Outcome::NothingPicked => "nothing_picked",
            Outcome::OverDisclosureCap => "over_disclosure_cap",
            Outcome::Item(ItemOutcome::Done) => "item_done",
            Outcome::Item(ItemOutcome::Skipped) => "item_skipped",
            Outcome::Item(ItemOutcome::Failed) => "item_failed",
            Outcome::HiddenTool => "hidden_tool",
            Outcome::UnknownTool => "unknown_tool",
            Outcome::Prepared => "PREPARED",
            Outcome::Submitted => "SUBMITTED",
            Outcome::AlreadyProcessed => "ALREADY_PROCESSED",
            Outcome::Completed => "COMPLETED",
            Outcome::IntentExpired => "EXPIRED",
            Outcome::IntentRejected => "REJECTED",
            Outcome::LookedUp => "LOOKED_UP",
            Outcome::UndoOpened => "undo_opened",
            Outcome::Undone => "undone",
            Outcome::AlreadyUndone => "already_undone",
            Outcome::UndoRefused => "undo_refused",
            Outcome::UndoPurged => "undo_purged",
            Outcome::Scheduled => "scheduled",
            Outcome::GrantOpened => "grant_opened",
            Outcome::GrantUsed => "grant_used",
            Outcome::GrantRevoked => "grant_revoked",
            Outcome::Withdrawn => "withdrawn",
            Outcome::AlreadyWithdrawn => "already_withdrawn",
            Outcome::DeferredFailed => "deferred_failed",
            Outcome::Refused(code) => code.as_str(),
            Outcome::Approval(ApprovalEvent::Opened) => "approval_opened",
            Outcome::Approval(ApprovalEvent::LinkDelivered) => "approval_link_delivered",
            Outcome::Approval(ApprovalEvent::LinkDeliveryFailed) => "approval_link_delivery_failed",
            Outcome::Approval(ApprovalEvent::LinkUndelivered) => "approval_link_undelivered",
            Outcome::Approval(ApprovalEvent::Viewed) => "approval_viewed",
            Outcome::Approval(ApprovalEvent::Given) => "approval_given",
            Outcome::Approval(ApprovalEvent::Refused) => "approval_refused",
            Outcome::Approval(ApprovalEvent::Approved) => "approval_approved",
            Outcome::Approval(ApprovalEvent::Rejected) => "approval_rejected",
            Outcome::Approval(ApprovalEvent::Withdrawn) => "approval_withdrawn",
            Outcome::Approval(ApprovalEvent::Expired) => "approval_expired",
            Outcome::Approval(ApprovalEvent::Forged) => "approval_forged",
        }
    }

    /// The outcome guard's `_meta.guard` tag on `result` names, if it carries one: what a
    /// test or a client matches on instead of the spelling.
    pub fn of(result: &CallToolResult) -> Option<Self> {
        let tag = result.meta.as_ref()?.0.get("guard")?;
        Self::parse(tag.get("outcome")?.as_str()?)
    }

    /// The outcome a tag or an audit record spells `text`, if guard writes it.
    pub fn parse(text: &str) -> Option<Self> {
        NAMED
            .into_iter()
            .find(|o| o.as_str() == text)
            .or_else(|| Code::parse(text).map(Outcome::Refused))
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<Outcome> for String {
    fn from(outcome: Outcome) -> Self {
        outcome.as_str().to_owned()
    }
}

/// `result` with guard's tag in its `_meta`: the outcome, the trace id and, for an
/// operation, its id. The one place the tag is built.
pub(crate) fn tag(
    mut result: CallToolResult,
    outcome: Outcome,
    trace_id: &str,
    operation_id: Option<&str>,
) -> CallToolResult {
    let mut meta = result.meta.take().unwrap_or_default();
    let mut guard = json!({"outcome": outcome.as_str(), "traceId": trace_id});
    if let Some(id) = operation_id {
        guard["operationId"] = id.into();
    }
    meta.0.insert("guard".into(), guard);
    result.meta = Some(MetaObject(meta.0));
    result
}

#[cfg(test)]
mod tests {
    use super::{ApprovalEvent, NAMED, Outcome};
    use crate::error::Code;

    #[test]
    fn every_outcome_reads_back_as_itself() {
        for outcome in NAMED {
            assert_eq!(Outcome::parse(outcome.as_str()), Some(outcome));
        }
        for code in Code::ALL {
            assert_eq!(Outcome::parse(code.as_str()), Some(Outcome::Refused(code)));
        }
        assert_eq!(Outcome::parse("Declined"), None);
        assert_eq!(Outcome::parse("declined "), None);
    }

    #[test]
    fn a_tagged_result_names_its_outcome() {
        use rmcp::model::{CallToolResult, ContentBlock};
        let plain = CallToolResult::success(vec![ContentBlock::text("ok")]);
        assert_eq!(Outcome::of(&plain), None);
        let tagged = super::tag(plain.clone(), Outcome::Declined, "t-1", None);
        assert_eq!(Outcome::of(&tagged), Some(Outcome::Declined));
        let refused = super::tag(
            plain,
            Outcome::Refused(Code::StateChanged),
            "t-2",
            Some("op"),
        );
        assert_eq!(
            Outcome::of(&refused),
            Some(Outcome::Refused(Code::StateChanged))
        );
        let meta = refused.meta.unwrap();
        assert_eq!(
            meta.0["guard"],
            serde_json::json!({"outcome": "STATE_CHANGED", "traceId": "t-2", "operationId": "op"})
        );
    }

    #[test]
    fn no_two_outcomes_share_a_spelling() {
        let mut seen = std::collections::HashSet::new();
        for outcome in NAMED {
            assert!(seen.insert(outcome.as_str()), "{outcome:?}");
        }
        for code in Code::ALL {
            assert!(seen.insert(code.as_str()), "{code}");
        }
    }

    /// The wire spellings, byte for byte: clients, audit readers and the verifier match
    /// these strings, so a renamed variant must not change what is written.
    #[test]
    fn every_outcome_is_spelled_as_the_wire_has_it() {
        use crate::batch::ItemOutcome;
        let spelled = [
            (Outcome::Asked, "asked"),
            (Outcome::Accepted, "accepted"),
            (Outcome::Executed, "executed"),
            (Outcome::HandlerError, "handler_error"),
            (Outcome::HandlerFailed, "handler_failed"),
            (Outcome::Declined, "declined"),
            (Outcome::Cancelled, "cancelled"),
            (Outcome::CancelledByClient, "cancelled_by_client"),
            (Outcome::TimedOut, "timed_out"),
            (Outcome::PreconditionFailed, "precondition_failed"),
            (Outcome::PreviewFailed, "preview_failed"),
            (Outcome::StateChanged, "state_changed"),
            (Outcome::UnsupportedClient, "unsupported_client"),
            (Outcome::InvalidAnswer, "invalid_answer"),
            (Outcome::WrongTool, "wrong_tool"),
            (Outcome::Misconfigured, "misconfigured"),
            (Outcome::AuditFailed, "audit_failed"),
            (Outcome::NotPublished, "not_published"),
            (Outcome::ElicitationFailed, "elicitation_failed"),
            (Outcome::InvalidArguments, "invalid_arguments"),
            (Outcome::SealFailed, "seal_failed"),
            (Outcome::Expired, "expired"),
            (Outcome::Restarted, "restarted"),
            (Outcome::OtherStore, "other_store"),
            (Outcome::BadState, "bad_state"),
            (Outcome::StoreFailed, "store_failed"),
            (Outcome::Replayed, "replayed"),
            (Outcome::NoAnswer, "no_answer"),
            (Outcome::PermissionDenied, "permission_denied"),
            (Outcome::Rejected, "rejected"),
            (Outcome::ApprovalUnknown, "approval_unknown"),
            (Outcome::ApprovalMismatch, "approval_mismatch"),
            (Outcome::ApprovalPending, "approval_pending"),
            (Outcome::ApprovalUsed, "approval_used"),
            (Outcome::NotApproved, "not_approved"),
            (Outcome::NothingMatched, "nothing_matched"),
            (Outcome::TooMany, "too_many"),
            (Outcome::NothingPicked, "nothing_picked"),
            (Outcome::OverDisclosureCap, "over_disclosure_cap"),
            (Outcome::Item(ItemOutcome::Done), "item_done"),
            (Outcome::Item(ItemOutcome::Skipped), "item_skipped"),
            (Outcome::Item(ItemOutcome::Failed), "item_failed"),
            (Outcome::HiddenTool, "hidden_tool"),
            (Outcome::UnknownTool, "unknown_tool"),
            (Outcome::Prepared, "PREPARED"),
            (Outcome::Submitted, "SUBMITTED"),
            (Outcome::AlreadyProcessed, "ALREADY_PROCESSED"),
            (Outcome::Completed, "COMPLETED"),
            (Outcome::IntentExpired, "EXPIRED"),
            (Outcome::IntentRejected, "REJECTED"),
            (Outcome::LookedUp, "LOOKED_UP"),
            (Outcome::UndoOpened, "undo_opened"),
            (Outcome::Undone, "undone"),
            (Outcome::AlreadyUndone, "already_undone"),
            (Outcome::UndoRefused, "undo_refused"),
            (Outcome::UndoPurged, "undo_purged"),
            (Outcome::Scheduled, "scheduled"),
            (Outcome::GrantOpened, "grant_opened"),
            (Outcome::GrantUsed, "grant_used"),
            (Outcome::GrantRevoked, "grant_revoked"),
            (Outcome::Withdrawn, "withdrawn"),
            (Outcome::AlreadyWithdrawn, "already_withdrawn"),
            (Outcome::DeferredFailed, "deferred_failed"),
            (Outcome::Approval(ApprovalEvent::Opened), "approval_opened"),
            (
                Outcome::Approval(ApprovalEvent::LinkDelivered),
                "approval_link_delivered",
            ),
            (
                Outcome::Approval(ApprovalEvent::LinkDeliveryFailed),
                "approval_link_delivery_failed",
            ),
            (
                Outcome::Approval(ApprovalEvent::LinkUndelivered),
                "approval_link_undelivered",
            ),
            (Outcome::Approval(ApprovalEvent::Viewed), "approval_viewed"),
            (Outcome::Approval(ApprovalEvent::Given), "approval_given"),
            (
                Outcome::Approval(ApprovalEvent::Refused),
                "approval_refused",
            ),
            (
                Outcome::Approval(ApprovalEvent::Approved),
                "approval_approved",
            ),
            (
                Outcome::Approval(ApprovalEvent::Rejected),
                "approval_rejected",
            ),
            (
                Outcome::Approval(ApprovalEvent::Withdrawn),
                "approval_withdrawn",
            ),
            (
                Outcome::Approval(ApprovalEvent::Expired),
                "approval_expired",
            ),
            (Outcome::Approval(ApprovalEvent::Forged), "approval_forged"),
        ];
        assert_eq!(spelled.len(), NAMED.len(), "one row per outcome");
        for (outcome, wire) in spelled {
            assert_eq!(outcome.as_str(), wire);
            assert_eq!(outcome.to_string(), wire);
            assert_eq!(String::from(outcome), wire);
        }
        assert_eq!(
            Outcome::Refused(Code::StateChanged).as_str(),
            "STATE_CHANGED"
        );
    }
}
