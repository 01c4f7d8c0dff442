//! Taking a decision posted through a link: the rules, in order (the link's CSRF token, the
//! approval still pending, the link unused and sealed by guard, the person signed in where
//! approvers must, never the requester approving for two, each person once, the typed name
//! and the secret), then the decision and the approval's end in one transaction. A decision
//! the database refuses is explained by where the approval stands now.

use super::{Desk, LinkKey, digest, unavailable};
use crate::{
    approval::{
        ledger::{self, Stored},
        refusal::{Refusal, code as refusal_code},
        settle::{ended, given, person, settled, subject},
        state::{Given, Role, Status},
    },
    audit::Event,
    outcome::{ApprovalEvent, Outcome},
    person::Person,
    store::{StoreError, Tx},
};

/// A decision posted from a link.
pub enum Decision {
    Approve {
        typed: Option<String>,
        secret: Option<String>,
    },
    Reject,
}

/// At most this many refused decisions per link reach the log.
const REFUSALS_RECORDED: i64 = 5;

impl Desk {
    /// Takes `decision` from `link` if every rule holds; the new status on success.
    /// `signed_in` is the person the identity provider says is at the browser, if any.
    pub async fn decide(
        &self,
        link: &str,
        csrf: &str,
        decision: Decision,
        signed_in: Option<&Person>,
    ) -> Result<Status, Refusal> {
        self.decide_key(&LinkKey::of(link), csrf, decision, signed_in)
            .await
    }

    /// Takes `decision` through the link stored under `key`, as [`decide`](Self::decide).
    pub(in crate::approval) async fn decide_key(
        &self,
        key: &LinkKey,
        csrf: &str,
        decision: Decision,
        signed_in: Option<&Person>,
    ) -> Result<Status, Refusal> {
        let key = key.0.clone();
        let mut secret_taken = None;
        let taken = in_tx!(self, |tx| {
            let mut events = Vec::new();
            let Some(link) = ledger::link(tx, &key).await? else {
                return Ok((Err(Refusal::UnknownLink), events));
            };
            let Some(record) =
                settled(tx, &link.approval, true, &self.rules(), &mut events).await?
            else {
                return Ok((Err(Refusal::UnknownLink), events));
            };
            let taken = self
                .rule(
                    tx,
                    &key,
                    &link,
                    &record,
                    csrf,
                    decision,
                    signed_in,
                    &mut events,
                )
                .await?;
            match &taken {
                Ok((_, secret)) => secret_taken = secret.clone(),
                Err(refusal) => {
                    if *refusal != Refusal::BadCsrf
                        && ledger::refused(tx, &key, REFUSALS_RECORDED).await?
                    {
                        events.push(
                            subject(&record)
                                .event(
                                    Outcome::Approval(ApprovalEvent::Refused),
                                    Some(person(&record, &link.role)),
                                )
                                .field("reason", refusal_code(refusal))
                                .field("signed_in", signed_in.map(Person::user)),
                        );
                    }
                }
            }
            Ok((taken.map(|(status, _)| status), events))
        });
        match taken {
            Ok(Ok(status)) => {
                if let Some((id, secret)) = secret_taken {
                    self.lock_secrets()
                        .insert(id, crate::secret::Secret::new(secret));
                }
                Ok(status)
            }
            Ok(Err(refusal)) => Err(refusal),
            // The database refused the decision: another process decided first (a second
            // decision by this person, or the approval ended), or its deadline passed by the
            // database's clock. Where it stands now says which.
            Err(error) if error.is_constraint() => {
                tracing::info!(%error, "the store refused a decision");
                Err(self.why_refused(&key, error.is_unique()).await)
            }
            Err(error) => Err(unavailable(error)),
        }
    }

    /// Why the database refused a decision through the link `key`, as the page says it.
    async fn why_refused(&self, key: &str, unique: bool) -> Refusal {
        let found = in_tx!(self, |tx| {
            let mut events = Vec::new();
            let Some(link) = ledger::link(tx, key).await? else {
                return Ok((None, events));
            };
            let record = settled(tx, &link.approval, false, &self.rules(), &mut events).await?;
            let given = match &record {
                Some(r) => given(tx, r, &self.rules()).await?,
                None => Vec::new(),
            };
            Ok((record.map(|r| (link, r, given)), events))
        });
        match found {
            Ok(Some((link, record, given))) => match record.status {
                Status::Expired => Refusal::Expired,
                Status::Pending if unique => {
                    let who = person(&record, &link.role);
                    match given.iter().find(|g| g.who.resembles(who)) {
                        Some(g) => Refusal::AlreadyApprovedBy(g.who.user().to_owned()),
                        None => Refusal::LinkUsed,
                    }
                }
                Status::Pending => Refusal::Unavailable,
                _ => Refusal::AlreadyDecided,
            },
            Ok(None) => Refusal::UnknownLink,
            Err(error) => unavailable(error),
        }
    }

    /// The rules, in order, for one decision; writes it if they hold. `Ok(Err(_))` is a
    /// refusal; the secret, when this decision completed an approval that needs one.
    #[allow(clippy::too_many_arguments)]
    async fn rule(
        &self,
        tx: &mut Tx,
        key: &str,
        link: &ledger::Link,
        record: &Stored,
        csrf: &str,
        decision: Decision,
        signed_in: Option<&Person>,
        events: &mut Vec<Event>,
    ) -> Result<Result<(Status, Option<(String, String)>), Refusal>, StoreError> {
        // Compared as digests: equal length, and no early exit on the secret's bytes.
        if digest(csrf) != digest(&link.csrf) {
            return Ok(Err(Refusal::BadCsrf));
        }
        match record.status {
            Status::Pending => {}
            Status::Expired => return Ok(Err(Refusal::Expired)),
            _ => return Ok(Err(Refusal::AlreadyDecided)),
        }
        if link.used {
            return Ok(Err(Refusal::LinkUsed));
        }
        let who = person(record, &link.role).clone();
        let role = ledger::role_code(&link.role);
        let Some(sealer) = self.seal_key.get().filter(|k| {
            (link.seal.as_deref()).is_some_and(|s| k.link_verifies(&record.id, role, &who, key, s))
        }) else {
            tracing::warn!(approval_id = %record.id, "a link guard never issued was used to decide; refused as unknown");
            return Ok(Err(Refusal::UnknownLink));
        };
        let seal = |verdict: &str| sealer.decision(record, &who, role, verdict, key);
        if self.sign_in {
            match signed_in {
                None => return Ok(Err(Refusal::SignInRequired)),
                Some(person) if person.is(&who) => {}
                Some(person)
                    if matches!(link.role, Role::Approver(_))
                        && person.resembles(&record.requester) =>
                {
                    return Ok(Err(Refusal::RequesterCannotApprove));
                }
                Some(_) => {
                    return Ok(Err(Refusal::NotYourLink {
                        link_for: who.user().to_owned(),
                    }));
                }
            }
        }
        let subject = subject(record);
        let now = ledger::now(tx).await?;
        match decision {
            Decision::Reject => {
                ledger::decision(tx, key, &record.id, &who, ("REJECT", &seal("REJECT")), now)
                    .await?;
                let status = Status::Rejected {
                    by: who.user().to_owned(),
                };
                let given = given(tx, record, &self.rules()).await?;
                ledger::end(tx, &record.id, &status, None, now).await?;
                events.push(ended(
                    &subject,
                    &status,
                    Some(&who),
                    &given,
                    record.required,
                ));
                Ok(Ok((status, None)))
            }
            Decision::Approve { typed, secret } => {
                match &link.role {
                    Role::Requester if record.required > 1 => {
                        return Ok(Err(Refusal::RequesterCannotApprove));
                    }
                    Role::Approver(approver) if approver.resembles(&record.requester) => {
                        return Ok(Err(Refusal::RequesterCannotApprove));
                    }
                    _ => {}
                }
                let mut given = given(tx, record, &self.rules()).await?;
                if let Some(earlier) = given.iter().find(|g| g.who.resembles(&who)) {
                    return Ok(Err(Refusal::AlreadyApprovedBy(
                        earlier.who.user().to_owned(),
                    )));
                }
                if let Some(expected) = &record.expected {
                    let typed = typed.as_deref().unwrap_or_default();
                    match crate::validate::compare_typed(typed, expected) {
                        crate::validate::TypedName::Matches => {}
                        crate::validate::TypedName::Invisible => {
                            return Ok(Err(Refusal::TypedMismatch(format!(
                                "the typed name contains invisible characters; type {expected} without them"
                            ))));
                        }
                        crate::validate::TypedName::Differs => {
                            return Ok(Err(Refusal::TypedMismatch(format!(
                                "the typed name does not match {expected} exactly"
                            ))));
                        }
                    }
                }
                let completes = given.len() + 1 == usize::from(record.required);
                let secret = secret.filter(|s| !s.is_empty());
                if completes && record.secret_label.is_some() && secret.is_none() {
                    return Ok(Err(Refusal::SecretMissing));
                }
                ledger::decision(
                    tx,
                    key,
                    &record.id,
                    &who,
                    ("APPROVE", &seal("APPROVE")),
                    now,
                )
                .await?;
                given.push(Given {
                    who: who.clone(),
                    at: ledger::system_time(now),
                });
                events.push(
                    subject
                        .event(Outcome::Approval(ApprovalEvent::Given), Some(&who))
                        .field("given", given.len())
                        .field("required", record.required)
                        .field("signed_in", signed_in.map(Person::user)),
                );
                if !completes {
                    return Ok(Ok((Status::Pending, None)));
                }
                ledger::end(tx, &record.id, &Status::Approved, typed.as_deref(), now).await?;
                events.push(ended(
                    &subject,
                    &Status::Approved,
                    None,
                    &given,
                    record.required,
                ));
                Ok(Ok((
                    Status::Approved,
                    secret.map(|s| (record.id.clone(), s)),
                )))
            }
        }
    }
}
