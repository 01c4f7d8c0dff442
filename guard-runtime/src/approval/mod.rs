//! The approval page: a human approves a destructive call on a web page guard serves, reached
//! through URL-mode elicitation, instead of in a form inside the client.
//!
//! `#[destructive(approve = "url", ...)]` sends the client an `elicitation/create` with
//! `mode: "url"` pointing at this page, waits for the decision, and completes the elicitation
//! with `notifications/elicitation/complete`. On protocol 2026-07-28 the same elicitation is
//! the input request of an MRTR round whose sealed state names the approval; each retry waits
//! at most [`ROUND_WAIT`] for the decision, then asks again with the same link, for at most
//! [`WAITING_ROUNDS`] rounds, and never sends that notification. The requester's next call
//! for the same binding takes a pending (or approved, not yet used) approval up instead of
//! opening another: its link is derived from the approval id under the guard's key, so any
//! replica sharing the key serves it again. With `approvers = 2` two people other than the
//! requester must approve, each through a one-time link of their own that guard hands to a
//! [`Notifier`] the requester does not control (a signed [`WebhookNotifier`], a
//! [`FileDropNotifier`], or the deployment's own [`ApprovalPageBuilder::deliver_links`]);
//! the requester's page shows who has approved so far. With
//! [`ApprovalPageBuilder::sign_in_approvers`] a link alone decides nothing: whoever decides
//! must also be signed in, by the deployment's identity provider, as the link's person, and
//! each approver has an inbox at `/approval/inbox`: every request waiting for them (tool,
//! target, requester, deadline, approvals so far), decided there through their own link. With
//! `secret = "..."` the page asks for a password or token that reaches the handler as a
//! [`crate::secret::Secret`], never the model.
//!
//! People are compared in canonical form ([`crate::person`]): approvers are checked when the
//! page starts (a name with invisible characters, one that mixes scripts, or two names for
//! one person refuse to start), and the two-person rule counts people, not spellings.
//!
//! The page listens on loopback by default; behind a reverse proxy, bind where the proxy
//! reaches it and set the public base URL the links carry ([`ApprovalPageBuilder::public_base`]).
//! It answers only requests whose `Host` names it, and every answer, its errors included,
//! forbids framing, caching and anything from elsewhere.
//!
//! Approvals live in the store of the [`Guard`](crate::guard::Guard) the page is handed to,
//! the one that holds its audit log ([`Guard::with_operations`](crate::guard::Guard::with_operations)
//! or [`Guard::with_audit`](crate::guard::Guard::with_audit)):
//! the request, its links (as SHA-256 digests), each decision and the status, with database
//! constraints that refuse a second decision by one person, a decision after the end or after
//! the deadline by the database's clock, and a status going back; and a call counts only the
//! decisions guard sealed when it took them, whatever the tables say. A restarted server serves
//! the same links, and an approval decided while it was down is found by the requester's next
//! round; replicas sharing a PostgreSQL store share approvals, so the page may be served by
//! one and the retry land on another. A page whose guard keeps no log keeps its
//! approvals in a SQLite file of its own, removed when the page stops: they end with the
//! process. A secret entered on the page never reaches the store: it stays in the memory of
//! the process that served the page, so only a call that process runs can use it.

mod decisions;
mod delivery;
mod desk;
mod file_drop;
mod http;
mod journal;
mod ledger;
mod refusal;
mod seal;
mod settle;
mod shield;
mod sign_in;
mod state;
mod view;
pub mod webhook;

use std::{
    net::{Ipv4Addr, SocketAddr},
    sync::Arc,
    time::SystemTime,
};

use tokio::task::JoinHandle;
use url::Url;

use crate::{
    identity::{Identity, IdentityProvider},
    person::Person,
};

pub use delivery::{Delivery, Notifier};
pub(crate) use desk::{Claim, Desk, KEEP_AFTER_DEADLINE, Opened, POLL, Request, Taken, TaskView};
pub use file_drop::FileDropNotifier;
pub use sign_in::ApproverSignIn;
pub(crate) use state::Status;
pub use webhook::WebhookNotifier;

/// How long one round of a call approved on the page waits for the decision on protocol
/// 2026-07-28, which holds no request open for long: approvers take minutes, so a round that
/// is still pending after this answers the client with the same URL and a fresh state, and
/// the client's retry waits again. Twelve seconds keeps each request far below common HTTP
/// proxy and client timeouts (30–60 s) while a decision taken meanwhile still reaches the
/// waiting round at once. [`Guard::approval_round_wait`](crate::guard::Guard::approval_round_wait)
/// can only shorten it.
pub const ROUND_WAIT: std::time::Duration = std::time::Duration::from_secs(12);

/// How many retries of one call on protocol 2026-07-28 wait for a pending approval before
/// the call ends as `approval_pending`: with the first round, nine requests, one fewer than
/// the ten rounds rmcp's client drives before it fails the call
/// ([`DEFAULT_MRTR_MAX_ROUNDS`](rmcp::model::DEFAULT_MRTR_MAX_ROUNDS), read from rmcp so an
/// upgrade that lowers it lowers this too), so the client gets guard's answer, never its own
/// round-limit error. About a minute and a half in all; calling the tool again continues the
/// same approval.
pub const WAITING_ROUNDS: u8 = (rmcp::model::DEFAULT_MRTR_MAX_ROUNDS - 2) as u8;

/// The text of the URL elicitation that sends the requester to the page: the tool's header,
/// the effect as the approvers see it (`summary`), and who must approve. The MRTR rounds and
/// a task's `tasks/get` ask it alike.
pub(crate) fn question(message: Option<&str>, summary: &str, required: u8) -> String {
    let mut text = String::new();
    if let Some(header) = message {
        text.push_str(header);
        text.push_str("\n\n");
    }
    text.push_str(summary);
    text.push_str(&if required > 1 {
        format!("\n\n{required} people other than you must approve this on the approval page.")
    } else {
        "\n\nOpen the approval page to approve or reject.".to_owned()
    });
    text
}

/// A one-time approver link for a [`Notifier`] to deliver to one person: whoever holds it
/// approves as `approver` (unless approvers must also sign in), so it must reach that person
/// only, never the requester.
#[derive(Clone)]
pub struct ApproverLink {
    /// The person this link approves as, as configured.
    pub approver: Identity,
    /// The link itself.
    pub url: Url,
    /// The tool waiting for approval.
    pub tool: &'static str,
    /// The target the tool would act on.
    pub target: String,
    /// What would happen, as the page shows it.
    pub summary: String,
    /// Who asked: tenant and user in canonical form.
    pub requester: Person,
    /// The approval this link belongs to, as the audit log names it.
    pub approval_id: String,
    /// When the approval expires.
    pub expires_at: SystemTime,
}

impl std::fmt::Debug for ApproverLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApproverLink")
            .field("approver", &self.approver.user)
            .field("tool", &self.tool)
            .field("target", &self.target)
            .field("approval_id", &self.approval_id)
            .finish_non_exhaustive()
    }
}

/// One configured approver: as given, and as the person it names.
#[derive(Clone)]
struct Approver {
    identity: Identity,
    person: Person,
}

pub(crate) struct Shared {
    pub(crate) desk: Desk,
    /// The origin a POST must come from: the public base URL's scheme, host and port.
    pub(crate) origin: String,
    identity: Arc<dyn IdentityProvider>,
    approvers: Vec<Approver>,
    notifier: Option<Arc<dyn Notifier>>,
    journal: Arc<journal::Journal>,
    sign_in: Option<sign_in::Sessions>,
    /// The `Host` values the page answers to.
    hosts: Arc<Vec<String>>,
    base: Url,
}

/// A directory of the page's own holding its private store, removed with the desk that made
/// it (when the page stops).
struct PrivateStore(std::path::PathBuf);

impl PrivateStore {
    fn open() -> Result<(Self, crate::store::SqliteStore), ApprovalPageError> {
        let name = desk::token().map_err(ApprovalPageError::NoRandomness)?;
        let dir = std::env::temp_dir().join(format!("guard-approvals-{}", &name[..16]));
        // Its own, entered by this user only: the file holds the links' CSRF tokens, and a
        // directory someone made under that name before is refused, never reused.
        let mut create = std::fs::DirBuilder::new();
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut create, 0o700);
        let store = create
            .create(&dir)
            .map_err(|e| e.to_string())
            .and_then(|()| {
                crate::store::SqliteStore::open(dir.join("approvals.db")).map_err(|e| e.to_string())
            })
            .map_err(|problem| ApprovalPageError::Store {
                dir: dir.clone(),
                problem,
            })?;
        Ok((Self(dir), store))
    }
}

impl Drop for PrivateStore {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A running approval page. Hand it to [`Guard::with_approval_page`](crate::guard::Guard::with_approval_page); the page stops
/// when the last handle to it is dropped.
pub struct ApprovalPage {
    shared: Arc<Shared>,
    local: SocketAddr,
    server: JoinHandle<()>,
}

/// Why the approval page could not start.
#[derive(thiserror::Error)]
pub enum ApprovalPageError {
    /// The address could not be bound.
    #[error(
        "the approval page cannot listen on {addr}: {source}; choose a free address with ApprovalPageBuilder::bind"
    )]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// What the system said.
        source: std::io::Error,
    },
    /// A non-loopback bind without a public base URL.
    #[error(
        "the approval page binds {0}, which is not loopback: set ApprovalPageBuilder::public_base to the https URL your reverse proxy serves it at, so links and the origin check name that URL"
    )]
    NoPublicBase(SocketAddr),
    /// The public base URL cannot carry links.
    #[error(
        "the approval page's public base {0} is not an http(s) URL with a host; give the URL the browser opens, e.g. https://approve.example.com/"
    )]
    BadPublicBase(Url),
    /// An approver's name is refused, or names someone already listed.
    #[error("approver {user:?} of tenant {tenant:?}: {problem}")]
    Approver {
        /// The tenant as configured.
        tenant: String,
        /// The user as configured.
        user: String,
        /// What is wrong and what to do.
        problem: String,
    },
    /// A `Host` value to allow is not a host with an optional port.
    #[error(
        "the approval page cannot allow the Host {0:?}: give a host name or address with an optional port, e.g. approve.example.com or 127.0.0.1:8443"
    )]
    BadHost(String),
    /// The page's own store (for a guard without an operation store) could not be made. The
    /// page makes it on its first approval, not in `start`, so this reaches the operator as
    /// the text of that approval's refusal and in the log.
    #[error(
        "the approval page cannot keep approvals in {dir}: {problem}; make the system's temporary directory writable, or hand the page to a guard with an operation store"
    )]
    Store {
        /// Where it tried.
        dir: std::path::PathBuf,
        /// What went wrong.
        problem: String,
    },
    /// The key of the approvers' sessions could not be made.
    #[error("the approval page cannot make its session key: {0}; check the system random source")]
    NoRandomness(String),
}

/// Its sentence, as [`Display`](std::fmt::Display) says it: `main() -> Result<(), Box<dyn
/// Error>>` prints an error returned at start-up with `Debug`, and should say what to do.
impl std::fmt::Debug for ApprovalPageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

/// How an [`ApprovalPage`] is set up.
pub struct ApprovalPageBuilder {
    bind: SocketAddr,
    public_base: Option<Url>,
    identity: Arc<dyn IdentityProvider>,
    approvers: Vec<Identity>,
    notifier: Option<Arc<dyn Notifier>>,
    sign_in: Option<Arc<dyn ApproverSignIn>>,
    hosts: Vec<String>,
}

impl ApprovalPage {
    /// A page whose requesters are identified by `identity` (the provider the server's tools
    /// use: the environment for stdio, the bearer token over HTTP).
    pub fn builder(identity: impl IdentityProvider + 'static) -> ApprovalPageBuilder {
        ApprovalPageBuilder {
            bind: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
            public_base: None,
            identity: Arc::new(identity),
            approvers: Vec::new(),
            notifier: None,
            sign_in: None,
            hosts: Vec::new(),
        }
    }

    /// The URL links start with.
    pub fn base_url(&self) -> &Url {
        &self.shared.base
    }

    /// The address the page listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    pub(crate) fn shared(&self) -> &Shared {
        &self.shared
    }
}

impl Drop for ApprovalPage {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl std::fmt::Debug for ApprovalPage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApprovalPage")
            .field("base_url", &self.shared.base.as_str())
            .finish_non_exhaustive()
    }
}

impl ApprovalPageBuilder {
    /// Where the page listens (default `127.0.0.1` on a free port). Anything but loopback
    /// needs [`public_base`](Self::public_base).
    pub fn bind(mut self, addr: SocketAddr) -> Self {
        self.bind = addr;
        self
    }

    /// The URL the browser opens, when a reverse proxy serves the page.
    pub fn public_base(mut self, url: Url) -> Self {
        self.public_base = Some(url);
        self
    }

    /// Another `Host` the page answers to besides the public base's (a proxy that forwards
    /// its upstream name). Any other `Host` is refused before the page is rendered.
    pub fn allow_host(mut self, host: impl Into<String>) -> Self {
        self.hosts.push(host.into());
        self
    }

    /// Someone who may approve in a two-person approval (never for their own requests, and
    /// only within their tenant). Checked at [`start`](Self::start): a name with invisible
    /// characters or mixed scripts, or a second name for someone already listed, is refused.
    pub fn approver(mut self, identity: Identity) -> Self {
        self.approvers.push(identity);
        self
    }

    /// How each approver's one-time link reaches them: a channel the requester does not
    /// control. Without one, tools needing more than one approver fail closed.
    pub fn notify(mut self, notifier: impl Notifier) -> Self {
        self.notifier = Some(Arc::new(notifier));
        self
    }

    /// Hands each approver's link to `deliver` (chat, mail), which must not let the
    /// requester see it. Shorthand for [`notify`](Self::notify) with a function that
    /// always succeeds.
    pub fn deliver_links(self, deliver: impl Fn(ApproverLink) + Send + Sync + 'static) -> Self {
        self.notify(delivery::Function::new(deliver))
    }

    /// Requires whoever decides on the page to be signed in, by the deployment's identity
    /// provider, as the person the link is for: by an `Authorization: Bearer` header (an
    /// authenticating proxy in front of the page adds it) or by pasting an access token on
    /// the page once, which starts a signed session cookie. A link the requester has seen
    /// then decides nothing, and the requester, signed in as themself, approves nothing.
    /// It also opens each approver's inbox (`/approval/inbox`): the pending requests on which
    /// the signed-in person holds an approver link they have not used, decided there under
    /// the same rules; nobody else's, and never the requester's own.
    pub fn sign_in_approvers(mut self, verifier: impl ApproverSignIn) -> Self {
        self.sign_in = Some(Arc::new(verifier));
        self
    }

    /// Binds the address and serves the page.
    pub async fn start(self) -> Result<ApprovalPage, ApprovalPageError> {
        if !self.bind.ip().is_loopback() && self.public_base.is_none() {
            return Err(ApprovalPageError::NoPublicBase(self.bind));
        }
        let approvers = approvers(self.approvers)?;
        let listener = tokio::net::TcpListener::bind(self.bind)
            .await
            .map_err(|source| ApprovalPageError::Bind {
                addr: self.bind,
                source,
            })?;
        let local = listener
            .local_addr()
            .map_err(|source| ApprovalPageError::Bind {
                addr: self.bind,
                source,
            })?;
        let base = match self.public_base {
            Some(base) => base,
            None => Url::parse(&format!("http://{local}/")).expect("a socket address is a host"),
        };
        if !matches!(base.scheme(), "http" | "https") || base.host_str().is_none() {
            return Err(ApprovalPageError::BadPublicBase(base));
        }
        let hosts = shield::hosts(&base, local, &self.hosts)?;
        let origin = base.origin().ascii_serialization();
        let journal = Arc::new(journal::Journal::default());
        let sign_in = match self.sign_in {
            Some(verifier) => Some(
                sign_in::Sessions::new(verifier, &base).map_err(ApprovalPageError::NoRandomness)?,
            ),
            None => None,
        };
        let shared = Arc::new(Shared {
            desk: Desk::new(
                journal.clone(),
                sign_in.is_some(),
                approvers.iter().map(|a| a.person.clone()).collect(),
            ),
            origin,
            identity: self.identity,
            approvers,
            notifier: self.notifier,
            journal,
            sign_in,
            hosts,
            base,
        });
        let app = http::router(shared.clone());
        let server = tokio::spawn(async move {
            if let Err(error) = axum::serve(listener, app).await {
                tracing::error!(%error, "the approval page stopped");
            }
        });
        Ok(ApprovalPage {
            shared,
            local,
            server,
        })
    }
}

/// The configured approvers as people: each name allowed for configuration, each person
/// once (two spellings or look-alikes of one name are a mistake to fix, not two approvers).
fn approvers(listed: Vec<Identity>) -> Result<Vec<Approver>, ApprovalPageError> {
    let mut out: Vec<Approver> = Vec::new();
    for identity in listed {
        let refuse = |problem: String| ApprovalPageError::Approver {
            tenant: identity.tenant.clone(),
            user: identity.user.clone(),
            problem,
        };
        let person = Person::configured(&identity.tenant, &identity.user)
            .map_err(|e| refuse(e.to_string()))?;
        if let Some(earlier) = out.iter().find(|a| a.person.resembles(&person)) {
            return Err(refuse(format!(
                "names the same person as approver {:?} (or one that could be taken for them); list each person once",
                earlier.identity.user
            )));
        }
        out.push(Approver { identity, person });
    }
    Ok(out)
}

impl Shared {
    /// The requester of a call, from the page's identity provider.
    pub(crate) fn identify(
        &self,
        request: &rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<Identity, crate::error::ToolError> {
        self.identity.identify(request)
    }

    /// Records the page's events in `log` (the guard's), from now on.
    #[cfg(any(feature = "sqlite", feature = "postgres"))]
    pub(crate) fn attach_audit(&self, log: Arc<crate::audit::Pipeline>) {
        self.journal.attach(log);
    }

    /// Lists and revokes `grants` (the guard's) in the inbox, from now on.
    pub(crate) fn attach_grants(&self, grants: crate::grant::Grants) {
        self.desk.attach_grants(grants);
    }

    /// Keeps approvals in `store` (the guard's operation store), from now on.
    pub(crate) fn attach_store(&self, store: Arc<dyn crate::store::OperationStore>) {
        self.desk.attach(store);
    }

    /// Opens an approval, sends the approvers' links on their way, and returns the
    /// requester's URL.
    pub(crate) async fn open(&self, request: Request) -> Result<(Opened, Url), String> {
        if request.required > 1 && self.notifier.is_none() {
            return Err(format!(
                "{} needs {} approvers, and the approval page has no way to reach them: configure ApprovalPageBuilder::notify",
                request.tool, request.required
            ));
        }
        let summary = request.summary.clone();
        let tool = request.tool;
        let people: Vec<Person> = self.approvers.iter().map(|a| a.person.clone()).collect();
        let opened = self.desk.open(request, &people).await?;
        let url = self.link(&opened.requester_token);
        if let Some(notifier) = &self.notifier {
            for (person, token) in &opened.approver_tokens {
                let Some(approver) = self.approvers.iter().find(|a| a.person.is(person)) else {
                    continue;
                };
                let link = ApproverLink {
                    approver: approver.identity.clone(),
                    url: self.link(token),
                    tool,
                    target: opened.subject.target.clone(),
                    summary: summary.clone(),
                    requester: opened.subject.requester.clone(),
                    approval_id: opened.id.clone(),
                    expires_at: opened.expires_at,
                };
                delivery::send(
                    notifier.clone(),
                    self.journal.clone(),
                    opened.subject.clone(),
                    person.clone(),
                    link,
                );
            }
        }
        Ok((opened, url))
    }

    /// The page's URL of the link with `token`.
    pub(crate) fn link(&self, token: &str) -> Url {
        self.base
            .join(&format!("approval/{token}"))
            .expect("a hex token is a valid path segment")
    }
}

#[cfg(test)]
mod errors {
    use super::ApprovalPageError;

    #[test]
    fn a_start_up_error_prints_its_sentence_with_debug() {
        let error = ApprovalPageError::NoPublicBase(([0, 0, 0, 0], 8080).into());
        assert_eq!(format!("{error:?}"), error.to_string());
        assert!(format!("{error:?}").contains("public_base"));
    }
}

#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::PrivateStore;

    #[test]
    fn the_private_store_is_its_users_alone_and_goes_with_the_page() {
        let (private, store) = PrivateStore::open().unwrap();
        let dir = private.0.clone();
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700, "{}", dir.display());
        drop(store);
        drop(private);
        assert!(!dir.exists(), "{} outlived the page", dir.display());
    }
}
