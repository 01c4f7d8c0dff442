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
//! with its own CSRF token. A link decides once. Approvals, links and decisions live in the
//! operation store ([`super::ledger`]), whose constraints refuse what must never happen
//! whichever process sends it: a second decision by one person, a decision after the
//! approval ended or after its deadline by the database's clock, a status going back. So a
//! restarted server, or another replica on the same store, serves the same links and finds
//! the same decisions. Only the requester's own later round, for the same binding, may wait
//! for an approval ([`Desk::watch`]), or a later call of theirs take it up ([`Desk::find`]);
//! it learns of a decision taken in this process at once and of one taken elsewhere by
//! reading the store ([`POLL`]). An approved approval lets its effect run once: the store
//! refuses a second use ([`Desk::take_answer`]).
//!
//! A secret entered on the page never reaches the store: it waits in the memory of the
//! process whose page took it, for the call that process runs.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, OnceLock},
    time::{Duration, SystemTime},
};

use sha2::{Digest, Sha256};
use tokio::sync::watch;

pub use super::refusal::Refusal;
pub use super::view::View;
use super::{
    decisions::{self, Rules, SealKey, Tally},
    journal::{Journal, Subject},
    ledger::{self, Stored},
    refusal::code as refusal_code,
    view::view_in,
};
use crate::{
    audit::Event,
    outcome::{ApprovalEvent, Outcome},
    person::Person,
    store::{OperationStore, StoreError, Tx},
};

/// Runs `$body` (with `$tx`, a `&mut Tx`) in one transaction on the desk's store, answering
/// its value: commits and writes its records if it succeeded, rolls back if it failed. A
/// macro rather than a method taking a closure, so the body borrows the caller's locals.
macro_rules! in_tx {
    ($desk:expr, |$tx:ident| $body:block) => {
        match $desk.store().await {
            Err(error) => Err(error),
            Ok(store) => match store.begin().await {
                Err(error) => Err(error),
                Ok(mut tx) => {
                    let done: Result<Done<_>, StoreError> = async {
                        let $tx = &mut tx;
                        $body
                    }
                    .await;
                    $desk.finish(tx, done).await
                }
            },
        }
    };
}

/// How often a waiting call reads the store for a decision taken by another process.
pub(crate) const POLL: Duration = Duration::from_millis(250);

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
    /// The fingerprint of the effect the approvers are shown: a later call whose preview
    /// differs never runs on this approval.
    pub fingerprint: String,
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

/// At most this many refused decisions per link reach the log.
const REFUSALS_RECORDED: i64 = 5;

/// An approval just opened: its id, the requester's link token, and one token per approver.
pub struct Opened {
    pub id: String,
    pub requester_token: String,
    pub approver_tokens: Vec<(Person, String)>,
    /// What the approval's records name.
    pub subject: Subject,
    pub expires_at: SystemTime,
}

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

/// A task as `tasks/get` shows it: the approval it waits for, and the task's own row.
pub struct TaskView {
    pub id: String,
    pub tool: String,
    pub message: Option<String>,
    /// What the approvers are shown (the preview's summary and the terms of reversing it).
    pub summary: String,
    pub requester: Person,
    pub required: u8,
    /// Approvals given so far.
    pub given: usize,
    pub status: Status,
    pub created_at: SystemTime,
    pub expires_at: SystemTime,
    /// The call's arguments, as canonical JSON.
    pub arguments: String,
    /// How the task ended (`completed` or `failed`) and its payload (JSON), once it did.
    pub ended: Option<(String, String)>,
}

/// A decision posted from a link.
pub enum Decision {
    Approve {
        typed: Option<String>,
        secret: Option<String>,
    },
    Reject,
}

/// The approval page's desk: the rules, over the approvals in the operation store.
pub struct Desk {
    /// The guard's operation store, once the page is handed to a guard with one.
    attached: OnceLock<Arc<dyn OperationStore>>,
    /// Where approvals live when no guard with a store took the page: this process only,
    /// made on first use, so a page a guard's store takes never creates it.
    private: tokio::sync::OnceCell<Private>,
    journal: Arc<Journal>,
    /// Deciding needs a signed-in person as well as the link.
    sign_in: bool,
    /// Bumped on every change of an approval's status in this process, to wake its waiters.
    changed: watch::Sender<u64>,
    /// Secrets entered on this process's page, until the waiting call takes them.
    secrets: Mutex<HashMap<String, crate::secret::Secret>>,
    /// The key the requester's link token is derived from (see [`Desk::use_link_key`]).
    link_key: OnceLock<[u8; 32]>,
    /// The grants of the guard's store, listed and revoked in each holder's inbox.
    grants: OnceLock<crate::grant::Grants>,
    /// What links and decisions are sealed with ([`decisions`]).
    seal_key: OnceLock<SealKey>,
    /// The approvers the page lists: the only people besides the requester whose decision
    /// counts.
    listed: Vec<Person>,
}

/// The page's own store and the directory holding it; the store closes before the
/// directory is removed.
struct Private {
    store: Arc<dyn OperationStore>,
    _dir: super::PrivateStore,
}

/// Ended approvals stay readable this long after their deadline, so a late visitor sees
/// the outcome instead of an unknown link; then they are purged.
pub(crate) const KEEP_AFTER_DEADLINE: Duration = Duration::from_secs(600);

/// What the store is asked to do in one transaction, and the records to write once it
/// committed.
type Done<T> = (T, Vec<Event>);

impl Desk {
    /// A desk keeping approvals in the guard's store once [`attach`](Self::attach) hands it
    /// one, and in a private store of its own made on first use until then, recording into
    /// `journal`; with `sign_in`, a decision needs the link's person signed in. Only
    /// `listed` people approve a request of someone else's.
    pub fn new(journal: Arc<Journal>, sign_in: bool, listed: Vec<Person>) -> Self {
        Self {
            attached: OnceLock::new(),
            private: tokio::sync::OnceCell::new(),
            journal,
            sign_in,
            changed: watch::channel(0).0,
            secrets: Mutex::default(),
            link_key: OnceLock::new(),
            grants: OnceLock::new(),
            seal_key: OnceLock::new(),
            listed,
        }
    }

    /// Who may decide, as [`decisions`] counts them.
    fn rules(&self) -> Rules<'_> {
        Rules {
            key: self.seal_key.get(),
            listed: &self.listed,
        }
    }

    /// Lists and revokes the grants in `grants` (the guard's store's) in each holder's inbox.
    pub(crate) fn attach_grants(&self, grants: crate::grant::Grants) {
        // A second guard's grants would be another store's: the first one stays.
        let _ = self.grants.set(grants);
    }

    /// The grants `person` holds, those that still cover calls first; none where the page
    /// has no guard's grants.
    pub async fn grants_of(&self, person: &Person) -> Result<Vec<crate::grant::Grant>, Refusal> {
        let Some(grants) = self.grants.get() else {
            return Ok(Vec::new());
        };
        grants
            .held_by(person, crate::store::now_ms(), 50)
            .await
            .map_err(unavailable)
    }

    /// Revokes `person`'s grant `id`: anyone else's is not found.
    pub async fn revoke_grant(
        &self,
        person: &Person,
        id: &str,
    ) -> Result<crate::grant::Revoked, Refusal> {
        let Some(grants) = self.grants.get() else {
            return Ok(crate::grant::Revoked::NotFound);
        };
        grants
            .revoke(
                id,
                crate::grant::Revoker::Holder(person),
                crate::store::now_ms(),
                &crate::trace::new_id(),
            )
            .await
            .map_err(unavailable)
    }

    /// Derives each requester's link token from the approval id under `key` (the guard's,
    /// which its replicas share to seal request states) instead of drawing it at random:
    /// any replica, and this server after a restart, can then send the requester back to
    /// the same link, while the store keeps only its SHA-256. A desk without one cannot, and
    /// a later call of the requester opens a new approval.
    pub(crate) fn use_link_key(&self, key: [u8; 32]) {
        // Seals made under the same key verify on every replica sharing it.
        let _ = self.seal_key.set(SealKey::derive(&key));
        if self.link_key.set(key).is_err() {
            tracing::warn!(
                "this approval page already derives requesters' links from another guard's key; it keeps that one (give each guard its own page)"
            );
        }
    }

    /// The requester's link token of approval `id`, if this desk derives them.
    pub(crate) fn derived_token(&self, id: &str) -> Option<String> {
        use hmac::{Hmac, KeyInit, Mac};
        let key = self.link_key.get()?;
        let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes keys of any length");
        mac.update(b"guard/v1 requester link\0");
        mac.update(id.as_bytes());
        Some(crate::canonical::hex(&mac.finalize().into_bytes()))
    }

    /// Keeps approvals in `store` from now on (the guard's operation store, shared by its
    /// replicas). A page handed to a second guard keeps the first store.
    pub(crate) fn attach(&self, store: Arc<dyn OperationStore>) {
        if self.attached.set(store).is_err() {
            tracing::warn!(
                "this approval page already keeps its approvals in another guard's store; it keeps that one (give each guard its own page)"
            );
        }
    }

    /// The guard's store, or else the private one, made now if this is its first use (off the
    /// runtime: making it creates a file and migrates it). A private store that cannot be
    /// made fails the use, with the reason and what to do.
    async fn store(&self) -> Result<Arc<dyn OperationStore>, StoreError> {
        if let Some(store) = self.attached.get() {
            return Ok(store.clone());
        }
        let private = self
            .private
            .get_or_try_init(|| async {
                let made = tokio::task::spawn_blocking(super::PrivateStore::open)
                    .await
                    .map_err(|e| StoreError::Other(e.to_string()))?;
                let (dir, store) = made.map_err(|e| StoreError::Other(e.to_string()))?;
                Ok::<_, StoreError>(Private {
                    store: Arc::new(store),
                    _dir: dir,
                })
            })
            .await?;
        Ok(private.store.clone())
    }

    /// The key this desk seals with: the guard's, or one of this process's own where no
    /// guard handed the page its key.
    fn sealing(&self) -> Result<&SealKey, String> {
        if let Some(key) = self.seal_key.get() {
            return Ok(key);
        }
        let key = SealKey::random()?;
        Ok(self.seal_key.get_or_init(|| key))
    }

    /// Wakes when an approval's status changes in this process.
    pub(crate) fn changes(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// Commits `tx` if `done` succeeded, then writes its records (and wakes this process's
    /// waiters when it ended an approval); rolls it back, writing nothing, if it failed.
    async fn finish<T>(&self, tx: Tx, done: Result<Done<T>, StoreError>) -> Result<T, StoreError> {
        match done {
            Ok((value, events)) => {
                tx.commit().await?;
                let ended = !events.is_empty();
                for event in events {
                    self.journal.record(event);
                }
                if ended {
                    self.changed.send_modify(|n| *n = n.wrapping_add(1));
                }
                Ok(value)
            }
            Err(error) => {
                let _ = tx.rollback().await;
                Err(error)
            }
        }
    }

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

    /// The page behind `link`, or `None` for a link never issued (or purged). A `visit`
    /// (a person loading the page) is recorded the first time for each link.
    pub async fn view(&self, link: &str, visit: bool) -> Result<Option<View>, Refusal> {
        self.view_key(&LinkKey::of(link), visit).await
    }

    /// The page behind the link stored under `key`, as [`view`](Self::view) shows it.
    pub(super) async fn view_key(
        &self,
        key: &LinkKey,
        visit: bool,
    ) -> Result<Option<View>, Refusal> {
        (in_tx!(self, |tx| {
            let mut events = Vec::new();
            let view = view_in(
                tx,
                &key.0,
                visit,
                (self.sign_in, &self.rules()),
                &mut events,
            )
            .await?;
            Ok((view, events))
        }))
        .map_err(unavailable)
    }

    /// The person `link` speaks for, if `csrf` is its token: someone signs in through it.
    pub async fn person_of(&self, link: &str, csrf: &str) -> Result<Person, Refusal> {
        let key = digest(link);
        let found = (in_tx!(self, |tx| {
            let Some(link) = ledger::link(tx, &key).await? else {
                return Ok((None, Vec::new()));
            };
            let record = ledger::approval(tx, &link.approval, false).await?;
            Ok((record.map(|r| (link, r)), Vec::new()))
        }))
        .map_err(unavailable)?;
        let (link, record) = found.ok_or(Refusal::UnknownLink)?;
        if digest(csrf) != digest(&link.csrf) {
            return Err(Refusal::BadCsrf);
        }
        Ok(person(&record, &link.role).clone())
    }

    /// Whether `person` may sign in through a link for `link_for` of the approval behind
    /// `link`: only as the link's own person, and never the requester through an
    /// approver's link.
    pub async fn may_sign_in(
        &self,
        link: &str,
        link_for: &Person,
        person: &Person,
    ) -> Result<(), Refusal> {
        if person.is(link_for) {
            return Ok(());
        }
        let key = digest(link);
        let requester = (in_tx!(self, |tx| {
            let Some(link) = ledger::link(tx, &key).await? else {
                return Ok((None, Vec::new()));
            };
            let record = ledger::approval(tx, &link.approval, false).await?;
            Ok((record.map(|r| r.requester), Vec::new()))
        }))
        .map_err(unavailable)?;
        if requester.is_some_and(|r| person.resembles(&r)) {
            return Err(Refusal::RequesterCannotApprove);
        }
        Err(Refusal::NotYourLink {
            link_for: link_for.user().to_owned(),
        })
    }

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
    pub(super) async fn decide_key(
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

    /// What waits for `person`'s decision: each pending approval before its deadline on which
    /// they hold an approver link they have not used, the soonest deadline first, with the
    /// page that link shows. The requester holds no approver link, so their own requests
    /// never appear.
    pub async fn inbox(&self, person: &Person) -> Result<Vec<(String, View)>, Refusal> {
        (in_tx!(self, |tx| {
            let mut events = Vec::new();
            let now = ledger::now(tx).await?;
            let mut inbox = Vec::new();
            for (id, key) in ledger::waiting_for(tx, person, now).await? {
                if let Some(view) =
                    view_in(tx, &key, false, (self.sign_in, &self.rules()), &mut events).await?
                {
                    inbox.push((id, view));
                }
            }
            Ok((inbox, events))
        }))
        .map_err(unavailable)
    }

    /// The key of `person`'s approver link on approval `id`, or `None` when they hold none
    /// (the same answer for an approval that does not exist, so the inbox tells nobody
    /// which approvals exist).
    pub(super) async fn link_of(
        &self,
        id: &str,
        person: &Person,
    ) -> Result<Option<LinkKey>, Refusal> {
        (in_tx!(self, |tx| {
            Ok((
                ledger::link_of(tx, id, person).await?.map(LinkKey),
                Vec::new(),
            ))
        }))
        .map_err(unavailable)
    }

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

    /// Makes approval `id` a task running the call with `arguments` (canonical JSON), if it is
    /// not one already: a tasks client's later call takes up an approval an MRTR call opened.
    pub async fn make_task(&self, id: &str, arguments: &str) -> Result<(), StoreError> {
        in_tx!(self, |tx| {
            ledger::insert_task(tx, id, arguments).await?;
            Ok(((), Vec::new()))
        })
    }

    /// Task `id` as `tasks/get` shows it: the approval where it stands (expired first if
    /// pending past its deadline) and the task's own row. `None` when no task has that id.
    pub async fn task(&self, id: &str) -> Result<Option<TaskView>, StoreError> {
        in_tx!(self, |tx| {
            let mut events = Vec::new();
            let Some(row) = ledger::task(tx, id).await? else {
                return Ok((None, events));
            };
            let Some(record) = settled(tx, id, false, &self.rules(), &mut events).await? else {
                return Ok((None, events));
            };
            let given = given(tx, &record, &self.rules()).await?.len();
            let view = TaskView {
                id: record.id,
                tool: record.tool,
                message: record.message,
                summary: record.summary,
                requester: record.requester,
                required: record.required,
                given,
                status: record.status,
                created_at: ledger::system_time(record.created_at),
                expires_at: ledger::system_time(record.expires_at),
                arguments: row.arguments,
                ended: row.ended,
            };
            Ok((Some(view), events))
        })
    }

    /// Claims the run of decided task `id` for `runner`: true for the one `tasks/get` (across
    /// replicas) that runs it now; false while another runs it, or once it ended. A claim
    /// older than `stale` is taken over (its runner stopped); the approval's use row still
    /// lets the effect run at most once.
    pub async fn claim_run(
        &self,
        id: &str,
        runner: &str,
        stale: Duration,
    ) -> Result<bool, StoreError> {
        let stale = i64::try_from(stale.as_millis()).unwrap_or(i64::MAX / 2);
        in_tx!(self, |tx| {
            let now = ledger::now(tx).await?;
            let claimed = ledger::claim_run(tx, id, runner, now, now.saturating_sub(stale)).await?;
            Ok((claimed, Vec::new()))
        })
    }

    /// Cancels task `id` (`tasks/cancel`): a pending approval is withdrawn, and the task ends
    /// as cancelled with `said` unless a run already claimed it (that run ends it). Either way
    /// nothing runs on the approval afterwards: [`take_answer`](Self::take_answer) hands
    /// nothing over for a cancelled task, and the approval is locked meanwhile, so a call
    /// taking it up and the cancellation take turns. Recorded as the approval's withdrawal,
    /// with `reason` `tasks/cancel`. True if the task ended as cancelled.
    pub async fn cancel_task(&self, id: &str, said: &str) -> Result<bool, StoreError> {
        in_tx!(self, |tx| {
            let mut events = Vec::new();
            let Some(record) = settled(tx, id, true, &self.rules(), &mut events).await? else {
                return Ok((false, events));
            };
            let now = ledger::now(tx).await?;
            if record.status == Status::Pending {
                ledger::end(tx, id, &Status::Withdrawn, None, now).await?;
            }
            let cancelled = ledger::end_task(tx, id, "cancelled", said).await?;
            if record.status == Status::Pending || cancelled {
                let given = given(tx, &record, &self.rules()).await?;
                events.push(
                    ended(
                        &subject(&record),
                        &Status::Withdrawn,
                        None,
                        &given,
                        record.required,
                    )
                    .field("reason", "tasks/cancel")
                    .field("was", status_name(&record.status)),
                );
            }
            Ok((cancelled, events))
        })
    }

    /// Ends task `id` as `ended` (`completed` or `failed`) with `result` (JSON); the first
    /// ending stands, and is what every later `tasks/get` answers.
    pub async fn end_task(&self, id: &str, ended: &str, result: &str) -> Result<(), StoreError> {
        in_tx!(self, |tx| {
            ledger::end_task(tx, id, ended, result).await?;
            Ok(((), Vec::new()))
        })
    }

    fn lock_secrets(&self) -> std::sync::MutexGuard<'_, HashMap<String, crate::secret::Secret>> {
        self.secrets.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The approval `id`, expired first if it is pending past its deadline by the database's
/// clock (recorded in `events`).
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

/// The record of an approval ending as `status`.
fn ended(
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

pub(super) fn subject(record: &Stored) -> Subject {
    Subject {
        tool: record.tool.clone(),
        trace_id: record.trace_id.clone(),
        approval_id: record.id.clone(),
        target: record.target.clone(),
        requester: record.requester.clone(),
    }
}

pub(super) fn person<'a>(record: &'a Stored, role: &'a Role) -> &'a Person {
    match role {
        Role::Requester => &record.requester,
        Role::Approver(who) => who,
    }
}

fn unavailable(error: StoreError) -> Refusal {
    tracing::error!(%error, "the approval store failed");
    Refusal::Unavailable
}

/// A status as the records spell it.
fn status_name(status: &Status) -> &'static str {
    match status {
        Status::Pending => "pending",
        Status::Approved => "approved",
        Status::Rejected { .. } => "rejected",
        Status::Expired => "expired",
        Status::Withdrawn => "withdrawn",
    }
}

/// 256 bits from the OS random source, as hex.
pub(crate) fn token() -> Result<String, String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| format!("the system random source failed: {e}"))?;
    Ok(crate::canonical::hex(&bytes))
}

/// How the store knows a link: the SHA-256 of its token. A token a person holds becomes
/// one only through [`LinkKey::of`]; a key read from the store is one already.
pub(super) struct LinkKey(String);

impl LinkKey {
    fn of(token: &str) -> Self {
        Self(digest(token))
    }
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
            fingerprint: "shown".into(),
        }
    }

    /// The answer handed over, if any.
    fn answer(taken: Taken) -> Option<(Option<String>, Option<crate::secret::Secret>, Vec<Given>)> {
        match taken {
            Taken::Answer(typed, secret, given) => Some((typed, secret, given)),
            Taken::Used | Taken::Missing | Taken::NotApproved { .. } => None,
        }
    }

    fn people() -> Vec<Person> {
        ["alice", "bob", "carol", "bob"]
            .into_iter()
            .map(|u| Person::new("acme", u).unwrap())
            .chain([Person::new("other", "mallory").unwrap()])
            .collect()
    }

    /// A store in a directory of its own: the directory goes with the test.
    fn store() -> (Arc<dyn OperationStore>, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::SqliteStore::open(dir.path().join("guard.db")).unwrap();
        (Arc::new(store), dir)
    }

    fn desk_on(store: &Arc<dyn OperationStore>, sign_in: bool) -> Desk {
        let desk = Desk::new(Arc::default(), sign_in, people());
        desk.attach(store.clone());
        desk
    }

    fn desk() -> (Desk, tempfile::TempDir) {
        let (store, dir) = store();
        (desk_on(&store, false), dir)
    }

    fn approve() -> Decision {
        Decision::Approve {
            typed: None,
            secret: None,
        }
    }

    async fn csrf(desk: &Desk, link: &str) -> String {
        desk.view(link, true).await.unwrap().unwrap().csrf
    }

    /// The private directory, if this desk made one.
    fn private_dir(desk: &Desk) -> Option<std::path::PathBuf> {
        desk.private.get().map(|p| p._dir.0.clone())
    }

    #[tokio::test]
    async fn a_desk_given_a_store_never_makes_one_of_its_own() {
        let (desk, _dir) = desk();
        let opened = desk.open(request(1), &[]).await.unwrap();
        let t = &opened.requester_token;
        let csrf_t = csrf(&desk, t).await;
        desk.decide(t, &csrf_t, approve(), None).await.unwrap();
        desk.status(&opened.id).await.unwrap();
        assert_eq!(private_dir(&desk), None);
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn a_desk_without_a_store_makes_its_own_on_first_use_and_removes_it() {
        use std::os::unix::fs::PermissionsExt;
        let desk = Desk::new(Arc::default(), false, people());
        assert_eq!(private_dir(&desk), None, "made before anything needed it");
        let opened = desk.open(request(1), &[]).await.unwrap();
        let dir = private_dir(&desk).expect("the first approval made the private store");
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700, "{}", dir.display());
        let again = desk.open(request(1), &[]).await.unwrap();
        assert_eq!(private_dir(&desk), Some(dir.clone()), "made once");
        assert_eq!(desk.status(&opened.id).await.unwrap(), Status::Pending);
        assert_eq!(desk.status(&again.id).await.unwrap(), Status::Pending);
        drop(desk);
        assert!(!dir.exists(), "{} outlived the desk", dir.display());
    }

    #[tokio::test]
    async fn links_go_to_distinct_approvers_of_the_tenant_other_than_the_requester() {
        let (desk, _dir) = desk();
        let opened = desk.open(request(2), &people()).await.unwrap();
        let users: Vec<_> = opened
            .approver_tokens
            .iter()
            .map(|(who, _)| who.user())
            .collect();
        assert_eq!(users, ["bob", "carol"]);
        let err = desk.open(request(3), &people()).await.err().unwrap();
        assert!(err.contains("needs 3 approvers"), "{err}");
    }

    #[tokio::test]
    async fn two_approvals_from_two_people_and_each_link_once() {
        let (desk, _dir) = desk();
        let opened = desk.open(request(2), &people()).await.unwrap();
        let (bob, carol) = (&opened.approver_tokens[0].1, &opened.approver_tokens[1].1);
        let requester = &opened.requester_token;
        assert_eq!(
            desk.decide(requester, &csrf(&desk, requester).await, approve(), None)
                .await,
            Err(Refusal::RequesterCannotApprove)
        );
        assert_eq!(
            desk.decide(bob, "forged", approve(), None).await,
            Err(Refusal::BadCsrf)
        );
        assert_eq!(
            desk.decide(bob, &csrf(&desk, bob).await, approve(), None)
                .await,
            Ok(Status::Pending)
        );
        assert_eq!(
            desk.decide(bob, &csrf(&desk, bob).await, approve(), None)
                .await,
            Err(Refusal::LinkUsed)
        );
        assert_eq!(
            desk.decide("0".repeat(64).as_str(), "x", approve(), None)
                .await,
            Err(Refusal::UnknownLink)
        );
        assert_eq!(desk.status(&opened.id).await.unwrap(), Status::Pending);
        assert_eq!(
            desk.decide(carol, &csrf(&desk, carol).await, approve(), None)
                .await,
            Ok(Status::Approved)
        );
        assert_eq!(desk.status(&opened.id).await.unwrap(), Status::Approved);
        // A link still unused, replayed after the approval ended, changes nothing.
        assert_eq!(
            desk.decide(
                requester,
                &csrf(&desk, requester).await,
                Decision::Reject,
                None
            )
            .await,
            Err(Refusal::AlreadyDecided)
        );
        assert_eq!(desk.status(&opened.id).await.unwrap(), Status::Approved);
        let (_, _, given) = answer(desk.take_answer(&opened.id, "t").await).unwrap();
        let who: Vec<_> = given.iter().map(|g| g.who.user()).collect();
        assert_eq!(who, ["bob", "carol"]);
    }

    #[tokio::test]
    async fn a_closed_approval_takes_no_decision_and_an_approved_one_stays_approved() {
        let (desk, _dir) = desk();
        let opened = desk.open(request(1), &[]).await.unwrap();
        let t = &opened.requester_token;
        let csrf_t = csrf(&desk, t).await;
        assert_eq!(
            desk.close(&opened.id, Status::Expired).await,
            Status::Expired
        );
        assert_eq!(
            desk.decide(t, &csrf_t, approve(), None).await,
            Err(Refusal::Expired)
        );

        let opened = desk.open(request(1), &[]).await.unwrap();
        let t = &opened.requester_token;
        let csrf_t = csrf(&desk, t).await;
        assert_eq!(
            desk.decide(t, &csrf_t, approve(), None).await,
            Ok(Status::Approved)
        );
        assert_eq!(
            desk.close(&opened.id, Status::Expired).await,
            Status::Approved
        );
    }

    #[tokio::test]
    async fn a_typed_name_and_the_secret_are_checked_before_an_approval_counts() {
        let (desk, _dir) = desk();
        let opened = desk
            .open(
                Request {
                    expected: Some("production".into()),
                    secret: Some("Deploy token"),
                    ..request(1)
                },
                &[],
            )
            .await
            .unwrap();
        let t = &opened.requester_token;
        let csrf_t = csrf(&desk, t).await;
        let typed = |typed: &str, secret: &str| Decision::Approve {
            typed: Some(typed.into()),
            secret: Some(secret.into()),
        };
        assert!(matches!(
            desk.decide(t, &csrf_t, typed("producti\u{200b}on", "tok"), None)
                .await,
            Err(Refusal::TypedMismatch(_))
        ));
        assert!(matches!(
            desk.decide(t, &csrf_t, typed("staging", "tok"), None).await,
            Err(Refusal::TypedMismatch(_))
        ));
        assert_eq!(
            desk.decide(t, &csrf_t, typed("production", ""), None).await,
            Err(Refusal::SecretMissing)
        );
        assert_eq!(
            desk.decide(t, &csrf_t, typed("production", "tok"), None)
                .await,
            Ok(Status::Approved)
        );
        let (typed, secret, _) = answer(desk.take_answer(&opened.id, "t").await).unwrap();
        assert_eq!(typed.as_deref(), Some("production"));
        assert_eq!(secret.unwrap().expose(), "tok");
        // Handed over once: an approval that needs a secret has no answer without it.
        assert!(answer(desk.take_answer(&opened.id, "t").await).is_none());
    }

    #[tokio::test]
    async fn only_the_requester_with_the_same_binding_may_wait_for_an_approval() {
        let (desk, _dir) = desk();
        let opened = desk.open(request(1), &[]).await.unwrap();
        let alice = Person::new("acme", "Alice").unwrap();
        let watched = desk
            .watch(&opened.id, &alice, "deploy production")
            .await
            .unwrap();
        assert_eq!(watched.expires_at, opened.expires_at);
        assert_eq!(watched.fingerprint.as_deref(), Some("shown"));
        let dave = Person::new("acme", "dave").unwrap();
        let other_tenant = Person::new("other", "alice").unwrap();
        for (who, bound) in [
            (&dave, "deploy production"),
            (&other_tenant, "deploy production"),
            (&alice, "deploy staging"),
        ] {
            assert_eq!(
                desk.watch(&opened.id, who, bound).await.err(),
                Some(Claim::NotYours)
            );
        }
        assert_eq!(
            desk.watch(&"0".repeat(64), &alice, "deploy production")
                .await
                .err(),
            Some(Claim::Unknown)
        );
    }

    #[tokio::test]
    async fn one_person_under_other_spellings_or_a_look_alike_is_one_person() {
        let (desk, _dir) = desk();
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
        let opened = desk.open(request(2), &listed).await.unwrap();
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
        let err = desk.open(request(3), &listed).await.err().unwrap();
        assert!(err.contains("knows 2 other people"), "{err}");
    }

    #[tokio::test]
    async fn with_sign_in_only_the_links_own_person_decides_and_never_the_requester() {
        let (store, _dir) = store();
        let desk = desk_on(&store, true);
        let opened = desk.open(request(2), &people()).await.unwrap();
        let (bob, carol) = (&opened.approver_tokens[0].1, &opened.approver_tokens[1].1);
        let as_ = |u: &str| Person::new("acme", u).unwrap();
        let bob_csrf = csrf(&desk, bob).await;
        assert_eq!(
            desk.decide(bob, &bob_csrf, approve(), None).await,
            Err(Refusal::SignInRequired),
            "the link alone proves nothing"
        );
        assert_eq!(
            desk.decide(bob, &bob_csrf, approve(), Some(&as_("ALICE")))
                .await,
            Err(Refusal::RequesterCannotApprove),
            "the requester holding bob's link"
        );
        assert_eq!(
            desk.decide(bob, &bob_csrf, approve(), Some(&as_("carol")))
                .await,
            Err(Refusal::NotYourLink {
                link_for: "bob".into()
            })
        );
        assert_eq!(
            desk.decide(bob, &bob_csrf, approve(), Some(&as_("Bob")))
                .await,
            Ok(Status::Pending)
        );
        let carol_csrf = csrf(&desk, carol).await;
        assert_eq!(
            desk.decide(carol, &carol_csrf, approve(), Some(&as_("carol")))
                .await,
            Ok(Status::Approved)
        );
    }

    /// A desk started afresh on the same store (a restarted process, or another replica)
    /// serves the same links, keeps the decisions taken before, and takes the rest.
    #[tokio::test]
    async fn another_desk_on_the_same_store_serves_the_same_approval() {
        let (store, _dir) = store();
        // Both hold the guard's key, as a restarted server or a replica does.
        let before = desk_on(&store, false);
        before.use_link_key([7; 32]);
        let opened = before.open(request(2), &people()).await.unwrap();
        let (bob, carol) = (&opened.approver_tokens[0].1, &opened.approver_tokens[1].1);
        assert_eq!(
            before
                .decide(bob, &csrf(&before, bob).await, approve(), None)
                .await,
            Ok(Status::Pending)
        );
        drop(before);

        let after = desk_on(&store, false);
        after.use_link_key([7; 32]);
        let view = after.view(bob, false).await.unwrap().unwrap();
        assert!(view.used, "bob's link stays used");
        assert_eq!(view.given.len(), 1);
        assert_eq!(
            after.decide(bob, &view.csrf, approve(), None).await,
            Err(Refusal::LinkUsed)
        );
        assert_eq!(
            after
                .decide(carol, &csrf(&after, carol).await, approve(), None)
                .await,
            Ok(Status::Approved)
        );
        let alice = Person::new("acme", "alice").unwrap();
        assert!(
            after
                .watch(&opened.id, &alice, "deploy production")
                .await
                .is_ok()
        );
        let (_, _, given) = answer(after.take_answer(&opened.id, "t").await).unwrap();
        assert_eq!(given.len(), 2);
    }

    /// The deadline is the database's: an approval past it reads as expired, is recorded
    /// once as such, and takes no decision.
    #[tokio::test]
    async fn an_approval_past_its_deadline_expires_and_takes_no_decision() {
        let (desk, _dir) = desk();
        let opened = desk
            .open(
                Request {
                    valid_for: Duration::from_millis(50),
                    ..request(1)
                },
                &[],
            )
            .await
            .unwrap();
        let t = &opened.requester_token;
        let csrf_t = csrf(&desk, t).await;
        tokio::time::sleep(Duration::from_millis(120)).await;
        assert_eq!(
            desk.decide(t, &csrf_t, approve(), None).await,
            Err(Refusal::Expired)
        );
        assert_eq!(desk.status(&opened.id).await.unwrap(), Status::Expired);
        assert!(answer(desk.take_answer(&opened.id, "t").await).is_none());
    }

    /// A later call of the requester finds the approval by person and binding, with the
    /// same link (derived from the id under the key), until it is used, and never when it
    /// ended otherwise.
    #[tokio::test]
    async fn an_approval_whose_secret_another_process_holds_is_not_taken_up() {
        let (store, _dir) = store();
        let (served, other) = (desk_on(&store, false), desk_on(&store, false));
        for desk in [&served, &other] {
            desk.use_link_key([7; 32]);
        }
        let opened = served
            .open(
                Request {
                    secret: Some("Deploy token"),
                    ..request(1)
                },
                &[],
            )
            .await
            .unwrap();
        let t = &opened.requester_token;
        let secret = Decision::Approve {
            typed: None,
            secret: Some("s3cret".into()),
        };
        served
            .decide(t, &csrf(&served, t).await, secret, None)
            .await
            .unwrap();
        let alice = Person::new("acme", "alice").unwrap();
        // The process that took the secret runs it; another one (a replica, or this one
        // restarted) lets a new call ask anew instead of finding an approval it cannot run.
        assert!(
            other
                .find(&alice, "deploy production")
                .await
                .unwrap()
                .is_none()
        );
        let found = served
            .find(&alice, "deploy production")
            .await
            .unwrap()
            .unwrap();
        assert_eq!((found.id, found.status), (opened.id, Status::Approved));
    }

    #[tokio::test]
    async fn the_requesters_next_call_finds_the_approval_and_it_runs_once() {
        let (store, _dir) = store();
        let desk = desk_on(&store, false);
        desk.use_link_key([7; 32]);
        let opened = desk.open(request(1), &[]).await.unwrap();
        let alice = Person::new("ACME", "\u{FF21}lice").unwrap();
        let found = desk
            .find(&alice, "deploy production")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(found.id, opened.id);
        assert_eq!(found.status, Status::Pending);
        assert_eq!(found.fingerprint.as_deref(), Some("shown"));
        assert_eq!(
            found.requester_token.as_deref(),
            Some(opened.requester_token.as_str())
        );
        // Another replica with the same key derives the same link; one with another key
        // cannot, and finds no link to send the requester to.
        let replica = desk_on(&store, false);
        replica.use_link_key([7; 32]);
        let seen = replica
            .find(&alice, "deploy production")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(seen.requester_token, found.requester_token);
        let stranger = desk_on(&store, false);
        stranger.use_link_key([8; 32]);
        let unseen = stranger
            .find(&alice, "deploy production")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(unseen.requester_token, None);
        for (who, bound) in [
            (Person::new("acme", "dave").unwrap(), "deploy production"),
            (
                Person::new("other-tenant", "alice").unwrap(),
                "deploy production",
            ),
            (alice.clone(), "deploy staging"),
        ] {
            assert!(desk.find(&who, bound).await.unwrap().is_none());
        }

        let t = &opened.requester_token;
        desk.decide(t, &csrf(&desk, t).await, approve(), None)
            .await
            .unwrap();
        let found = replica
            .find(&alice, "deploy production")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(found.status, Status::Approved);
        assert!(answer(replica.take_answer(&opened.id, "first").await).is_some());
        assert!(matches!(
            desk.take_answer(&opened.id, "second").await,
            Taken::Used
        ));
        assert!(
            desk.find(&alice, "deploy production")
                .await
                .unwrap()
                .is_none()
        );

        let withdrawn = desk.open(request(1), &[]).await.unwrap();
        desk.close(&withdrawn.id, Status::Withdrawn).await;
        assert!(
            desk.find(&alice, "deploy production")
                .await
                .unwrap()
                .is_none()
        );
    }

    /// A task keeps the arguments it was made with, runs under one claim at a time (a stale
    /// claim is taken over), ends once, and a cancellation yields to a claimed run; a task
    /// cancelled before any run hands its approval's answer to nobody.
    #[tokio::test]
    async fn a_task_runs_under_one_claim_ends_once_and_a_cancelled_one_runs_nothing() {
        let (desk, _dir) = desk();
        let minute = Duration::from_secs(60);
        let opened = desk.open(request(1), &[]).await.unwrap();
        desk.make_task(&opened.id, "{}").await.unwrap();
        desk.make_task(&opened.id, r#"{"x":1}"#).await.unwrap();
        let view = desk.task(&opened.id).await.unwrap().unwrap();
        assert_eq!(
            (view.arguments.as_str(), view.status),
            ("{}", Status::Pending)
        );
        let t = &opened.requester_token;
        desk.decide(t, &csrf(&desk, t).await, approve(), None)
            .await
            .unwrap();
        assert!(desk.claim_run(&opened.id, "one", minute).await.unwrap());
        assert!(!desk.claim_run(&opened.id, "two", minute).await.unwrap());
        assert!(
            desk.claim_run(&opened.id, "three", Duration::ZERO)
                .await
                .unwrap(),
            "a stale claim is taken over"
        );
        assert!(
            !desk.cancel_task(&opened.id, "{}").await.unwrap(),
            "a claimed run ends the task itself"
        );
        desk.end_task(&opened.id, "completed", r#"{"content":[]}"#)
            .await
            .unwrap();
        desk.end_task(&opened.id, "failed", "{}").await.unwrap();
        let view = desk.task(&opened.id).await.unwrap().unwrap();
        assert_eq!(
            view.ended,
            Some(("completed".to_owned(), r#"{"content":[]}"#.to_owned()))
        );
        assert!(
            !desk
                .claim_run(&opened.id, "four", Duration::ZERO)
                .await
                .unwrap()
        );

        let cancelled = desk.open(request(1), &[]).await.unwrap();
        desk.make_task(&cancelled.id, "{}").await.unwrap();
        let t = &cancelled.requester_token;
        desk.decide(t, &csrf(&desk, t).await, approve(), None)
            .await
            .unwrap();
        assert!(desk.cancel_task(&cancelled.id, "{}").await.unwrap());
        assert!(answer(desk.take_answer(&cancelled.id, "t").await).is_none());
        assert!(
            !desk
                .claim_run(&cancelled.id, "r", Duration::ZERO)
                .await
                .unwrap()
        );
        assert!(desk.task(&"0".repeat(64)).await.unwrap().is_none());
        // Not a task: an approval without one is no task.
        let plain = desk.open(request(1), &[]).await.unwrap();
        assert!(desk.task(&plain.id).await.unwrap().is_none());
    }

    #[tokio::test]
    async fn the_inbox_lists_its_holders_grants_and_only_the_holder_revokes_them() {
        use crate::grant::{Grants, Revoked};
        let (store, _dir) = store();
        let desk = desk_on(&store, true);
        let alice = Person::new("acme", "Alice").unwrap();
        let bob = Person::new("acme", "bob").unwrap();
        // No grants attached: an empty list, and nothing to revoke.
        assert!(desk.grants_of(&alice).await.unwrap().is_empty());
        let grants = Grants::new(
            store.clone(),
            crate::audit::AuditLog::shared(store.clone(), "test"),
        );
        desk.attach_grants(grants.clone());
        let opened = grants
            .open(
                &alice,
                "delete_file",
                "files directly in folder logs/",
                &serde_json::json!({"confirm": true}),
                (5, Duration::from_secs(600)),
                crate::store::now_ms(),
                "t",
            )
            .await
            .unwrap();
        let listed = desk.grants_of(&alice).await.unwrap();
        assert_eq!(listed, std::slice::from_ref(&opened));
        assert!(
            desk.grants_of(&bob).await.unwrap().is_empty(),
            "bob holds none"
        );
        assert_eq!(
            desk.revoke_grant(&bob, &opened.grant_id).await.unwrap(),
            Revoked::NotFound,
            "anyone else's grant is not found"
        );
        let Revoked::Now(revoked) = desk.revoke_grant(&alice, &opened.grant_id).await.unwrap()
        else {
            panic!("alice revokes her own grant");
        };
        assert_eq!(
            revoked.revoked.map(|(_, by)| by),
            Some("acme/alice".to_owned())
        );
        assert!(!desk.grants_of(&alice).await.unwrap()[0].active_at(crate::store::now_ms()));
    }
}
