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
//!
//! The desk's work is in its parts: opening an approval (`open`), taking a decision
//! (`decide`), what the page reads for the people at it (`page`), the call's side of its
//! approval (`call`), and approvals run as MCP Tasks (`tasks`).

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, OnceLock},
    time::Duration,
};

use sha2::{Digest, Sha256};
use tokio::sync::watch;

use super::{decisions::Rules, journal::Journal, refusal::Refusal, seal::SealKey};
use crate::{
    audit::Event,
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
                    let done: Result<$crate::approval::desk::Done<_>, $crate::store::StoreError> =
                        async {
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

// The parts of the desk come after `in_tx`, which they all run.
mod call;
mod decide;
mod open;
mod page;
mod tasks;
#[cfg(test)]
mod tests;

pub use call::{Claim, Taken};
pub use decide::Decision;
pub use open::{Opened, Request};
pub use tasks::TaskView;

/// How often a waiting call reads the store for a decision taken by another process.
pub(crate) const POLL: Duration = Duration::from_millis(250);

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
    /// What links and decisions are sealed with ([`super::seal`]).
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

    /// Who may decide, as [`super::decisions`] counts them.
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

    fn lock_secrets(&self) -> std::sync::MutexGuard<'_, HashMap<String, crate::secret::Secret>> {
        self.secrets.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A store that failed, as the page says it (the error goes to the operator's log).
fn unavailable(error: StoreError) -> Refusal {
    tracing::error!(%error, "the approval store failed");
    Refusal::Unavailable
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

/// The SHA-256 of `s`, as hex: how links, CSRF tokens and bindings are compared and stored.
fn digest(s: &str) -> String {
    crate::canonical::hex(&Sha256::digest(s.as_bytes()))
}
