//! Opening an approval: one link for the requester and one for each approver who may decide
//! it, each sealed and stored with the approval in one transaction, and the record that it
//! opened.

use std::time::{Duration, SystemTime};

use super::{Desk, KEEP_AFTER_DEADLINE, digest, token};
use crate::{
    approval::{journal::Subject, ledger, state::Role},
    outcome::{ApprovalEvent, Outcome},
    person::Person,
};

/// What the call asks the page to approve.
pub struct Request {
    pub tool: &'static str,
    pub message: Option<&'static str>,
    pub target: String,
    pub summary: String,
    /// Who asked, in canonical form.
    pub requester: Person,
    /// The trace id of the call that asked: every record of the approval carries it.
    pub trace_id: String,
    /// The text a type-to-confirm approval must retype.
    pub expected: Option<String>,
    pub required: u8,
    pub secret: Option<&'static str>,
    pub valid_for: Duration,
    /// What the call that opened it is bound to (tool, form, confirmation kind and canonical
    /// arguments): a later round of that call must name the same.
    pub bound_to: String,
    /// The fingerprint of the effect the approvers are shown: a later call whose preview
    /// differs never runs on this approval.
    pub fingerprint: String,
}

/// An approval just opened: its id, the requester's link token, and one token per approver.
pub struct Opened {
    pub id: String,
    pub requester_token: String,
    pub approver_tokens: Vec<(Person, String)>,
    /// What the approval's records name.
    pub subject: Subject,
    pub expires_at: SystemTime,
}

impl Desk {
    /// Opens an approval for `request`, with one link for the requester and one for each of
    /// `approvers` who may approve it: of the requester's tenant, neither the requester nor
    /// someone who could be taken for them, each person once.
    pub async fn open(&self, request: Request, approvers: &[Person]) -> Result<Opened, String> {
        let key = self.sealing()?;
        let id = token()?;
        let requester_token = match self.derived_token(&id) {
            Some(derived) => derived,
            None => token()?,
        };
        let mut approver_tokens: Vec<(Person, String)> = Vec::new();
        if request.required > 1 {
            for approver in approvers {
                if approver.tenant() == request.requester.tenant()
                    && !approver.resembles(&request.requester)
                    && !approver_tokens.iter().any(|(a, _)| a.resembles(approver))
                {
                    approver_tokens.push((approver.clone(), token()?));
                }
            }
            if approver_tokens.len() < usize::from(request.required) {
                return Err(format!(
                    "{} needs {} approvers besides the requester {} in tenant {}, and the approval page knows {} other people there",
                    request.tool,
                    request.required,
                    request.requester.user(),
                    request.requester.tenant(),
                    approver_tokens.len()
                ));
            }
        }
        let mut links = vec![(requester_token.clone(), Role::Requester, token()?)];
        for (who, t) in &approver_tokens {
            links.push((t.clone(), Role::Approver(who.clone()), token()?));
        }
        let subject = Subject {
            tool: request.tool.to_owned(),
            trace_id: request.trace_id.clone(),
            approval_id: id.clone(),
            target: request.target.clone(),
            requester: request.requester.clone(),
        };
        let valid_for = i64::try_from(request.valid_for.as_millis()).unwrap_or(i64::MAX / 2);
        let bound = digest(&request.bound_to);
        let listed: Vec<&str> = approver_tokens.iter().map(|(who, _)| who.user()).collect();
        let listed = serde_json::to_string(&listed).map_err(|e| e.to_string())?;
        let opened = (in_tx!(self, |tx| {
            let now = ledger::now(tx).await?;
            let expires_at = now.saturating_add(valid_for.max(1));
            ledger::insert(
                tx,
                ledger::New {
                    id: &id,
                    tool: request.tool,
                    message: request.message,
                    target: &request.target,
                    summary: &request.summary,
                    requester: &request.requester,
                    trace_id: &request.trace_id,
                    bound_sha256: &bound,
                    fingerprint: &request.fingerprint,
                    approvers: &listed,
                    expected: request.expected.as_deref(),
                    secret_label: request.secret,
                    required: request.required,
                    created_at: now,
                    expires_at,
                },
            )
            .await?;
            for (t, role, csrf) in &links {
                let person = match role {
                    Role::Requester => &request.requester,
                    Role::Approver(who) => who,
                };
                let link = digest(t);
                let seal = key.link(&id, ledger::role_code(role), person, &link);
                ledger::insert_link(tx, &link, &id, role, person, csrf, &seal).await?;
            }
            Ok((expires_at, Vec::new()))
        }))
        .map_err(|e| format!("the approval could not be stored: {e}"))?;
        let expires_at = ledger::system_time(opened);
        self.journal.record(
            subject
                .event(Outcome::Approval(ApprovalEvent::Opened), None)
                .field("required", request.required)
                .field(
                    "approvers",
                    approver_tokens
                        .iter()
                        .map(|(who, _)| who.user())
                        .collect::<Vec<_>>(),
                )
                .field(
                    "expires_at",
                    chrono::DateTime::<chrono::Utc>::from(expires_at)
                        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                ),
        );
        let keep = i64::try_from(KEEP_AFTER_DEADLINE.as_millis()).unwrap_or(i64::MAX);
        if let Ok(store) = self.store().await {
            crate::store::purge::expired_or_log(
                store.as_ref(),
                crate::store::purge::Expiring::Approvals,
                crate::store::now_ms().saturating_sub(keep),
            )
            .await;
        }
        Ok(Opened {
            id,
            requester_token,
            approver_tokens,
            subject,
            expires_at,
        })
    }
}
