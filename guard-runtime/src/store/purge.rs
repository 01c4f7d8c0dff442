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

/// The tables a purge empties, named where callers purge.
pub(crate) use super::expiring::Expiring;
use super::{
    OperationStore,
    lock::{self, Lock},
    sql::{Statement, StoreError},
};

/// The most rows one purge removes; a larger backlog goes over the next calls.
pub(crate) const BATCH: i64 = 500;

/// Removes up to [`BATCH`] rows of `table` that expired at or before `now`, and by the
/// database's clock too (a ledger table refuses to lose a row before that clock says it
/// expired, so a caller whose clock runs ahead would otherwise have its whole purge refused),
/// in a transaction of its own; does nothing if another purge of `table` is under way.
pub(crate) async fn expired(
    store: &dyn OperationStore,
    table: Expiring,
    now: i64,
) -> Result<(), StoreError> {
    let mut tx = store.begin().await?;
    if !lock::try_hold(&mut tx, Lock::Purge(table)).await? {
        return tx.rollback().await;
    }
    let now = now.min(crate::store::ledger::clock::now(&mut tx).await?);
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

#[cfg(all(test, feature = "sqlite"))]
mod tests {
    use super::*;
    use crate::store::{SqliteStore, now_ms};

    /// A purger whose clock runs an hour ahead removes what expired and keeps the spent state
    /// the database's clock still holds live (which the ledger would refuse to delete,
    /// failing the whole purge).
    #[tokio::test]
    async fn a_purge_ahead_of_the_database_clock_removes_only_what_expired() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path().join("guard.db")).unwrap();
        let now = now_ms();
        let mut tx = store.begin().await.unwrap();
        for (nonce, until) in [("live", now + 600_000), ("gone", now - 1)] {
            tx.execute(
                "INSERT INTO guard_redeemed_states (nonce, expires_at) VALUES ($1, $2)",
                &[nonce.into(), until.into()],
            )
            .await
            .unwrap();
        }
        tx.commit().await.unwrap();

        expired(&store, Expiring::RedeemedStates, now + 3_600_000)
            .await
            .expect("the purge goes through");
        let mut tx = store.begin().await.unwrap();
        let left = tx
            .query("SELECT nonce FROM guard_redeemed_states", &[])
            .await
            .unwrap();
        tx.rollback().await.unwrap();
        let left: Vec<&str> = left.iter().map(|r| r.text("nonce").unwrap()).collect();
        assert_eq!(left, ["live"]);
    }
}
