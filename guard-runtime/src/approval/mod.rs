//! The approval page: a human approves a destructive call on a web page guard serves, reached
//! through URL-mode elicitation, instead of in a form inside the client.
//!
//! `#[destructive(approve = "url", ...)]` sends the client an `elicitation/create` with
//! `mode: "url"` pointing at this page, waits for the decision, and completes the elicitation
//! with `notifications/elicitation/complete`. On protocol 2026-07-28 the same elicitation is
//! the input request of an MRTR round whose sealed state names the approval, and the client's
//! retry waits for the decision. With `approvers = 2` two people other than the
//! requester must approve, each through a one-time link of their own that guard hands to the
//! deployment ([`ApprovalPageBuilder::deliver_links`]); the requester's page shows who has
//! approved so far. With `secret = "..."` the page asks for a password or token that reaches
//! the handler as a [`crate::secret::Secret`], never the model.
//!
//! The page listens on loopback by default; behind a reverse proxy, bind where the proxy
//! reaches it and set the public base URL the links carry ([`ApprovalPageBuilder::public_base`]).
//!
//! Approvals in progress live in this process, like the call waiting for them: after a
//! restart the waiting call is gone and its links are unknown (refused), so nothing runs on a
//! decision made for a call that no longer exists; an MRTR retry naming an approval this
//! process does not hold is refused the same way.

mod desk;
mod http;

use std::{
    net::{Ipv4Addr, SocketAddr},
    sync::Arc,
};

use tokio::task::JoinHandle;
use url::Url;

use crate::identity::{Identity, IdentityProvider};

pub(crate) use desk::{Claim, Desk, Opened, Request, Status};

/// A one-time approver link for the deployment to deliver to one person (by chat, by mail):
/// whoever holds it approves as `approver`, so it must reach that person only.
#[derive(Clone)]
pub struct ApproverLink {
    /// The person this link approves as.
    pub approver: Identity,
    /// The link itself.
    pub url: Url,
    /// The tool waiting for approval.
    pub tool: &'static str,
    /// The target the tool would act on.
    pub target: String,
}

impl std::fmt::Debug for ApproverLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApproverLink")
            .field("approver", &self.approver.user)
            .field("tool", &self.tool)
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}

type Deliver = Arc<dyn Fn(ApproverLink) + Send + Sync>;

pub(crate) struct Shared {
    pub(crate) desk: Desk,
    /// The origin a POST must come from: the public base URL's scheme, host and port.
    pub(crate) origin: String,
    identity: Arc<dyn IdentityProvider>,
    approvers: Vec<Identity>,
    deliver: Option<Deliver>,
    base: Url,
}

/// A running approval page. Hand it to [`Guard::with_approval_page`](crate::guard::Guard::with_approval_page); the page stops
/// when the last handle to it is dropped.
pub struct ApprovalPage {
    shared: Arc<Shared>,
    local: SocketAddr,
    server: JoinHandle<()>,
}

/// Why the approval page could not start.
#[derive(Debug, thiserror::Error)]
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
}

/// How an [`ApprovalPage`] is set up.
pub struct ApprovalPageBuilder {
    bind: SocketAddr,
    public_base: Option<Url>,
    identity: Arc<dyn IdentityProvider>,
    approvers: Vec<Identity>,
    deliver: Option<Deliver>,
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
            deliver: None,
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

    /// Someone who may approve in a two-person approval (never for their own requests, and
    /// only within their tenant).
    pub fn approver(mut self, identity: Identity) -> Self {
        self.approvers.push(identity);
        self
    }

    /// How each approver's one-time link reaches them. Without it, tools needing more than
    /// one approver fail closed.
    pub fn deliver_links(mut self, deliver: impl Fn(ApproverLink) + Send + Sync + 'static) -> Self {
        self.deliver = Some(Arc::new(deliver));
        self
    }

    /// Binds the address and serves the page.
    pub async fn start(self) -> Result<ApprovalPage, ApprovalPageError> {
        if !self.bind.ip().is_loopback() && self.public_base.is_none() {
            return Err(ApprovalPageError::NoPublicBase(self.bind));
        }
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
        let origin = base.origin().ascii_serialization();
        let shared = Arc::new(Shared {
            desk: Desk::default(),
            origin,
            identity: self.identity,
            approvers: self.approvers,
            deliver: self.deliver,
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

impl Shared {
    /// The requester of a call, from the page's identity provider.
    pub(crate) fn identify(
        &self,
        request: &rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<Identity, crate::error::ToolError> {
        self.identity.identify(request)
    }

    /// Opens an approval, delivers the approvers' links, and returns the requester's URL.
    pub(crate) fn open(&self, request: Request) -> Result<(Opened, Url), String> {
        if request.required > 1 && self.deliver.is_none() {
            return Err(format!(
                "{} needs {} approvers, and the approval page has no way to reach them: configure ApprovalPageBuilder::deliver_links",
                request.tool, request.required
            ));
        }
        let (tool, target) = (request.tool, request.target.clone());
        let opened = self.desk.open(request, &self.approvers)?;
        let url = self.link(&opened.requester_token);
        if let Some(deliver) = &self.deliver {
            for (approver, token) in &opened.approver_tokens {
                deliver(ApproverLink {
                    approver: approver.clone(),
                    url: self.link(token),
                    tool,
                    target: target.clone(),
                });
            }
        }
        Ok((opened, url))
    }

    fn link(&self, token: &str) -> Url {
        self.base
            .join(&format!("approval/{token}"))
            .expect("a hex token is a valid path segment")
    }
}
