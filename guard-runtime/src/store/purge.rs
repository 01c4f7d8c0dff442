//! Purging rows that have expired, outside any caller's transaction.
//!
//! A purge that ran inside a call's own transaction would hold every user's expired rows
//! until that call commits, so one slow call would make every other tenant wait. Here a
//! purge is a short transaction of its own that waits on nobody: on PostgreSQL only one
//! purge of a table runs at a time (the others skip it), it takes at most [`BATCH`] rows,
//! and it passes over any row a caller's transaction holds (`FOR UPDATE SKIP LOCKED`). On
//! SQLite the store has one writer: a purge takes its turn like every transaction.
//!
//! The purge is housekeeping, not a guarantee: whoever reads a row checks its expiry (or,
//! for an idempotency key, removes its own expired row first) whether or not a purge ran.

use super::{
    OperationStore,
    lock::{self, Lock},
    sql::{Dialect, Statement, StoreError},
};

/// The most rows one purge removes; a larger backlog goes over the next calls.
pub(crate) const BATCH: i64 = 500;

/// A table whose rows carry an `expires_at` and may go once it has passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Expiring {
    /// `guard_idempotency`: a key's own call may hold its expired row while it runs.
    IdempotencyKeys,
    /// `guard_redeemed_states`: rows are only inserted (live) and purged.
    RedeemedStates,
    /// `guard_approvals` (their links and decisions go with them): the caller passes a time
    /// well past the deadline, so a late visitor still sees how an approval ended.
    #[cfg(feature = "approval")]
    Approvals,
    /// `guard_budgets`: a period that ended is only ever replaced, so its row may go.
    Budgets,
}

impl Expiring {
    fn statement(self, dialect: Dialect) -> &'static str {
        match (self, dialect) {
            (Expiring::IdempotencyKeys, Dialect::Postgres) => {
                "DELETE FROM guard_idempotency WHERE ctid = ANY(ARRAY(
                     SELECT ctid FROM guard_idempotency WHERE expires_at <= $1
                     LIMIT $2 FOR UPDATE SKIP LOCKED))"
            }
            // Nobody holds these rows for longer than an insert, so no row lock is needed
            // (and the server's role may not take one: it has no UPDATE on the table).
            (Expiring::RedeemedStates, Dialect::Postgres) => {
                "DELETE FROM guard_redeemed_states WHERE ctid = ANY(ARRAY(
                     SELECT ctid FROM guard_redeemed_states WHERE expires_at <= $1 LIMIT $2))"
            }
            #[cfg(feature = "approval")]
            (Expiring::Approvals, Dialect::Postgres) => {
                "DELETE FROM guard_approvals WHERE ctid = ANY(ARRAY(
                     SELECT ctid FROM guard_approvals WHERE expires_at <= $1
                     LIMIT $2 FOR UPDATE SKIP LOCKED))"
            }
            #[cfg(feature = "approval")]
            (Expiring::Approvals, Dialect::Sqlite) => {
                "DELETE FROM guard_approvals WHERE rowid IN (
                     SELECT rowid FROM guard_approvals WHERE expires_at <= $1 LIMIT $2)"
            }
            (Expiring::Budgets, Dialect::Postgres) => {
                "DELETE FROM guard_budgets WHERE ctid = ANY(ARRAY(
                     SELECT ctid FROM guard_budgets WHERE expires_at <= $1
                     LIMIT $2 FOR UPDATE SKIP LOCKED))"
            }
            (Expiring::Budgets, Dialect::Sqlite) => {
                "DELETE FROM guard_budgets WHERE rowid IN (
                     SELECT rowid FROM guard_budgets WHERE expires_at <= $1 LIMIT $2)"
            }
            (Expiring::IdempotencyKeys, Dialect::Sqlite) => {
                "DELETE FROM guard_idempotency WHERE rowid IN (
                     SELECT rowid FROM guard_idempotency WHERE expires_at <= $1 LIMIT $2)"
            }
            (Expiring::RedeemedStates, Dialect::Sqlite) => {
                "DELETE FROM guard_redeemed_states WHERE rowid IN (
                     SELECT rowid FROM guard_redeemed_states WHERE expires_at <= $1 LIMIT $2)"
            }
        }
    }
}

/// Removes up to [`BATCH`] rows of `table` that expired at or before `now`, in a
/// transaction of its own; does nothing if another purge of `table` is under way.
pub(crate) async fn expired(
    store: &dyn OperationStore,
    table: Expiring,
    now: i64,
) -> Result<(), StoreError> {
    let mut tx = store.begin().await?;
    if !lock::try_hold(&mut tx, Lock::Purge(table)).await? {
        return tx.rollback().await;
    }
    let statement = Statement::execute(
        table.statement(tx.dialect()),
        vec![now.into(), BATCH.into()],
    );
    tx.commit_after(vec![statement]).await
}

/// Like [`expired`], for callers that go on either way: a failed purge is logged and the
/// rows wait for the next one.
pub(crate) async fn expired_or_log(store: &dyn OperationStore, table: Expiring, now: i64) {
    if let Err(e) = expired(store, table, now).await {
        tracing::warn!(?table, error = %e, "purging expired rows failed; the next call tries again");
    }
}
