//! Two-phase operations: `#[prepare]` freezes an intent, `#[confirm]` carries it out once.
//!
//! A prepare tool checks the request and stores an intent: a server-generated
//! `operation_id`, the caller's tenant and user (from the [`IdentityProvider`], never from
//! arguments), the op and target, the canonical payload and its SHA-256, and an expiry. It
//! never runs the effect.
//!
//! A confirm tool takes only that `operation_id` and, in one store transaction, locks the
//! intent, checks that it belongs to the caller, returns the stored result for a repeat,
//! refuses an expired intent, re-checks the target through the author's hook, runs the
//! author's effect, stores the result, writes the audit record and commits. A failure
//! anywhere before the commit rolls all of it back.
//!
//! `get_operation_result(operation_id)` answers "did it happen?" after a timeout.
//!
//! A tool that creates something in one call takes an idempotency key instead
//! (`#[idempotent(key = field, ttl = "24h")]`, see [`Keyed`]): a retry with the same key and
//! arguments gets the first call's stored result, never a second effect.
//!
//! The store is an [`OperationStore`]: [`SqliteStore`] (one file, WAL) embedded, or
//! [`PgStore`] (feature `postgres`) for several server processes.
//!
//! ```
//! use rmcp_guard::ops::{OperationStore, Operations, SqliteStore};
//! use rmcp_guard::{EnvIdentity, Guard, Identity};
//!
//! # #[tokio::main]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let dir = std::env::temp_dir().join(format!("rmcp-guard-doc-ops-{}", std::process::id()));
//! # std::fs::create_dir_all(&dir)?;
//! let store = SqliteStore::open(dir.join("orders.db"))?;
//!
//! // Effects write in guard's transaction on the same store, so their tables live there too.
//! let mut tx = store.begin().await?;
//! tx.execute("CREATE TABLE IF NOT EXISTS cancel_requests (order_no TEXT PRIMARY KEY)", &[])
//!     .await?;
//! tx.commit().await?;
//!
//! let caller = EnvIdentity::new(Identity::new("tenant_demo", "alice", ["order.cancel.request"]));
//! let guard = Guard::from_env()?.with_operations(Operations::new(store, caller));
//! assert!(guard.operations().is_some());
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok(())
//! # }
//! ```

pub(crate) mod call;
mod confirm;
mod deferred;
pub(crate) mod drive;
mod intent;
pub(crate) mod keyed;
pub(crate) mod lookup;
mod prepare;
mod rate;

use std::{collections::HashMap, sync::Arc};

pub use confirm::{Approved, Locked, Recheck};
pub use intent::{Intent, OperationRef, Status};
pub use keyed::Keyed;
pub use prepare::Prepare;
pub use rate::{BadRate, Rate};

#[cfg(feature = "sqlite")]
pub use crate::store::SqliteStore;
pub use crate::store::{
    BoxFuture, Dialect, Done, OperationStore, Row, SqlValue, Statement, StoreError, Then, Tx,
    TxBackend, now_ms,
};
#[cfg(feature = "postgres")]
pub use crate::store::{PgStore, pg};
use crate::{audit::AuditLog, identity::IdentityProvider};

/// Where an operation tool finds its server's two-phase configuration: the server's
/// [`Guard`](crate::Guard), which the generated tools hand over. (A trait, so this layer
/// needs nothing from the configuration above it.)
pub trait Configured: Send + Sync {
    /// The server's operations, if it configured any.
    fn operations(&self) -> Option<&Operations>;
}

/// The name checkpoints give a log unless the deployment names it.
pub const DEFAULT_ORIGIN: &str = "guard audit log";

/// A server's two-phase configuration: the store, who is calling, and the store's audit log.
#[derive(Clone)]
pub struct Operations {
    pub(crate) store: Arc<dyn OperationStore>,
    pub(crate) identity: Arc<dyn IdentityProvider>,
    pub(crate) audit: AuditLog,
    /// Per-tool rates that replace the ones the prepare tools declare.
    rates: Arc<HashMap<&'static str, Rate>>,
    /// Per-tool intent lifetimes that replace the `ttl` the prepare tools declare.
    ttls: Arc<HashMap<&'static str, std::time::Duration>>,
    /// Per-tool waits that replace (or add) the `defer` the confirm tools declare.
    defers: Arc<HashMap<&'static str, std::time::Duration>>,
    /// The store's id, read on first use (it never changes): request states name it.
    store_id: Arc<tokio::sync::OnceCell<String>>,
}

impl Operations {
    /// Operations on `store`, for callers established by `identity`, audited into the
    /// store's audit log (see [`crate::audit`]), each record inside its call's transaction.
    pub fn new(store: impl OperationStore, identity: impl IdentityProvider + 'static) -> Self {
        let store: Arc<dyn OperationStore> = Arc::new(store);
        Self {
            audit: AuditLog::shared(store.clone(), DEFAULT_ORIGIN),
            store,
            identity: Arc::new(identity),
            rates: Arc::default(),
            ttls: Arc::default(),
            defers: Arc::default(),
            store_id: Arc::default(),
        }
    }

    /// Names the audit log in its signed checkpoints (one line, such as
    /// `orders.example.com audit`; the default is `guard audit log`).
    pub fn audit_origin(mut self, origin: &str) -> Self {
        self.audit = AuditLog::shared(self.store.clone(), origin);
        self
    }

    /// The store's audit log.
    pub fn audit_log(&self) -> &AuditLog {
        &self.audit
    }

    /// This deployment's limit for the prepare tool `tool`, in place of the `rate` it
    /// declares (or in addition, if it declares none). Still enforced in the store.
    pub fn rate_limit(mut self, tool: &'static str, rate: Rate) -> Self {
        Arc::make_mut(&mut self.rates).insert(tool, rate);
        self
    }

    /// This deployment's lifetime for the intents the prepare tool `tool` stores, in place
    /// of the `ttl` it declares: how long the user has to confirm. Zero is refused at
    /// startup: an intent must be confirmable.
    ///
    /// # Panics
    /// If `ttl` is zero (parse the setting first and report a bad one as a startup error).
    pub fn intent_ttl(mut self, tool: &'static str, ttl: std::time::Duration) -> Self {
        assert!(
            !ttl.is_zero(),
            "the intent lifetime of {tool} must be longer than zero"
        );
        Arc::make_mut(&mut self.ttls).insert(tool, ttl);
        self
    }

    /// This deployment's wait for the confirm tool `tool`, in place of the `defer` it
    /// declares (or in addition, if it declares none): a confirm of that tool checks
    /// everything a confirm checks, then stores the confirmed operation to run `after` from
    /// then, withdrawable with `withdraw(operation_id)` until it runs. Run the due ones with
    /// [`run_deferred`](crate::run_deferred). Zero is refused at startup: leave the setting
    /// out to run at once.
    ///
    /// # Panics
    /// If `after` is zero (parse the setting first and report a bad one as a startup error).
    pub fn defer_confirm(mut self, tool: &'static str, after: std::time::Duration) -> Self {
        assert!(
            !after.is_zero(),
            "the wait of {tool} must be longer than zero; leave it out to run confirms at once"
        );
        Arc::make_mut(&mut self.defers).insert(tool, after);
        self
    }

    /// The wait that holds for the confirm tool `tool`: this deployment's, else the
    /// declared one; `None` runs it at once.
    pub(crate) fn defer_for(
        &self,
        tool: &str,
        declared: Option<std::time::Duration>,
    ) -> Option<std::time::Duration> {
        self.defers.get(tool).copied().or(declared)
    }

    /// Whether this deployment defers the confirm tool `tool`.
    pub(crate) fn defers(&self, tool: &str) -> bool {
        self.defers.contains_key(tool)
    }

    /// The intent lifetime that holds for `tool`: this deployment's, else the declared one.
    pub(crate) fn ttl_for(&self, tool: &str, declared: std::time::Duration) -> std::time::Duration {
        self.ttls.get(tool).copied().unwrap_or(declared)
    }

    /// The rate that holds for `tool`: this deployment's, else the one it declares.
    pub(crate) fn rate_for(&self, tool: &str, declared: Option<Rate>) -> Option<Rate> {
        self.rates.get(tool).copied().or(declared)
    }

    /// The operation store.
    pub(crate) fn store(&self) -> &Arc<dyn OperationStore> {
        &self.store
    }

    /// The store's id (`guard_store_identity`), read once: the same for every replica of the
    /// store, before and after any restart.
    pub(crate) async fn store_identity(&self) -> Result<&str, StoreError> {
        self.store_id
            .get_or_try_init(|| crate::store::identity::read(self.store.as_ref()))
            .await
            .map(String::as_str)
    }
}

impl std::fmt::Debug for Operations {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Operations").finish_non_exhaustive()
    }
}

/// A stored time for the model: RFC 3339 in UTC.
pub(crate) fn rfc3339(ms: i64) -> String {
    crate::rfc3339::utc(ms)
}
