//! The decisions an approval counts: only those guard took, through a link it issued, from
//! someone the rules let decide. The database holds approvals' rows, and whoever can write
//! them as the server's own role (or as a SQLite file's owner, who can drop its triggers)
//! could add a decision nobody took, name a person who never decided, or mark an approval
//! `APPROVED`. So guard never counts a row because it is there:
//!
//! - each link guard issues, and each decision it takes, carries a seal ([`super::seal`]): an HMAC-SHA256,
//!   under a key derived from the guard's key (which the database never holds), over the
//!   approval's terms (id, tool, binding, effect, requester, count, deadline), the person
//!   in canonical form, their role, the verdict and the link it came through;
//! - at every hand-off of an approval to its call (a push call, an MRTR retry, a task's
//!   run, a later call taking it up) the decisions are read again and one counts only if
//!   both seals verify, its name is the canonical spelling guard writes, and its person may
//!   decide: the requester of a one-person approval through the requester's link, or an
//!   approver the page lists (in the requester's tenant, never the requester or a
//!   look-alike) through their own link. Two decisions of one person (or look-alikes)
//!   count once. The stored `status` is never enough on its own.
//!
//! Every other row is ignored, and named in the audit log as forged
//! (`approval_forged`) where an approval is handed over. Decisions stored before guard
//! sealed them carry no seal and count for nothing.

use super::{
    journal::Subject,
    ledger::{self, Stored},
    seal::SealKey,
    state::Given,
};
use crate::{
    audit::Event,
    outcome::{ApprovalEvent, Outcome},
    person::Person,
    store::{StoreError, Tx},
};

/// Who may decide: the seal key (none where this page never sealed anything) and the
/// approvers the page lists.
pub(super) struct Rules<'a> {
    pub key: Option<&'a SealKey>,
    pub listed: &'a [Person],
}

/// A decision row that does not count, and why.
pub(super) struct Forged {
    pub tenant: String,
    pub user: String,
    pub verdict: String,
    pub why: &'static str,
}

/// An approval's decisions, read again: those that count, and the rows that do not.
pub(super) struct Tally {
    /// Approvals that count, in the order they arrived, one per person.
    pub approvals: Vec<Given>,
    /// People whose rejection (or, for the requester, withdrawal) counts.
    pub rejections: Vec<Person>,
    pub forged: Vec<Forged>,
}

/// The records of an approval the store marks approved that `tally` finds short of
/// `required`: one `approval_forged` for the status (with what counted), and one naming
/// each row that did not count. Each is also a tracing warning, for the operator to find
/// what writes to the tables.
pub(super) fn not_approved_events(subject: &Subject, tally: &Tally, required: u8) -> Vec<Event> {
    tracing::warn!(
        approval_id = %subject.approval_id,
        counted = tally.approvals.len(),
        required,
        "an approval the store marks APPROVED lacks the decisions guard took; nothing runs on it"
    );
    let status = subject
        .event(Outcome::Approval(ApprovalEvent::Forged), None)
        .field("status", "APPROVED")
        .field("counted", tally.approvals.len())
        .field("required", required);
    let rows = tally.forged.iter().map(|row| {
        tracing::warn!(
            approval_id = %subject.approval_id,
            tenant = %row.tenant,
            user = %row.user,
            decision = %row.verdict,
            why = row.why,
            "an approval decision guard never took was ignored: something other than guard wrote to the approval tables"
        );
        subject
            .event(Outcome::Approval(ApprovalEvent::Forged), None)
            .field("named", row.user.as_str())
            .field("named_tenant", row.tenant.as_str())
            .field("decision", row.verdict.as_str())
            .field("why", row.why)
    });
    std::iter::once(status).chain(rows).collect()
}

/// The record of an approval the store marks rejected by `by` without a rejection of theirs
/// that counts: an `approval_forged` for the status, and a tracing warning for the
/// operator to find what writes to the tables.
pub(super) fn unsound_rejection_event(subject: &Subject, by: &str) -> Event {
    tracing::warn!(
        approval_id = %subject.approval_id,
        named = by,
        "an approval the store marks REJECTED lacks the rejection guard took; it reads as ended without a decision"
    );
    subject
        .event(Outcome::Approval(ApprovalEvent::Forged), None)
        .field("status", "REJECTED")
        .field("named", by)
}

/// Reads `record`'s decisions with the links they name, and counts them under `rules`.
pub(super) async fn tally(
    tx: &mut Tx,
    record: &Stored,
    rules: &Rules<'_>,
) -> Result<Tally, StoreError> {
    let rows = tx
        .query(
            "SELECT d.tenant, d.user_id, d.decision, d.at, d.link_sha256, d.seal,
                    l.role, l.seal AS link_seal
             FROM guard_approval_decisions d
             LEFT JOIN guard_approval_links l
               ON l.token_sha256 = d.link_sha256 AND l.approval_id = d.approval_id
              AND l.tenant = d.tenant AND l.user_id = d.user_id
             WHERE d.approval_id = $1 ORDER BY d.at, d.user_id",
            &[record.id.as_str().into()],
        )
        .await?;
    let mut tally = Tally {
        approvals: Vec::new(),
        rejections: Vec::new(),
        forged: Vec::new(),
    };
    for row in &rows {
        let verdict = row.text("decision")?;
        let stated = Stated {
            tenant: row.text("tenant")?,
            user: row.text("user_id")?,
            verdict,
            link: row.opt_text("link_sha256")?,
            seal: row.opt_text("seal")?,
            role: row.opt_text("role")?,
            link_seal: row.opt_text("link_seal")?,
        };
        match counts(&stated, record, rules) {
            Ok(who) if verdict == "APPROVE" => {
                if !tally.approvals.iter().any(|g| g.who.resembles(&who)) {
                    tally.approvals.push(Given {
                        who,
                        at: ledger::system_time(row.int("at")?),
                    });
                }
            }
            Ok(who) => tally.rejections.push(who),
            Err(why) => tally.forged.push(Forged {
                tenant: stated.tenant.to_owned(),
                user: stated.user.to_owned(),
                verdict: verdict.to_owned(),
                why,
            }),
        }
    }
    Ok(tally)
}

/// One decision row as stored, with the link it names.
struct Stated<'r> {
    tenant: &'r str,
    user: &'r str,
    verdict: &'r str,
    link: Option<&'r str>,
    seal: Option<&'r str>,
    role: Option<&'r str>,
    link_seal: Option<&'r str>,
}

/// The person whose decision `row` is, if it counts on `record`; else why not, as the
/// audit log says it.
fn counts(row: &Stated<'_>, record: &Stored, rules: &Rules<'_>) -> Result<Person, &'static str> {
    let who = Person::new(row.tenant, row.user).map_err(|_| "a name guard refuses")?;
    if who.tenant() != row.tenant || who.user() != row.user {
        return Err("a spelling guard never writes");
    }
    let (Some(link), Some(role), Some(link_seal)) = (row.link, row.role, row.link_seal) else {
        return Err("no link guard issued for this person");
    };
    let Some(key) = rules.key else {
        return Err("not sealed by this server");
    };
    if !key.link_verifies(&record.id, role, &who, link, link_seal) {
        return Err("its link was not issued by guard");
    }
    if !row
        .seal
        .is_some_and(|seal| key.decision_verifies(record, &who, role, row.verdict, link, seal))
    {
        return Err("its seal does not verify");
    }
    match role {
        "REQUESTER" if !who.is(&record.requester) => Err("a requester's link of someone else"),
        "REQUESTER" if row.verdict == "APPROVE" && record.required > 1 => {
            Err("the requester, who cannot approve their own request")
        }
        "REQUESTER" => Ok(who),
        "APPROVER" if record.required == 1 => {
            Err("an approver on an approval the requester decides")
        }
        "APPROVER" if who.tenant() != record.requester.tenant() => {
            Err("an approver of another tenant than the requester's")
        }
        "APPROVER" if who.resembles(&record.requester) => {
            Err("the requester, who cannot approve their own request")
        }
        "APPROVER" if !rules.listed.iter().any(|listed| listed.is(&who)) => {
            Err("not an approver the page lists")
        }
        "APPROVER" => Ok(who),
        _ => Err("a role guard never writes"),
    }
}

#[cfg(test)]
mod tests;
