//! The server-wide guard configuration: the key that seals MRTR request state, how long a
//! human has to answer, and the record of request states already redeemed.
//!
//! A request state is used once, also across restarts and replicas, and is answered only
//! where its use is recorded: each state names its issuer (`issuer.rs`). With an operation
//! store the used states are kept in the store, which outlives the process and is shared by
//! replicas, and the state names the store (by the id made with its schema): a server with
//! another store refuses it. Without one the record lives in this process only, and the
//! state names this guard's boot epoch, a random value made when the guard is built: a
//! restarted server (which has forgotten what was used) refuses every state sealed before it
//! started, and so does any other process.

use std::{
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use rmcp::model::RequestStateCodec;

use crate::{allowlist::Exposure, audit::Recorder, outbox::Outbox, used::UsedStates};

#[cfg(feature = "sqlite")]
mod db;
mod issuer;

pub(crate) use issuer::Issuer;

/// Environment variable holding the request-state key (at least 32 bytes). Replicas that
/// share an operation store must share it too; without it each process makes its own. Without
/// a store, request states never outlive the process that sealed them (see [`Guard`]).
pub(crate) const KEY_ENV: &str = "GUARD_HMAC_KEY";

/// Configuration shared by every guarded tool of a server.
///
/// MRTR request states are single use. With [`Guard::with_operations`] the used states are
/// recorded in the operation store, and each state names that store: replicas sharing the
/// store and the key answer each other's states once, before and after any restart, and a
/// server with another store (or none) refuses them. Without an operation store they are
/// recorded in memory, and each state is bound to this guard's boot epoch (random, made at
/// construction): a state from before a restart, used or not, is refused after it, and a
/// second process cannot open this one's states.
///
/// ```
/// use std::time::Duration;
/// use rmcp_guard::{Exposure, Guard, GuardError};
///
/// // GUARD_HMAC_KEY, or a per-process key when it is unset.
/// let guard = Guard::from_env()?
///     .answer_timeout(Duration::from_secs(120))
///     .with_exposure(Exposure::all_tools());
/// assert!(guard.exposure().is_some());
///
/// // A key shorter than 32 bytes is refused, with a message saying what to set.
/// assert!(matches!(Guard::with_key(*b"short"), Err(GuardError::KeyTooShort(5))));
/// # Ok::<(), GuardError>(())
/// ```
pub struct Guard {
    codec: RequestStateCodec,
    /// Random per construction; names this guard as the issuer of its request states when
    /// there is no operation store.
    epoch: String,
    answer_timeout: Duration,
    redeemed: Mutex<UsedStates>,
    /// What each disclosing tool has shown in each live session.
    disclosed: crate::disclose::Tally,
    exposure: Option<Arc<Exposure>>,
    #[cfg(feature = "sqlite")]
    sqlite: Option<crate::db::SqliteDatabase>,
    outbox: Outbox,
    #[cfg(any(feature = "sqlite", feature = "postgres"))]
    operations: Option<crate::ops::Operations>,
    #[cfg(feature = "approval")]
    approval: Option<Arc<crate::approval::ApprovalPage>>,
    /// Derived from the key: the approval page derives requesters' links with it, so
    /// replicas sharing the key send a requester back to the same link.
    #[cfg(feature = "approval")]
    link_key: [u8; 32],
    /// How long one MRTR round of a call approved on the page waits for the decision.
    #[cfg(feature = "approval")]
    round_wait: Duration,
    /// Where every outcome of this guard's tools is recorded.
    #[cfg(any(feature = "sqlite", feature = "postgres"))]
    audit: Option<Arc<crate::audit::Pipeline>>,
}

/// Why a [`Guard`] could not be built.
#[derive(thiserror::Error)]
pub enum GuardError {
    #[error(
        "the guard key must be at least 32 bytes, got {0}; set {KEY_ENV} to a longer random secret"
    )]
    /// The key is shorter than 32 bytes.
    KeyTooShort(usize),
    #[error("the system random source failed ({0}); set {KEY_ENV} to a 32-byte random secret")]
    /// The system random source failed.
    NoRandomness(String),
}

/// Its sentence, as [`Display`](std::fmt::Display) says it: `main() -> Result<(), Box<dyn
/// Error>>` prints an error returned at start-up with `Debug`, and should say what to do.
impl std::fmt::Debug for GuardError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

impl Guard {
    /// A guard sealing request state with `key` (32 bytes or more).
    pub fn with_key(key: impl Into<Vec<u8>>) -> Result<Self, GuardError> {
        let key = key.into();
        let len = key.len();
        #[cfg(feature = "approval")]
        let link_key = link_key(&key);
        let codec = RequestStateCodec::try_new(key).map_err(|_| GuardError::KeyTooShort(len))?;
        let mut epoch = [0u8; 16];
        getrandom::fill(&mut epoch).map_err(|e| GuardError::NoRandomness(e.to_string()))?;
        Ok(Self {
            codec,
            epoch: crate::canonical::hex(&epoch),
            answer_timeout: Duration::from_secs(300),
            redeemed: Mutex::default(),
            disclosed: crate::disclose::Tally::default(),
            exposure: None,
            #[cfg(feature = "sqlite")]
            sqlite: None,
            outbox: Outbox::default(),
            #[cfg(any(feature = "sqlite", feature = "postgres"))]
            operations: None,
            #[cfg(feature = "approval")]
            approval: None,
            #[cfg(feature = "approval")]
            link_key,
            #[cfg(feature = "approval")]
            round_wait: crate::approval::ROUND_WAIT,
            #[cfg(any(feature = "sqlite", feature = "postgres"))]
            audit: None,
        })
    }

    /// A guard with a fresh random key: request state does not survive a restart.
    pub fn ephemeral() -> Result<Self, GuardError> {
        let mut key = [0u8; 32];
        getrandom::fill(&mut key).map_err(|e| GuardError::NoRandomness(e.to_string()))?;
        Self::with_key(key.to_vec())
    }

    /// The key from `GUARD_HMAC_KEY`, else a fresh random one (logged, since replicas then
    /// cannot open each other's request state).
    pub fn from_env() -> Result<Self, GuardError> {
        match std::env::var(KEY_ENV) {
            Ok(key) => Self::with_key(key.into_bytes()),
            Err(_) => {
                tracing::info!(
                    "{KEY_ENV} is not set: using a per-process key; confirmations pending across a restart must be asked again"
                );
                Self::ephemeral()
            }
        }
    }

    /// How long the human has to answer before the request counts as cancelled.
    pub fn answer_timeout(mut self, timeout: Duration) -> Self {
        self.answer_timeout = timeout;
        self
    }

    /// Which tools exist: the allowlist and read-only mode (see [`exposed`](crate::exposed)).
    pub fn with_exposure(mut self, exposure: Exposure) -> Self {
        self.exposure = Some(Arc::new(exposure));
        self
    }

    /// The exposure set with [`Guard::with_exposure`].
    pub fn exposure(&self) -> Option<&Arc<Exposure>> {
        self.exposure.as_ref()
    }

    /// Whether guard's own tool `name` (`undo`, `withdraw`) can be called on this server
    /// now: a question or a result may point to it only then, and says the effect is final
    /// (or the call cannot be withdrawn) otherwise. Without an exposure nothing is
    /// published.
    #[cfg(any(feature = "sqlite", feature = "postgres"))]
    pub(crate) fn publishes(&self, name: &str) -> bool {
        self.exposure
            .as_ref()
            .is_some_and(|exposure| exposure.publishes_own(name))
    }

    /// The SQLite database whose handles ([`crate::db::ReadDb`], [`crate::db::WriteDb`])
    /// tools take as parameters.
    #[cfg(feature = "sqlite")]
    pub fn with_sqlite(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        self.sqlite = Some(crate::db::SqliteDatabase::new(path));
        self
    }

    #[cfg(feature = "sqlite")]
    /// The database set with [`Guard::with_sqlite`].
    pub fn sqlite(&self) -> Option<&crate::db::SqliteDatabase> {
        self.sqlite.as_ref()
    }

    /// The store and identity provider of `#[prepare]`/`#[confirm]` tools. Every outcome
    /// of this guard's tools is then recorded in that store's audit log (see
    /// [`crate::audit`]), the operations' inside their own transactions.
    ///
    /// # Panics
    /// If [`with_audit`](Self::with_audit) already chose a log: one guard keeps one log.
    #[cfg(any(feature = "sqlite", feature = "postgres"))]
    pub fn with_operations(mut self, operations: crate::ops::Operations) -> Self {
        assert!(
            self.audit.is_none(),
            "Guard::with_audit and Guard::with_operations both chose an audit log; with operations, the log is the operation store's: drop with_audit"
        );
        self.audit = Some(Arc::new(crate::audit::Pipeline::new(
            operations.audit_log().clone(),
        )));
        self.operations = Some(operations);
        self.approval_page_records();
        self
    }

    /// Records every outcome of this guard's `#[destructive]` tools and every refused call
    /// in `log`. A guard with operations already records in the operation store's log.
    ///
    /// # Panics
    /// If [`with_operations`](Self::with_operations) already chose the log.
    #[cfg(any(feature = "sqlite", feature = "postgres"))]
    pub fn with_audit(mut self, log: crate::audit::AuditLog) -> Self {
        assert!(
            self.audit.is_none(),
            "this guard already records in a log (its operation store's, or an earlier with_audit); one guard keeps one log"
        );
        self.audit = Some(Arc::new(crate::audit::Pipeline::new(log)));
        self.approval_page_records();
        self
    }

    /// The approval page records its events in this guard's log, and keeps its approvals in
    /// the store that holds the log (the operation store, with operations), whichever was
    /// set first.
    #[cfg(any(feature = "approval", feature = "sqlite", feature = "postgres"))]
    fn approval_page_records(&self) {
        #[cfg(all(feature = "approval", any(feature = "sqlite", feature = "postgres")))]
        if let (Some(page), Some(log)) = (&self.approval, &self.audit) {
            page.shared().attach_audit(log.clone());
            page.shared().attach_store(log.log().store().clone());
        }
        #[cfg(feature = "approval")]
        if let (Some(page), Some(grants)) = (&self.approval, self.grants()) {
            page.shared().attach_grants(grants);
        }
    }

    /// The log this guard records in, if any.
    #[cfg(any(feature = "sqlite", feature = "postgres"))]
    pub fn audit_log(&self) -> Option<&crate::audit::AuditLog> {
        self.audit.as_deref().map(crate::audit::Pipeline::log)
    }

    /// Waits until every outcome recorded outside a store transaction so far is written, and
    /// (on PostgreSQL) every entry this process queued with its calls is sequenced: before
    /// reading the log while the server runs, in a test or a demo.
    ///
    /// A server need not call it to stop: dropping the guard (when the service that owns it
    /// ends) settles the log the same way, on a multi-threaded runtime (`#[tokio::main]`'s).
    /// On a current-thread runtime, which cannot wait in a `Drop`, await this before `main`
    /// returns.
    pub async fn audit_settled(&self) {
        #[cfg(any(feature = "sqlite", feature = "postgres"))]
        if let Some(pipeline) = &self.audit {
            pipeline.settled().await;
        }
    }

    /// Records `event` (mirrored to the `guard::audit` tracing target) in this guard's log,
    /// after whatever was recorded before it.
    pub(crate) fn record(&self, event: crate::audit::Event) {
        event.mirror();
        #[cfg(any(feature = "sqlite", feature = "postgres"))]
        if let Some(pipeline) = &self.audit {
            pipeline.send(event);
        }
    }

    /// Records `event` like [`record`](Self::record) and waits until it is committed to the
    /// log: for the record that must exist before an effect runs, so a process that stops
    /// during the effect still leaves it. Without a log there is nothing to wait for.
    pub(crate) async fn record_written(&self, event: crate::audit::Event) -> Result<(), String> {
        event.mirror();
        #[cfg(any(feature = "sqlite", feature = "postgres"))]
        if let Some(pipeline) = &self.audit {
            return pipeline.written(event).await;
        }
        Ok(())
    }

    #[cfg(any(feature = "sqlite", feature = "postgres"))]
    pub(crate) fn audit_pipeline(&self) -> Option<Arc<crate::audit::Pipeline>> {
        self.audit.clone()
    }

    /// Where the exposure records the calls it refuses.
    pub(crate) fn recorder(&self) -> Recorder {
        #[cfg(any(feature = "sqlite", feature = "postgres"))]
        return self.audit_pipeline();
        #[cfg(not(any(feature = "sqlite", feature = "postgres")))]
        return None;
    }

    #[cfg(any(feature = "sqlite", feature = "postgres"))]
    /// The operations set with [`Guard::with_operations`].
    pub fn operations(&self) -> Option<&crate::ops::Operations> {
        self.operations.as_ref()
    }

    /// The undo windows of this guard's operation store, audited into its log: where tools
    /// that declare an undo keep what undoing needs. `None` without operations.
    #[cfg(any(feature = "sqlite", feature = "postgres"))]
    pub(crate) fn undo_windows(&self) -> Option<crate::undo::UndoWindows> {
        let operations = self.operations.as_ref()?;
        Some(crate::undo::UndoWindows::new(
            operations.store().clone(),
            operations.audit_log().clone(),
        ))
    }

    /// The deferred calls of this guard's operation store, audited into its log: where
    /// tools that declare `defer` keep the calls the human confirmed until they run.
    /// `None` without operations.
    #[cfg(any(feature = "sqlite", feature = "postgres"))]
    pub(crate) fn deferred_calls(&self) -> Option<crate::defer::DeferredCalls> {
        let operations = self.operations.as_ref()?;
        Some(crate::defer::DeferredCalls::new(
            operations.store().clone(),
            operations.audit_log().clone(),
        ))
    }

    /// The grants of this guard's operation store, audited into its log: where tools that
    /// declare `grant` keep what the human allowed to run without asking. `None` without
    /// operations.
    #[cfg(any(feature = "sqlite", feature = "postgres"))]
    pub fn grants(&self) -> Option<crate::grant::Grants> {
        let operations = self.operations.as_ref()?;
        Some(crate::grant::Grants::new(
            operations.store().clone(),
            operations.audit_log().clone(),
        ))
    }

    /// The page where tools with `approve = "url"` are approved.
    #[cfg(feature = "approval")]
    pub fn with_approval_page(
        mut self,
        page: impl Into<Arc<crate::approval::ApprovalPage>>,
    ) -> Self {
        let page = page.into();
        page.shared().desk.use_link_key(self.link_key);
        self.approval = Some(page);
        self.approval_page_records();
        self
    }

    /// Makes each MRTR round of a call approved on the page wait at most `wait` for the
    /// decision (never longer than [`ROUND_WAIT`](crate::approval::ROUND_WAIT), the
    /// default): for a client that retries sooner, or for tests.
    #[cfg(feature = "approval")]
    pub fn approval_round_wait(mut self, wait: Duration) -> Self {
        self.round_wait = wait.min(crate::approval::ROUND_WAIT);
        self
    }

    #[cfg(feature = "approval")]
    pub(crate) fn round_wait(&self) -> Duration {
        self.round_wait
    }

    #[cfg(feature = "approval")]
    pub(crate) fn approval_page(&self) -> Option<&crate::approval::ApprovalPage> {
        self.approval.as_deref()
    }

    /// Where tools record the notifications they send.
    pub fn outbox(&self) -> &Outbox {
        &self.outbox
    }

    pub(crate) fn timeout(&self, per_tool: Option<Duration>) -> Duration {
        per_tool.unwrap_or(self.answer_timeout)
    }

    pub(crate) fn codec(&self) -> &RequestStateCodec {
        &self.codec
    }

    /// Whether this guard spends request states in its log's commits (with operations),
    /// so an accept's spend can wait for its confirmation's commit.
    pub(crate) fn spends_in_log(&self) -> bool {
        #[cfg(any(feature = "sqlite", feature = "postgres"))]
        return self.operations.is_some() && self.audit.is_some();
        #[cfg(not(any(feature = "sqlite", feature = "postgres")))]
        return false;
    }

    /// Writes `event` like [`record_written`](Self::record_written) in the commit that
    /// spends the request state `nonce`, only if that spend is fresh: `Ok(false)` if the
    /// state was already spent (a replay), and then nothing was written. Only for a guard
    /// that [spends in its log](Self::spends_in_log).
    pub(crate) async fn record_written_spending(
        &self,
        event: crate::audit::Event,
        nonce: &str,
        valid_for: Duration,
    ) -> Result<bool, String> {
        #[cfg(any(feature = "sqlite", feature = "postgres"))]
        if let (Some(_), Some(pipeline)) = (&self.operations, &self.audit) {
            event.mirror();
            return pipeline
                .written_spending(event, spend(nonce, valid_for))
                .await;
        }
        let _ = (event, nonce, valid_for);
        Err("this guard keeps used request states in memory, not in its log".to_owned())
    }

    /// Marks a sealed request state as used; false if it already was (a replay). With an
    /// operation store the mark is kept there, so replicas sharing the store and the key
    /// refuse each other's replays too; without one it is kept in this process.
    pub(crate) async fn redeem(&self, nonce: &str, valid_for: Duration) -> Result<bool, String> {
        // With operations, the store keeps used states for every replica, and the spend
        // commits with the audit writer's group (the log is the operation store's).
        #[cfg(any(feature = "sqlite", feature = "postgres"))]
        if let (Some(_), Some(pipeline)) = (&self.operations, &self.audit) {
            return pipeline.spent(spend(nonce, valid_for)).await;
        }
        Ok(self.redeem_here(nonce, valid_for))
    }

    /// What disclosing tools have shown in each live session (see [`crate::disclose::Tally`]).
    pub(crate) fn disclosed(&self) -> &crate::disclose::Tally {
        &self.disclosed
    }

    fn redeem_here(&self, nonce: &str, valid_for: Duration) -> bool {
        self.redeemed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .mark(nonce, valid_for, Instant::now())
    }
}

/// The spend of request state `nonce`, kept until the state would have expired anyway.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
fn spend(nonce: &str, valid_for: Duration) -> crate::store::spent::Spend {
    let valid_for = i64::try_from(valid_for.as_millis()).unwrap_or(i64::MAX);
    crate::store::spent::Spend::new(nonce, crate::store::now_ms().saturating_add(valid_for))
}

/// The key requesters' approval links are derived with: the guard's key, never used
/// directly for anything but sealing request states, through HMAC with a label of its own.
#[cfg(feature = "approval")]
fn link_key(key: &[u8]) -> [u8; 32] {
    use hmac::{Hmac, KeyInit, Mac};
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(key).expect("HMAC takes keys of any length");
    mac.update(b"guard/v1 approval page requester links");
    mac.finalize().into_bytes().into()
}

/// How long a dropped guard waits for its last audit records to commit.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
const SETTLE_ON_DROP: Duration = Duration::from_secs(5);

/// A server that stops normally (its service ends, `main` returns) drops its guard: the
/// records still queued for the log are written then, so the last call's outcome is not
/// lost with the process, whether or not the author awaited [`Guard::audit_settled`].
#[cfg(any(feature = "sqlite", feature = "postgres"))]
impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(pipeline) = &self.audit {
            pipeline.settled_blocking(SETTLE_ON_DROP);
        }
    }
}

impl std::fmt::Debug for Guard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guard")
            .field("answer_timeout", &self.answer_timeout)
            .finish_non_exhaustive()
    }
}

/// How a guarded tool finds its server's [`Guard`].
#[diagnostic::on_unimplemented(
    message = "`{Self}` has guarded tools but no guard configuration",
    label = "`{Self}` does not implement `rmcp_guard::Guarded`",
    note = "add a `guard: rmcp_guard::Guard` field to `{Self}` and `impl rmcp_guard::Guarded for {Self} {{ fn guard(&self) -> &rmcp_guard::Guard {{ &self.guard }} }}`"
)]
pub trait Guarded {
    /// The server's guard.
    fn guard(&self) -> &Guard;
}

#[cfg(any(feature = "sqlite", feature = "postgres"))]
impl crate::ops::Configured for Guard {
    fn operations(&self) -> Option<&crate::ops::Operations> {
        Guard::operations(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_start_up_error_prints_its_sentence_with_debug() {
        let error = Guard::with_key(*b"short").unwrap_err();
        assert_eq!(format!("{error:?}"), error.to_string());
        assert!(format!("{error:?}").contains(KEY_ENV), "{error:?}");
    }
}
