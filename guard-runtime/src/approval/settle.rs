//! An approval read as it stands: expired first when it is pending past its deadline by the
//! database's clock, with the approvals that count ([`super::decisions`]), and the record of
//! how it ended. The desk and the page's view ([`super::view`]) both read approvals this way.

use super::{
    decisions::{self, Rules},
    journal::Subject,
    ledger::{self, Stored},
    state::{Given, Role, Status},
};
use crate::{
    audit::Event,
    outcome::{ApprovalEvent, Outcome},
    person::Person,
    store::{StoreError, Tx},
};

/// The approval `id`, expired first if it is pending past its deadline by the database's
/// clock (recorded in `events`). One the store marks rejected by someone whose rejection is
/// not among the decisions that count reads as withdrawn, ended without anyone's decision:
/// nothing runs on it either way, and no one is named as having decided who did not.
pub(super) async fn settled(
    tx: &mut Tx,
    id: &str,
    lock: bool,
    rules: &Rules<'_>,
    events: &mut Vec<Event>,
) -> Result<Option<Stored>, StoreError> {
    let Some(mut record) = ledger::approval(tx, id, lock).await? else {
        return Ok(None);
    };
    if let Status::Rejected { by } = &record.status {
        let tally = decisions::tally(tx, &record, rules).await?;
        if !tally.rejections.iter().any(|who| who.user() == by) {
            events.push(decisions::unsound_rejection_event(&subject(&record), by));
            record.status = Status::Withdrawn;
        }
    }
    if record.status == Status::Pending {
        let now = ledger::now(tx).await?;
        if now >= record.expires_at && ledger::end(tx, id, &Status::Expired, None, now).await? {
            record.status = Status::Expired;
            let given = given(tx, &record, rules).await?;
            events.push(ended(
                &subject(&record),
                &Status::Expired,
                None,
                &given,
                record.required,
            ));
        }
    }
    Ok(Some(record))
}

/// The approvals of `record` that count ([`decisions`]).
pub(super) async fn given(
    tx: &mut Tx,
    record: &Stored,
    rules: &Rules<'_>,
) -> Result<Vec<Given>, StoreError> {
    Ok(decisions::tally(tx, record, rules).await?.approvals)
}

/// The record of an approval ending as `status`.
pub(super) fn ended(
    subject: &Subject,
    status: &Status,
    by: Option<&Person>,
    given: &[Given],
    required: u8,
) -> Event {
    let code = match status {
        Status::Pending | Status::Approved => ApprovalEvent::Approved,
        Status::Rejected { .. } => ApprovalEvent::Rejected,
        Status::Expired => ApprovalEvent::Expired,
        Status::Withdrawn => ApprovalEvent::Withdrawn,
    };
    let approvers: Vec<&str> = given.iter().map(|g| g.who.user()).collect();
    subject
        .event(Outcome::Approval(code), by)
        .field("approvers", approvers)
        .field("required", required)
}

/// What every record of `record` names.
pub(super) fn subject(record: &Stored) -> Subject {
    Subject {
        tool: record.tool.clone(),
        trace_id: record.trace_id.clone(),
        approval_id: record.id.clone(),
        target: record.target.clone(),
        requester: record.requester.clone(),
    }
}

/// The person `role` speaks for on `record`.
pub(super) fn person<'a>(record: &'a Stored, role: &'a Role) -> &'a Person {
    match role {
        Role::Requester => &record.requester,
        Role::Approver(who) => who,
    }
}
