//! Who is calling: tenant, user and scopes, taken only from trusted context.
//!
//! ```
//! use rmcp_guard::{Code, EnvIdentity, require_scopes};
//!
//! // What a stdio server reads from GUARD_TENANT, GUARD_USER and GUARD_SCOPES.
//! let env = EnvIdentity::from_lookup(|name| match name {
//!     "GUARD_TENANT" => Some("tenant_demo"),
//!     "GUARD_USER" => Some("alice"),
//!     "GUARD_SCOPES" => Some("orders:read, orders:cancel"),
//!     _ => None,
//! })?;
//! let caller = env.identity();
//! assert!(caller.has_scope("orders:cancel"));
//! assert!(require_scopes(caller, "cancel_order", &["orders:cancel"]).is_ok());
//!
//! let denied = require_scopes(caller, "refund_order", &["orders:refund"]).unwrap_err();
//! assert_eq!(denied.code(), Code::PermissionDenied);
//! # Ok::<(), String>(())
//! ```
//!
//! Tool arguments never carry identity: the model fills them, so a `tenant_id` argument is
//! whatever the model wrote. An [`IdentityProvider`] reads identity from the request's
//! transport instead:
//!
//! - [`EnvIdentity`] for a local stdio server, where the process runs for one user:
//!   `GUARD_TENANT`, `GUARD_USER` and `GUARD_SCOPES`, read once at start-up (a name with
//!   invisible characters or mixed scripts is refused then, see [`crate::person`]). It refuses
//!   requests that arrived over HTTP, where one global identity would let every caller act
//!   as that user.
//! - [`BearerIdentity`] (feature `jwt`) for streamable HTTP: a JWT in
//!   `Authorization: Bearer <token>`, checked for signature, issuer, audience, expiry and
//!   not-before.
//!
//! [`require_scopes`] then checks the scopes a tool needs; a denial is a `PERMISSION_DENIED`
//! tool error and an audit record on the `guard::audit` tracing target.
//!
//! ```no_run
//! use rmcp_guard::identity::{EnvIdentity, IdentityProvider, require_scopes};
//! use rmcp::{RoleServer, service::RequestContext};
//!
//! fn cancel(
//!     provider: &dyn IdentityProvider,
//!     ctx: &RequestContext<RoleServer>,
//! ) -> Result<(), rmcp_guard::ToolError> {
//!     let identity = provider.identify(ctx)?;
//!     require_scopes(&identity, "cancel_order", &["orders:cancel"])?;
//!     // ... act for identity.tenant / identity.user
//!     Ok(())
//! }
//! ```

use std::{collections::BTreeSet, sync::Arc};

use rmcp::{RoleServer, service::RequestContext};

use crate::{
    error::{Code, ToolError},
    person::{NameError, Person},
};

#[cfg(feature = "jwt")]
mod bearer;
#[cfg(feature = "jwt")]
pub use bearer::BearerIdentity;

/// The caller of one request, as established by an [`IdentityProvider`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The tenant the caller acts in.
    pub tenant: String,
    /// The user, within the tenant.
    pub user: String,
    /// What the caller may do (`orders:cancel`, ...).
    pub scopes: BTreeSet<String>,
}

impl Identity {
    /// An identity from trusted context (never from tool arguments).
    pub fn new(
        tenant: impl Into<String>,
        user: impl Into<String>,
        scopes: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        Self {
            tenant: tenant.into(),
            user: user.into(),
            scopes: scopes.into_iter().map(Into::into).collect(),
        }
    }

    /// Whether the caller holds `scope`.
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.contains(scope)
    }

    /// The person this identity names, in canonical form: what guard compares when it asks
    /// whether two callers are one person (see [`crate::person`]).
    pub fn person(&self) -> Result<Person, NameError> {
        Person::new(&self.tenant, &self.user)
    }
}

/// Establishes the caller of a request from trusted context (the process environment, a
/// verified token), never from tool arguments.
pub trait IdentityProvider: Send + Sync {
    /// The caller of `request`, or a `PERMISSION_DENIED` error saying what the client must do.
    fn identify(&self, request: &RequestContext<RoleServer>) -> Result<Identity, ToolError>;
}

impl<T: IdentityProvider + ?Sized> IdentityProvider for Arc<T> {
    fn identify(&self, request: &RequestContext<RoleServer>) -> Result<Identity, ToolError> {
        (**self).identify(request)
    }
}

impl<T: IdentityProvider + ?Sized> IdentityProvider for Box<T> {
    fn identify(&self, request: &RequestContext<RoleServer>) -> Result<Identity, ToolError> {
        (**self).identify(request)
    }
}

impl<T: IdentityProvider + ?Sized> IdentityProvider for &T {
    fn identify(&self, request: &RequestContext<RoleServer>) -> Result<Identity, ToolError> {
        (**self).identify(request)
    }
}

/// The process's one identity, from the environment, for a local stdio server.
///
/// Read once by [`EnvIdentity::from_env`]: `GUARD_TENANT` and `GUARD_USER` (non-empty) and
/// `GUARD_SCOPES` (scopes separated by spaces or commas; may be empty, which grants none).
/// A request that arrived over HTTP is refused: on a server that several people reach, one
/// identity from the environment would let each of them act as that user.
#[derive(Debug, Clone)]
pub struct EnvIdentity {
    identity: Identity,
}

impl EnvIdentity {
    /// The tenant's variable.
    pub const TENANT_ENV: &'static str = "GUARD_TENANT";
    /// The user's variable.
    pub const USER_ENV: &'static str = "GUARD_USER";
    /// The scopes' variable (separated by spaces or commas).
    pub const SCOPES_ENV: &'static str = "GUARD_SCOPES";

    /// Reads `GUARD_TENANT`, `GUARD_USER` and `GUARD_SCOPES` from the process environment.
    pub fn from_env() -> Result<Self, String> {
        Self::from_lookup(|name| std::env::var_os(name))
    }

    /// Like [`from_env`](Self::from_env), reading variables through `lookup`.
    pub fn from_lookup<V: Into<std::ffi::OsString>>(
        lookup: impl Fn(&str) -> Option<V>,
    ) -> Result<Self, String> {
        let read = |name: &str, required_non_empty: bool| -> Result<String, String> {
            let value = lookup(name).map(Into::into).ok_or_else(|| {
                format!(
                    "{name} is not set: a stdio server takes its caller's identity from \
                     {tenant}, {user} and {scopes} (scopes separated by spaces or commas)",
                    tenant = Self::TENANT_ENV,
                    user = Self::USER_ENV,
                    scopes = Self::SCOPES_ENV,
                )
            })?;
            let value = value
                .into_string()
                .map_err(|_| format!("{name} is not valid UTF-8"))?;
            let value = value.trim().to_owned();
            if required_non_empty && value.is_empty() {
                return Err(format!("{name} is empty: set it to the caller's {}", {
                    if name == Self::TENANT_ENV {
                        "tenant"
                    } else {
                        "user id"
                    }
                }));
            }
            Ok(value)
        };
        let tenant = read(Self::TENANT_ENV, true)?;
        let user = read(Self::USER_ENV, true)?;
        let scopes = read(Self::SCOPES_ENV, false)?;
        // Configured names are checked now, so a mistake shows at start-up rather than when
        // someone's approval is compared with this user.
        for (name, value) in [(Self::TENANT_ENV, &tenant), (Self::USER_ENV, &user)] {
            crate::person::configured(value).map_err(|problem| format!("{name}: {problem}"))?;
        }
        Ok(Self {
            identity: Identity::new(tenant, user, split_scopes(&scopes)),
        })
    }

    /// A fixed identity (for tests and embedding).
    pub fn new(identity: Identity) -> Self {
        Self { identity }
    }

    /// The identity every request gets.
    pub fn identity(&self) -> &Identity {
        &self.identity
    }
}

impl IdentityProvider for EnvIdentity {
    fn identify(&self, request: &RequestContext<RoleServer>) -> Result<Identity, ToolError> {
        if request.extensions.get::<http::request::Parts>().is_some() {
            let trace_id = crate::trace::new_id();
            tracing::warn!(
                %trace_id,
                "refused the environment identity for a request that arrived over HTTP; \
                 use a per-request provider (a verified bearer token) on HTTP servers"
            );
            return Err(ToolError::new(
                Code::PermissionDenied,
                format!(
                    "This server cannot establish who is calling over HTTP: its identity is \
                     configured for local use only. Ask the operator to enable token \
                     authentication (trace_id {trace_id})."
                ),
            ));
        }
        Ok(self.identity.clone())
    }
}

/// Scopes separated by spaces and/or commas; empty items are dropped.
pub(crate) fn split_scopes(value: &str) -> impl Iterator<Item = String> + '_ {
    value
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// Checks that `identity` holds every scope in `required`, for the tool named `tool`.
///
/// A missing scope is a `PERMISSION_DENIED` error naming the missing scopes, and an audit
/// record on the `guard::audit` target with the tool, tenant, user, missing scopes and a new
/// trace id (which the error also carries).
pub fn require_scopes(identity: &Identity, tool: &str, required: &[&str]) -> Result<(), ToolError> {
    if required.iter().all(|scope| identity.has_scope(scope)) {
        return Ok(());
    }
    require_scopes_traced(identity, tool, required, &crate::trace::new_id())
}

/// [`require_scopes`] under the caller's trace id, so the denial joins the call's other
/// records.
pub fn require_scopes_traced(
    identity: &Identity,
    tool: &str,
    required: &[&str],
    trace_id: &str,
) -> Result<(), ToolError> {
    let missing: Vec<&str> = required
        .iter()
        .copied()
        .filter(|scope| !identity.has_scope(scope))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let missing_scope = missing.join(" ");
    tracing::info!(
        target: "guard::audit",
        tool,
        outcome = "denied",
        code = Code::PermissionDenied.as_str(),
        tenant = %identity.tenant,
        user = %identity.user,
        missing_scope = %missing_scope,
        trace_id = %trace_id,
    );
    let (noun, list) = match missing.as_slice() {
        [one] => ("scope", format!("`{one}`")),
        many => (
            "scopes",
            many.iter()
                .map(|s| format!("`{s}`"))
                .collect::<Vec<_>>()
                .join(", "),
        ),
    };
    Err(ToolError::new(
        Code::PermissionDenied,
        format!(
            "The caller lacks the {noun} {list} needed by {tool}; nothing was done. \
             Ask an administrator to grant it, then sign in again (trace_id {trace_id})."
        ),
    ))
}
