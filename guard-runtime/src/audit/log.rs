//! The log in the operation store: `guard_audit_log`, one row per entry,
//! `guard_audit_checkpoints`, the checkpoints signed so far, and `guard_audit_cosignatures`,
//! the witnesses' cosignature lines of those checkpoints. This file holds the handle; its
//! writes are in `append.rs`, its reads in `records.rs`, its checkpoints in
//! `checkpoints.rs` and its verification in `verification.rs`.
//!
//! [`AuditLog::append`] assigns an entry's sequence number inside the writing transaction,
//! after taking the log's lock: SQLite's transactions begin with `BEGIN IMMEDIATE` (the
//! database's write lock); on PostgreSQL a transaction-scoped advisory lock. Processes
//! appending to one store therefore take turns and never fork the log; the primary key on
//! `seq` refuses a second entry at a place even if a lock were missing.
//!
//! Guarded calls on PostgreSQL do not take that turn: their entries are queued with the
//! effect and sequenced after ([`super::sequencer`]). An entry committed but not yet
//! sequenced is *pending* ([`AuditLog::pending`]): the server's own reads sequence what is
//! queued first ([`AuditLog::sequence`]); a [`read_only`](AuditLog::read_only) reader, such
//! as the verifier, reports it as pending.

use std::sync::Arc;

use rmcp_guard_log::checkpoint_origin;

use super::sequencer::{self, Drained, Sequencer, Wait};
use crate::store::{OperationStore, Row, SqlValue, StoreError};

/// The audit log in an operation store.
#[derive(Clone)]
pub struct AuditLog {
    pub(super) store: Arc<dyn OperationStore>,
    pub(super) origin: Arc<str>,
    pub(super) sequencer: Arc<Sequencer>,
    /// Whether reads sequence what is queued first (not for a verifier, which never writes).
    pub(super) settles: bool,
}

impl AuditLog {
    /// The store the log is kept in (the approval page keeps its approvals there too, and
    /// the audit writer purges spent request states in it).
    pub(crate) fn store(&self) -> &Arc<dyn OperationStore> {
        &self.store
    }

    /// The log in `store`, its checkpoints naming it `origin` (one line, such as
    /// `example.com/orders audit`).
    pub fn new(store: impl OperationStore, origin: &str) -> Self {
        Self::shared(Arc::new(store), origin)
    }

    /// Like [`new`](Self::new), for a store already shared.
    pub fn shared(store: Arc<dyn OperationStore>, origin: &str) -> Self {
        Self {
            store,
            origin: checkpoint_origin(origin).into(),
            sequencer: Arc::new(Sequencer::new()),
            settles: true,
        }
    }

    /// The log as it stands, for a reader that must not write (a verifier): its reads leave
    /// queued entries where they are, and [`pending`](Self::pending) names them.
    pub fn read_only(mut self) -> Self {
        self.settles = false;
        self
    }

    /// Sequences every entry queued (committed) before this call, waiting for a sequencer
    /// of another process to finish its batch first; returns how many this call placed.
    /// Nothing is ever queued on SQLite, where this costs nothing.
    pub async fn sequence(&self) -> Result<u64, StoreError> {
        // Waiting for the lock, a drain is never turned away.
        match sequencer::drain(&*self.store, Wait::Yes).await? {
            Drained::Placed(placed) => Ok(placed),
            Drained::Busy | Drained::Inline => Ok(0),
        }
    }

    /// Keeps the log sequenced while it is open: starts this process's sequencer, which
    /// places what any process queued (a stranger's entries included) within [`IDLE`](sequencer::IDLE)
    /// (a second), idle or not, until the log is dropped. A server's guard calls it when it
    /// opens the log.
    pub(crate) fn keep_sequenced(&self) {
        self.sequencer.start(&self.store);
    }

    /// Sequences what this process queued, if it queued anything: the last step of a
    /// settle, so a server that stops normally leaves no entry of its own pending.
    pub(crate) async fn sequence_own(&self) -> Result<(), StoreError> {
        if self.has_own_queued() {
            self.sequence().await?;
        }
        Ok(())
    }

    /// Whether [`sequence_own`](Self::sequence_own) has anything to do.
    pub(crate) fn has_own_queued(&self) -> bool {
        self.sequencer.has_queued()
    }

    /// Before a read of the server's own log: sequence what is queued.
    pub(super) async fn settle(&self) -> Result<(), StoreError> {
        if self.settles {
            self.sequence().await?;
        }
        Ok(())
    }

    /// The name checkpoints carry.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The same log under another name: `origin` is what its checkpoints carry.
    pub fn named(&self, origin: &str) -> Self {
        Self {
            settles: self.settles,
            ..Self::shared(self.store.clone(), origin)
        }
    }

    /// The rows of `sql`, in a transaction that writes nothing.
    pub(super) async fn read(
        &self,
        sql: &str,
        params: &[SqlValue],
    ) -> Result<Vec<Row>, StoreError> {
        crate::store::read_alone(&*self.store, sql, params).await
    }
}

impl std::fmt::Debug for AuditLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditLog")
            .field("origin", &self.origin)
            .finish_non_exhaustive()
    }
}
