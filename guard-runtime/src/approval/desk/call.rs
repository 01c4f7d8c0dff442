//! The call that asked, and its later rounds, with their approval: waiting for it, finding
//! it again for a new call of the same requester, closing it when the call ends, and taking
//! the approved answer, once, to run the effect. Only the decisions guard sealed count
//! ([`crate::approval::decisions`]); an approval the store marks approved without them runs
//! nothing.

use std::time::SystemTime;

use super::{Desk, Done, digest};
use crate::{
    approval::{
        decisions::{self, Tally},
        ledger::{self, Stored},
        settle::{ended, given, settled, subject},
        state::{Given, Status},
    },
    person::Person,
    store::StoreError,
};

/// Why a later round of a call may not wait for an approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// Not in the store: never opened there, or purged long after it ended.
    Unknown,
    /// Opened for another call: another requester, tool or arguments.
    NotYours,
    /// The store could not be read.
    Unavailable,
}

/// What [`Desk::take_answer`] hands the call that runs the approved effect.
pub enum Taken {
    /// The typed name, the secret and who approved; the approval is now used.
    Answer(Option<String>, Option<crate::secret::Secret>, Vec<Given>),
    /// Another call already ran the effect on this approval.
    Used,
    /// Marked approved in the store, without the approvals that count (`counted` of
    /// `required`; `forged` rows were ignored, each recorded): nothing runs.
    NotApproved {
        counted: usize,
        required: u8,
        forged: usize,
    },
    /// Not approved, not readable, or its secret is not in this process: nothing runs.
    Missing,
}

/// An approval a new call of its requester may take up.
pub struct Found {
    pub id: String,
    /// Pending or approved.
    pub status: Status,
    /// The effect the approvers were shown (`None` if stored before guard kept it).
    pub fingerprint: Option<String>,
    /// The requester's link token, when this desk can derive the one the approval holds.
    pub requester_token: Option<String>,
    pub expires_at: SystemTime,
}

/// An approval as [`Desk::watch`] hands it to the call that opened it.
pub struct Watched {
    pub expires_at: SystemTime,
    /// The effect the approvers were shown (`None` if stored before guard kept it).
    pub fingerprint: Option<String>,
    pub status: Status,
}

/// Where an approval stands, for a call that stops waiting before it is decided.
pub struct Standing {
    pub status: Status,
    /// Approvals given so far.
    pub given: usize,
    pub required: u8,
    pub expires_at: SystemTime,
}

impl Desk {
    /// Ends a still-pending approval as `status` (expired, or withdrawn by the client), and
    /// returns where it stands: an approval that completed first stays approved.
    pub async fn close(&self, id: &str, status: Status) -> Status {
        self.close_for(id, status, None).await
    }

    /// [`close`](Self::close), recording `reason` (what ended it, e.g. `tasks/cancel`) too.
    pub async fn close_for(&self, id: &str, status: Status, reason: Option<&str>) -> Status {
        let closed = in_tx!(self, |tx| {
            let mut events = Vec::new();
            let Some(record) = ledger::approval(tx, id, true).await? else {
                return Ok((status.clone(), events));
            };
            if record.status != Status::Pending {
                return Ok((record.status, events));
            }
            let now = ledger::now(tx).await?;
            ledger::end(tx, id, &status, None, now).await?;
            let given = given(tx, &record, &self.rules()).await?;
            events.push(
                ended(&subject(&record), &status, None, &given, record.required)
                    .field("reason", reason),
            );
            Ok((status.clone(), events))
        });
        closed.unwrap_or_else(|error| {
            tracing::error!(approval_id = id, %error, "the approval could not be closed in the store; its deadline ends it");
            status
        })
    }

    /// Approval `id` as the call that opened it sees it (its later round, or the run of its
    /// task): only for the same requester (compared as people) with the same binding.
    pub async fn watch(
        &self,
        id: &str,
        requester: &Person,
        bound_to: &str,
    ) -> Result<Watched, Claim> {
        let found = (in_tx!(self, |tx| {
            let mut events = Vec::new();
            let record = settled(tx, id, false, &self.rules(), &mut events).await?;
            Ok((record, events))
        }))
        .map_err(|error| {
            tracing::error!(approval_id = id, %error, "the approval store could not be read");
            Claim::Unavailable
        })?;
        let record = found.ok_or(Claim::Unknown)?;
        if !record.requester.is(requester) || record.bound_sha256 != digest(bound_to) {
            return Err(Claim::NotYours);
        }
        Ok(Watched {
            expires_at: ledger::system_time(record.expires_at),
            fingerprint: record.fingerprint,
            status: record.status,
        })
    }

    /// Where approval `id` stands now (an approval past its deadline by the database's
    /// clock reads, and is recorded, as expired).
    pub async fn status(&self, id: &str) -> Result<Status, StoreError> {
        let record = (in_tx!(self, |tx| {
            let mut events = Vec::new();
            let record = settled(tx, id, false, &self.rules(), &mut events).await?;
            Ok((record, events))
        }))?;
        Ok(record.map_or(Status::Expired, |r| r.status))
    }

    /// Hands the approved answer over to the call that runs it (the typed name, the secret,
    /// who approved) and marks the approval used, in one transaction: the database refuses
    /// a second use, so of two calls (two fresh calls, or a fresh call and a late retry) one
    /// runs the effect and the other is told it ran. The secret is handed over only by the
    /// process whose page took it: elsewhere an approval that needs one has no answer, and
    /// nothing runs (nor is it used up).
    pub async fn take_answer(&self, id: &str, trace_id: &str) -> Taken {
        let has_secret = self.lock_secrets().contains_key(id);
        let found = in_tx!(self, |tx| {
            let Some(record) = ledger::approval(tx, id, true).await? else {
                return Ok((Taken::Missing, Vec::new()));
            };
            if record.status != Status::Approved {
                return Ok((Taken::Missing, Vec::new()));
            }
            let tally = decisions::tally(tx, &record, &self.rules()).await?;
            if tally.approvals.len() < usize::from(record.required) {
                return Ok(not_approved(&record, tally));
            }
            // A task cancelled before its run lets nothing run on its approval, whoever asks.
            if ledger::task(tx, id)
                .await?
                .and_then(|t| t.ended)
                .is_some_and(|(ended, _)| ended == "cancelled")
            {
                return Ok((Taken::Missing, Vec::new()));
            }
            if record.secret_label.is_some() && !has_secret {
                tracing::warn!(
                    approval_id = id,
                    "the approval's secret was entered on another process's page, or already handed over; nothing runs"
                );
                return Ok((Taken::Missing, Vec::new()));
            }
            let now = ledger::now(tx).await?;
            ledger::used(tx, id, trace_id, now).await?;
            Ok((
                Taken::Answer(record.typed, None, tally.approvals),
                Vec::new(),
            ))
        });
        match found {
            Ok(Taken::Answer(typed, _, given)) => {
                let secret = self.lock_secrets().remove(id);
                Taken::Answer(typed, secret, given)
            }
            Ok(other) => other,
            Err(error) if error.is_constraint() => {
                tracing::info!(approval_id = id, %error, "the approval was already used by another call");
                Taken::Used
            }
            Err(error) => {
                tracing::error!(approval_id = id, %error, "the approval store could not be read");
                Taken::Missing
            }
        }
    }

    /// The approval `requester` opened for `bound_to` that a new call of theirs may take up
    /// (pending, or approved and not yet used, before its deadline), with what the call must
    /// check before it does.
    pub async fn find(
        &self,
        requester: &Person,
        bound_to: &str,
    ) -> Result<Option<Found>, StoreError> {
        let bound = digest(bound_to);
        in_tx!(self, |tx| {
            let mut events = Vec::new();
            let Some(id) = ledger::open_for(tx, requester, &bound).await? else {
                return Ok((None, events));
            };
            let Some(record) = settled(tx, &id, false, &self.rules(), &mut events).await? else {
                return Ok((None, events));
            };
            if !matches!(record.status, Status::Pending | Status::Approved) {
                return Ok((None, events));
            }
            // A secret typed on the page stays with the process that served it: elsewhere the
            // approval can never run, so it is not taken up and the call asks anew.
            if record.status == Status::Approved
                && record.secret_label.is_some()
                && !self.lock_secrets().contains_key(&id)
            {
                return Ok((None, events));
            }
            // One the store marks approved without the approvals that count is not taken up:
            // the call asks anew, and the records say why.
            if record.status == Status::Approved {
                let tally = decisions::tally(tx, &record, &self.rules()).await?;
                if tally.approvals.len() < usize::from(record.required) {
                    return Ok((None, not_approved(&record, tally).1));
                }
            }
            let link = match self.derived_token(&id) {
                Some(token) if ledger::is_requester_link(tx, &id, &digest(&token)).await? => {
                    Some(token)
                }
                _ => None,
            };
            let found = Found {
                id,
                status: record.status,
                fingerprint: record.fingerprint,
                requester_token: link,
                expires_at: ledger::system_time(record.expires_at),
            };
            Ok((Some(found), events))
        })
    }

    /// Where approval `id` stands: its status, how many approved so far, how many must, and
    /// its deadline.
    pub async fn standing(&self, id: &str) -> Result<Option<Standing>, StoreError> {
        in_tx!(self, |tx| {
            let mut events = Vec::new();
            let Some(record) = settled(tx, id, false, &self.rules(), &mut events).await? else {
                return Ok((None, events));
            };
            let given = given(tx, &record, &self.rules()).await?.len();
            let standing = Standing {
                status: record.status,
                given,
                required: record.required,
                expires_at: ledger::system_time(record.expires_at),
            };
            Ok((Some(standing), events))
        })
    }
}

/// What handing over `record` answers when its approvals that count fall short: the
/// refusal, and a record of each row that did not count.
fn not_approved(record: &Stored, tally: Tally) -> Done<Taken> {
    let events = decisions::not_approved_events(&subject(record), &tally, record.required);
    let taken = Taken::NotApproved {
        counted: tally.approvals.len(),
        required: record.required,
        forged: tally.forged.len(),
    };
    (taken, events)
}
