//! The approvals in progress and the rules a decision must pass: who may approve, how many,
//! once each, before the deadline. The HTTP page only renders what this module answers.
//!
//! Links are 256-bit tokens from the OS random source, stored only as their SHA-256, each
//! with its own CSRF token. A link decides once. The record lives in this process: the call
//! waiting for it does too (a push elicitation holds its request open, an MRTR retry waits
//! in it), so a restart ends both, and a link or a retry from before the restart finds
//! nothing afterwards. Only the requester's own later round, for the same binding, may wait
//! for an approval ([`Desk::watch`]).

use std::{
    collections::HashMap,
    sync::Mutex,
    time::{Duration, Instant, SystemTime},
};

use sha2::{Digest, Sha256};
use tokio::sync::watch;

use crate::identity::Identity;

/// Where an approval stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// Waiting for approvals.
    Pending,
    /// Every required approval arrived.
    Approved,
    /// Someone rejected it on the page (an approver, or the requester withdrawing).
    Rejected { by: String },
    /// The deadline passed first.
    Expired,
    /// The client declined or cancelled, or the call ended.
    Withdrawn,
}

/// What the call asks the page to approve.
pub struct Request {
    pub tool: &'static str,
    pub message: Option<&'static str>,
    pub target: String,
    pub summary: String,
    pub requester: Identity,
    /// The text a type-to-confirm approval must retype.
    pub expected: Option<String>,
    pub required: u8,
    pub secret: Option<&'static str>,
    pub valid_for: Duration,
    /// What the call that opened it is bound to (tool, form, confirmation kind and canonical
    /// arguments): a later round of that call must name the same.
    pub bound_to: String,
}

/// One approval given on the page.
#[derive(Debug, Clone)]
pub struct Given {
    pub user: String,
    pub at: SystemTime,
}

/// Who a link speaks for.
#[derive(Debug, Clone)]
pub enum Role {
    /// The human at the client that asked: approves alone when one approval is required,
    /// else can only withdraw the request.
    Requester,
    /// A named approver other than the requester.
    Approver(Identity),
}

struct Link {
    approval: String,
    role: Role,
    csrf: String,
    used: bool,
}

struct Record {
    request: Request,
    deadline: Instant,
    expires_at: SystemTime,
    given: Vec<Given>,
    status: Status,
    typed: Option<String>,
    secret: Option<crate::secret::Secret>,
    notify: watch::Sender<Status>,
}

impl Record {
    fn settle_expiry(&mut self, now: Instant) {
        if self.status == Status::Pending && now >= self.deadline {
            self.set(Status::Expired);
        }
    }

    fn set(&mut self, status: Status) {
        self.status = status.clone();
        self.notify.send_replace(status);
    }
}

/// An approval just opened: its id, the requester's link token, one token per approver, and
/// the channel its status arrives on.
pub struct Opened {
    pub id: String,
    pub requester_token: String,
    pub approver_tokens: Vec<(Identity, String)>,
    pub status: watch::Receiver<Status>,
}

/// Why a later round of a call may not wait for an approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// Not in this process: opened before a restart, on another replica, or long gone.
    Unknown,
    /// Opened for another call: another requester, tool or arguments.
    NotYours,
}

/// A decision posted from a link.
pub enum Decision {
    Approve {
        typed: Option<String>,
        secret: Option<String>,
    },
    Reject,
}

/// Why a posted decision was not taken. Each says what happened and what to do next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    UnknownLink,
    BadCsrf,
    LinkUsed,
    Expired,
    AlreadyDecided,
    RequesterCannotApprove,
    AlreadyApprovedBy(String),
    TypedMismatch(String),
    SecretMissing,
}

impl Refusal {
    /// The HTTP status the page answers with.
    pub fn status(&self) -> u16 {
        match self {
            Refusal::UnknownLink => 404,
            Refusal::BadCsrf | Refusal::RequesterCannotApprove => 403,
            Refusal::LinkUsed | Refusal::AlreadyDecided | Refusal::AlreadyApprovedBy(_) => 409,
            Refusal::Expired => 410,
            Refusal::TypedMismatch(_) | Refusal::SecretMissing => 422,
        }
    }

    /// The sentence the page shows.
    pub fn message(&self) -> String {
        match self {
            Refusal::UnknownLink => "This approval link is not valid: it was never issued, or the server restarted since. Ask for the action again from the client.".into(),
            Refusal::BadCsrf => "This decision did not come from the approval page itself, so it was not taken. Open your approval link and decide there.".into(),
            Refusal::LinkUsed => "This link was already used to decide. Each link decides once; the page shows where the approval stands.".into(),
            Refusal::Expired => "This approval expired; nothing was changed. Ask for the action again from the client.".into(),
            Refusal::AlreadyDecided => "This approval is already decided; your decision was not needed.".into(),
            Refusal::RequesterCannotApprove => "You asked for this action, so you cannot approve it: two other people must. You can withdraw the request.".into(),
            Refusal::AlreadyApprovedBy(user) => format!("{user} already approved this; a second approval must come from someone else."),
            Refusal::TypedMismatch(reason) => format!("Not approved: {reason}. Type it again."),
            Refusal::SecretMissing => "Not approved: this approval completes the request, and the tool needs the secret asked for below. Enter it and approve again.".into(),
        }
    }
}

/// What a link shows: the approval as it stands, and what this link may still do.
pub struct View {
    pub tool: &'static str,
    pub message: Option<&'static str>,
    pub target: String,
    pub summary: String,
    pub requester: Identity,
    pub expires_at: SystemTime,
    pub expected: Option<String>,
    pub required: u8,
    pub given: Vec<Given>,
    pub status: Status,
    pub role: Role,
    pub csrf: String,
    pub used: bool,
    /// The secret's label, when this link's approval would complete the request.
    pub secret: Option<&'static str>,
}

impl View {
    /// Whether this link may still approve.
    pub fn can_approve(&self) -> bool {
        !self.used
            && self.status == Status::Pending
            && match &self.role {
                Role::Requester => self.required == 1,
                Role::Approver(who) => !self.given.iter().any(|g| g.user == who.user),
            }
    }

    /// Whether this link may still reject (or, for the requester, withdraw).
    pub fn can_reject(&self) -> bool {
        !self.used && self.status == Status::Pending
    }
}

/// The approvals of this process.
#[derive(Default)]
pub struct Desk {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    approvals: HashMap<String, Record>,
    /// Keyed by the SHA-256 of the link token.
    links: HashMap<String, Link>,
}

/// Decided approvals stay readable this long after their deadline, so a late visitor sees
/// the outcome instead of an unknown link.
const KEEP_AFTER_DEADLINE: Duration = Duration::from_secs(600);

impl Desk {
    /// Opens an approval for `request`, with one link for the requester and one for each of
    /// `approvers` (the requester and other tenants' users are never among them).
    pub fn open(&self, request: Request, approvers: &[Identity]) -> Result<Opened, String> {
        let now = Instant::now();
        let id = token()?;
        let requester_token = token()?;
        let mut approver_tokens = Vec::new();
        if request.required > 1 {
            for approver in approvers {
                if approver.tenant == request.requester.tenant
                    && approver.user != request.requester.user
                    && !approver_tokens
                        .iter()
                        .any(|(a, _): &(Identity, String)| a.user == approver.user)
                {
                    approver_tokens.push((approver.clone(), token()?));
                }
            }
            if approver_tokens.len() < usize::from(request.required) {
                return Err(format!(
                    "{} needs {} approvers besides the requester in tenant {}, and the approval page knows {}",
                    request.tool,
                    request.required,
                    request.requester.tenant,
                    approver_tokens.len()
                ));
            }
        }
        let (notify, status) = watch::channel(Status::Pending);
        let record = Record {
            deadline: now + request.valid_for,
            expires_at: SystemTime::now() + request.valid_for,
            request,
            given: Vec::new(),
            status: Status::Pending,
            typed: None,
            secret: None,
            notify,
        };
        let mut inner = self.lock();
        inner.forget_old(now);
        let mut links = vec![(requester_token.clone(), Role::Requester)];
        links.extend(
            approver_tokens
                .iter()
                .map(|(who, t)| (t.clone(), Role::Approver(who.clone()))),
        );
        for (t, role) in links {
            inner.links.insert(
                digest(&t),
                Link {
                    approval: id.clone(),
                    role,
                    csrf: token()?,
                    used: false,
                },
            );
        }
        inner.approvals.insert(id.clone(), record);
        Ok(Opened {
            id,
            requester_token,
            approver_tokens,
            status,
        })
    }

    /// The page behind `link`, or `None` for a link this process never issued.
    pub fn view(&self, link: &str) -> Option<View> {
        let mut inner = self.lock();
        let key = digest(link);
        let Inner { approvals, links } = &mut *inner;
        let link = links.get(&key)?;
        let record = approvals.get_mut(&link.approval)?;
        record.settle_expiry(Instant::now());
        let completes = record.given.len() + 1 == usize::from(record.request.required);
        Some(View {
            tool: record.request.tool,
            message: record.request.message,
            target: record.request.target.clone(),
            summary: record.request.summary.clone(),
            requester: record.request.requester.clone(),
            expires_at: record.expires_at,
            expected: record.request.expected.clone(),
            required: record.request.required,
            given: record.given.clone(),
            status: record.status.clone(),
            role: link.role.clone(),
            csrf: link.csrf.clone(),
            used: link.used,
            secret: record.request.secret.filter(|_| completes),
        })
    }

    /// Takes `decision` from `link` if every rule holds; the new status on success.
    pub fn decide(&self, link: &str, csrf: &str, decision: Decision) -> Result<Status, Refusal> {
        let now = Instant::now();
        let mut inner = self.lock();
        let Inner { approvals, links } = &mut *inner;
        let link = links.get_mut(&digest(link)).ok_or(Refusal::UnknownLink)?;
        // Compared as digests: equal length, and no early exit on the secret's bytes.
        if digest(csrf) != digest(&link.csrf) {
            return Err(Refusal::BadCsrf);
        }
        let record = approvals
            .get_mut(&link.approval)
            .ok_or(Refusal::UnknownLink)?;
        record.settle_expiry(now);
        match record.status {
            Status::Pending => {}
            Status::Expired => return Err(Refusal::Expired),
            _ => return Err(Refusal::AlreadyDecided),
        }
        if link.used {
            return Err(Refusal::LinkUsed);
        }
        let user = match &link.role {
            Role::Requester => record.request.requester.user.clone(),
            Role::Approver(who) => who.user.clone(),
        };
        match decision {
            Decision::Reject => {
                link.used = true;
                record.set(Status::Rejected { by: user });
            }
            Decision::Approve { typed, secret } => {
                match &link.role {
                    Role::Requester if record.request.required > 1 => {
                        return Err(Refusal::RequesterCannotApprove);
                    }
                    Role::Approver(who)
                        if who.user == record.request.requester.user
                            && who.tenant == record.request.requester.tenant =>
                    {
                        return Err(Refusal::RequesterCannotApprove);
                    }
                    _ => {}
                }
                if record.given.iter().any(|g| g.user == user) {
                    return Err(Refusal::AlreadyApprovedBy(user));
                }
                if let Some(expected) = &record.request.expected {
                    let typed = typed.as_deref().unwrap_or_default();
                    match crate::validate::compare_typed(typed, expected) {
                        crate::validate::TypedName::Matches => {}
                        crate::validate::TypedName::Invisible => {
                            return Err(Refusal::TypedMismatch(format!(
                                "the typed name contains invisible characters; type {expected} without them"
                            )));
                        }
                        crate::validate::TypedName::Differs => {
                            return Err(Refusal::TypedMismatch(format!(
                                "the typed name does not match {expected} exactly"
                            )));
                        }
                    }
                }
                let completes = record.given.len() + 1 == usize::from(record.request.required);
                let secret = secret.filter(|s| !s.is_empty());
                if completes && record.request.secret.is_some() && secret.is_none() {
                    return Err(Refusal::SecretMissing);
                }
                link.used = true;
                record.given.push(Given {
                    user,
                    at: SystemTime::now(),
                });
                if completes {
                    record.typed = typed;
                    record.secret = secret.map(crate::secret::Secret::new);
                    record.set(Status::Approved);
                }
            }
        }
        Ok(record.status.clone())
    }

    /// Ends a still-pending approval as `status` (expired, or withdrawn by the client), and
    /// returns where it stands: an approval that completed first stays approved.
    pub fn close(&self, id: &str, status: Status) -> Status {
        let mut inner = self.lock();
        match inner.approvals.get_mut(id) {
            Some(record) => {
                if record.status == Status::Pending {
                    record.set(status);
                }
                record.status.clone()
            }
            None => status,
        }
    }

    /// The status channel and deadline of approval `id`, for the round of the call that
    /// opened it: the same requester, with the same binding.
    pub fn watch(
        &self,
        id: &str,
        requester: &Identity,
        bound_to: &str,
    ) -> Result<(watch::Receiver<Status>, Instant), Claim> {
        let mut inner = self.lock();
        let record = inner.approvals.get_mut(id).ok_or(Claim::Unknown)?;
        let own = record.request.requester.tenant == requester.tenant
            && record.request.requester.user == requester.user;
        if !own || digest(&record.request.bound_to) != digest(bound_to) {
            return Err(Claim::NotYours);
        }
        record.settle_expiry(Instant::now());
        Ok((record.notify.subscribe(), record.deadline))
    }

    /// Hands the approved answer over to the waiting call, once: the typed name, the
    /// secret, and who approved.
    pub fn take_answer(
        &self,
        id: &str,
    ) -> Option<(Option<String>, Option<crate::secret::Secret>, Vec<Given>)> {
        let mut inner = self.lock();
        let record = inner.approvals.get_mut(id)?;
        if record.status != Status::Approved {
            return None;
        }
        Some((
            record.typed.take(),
            record.secret.take(),
            record.given.clone(),
        ))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Inner {
    fn forget_old(&mut self, now: Instant) {
        self.approvals
            .retain(|_, r| now < r.deadline + KEEP_AFTER_DEADLINE);
        let approvals = &self.approvals;
        self.links
            .retain(|_, l| approvals.contains_key(&l.approval));
    }
}

/// 256 bits from the OS random source, as hex.
fn token() -> Result<String, String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| format!("the system random source failed: {e}"))?;
    Ok(crate::canonical::hex(&bytes))
}

fn digest(s: &str) -> String {
    crate::canonical::hex(&Sha256::digest(s.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(required: u8) -> Request {
        Request {
            tool: "deploy",
            message: None,
            target: "production".into(),
            summary: "Deploy v2 to production".into(),
            requester: Identity::new("acme", "alice", ["deploy"]),
            expected: None,
            required,
            secret: None,
            valid_for: Duration::from_secs(60),
            bound_to: "deploy production".into(),
        }
    }

    fn people() -> Vec<Identity> {
        ["alice", "bob", "carol", "bob"]
            .into_iter()
            .map(|u| Identity::new("acme", u, Vec::<String>::new()))
            .chain([Identity::new("other", "mallory", Vec::<String>::new())])
            .collect()
    }

    fn approve() -> Decision {
        Decision::Approve {
            typed: None,
            secret: None,
        }
    }

    #[test]
    fn links_go_to_distinct_approvers_of_the_tenant_other_than_the_requester() {
        let desk = Desk::default();
        let opened = desk.open(request(2), &people()).unwrap();
        let users: Vec<_> = opened
            .approver_tokens
            .iter()
            .map(|(who, _)| who.user.as_str())
            .collect();
        assert_eq!(users, ["bob", "carol"]);
        let err = desk.open(request(3), &people()).err().unwrap();
        assert!(err.contains("needs 3 approvers"), "{err}");
    }

    #[test]
    fn two_approvals_from_two_people_and_each_link_once() {
        let desk = Desk::default();
        let opened = desk.open(request(2), &people()).unwrap();
        let (bob, carol) = (&opened.approver_tokens[0].1, &opened.approver_tokens[1].1);
        let csrf = |t: &str| desk.view(t).unwrap().csrf;
        assert_eq!(
            desk.decide(
                &opened.requester_token,
                &csrf(&opened.requester_token),
                approve()
            ),
            Err(Refusal::RequesterCannotApprove)
        );
        assert_eq!(desk.decide(bob, "forged", approve()), Err(Refusal::BadCsrf));
        assert_eq!(desk.decide(bob, &csrf(bob), approve()), Ok(Status::Pending));
        assert_eq!(
            desk.decide(bob, &csrf(bob), approve()),
            Err(Refusal::LinkUsed)
        );
        assert_eq!(
            desk.decide("0".repeat(64).as_str(), "x", approve()),
            Err(Refusal::UnknownLink)
        );
        assert_eq!(*opened.status.borrow(), Status::Pending);
        assert_eq!(
            desk.decide(carol, &csrf(carol), approve()),
            Ok(Status::Approved)
        );
        assert_eq!(*opened.status.borrow(), Status::Approved);
        let (_, _, given) = desk.take_answer(&opened.id).unwrap();
        let who: Vec<_> = given.iter().map(|g| g.user.as_str()).collect();
        assert_eq!(who, ["bob", "carol"]);
    }

    #[test]
    fn a_closed_approval_takes_no_decision_and_an_approved_one_stays_approved() {
        let desk = Desk::default();
        let opened = desk.open(request(1), &[]).unwrap();
        let t = &opened.requester_token;
        let csrf = desk.view(t).unwrap().csrf;
        assert_eq!(desk.close(&opened.id, Status::Expired), Status::Expired);
        assert_eq!(desk.decide(t, &csrf, approve()), Err(Refusal::Expired));

        let opened = desk.open(request(1), &[]).unwrap();
        let t = &opened.requester_token;
        let csrf = desk.view(t).unwrap().csrf;
        assert_eq!(desk.decide(t, &csrf, approve()), Ok(Status::Approved));
        assert_eq!(desk.close(&opened.id, Status::Expired), Status::Approved);
    }

    #[test]
    fn a_typed_name_and_the_secret_are_checked_before_an_approval_counts() {
        let desk = Desk::default();
        let opened = desk
            .open(
                Request {
                    expected: Some("production".into()),
                    secret: Some("Deploy token"),
                    ..request(1)
                },
                &[],
            )
            .unwrap();
        let t = &opened.requester_token;
        let csrf = desk.view(t).unwrap().csrf;
        let typed = |typed: &str, secret: &str| Decision::Approve {
            typed: Some(typed.into()),
            secret: Some(secret.into()),
        };
        assert!(matches!(
            desk.decide(t, &csrf, typed("producti\u{200b}on", "tok")),
            Err(Refusal::TypedMismatch(_))
        ));
        assert!(matches!(
            desk.decide(t, &csrf, typed("staging", "tok")),
            Err(Refusal::TypedMismatch(_))
        ));
        assert_eq!(
            desk.decide(t, &csrf, typed("production", "")),
            Err(Refusal::SecretMissing)
        );
        assert_eq!(
            desk.decide(t, &csrf, typed("production", "tok")),
            Ok(Status::Approved)
        );
        let (typed, secret, _) = desk.take_answer(&opened.id).unwrap();
        assert_eq!(typed.as_deref(), Some("production"));
        assert_eq!(secret.unwrap().expose(), "tok");
        // Handed over once.
        assert!(desk.take_answer(&opened.id).unwrap().1.is_none());
    }

    #[test]
    fn only_the_requester_with_the_same_binding_may_wait_for_an_approval() {
        let desk = Desk::default();
        let opened = desk.open(request(1), &[]).unwrap();
        let alice = Identity::new("acme", "alice", Vec::<String>::new());
        let (status, _) = desk.watch(&opened.id, &alice, "deploy production").unwrap();
        assert_eq!(*status.borrow(), Status::Pending);
        let refused = |who: &Identity, bound: &str| desk.watch(&opened.id, who, bound).err();
        let dave = Identity::new("acme", "dave", Vec::<String>::new());
        let other_tenant = Identity::new("other", "alice", Vec::<String>::new());
        assert_eq!(refused(&dave, "deploy production"), Some(Claim::NotYours));
        assert_eq!(
            refused(&other_tenant, "deploy production"),
            Some(Claim::NotYours)
        );
        assert_eq!(refused(&alice, "deploy staging"), Some(Claim::NotYours));
        assert_eq!(
            desk.watch(&"0".repeat(64), &alice, "deploy production")
                .err(),
            Some(Claim::Unknown)
        );
    }
}
