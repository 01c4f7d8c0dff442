//! The approvals in progress and the rules a decision must pass: who may approve, how many,
//! once each, before the deadline, and (with approver sign-in) who must be at the browser.
//! The HTTP page only renders what this module answers; every change of an approval's status
//! happens here, and is recorded here ([`super::journal`]).
//!
//! People are compared as people ([`crate::person`]): an approver who is the requester under
//! another spelling, or whose name could be taken for the requester's, cannot approve, and
//! two approvals by one person (or two look-alikes) count once.
//!
//! Links are 256-bit tokens from the OS random source, stored only as their SHA-256, each
//! with its own CSRF token. A link decides once. The record lives in this process: the call
//! waiting for it does too (a push elicitation holds its request open, an MRTR retry waits
//! in it), so a restart ends both, and a link or a retry from before the restart finds
//! nothing afterwards. Only the requester's own later round, for the same binding, may wait
//! for an approval ([`Desk::watch`]). The desk's methods are the whole boundary of that
//! state: a store that keeps approvals elsewhere answers the same calls.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant, SystemTime},
};

use sha2::{Digest, Sha256};
use tokio::sync::watch;

use super::journal::{Journal, Subject};
use crate::{
    outcome::{ApprovalEvent, Outcome},
    person::Person,
};

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
}

/// One approval given on the page.
#[derive(Debug, Clone)]
pub struct Given {
    pub who: Person,
    pub at: SystemTime,
}

/// Who a link speaks for.
#[derive(Debug, Clone)]
pub enum Role {
    /// The human at the client that asked: approves alone when one approval is required,
    /// else can only withdraw the request.
    Requester,
    /// A named approver other than the requester.
    Approver(Person),
}

struct Link {
    approval: String,
    role: Role,
    csrf: String,
    used: bool,
    viewed: bool,
    /// Refused decisions recorded so far: a link holder cannot flood the log.
    refusals_recorded: u8,
}

/// At most this many refused decisions per link reach the log.
const REFUSALS_RECORDED: u8 = 5;

struct Record {
    request: Request,
    subject: Subject,
    deadline: Instant,
    expires_at: SystemTime,
    given: Vec<Given>,
    status: Status,
    typed: Option<String>,
    secret: Option<crate::secret::Secret>,
    notify: watch::Sender<Status>,
}

impl Record {
    fn settle_expiry(&mut self, now: Instant, journal: &Journal) {
        if self.status == Status::Pending && now >= self.deadline {
            self.set(Status::Expired, None, journal);
        }
    }

    /// The one place an approval's status changes, and is recorded.
    fn set(&mut self, status: Status, by: Option<&Person>, journal: &Journal) {
        if self.status == status {
            return;
        }
        self.status = status.clone();
        let code = match &status {
            Status::Pending => return,
            Status::Approved => Outcome::Approval(ApprovalEvent::Approved),
            Status::Rejected { .. } => Outcome::Approval(ApprovalEvent::Rejected),
            Status::Expired => Outcome::Approval(ApprovalEvent::Expired),
            Status::Withdrawn => Outcome::Approval(ApprovalEvent::Withdrawn),
        };
        let approvers: Vec<&str> = self.given.iter().map(|g| g.who.user()).collect();
        journal.record(
            self.subject
                .event(code, by)
                .field("approvers", approvers)
                .field("required", self.request.required),
        );
        self.notify.send_replace(status);
    }

    fn person<'a>(&'a self, role: &'a Role) -> &'a Person {
        match role {
            Role::Requester => &self.request.requester,
            Role::Approver(who) => who,
        }
    }
}

/// An approval just opened: its id, the requester's link token, one token per approver, and
/// the channel its status arrives on.
pub struct Opened {
    pub id: String,
    pub requester_token: String,
    pub approver_tokens: Vec<(Person, String)>,
    pub status: watch::Receiver<Status>,
    /// What the approval's records name.
    pub subject: Subject,
    pub expires_at: SystemTime,
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
    /// Approvers must sign in with the deployment's identity provider, and nobody has.
    SignInRequired,
    /// Someone signed in who is not the person this link is for.
    NotYourLink {
        link_for: String,
    },
}

impl Refusal {
    /// The HTTP status the page answers with.
    pub fn status(&self) -> u16 {
        match self {
            Refusal::UnknownLink => 404,
            Refusal::SignInRequired => 401,
            Refusal::BadCsrf | Refusal::RequesterCannotApprove | Refusal::NotYourLink { .. } => 403,
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
            Refusal::SignInRequired => "Nothing was decided: approvers must sign in first, so that a link alone proves nothing. Sign in below with your access token, then decide.".into(),
            Refusal::NotYourLink { link_for } => format!("Nothing was decided: this link is for {link_for}, and you signed in as someone else. Only {link_for} can decide through it."),
        }
    }
}

/// What a link shows: the approval as it stands, and what this link may still do.
pub struct View {
    pub tool: &'static str,
    pub message: Option<&'static str>,
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
    pub secret: Option<&'static str>,
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

/// The approvals of this process.
pub struct Desk {
    inner: Mutex<Inner>,
    journal: Arc<Journal>,
    /// Deciding needs a signed-in person as well as the link.
    sign_in: bool,
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
    /// A desk recording into `journal`; with `sign_in`, a decision needs the link's person
    /// signed in.
    pub fn new(journal: Arc<Journal>, sign_in: bool) -> Self {
        Self {
            inner: Mutex::default(),
            journal,
            sign_in,
        }
    }

    /// Opens an approval for `request`, with one link for the requester and one for each of
    /// `approvers` who may approve it: of the requester's tenant, neither the requester nor
    /// someone who could be taken for them, each person once.
    pub fn open(&self, request: Request, approvers: &[Person]) -> Result<Opened, String> {
        let now = Instant::now();
        let id = token()?;
        let requester_token = token()?;
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
        let subject = Subject {
            tool: request.tool,
            trace_id: request.trace_id.clone(),
            approval_id: id.clone(),
            target: request.target.clone(),
            requester: request.requester.clone(),
        };
        let (notify, status) = watch::channel(Status::Pending);
        let expires_at = SystemTime::now() + request.valid_for;
        let record = Record {
            deadline: now + request.valid_for,
            expires_at,
            subject: subject.clone(),
            request,
            given: Vec::new(),
            status: Status::Pending,
            typed: None,
            secret: None,
            notify,
        };
        self.journal.record(
            subject
                .event(Outcome::Approval(ApprovalEvent::Opened), None)
                .field("required", record.request.required)
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
                    viewed: false,
                    refusals_recorded: 0,
                },
            );
        }
        inner.approvals.insert(id.clone(), record);
        Ok(Opened {
            id,
            requester_token,
            approver_tokens,
            status,
            subject,
            expires_at,
        })
    }

    /// The page behind `link`, or `None` for a link this process never issued. A `visit`
    /// (a person loading the page) is recorded the first time for each link.
    pub fn view(&self, link: &str, visit: bool) -> Option<View> {
        let mut inner = self.lock();
        let key = digest(link);
        let Inner { approvals, links } = &mut *inner;
        let link = links.get_mut(&key)?;
        let record = approvals.get_mut(&link.approval)?;
        record.settle_expiry(Instant::now(), &self.journal);
        if visit && !link.viewed {
            link.viewed = true;
            let who = record.person(&link.role);
            self.journal.record(
                record
                    .subject
                    .event(Outcome::Approval(ApprovalEvent::Viewed), Some(who))
                    .field("role", role_name(&link.role)),
            );
        }
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
            sign_in: self.sign_in,
        })
    }

    /// The person `link` speaks for, if `csrf` is its token: someone signs in through it.
    pub fn person_of(&self, link: &str, csrf: &str) -> Result<Person, Refusal> {
        let inner = self.lock();
        let link = inner.links.get(&digest(link)).ok_or(Refusal::UnknownLink)?;
        if digest(csrf) != digest(&link.csrf) {
            return Err(Refusal::BadCsrf);
        }
        let record = inner
            .approvals
            .get(&link.approval)
            .ok_or(Refusal::UnknownLink)?;
        Ok(record.person(&link.role).clone())
    }

    /// Whether `person` may sign in through a link for `link_for` of the approval behind
    /// `link`: only as the link's own person, and never the requester through an
    /// approver's link.
    pub fn may_sign_in(
        &self,
        link: &str,
        link_for: &Person,
        person: &Person,
    ) -> Result<(), Refusal> {
        if person.is(link_for) {
            return Ok(());
        }
        let inner = self.lock();
        let requester = inner
            .links
            .get(&digest(link))
            .and_then(|l| inner.approvals.get(&l.approval))
            .map(|r| &r.request.requester);
        if requester.is_some_and(|r| person.resembles(r)) {
            return Err(Refusal::RequesterCannotApprove);
        }
        Err(Refusal::NotYourLink {
            link_for: link_for.user().to_owned(),
        })
    }

    /// Takes `decision` from `link` if every rule holds; the new status on success.
    /// `signed_in` is the person the identity provider says is at the browser, if any.
    pub fn decide(
        &self,
        link: &str,
        csrf: &str,
        decision: Decision,
        signed_in: Option<&Person>,
    ) -> Result<Status, Refusal> {
        let now = Instant::now();
        let mut inner = self.lock();
        let Inner { approvals, links } = &mut *inner;
        let link = links.get_mut(&digest(link)).ok_or(Refusal::UnknownLink)?;
        let record = approvals
            .get_mut(&link.approval)
            .ok_or(Refusal::UnknownLink)?;
        let taken = self.rule(link, record, csrf, decision, signed_in, now);
        if let Err(refusal) = &taken
            && link.refusals_recorded < REFUSALS_RECORDED
        {
            link.refusals_recorded += 1;
            let who = record.person(&link.role);
            self.journal.record(
                record
                    .subject
                    .event(Outcome::Approval(ApprovalEvent::Refused), Some(who))
                    .field("reason", refusal_code(refusal))
                    .field("signed_in", signed_in.map(Person::user)),
            );
        }
        taken
    }

    fn rule(
        &self,
        link: &mut Link,
        record: &mut Record,
        csrf: &str,
        decision: Decision,
        signed_in: Option<&Person>,
        now: Instant,
    ) -> Result<Status, Refusal> {
        // Compared as digests: equal length, and no early exit on the secret's bytes.
        if digest(csrf) != digest(&link.csrf) {
            return Err(Refusal::BadCsrf);
        }
        record.settle_expiry(now, &self.journal);
        match record.status {
            Status::Pending => {}
            Status::Expired => return Err(Refusal::Expired),
            _ => return Err(Refusal::AlreadyDecided),
        }
        if link.used {
            return Err(Refusal::LinkUsed);
        }
        let who = record.person(&link.role).clone();
        if self.sign_in {
            match signed_in {
                None => return Err(Refusal::SignInRequired),
                Some(person) if person.is(&who) => {}
                Some(person)
                    if matches!(link.role, Role::Approver(_))
                        && person.resembles(&record.request.requester) =>
                {
                    return Err(Refusal::RequesterCannotApprove);
                }
                Some(_) => {
                    return Err(Refusal::NotYourLink {
                        link_for: who.user().to_owned(),
                    });
                }
            }
        }
        match decision {
            Decision::Reject => {
                link.used = true;
                record.set(
                    Status::Rejected {
                        by: who.user().to_owned(),
                    },
                    Some(&who),
                    &self.journal,
                );
            }
            Decision::Approve { typed, secret } => {
                match &link.role {
                    Role::Requester if record.request.required > 1 => {
                        return Err(Refusal::RequesterCannotApprove);
                    }
                    Role::Approver(approver) if approver.resembles(&record.request.requester) => {
                        return Err(Refusal::RequesterCannotApprove);
                    }
                    _ => {}
                }
                if let Some(given) = record.given.iter().find(|g| g.who.resembles(&who)) {
                    return Err(Refusal::AlreadyApprovedBy(given.who.user().to_owned()));
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
                    who: who.clone(),
                    at: SystemTime::now(),
                });
                self.journal.record(
                    record
                        .subject
                        .event(Outcome::Approval(ApprovalEvent::Given), Some(&who))
                        .field("given", record.given.len())
                        .field("required", record.request.required)
                        .field("signed_in", signed_in.map(Person::user)),
                );
                if completes {
                    record.typed = typed;
                    record.secret = secret.map(crate::secret::Secret::new);
                    record.set(Status::Approved, None, &self.journal);
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
                    record.set(status, None, &self.journal);
                }
                record.status.clone()
            }
            None => status,
        }
    }

    /// The status channel and deadline of approval `id`, for the round of the call that
    /// opened it: the same requester (compared as people), with the same binding.
    pub fn watch(
        &self,
        id: &str,
        requester: &Person,
        bound_to: &str,
    ) -> Result<(watch::Receiver<Status>, Instant, Subject), Claim> {
        let mut inner = self.lock();
        let record = inner.approvals.get_mut(id).ok_or(Claim::Unknown)?;
        if !record.request.requester.is(requester)
            || digest(&record.request.bound_to) != digest(bound_to)
        {
            return Err(Claim::NotYours);
        }
        record.settle_expiry(Instant::now(), &self.journal);
        Ok((
            record.notify.subscribe(),
            record.deadline,
            record.subject.clone(),
        ))
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

fn role_name(role: &Role) -> &'static str {
    match role {
        Role::Requester => "requester",
        Role::Approver(_) => "approver",
    }
}

/// A refusal as the log spells it.
fn refusal_code(refusal: &Refusal) -> &'static str {
    match refusal {
        Refusal::UnknownLink => "unknown_link",
        Refusal::BadCsrf => "bad_csrf",
        Refusal::LinkUsed => "link_used",
        Refusal::Expired => "expired",
        Refusal::AlreadyDecided => "already_decided",
        Refusal::RequesterCannotApprove => "requester_cannot_approve",
        Refusal::AlreadyApprovedBy(_) => "already_approved_by_them",
        Refusal::TypedMismatch(_) => "typed_mismatch",
        Refusal::SecretMissing => "secret_missing",
        Refusal::SignInRequired => "sign_in_required",
        Refusal::NotYourLink { .. } => "not_your_link",
    }
}

/// 256 bits from the OS random source, as hex.
pub(crate) fn token() -> Result<String, String> {
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
            requester: Person::new("acme", "alice").unwrap(),
            trace_id: "trace".into(),
            expected: None,
            required,
            secret: None,
            valid_for: Duration::from_secs(60),
            bound_to: "deploy production".into(),
        }
    }

    fn people() -> Vec<Person> {
        ["alice", "bob", "carol", "bob"]
            .into_iter()
            .map(|u| Person::new("acme", u).unwrap())
            .chain([Person::new("other", "mallory").unwrap()])
            .collect()
    }

    fn desk() -> Desk {
        Desk::new(Arc::default(), false)
    }

    fn approve() -> Decision {
        Decision::Approve {
            typed: None,
            secret: None,
        }
    }

    #[test]
    fn links_go_to_distinct_approvers_of_the_tenant_other_than_the_requester() {
        let desk = desk();
        let opened = desk.open(request(2), &people()).unwrap();
        let users: Vec<_> = opened
            .approver_tokens
            .iter()
            .map(|(who, _)| who.user())
            .collect();
        assert_eq!(users, ["bob", "carol"]);
        let err = desk.open(request(3), &people()).err().unwrap();
        assert!(err.contains("needs 3 approvers"), "{err}");
    }

    #[test]
    fn two_approvals_from_two_people_and_each_link_once() {
        let desk = desk();
        let opened = desk.open(request(2), &people()).unwrap();
        let (bob, carol) = (&opened.approver_tokens[0].1, &opened.approver_tokens[1].1);
        let csrf = |t: &str| desk.view(t, true).unwrap().csrf;
        assert_eq!(
            desk.decide(
                &opened.requester_token,
                &csrf(&opened.requester_token),
                approve(),
                None
            ),
            Err(Refusal::RequesterCannotApprove)
        );
        assert_eq!(
            desk.decide(bob, "forged", approve(), None),
            Err(Refusal::BadCsrf)
        );
        assert_eq!(
            desk.decide(bob, &csrf(bob), approve(), None),
            Ok(Status::Pending)
        );
        assert_eq!(
            desk.decide(bob, &csrf(bob), approve(), None),
            Err(Refusal::LinkUsed)
        );
        assert_eq!(
            desk.decide("0".repeat(64).as_str(), "x", approve(), None),
            Err(Refusal::UnknownLink)
        );
        assert_eq!(*opened.status.borrow(), Status::Pending);
        assert_eq!(
            desk.decide(carol, &csrf(carol), approve(), None),
            Ok(Status::Approved)
        );
        assert_eq!(*opened.status.borrow(), Status::Approved);
        let (_, _, given) = desk.take_answer(&opened.id).unwrap();
        let who: Vec<_> = given.iter().map(|g| g.who.user()).collect();
        assert_eq!(who, ["bob", "carol"]);
    }

    #[test]
    fn a_closed_approval_takes_no_decision_and_an_approved_one_stays_approved() {
        let desk = desk();
        let opened = desk.open(request(1), &[]).unwrap();
        let t = &opened.requester_token;
        let csrf = desk.view(t, true).unwrap().csrf;
        assert_eq!(desk.close(&opened.id, Status::Expired), Status::Expired);
        assert_eq!(
            desk.decide(t, &csrf, approve(), None),
            Err(Refusal::Expired)
        );

        let opened = desk.open(request(1), &[]).unwrap();
        let t = &opened.requester_token;
        let csrf = desk.view(t, true).unwrap().csrf;
        assert_eq!(desk.decide(t, &csrf, approve(), None), Ok(Status::Approved));
        assert_eq!(desk.close(&opened.id, Status::Expired), Status::Approved);
    }

    #[test]
    fn a_typed_name_and_the_secret_are_checked_before_an_approval_counts() {
        let desk = desk();
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
        let csrf = desk.view(t, true).unwrap().csrf;
        let typed = |typed: &str, secret: &str| Decision::Approve {
            typed: Some(typed.into()),
            secret: Some(secret.into()),
        };
        assert!(matches!(
            desk.decide(t, &csrf, typed("producti\u{200b}on", "tok"), None),
            Err(Refusal::TypedMismatch(_))
        ));
        assert!(matches!(
            desk.decide(t, &csrf, typed("staging", "tok"), None),
            Err(Refusal::TypedMismatch(_))
        ));
        assert_eq!(
            desk.decide(t, &csrf, typed("production", ""), None),
            Err(Refusal::SecretMissing)
        );
        assert_eq!(
            desk.decide(t, &csrf, typed("production", "tok"), None),
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
        let desk = desk();
        let opened = desk.open(request(1), &[]).unwrap();
        let alice = Person::new("acme", "Alice").unwrap();
        let (status, _, _) = desk.watch(&opened.id, &alice, "deploy production").unwrap();
        assert_eq!(*status.borrow(), Status::Pending);
        let refused = |who: &Person, bound: &str| desk.watch(&opened.id, who, bound).err();
        let dave = Person::new("acme", "dave").unwrap();
        let other_tenant = Person::new("other", "alice").unwrap();
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

    #[test]
    fn one_person_under_other_spellings_or_a_look_alike_is_one_person() {
        let desk = desk();
        // The requester listed again as `Alice`, bob twice, and carol's look-alikes.
        let listed: Vec<Person> = [
            "Alice",
            "bob",
            "BOB",
            "\u{FF42}\u{FF4F}\u{FF42}",
            "carol",
            "\u{441}\u{430}rol",
            "al\u{131}ce",
        ]
        .into_iter()
        .map(|u| Person::new("ACME", u).unwrap())
        .collect();
        let opened = desk.open(request(2), &listed).unwrap();
        let users: Vec<_> = opened
            .approver_tokens
            .iter()
            .map(|(who, _)| who.user())
            .collect();
        assert_eq!(
            users,
            ["bob", "carol"],
            "each person once, never the requester"
        );
        let err = desk.open(request(3), &listed).err().unwrap();
        assert!(err.contains("knows 2 other people"), "{err}");
    }

    #[test]
    fn with_sign_in_only_the_links_own_person_decides_and_never_the_requester() {
        let desk = Desk::new(Arc::default(), true);
        let opened = desk.open(request(2), &people()).unwrap();
        let (bob, carol) = (&opened.approver_tokens[0].1, &opened.approver_tokens[1].1);
        let csrf = |t: &str| desk.view(t, false).unwrap().csrf;
        let as_ = |u: &str| Person::new("acme", u).unwrap();
        assert_eq!(
            desk.decide(bob, &csrf(bob), approve(), None),
            Err(Refusal::SignInRequired),
            "the link alone proves nothing"
        );
        assert_eq!(
            desk.decide(bob, &csrf(bob), approve(), Some(&as_("ALICE"))),
            Err(Refusal::RequesterCannotApprove),
            "the requester holding bob's link"
        );
        assert_eq!(
            desk.decide(bob, &csrf(bob), approve(), Some(&as_("carol"))),
            Err(Refusal::NotYourLink {
                link_for: "bob".into()
            })
        );
        assert_eq!(
            desk.decide(bob, &csrf(bob), approve(), Some(&as_("Bob"))),
            Ok(Status::Pending)
        );
        assert_eq!(
            desk.decide(carol, &csrf(carol), approve(), Some(&as_("carol"))),
            Ok(Status::Approved)
        );
    }
}
