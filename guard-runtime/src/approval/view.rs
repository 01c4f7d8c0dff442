//! What a link shows: the approval as it stands (its approvals that count, as
//! [`super::decisions`] counts them), and what the link may still do.

use std::time::SystemTime;

use super::{
    decisions::Rules,
    ledger,
    settle::{given, person, settled, subject},
    state::{Given, Role, Status},
};
use crate::{
    audit::Event,
    outcome::{ApprovalEvent, Outcome},
    person::Person,
    store::{StoreError, Tx},
};

/// What a link shows: the approval as it stands, and what this link may still do.
pub struct View {
    pub tool: String,
    pub message: Option<String>,
    pub target: String,
    pub summary: String,
    pub requester: Person,
    pub expires_at: SystemTime,
    pub expected: Option<String>,
    pub required: u8,
    pub given: Vec<Given>,
    pub status: Status,
    pub role: Role,
    pub csrf: String,
    pub used: bool,
    /// The secret's label, when this link's approval would complete the request.
    pub secret: Option<String>,
    /// Whoever decides through this link must have signed in as its person.
    pub sign_in: bool,
}

impl View {
    /// The person this link speaks for.
    pub fn person(&self) -> &Person {
        match &self.role {
            Role::Requester => &self.requester,
            Role::Approver(who) => who,
        }
    }

    /// Whether this link may still approve.
    pub fn can_approve(&self) -> bool {
        !self.used
            && self.status == Status::Pending
            && match &self.role {
                Role::Requester => self.required == 1,
                Role::Approver(who) => !self.given.iter().any(|g| g.who.resembles(who)),
            }
    }

    /// Whether this link may still reject (or, for the requester, withdraw).
    pub fn can_reject(&self) -> bool {
        !self.used && self.status == Status::Pending
    }
}

/// The page behind the link stored under `key`, read in `tx`; a first `visit` is recorded
/// into `events`.
pub(super) async fn view_in(
    tx: &mut Tx,
    key: &str,
    visit: bool,
    (sign_in, rules): (bool, &Rules<'_>),
    events: &mut Vec<Event>,
) -> Result<Option<View>, StoreError> {
    let Some(link) = ledger::link(tx, key).await? else {
        return Ok(None);
    };
    let Some(record) = settled(tx, &link.approval, false, rules, events).await? else {
        return Ok(None);
    };
    let now = ledger::now(tx).await?;
    if visit && !link.viewed && ledger::viewed(tx, key, now).await? {
        let who = person(&record, &link.role);
        events.push(
            subject(&record)
                .event(Outcome::Approval(ApprovalEvent::Viewed), Some(who))
                .field("role", role_name(&link.role)),
        );
    }
    let given = given(tx, &record, rules).await?;
    let completes = given.len() + 1 == usize::from(record.required);
    Ok(Some(View {
        tool: record.tool,
        message: record.message,
        target: record.target,
        summary: record.summary,
        requester: record.requester,
        expires_at: ledger::system_time(record.expires_at),
        expected: record.expected,
        required: record.required,
        given,
        status: record.status,
        role: link.role,
        csrf: link.csrf,
        used: link.used,
        secret: record.secret_label.filter(|_| completes),
        sign_in,
    }))
}

fn role_name(role: &Role) -> &'static str {
    match role {
        Role::Requester => "requester",
        Role::Approver(_) => "approver",
    }
}
