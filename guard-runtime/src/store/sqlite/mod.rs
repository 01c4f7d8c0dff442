//! The embedded operation store: one SQLite file in WAL mode. A transaction starts with
//! `BEGIN IMMEDIATE` (sent with its first statement), which takes the database's write lock
//! before anything is read, so two confirms of one operation (in this process or another)
//! run one after the other, never interleaved.
//!
//! rusqlite blocks, so the connection lives on a thread of its own and every statement is
//! sent there: the async runtime's workers never wait on the disk. SQLite admits one writer
//! at a time; writers of this process queue for their turn in order instead of sleeping in
//! SQLite's busy handler, and wait on another process's lock for at most [`BUSY_TIMEOUT`].
//!
//! The store and its one connection are here; opening a file (created and migrated, or one
//! that must already be guard's) is in `open`, the connection's thread in `worker`, the
//! reader that peeks beside the writer in `reader`, a transaction in `tx`, statements run on
//! the connection in `statements`, guard's values as SQLite's and back in `values`, and the
//! reading of SQLite's errors in `errors`.

mod errors;
mod open;
mod reader;
mod statements;
mod tx;
mod values;
mod worker;

use std::{sync::Arc, time::Duration};

use tokio::sync::Mutex;

pub(crate) use errors::kind;
pub(crate) use open::Access;
use reader::Reader;
use tx::SqliteTx;
use worker::Worker;

use super::{
    OperationStore,
    sql::{BoxFuture, Row, SqlValue, StoreError, Tx},
};

/// How long a transaction waits for another process's write lock before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The SQLite operation store. One connection per process, on its own thread: SQLite runs one
/// writer at a time anyway, and a single connection keeps its statement cache warm.
#[derive(Clone)]
pub struct SqliteStore {
    worker: Worker,
    /// The in-process writers' queue: held by a transaction from `BEGIN` to its end.
    turn: Arc<Mutex<()>>,
    /// What starts a transaction: `BEGIN IMMEDIATE` (the write lock first), or `BEGIN` on
    /// a read-only store, which takes no write lock.
    begin: &'static str,
    /// Where [`OperationStore::peek`] reads on a store that writes; `None` on a read-only
    /// store, whose transactions take no write lock anyway.
    reader: Option<Arc<Reader>>,
}

impl OperationStore for SqliteStore {
    /// Takes this process's turn; `BEGIN IMMEDIATE` goes to the connection with the
    /// transaction's first statement, so it costs no trip of its own.
    fn begin(&self) -> BoxFuture<'_, Result<Tx, StoreError>> {
        Box::pin(async move {
            let turn = self.turn.clone().lock_owned().await;
            Ok(Tx::new(Box::new(SqliteTx::new(
                self.worker.clone(),
                turn,
                self.begin,
            ))))
        })
    }

    /// On the reader's connection, without a transaction or the writers' turn.
    fn peek<'a>(
        &'a self,
        sql: &'a str,
        params: &'a [SqlValue],
    ) -> BoxFuture<'a, Result<Vec<Row>, StoreError>> {
        let Some(worker) = self.reader.as_deref().and_then(Reader::worker) else {
            return Box::pin(super::read_alone(self, sql, params));
        };
        let (sql, params) = values::owned(sql, params);
        let answer = worker
            .request(move |connection| Ok(statements::run(connection, &sql, params, true)?.rows));
        Box::pin(async move { answer?.await })
    }
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    /// Opening stores from inside a task, one after another, as a server that opens its
    /// operation store and its audit log's does: each open runs every schema step through
    /// the store's thread, far more round trips than one tokio task's budget, and an open
    /// that ran on that budget would spin for ever once it was spent.
    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn stores_open_one_after_another_inside_a_task() {
        let dir = tempfile::tempdir().unwrap();
        for n in 0..4 {
            let path = dir.path().join(format!("guard-{n}.db"));
            super::SqliteStore::open(path).expect("opened");
        }
    }

    /// A new store and the files SQLite writes beside it are readable by their owner only.
    #[cfg(unix)]
    #[tokio::test]
    async fn a_new_store_and_its_journal_are_the_owners_alone() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("guard.db");
        let _store = super::SqliteStore::open(&path).expect("opened");
        for name in ["guard.db", "guard.db-wal", "guard.db-shm"] {
            let mode = std::fs::metadata(dir.path().join(name))
                .unwrap_or_else(|e| panic!("{name}: {e}"))
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600, "{name} has mode {:o}", mode & 0o777);
        }
    }

    /// A peek reads the last commit while a writer holds the store's turn mid-transaction:
    /// it neither waits for that writer nor sees what it has not committed.
    #[test]
    fn a_peek_reads_the_last_commit_beside_an_open_writer() {
        use crate::store::{OperationStore, SqlValue};
        let dir = tempfile::tempdir().unwrap();
        let store = super::SqliteStore::open(dir.path().join("guard.db")).unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let nonces = |store: &super::SqliteStore| {
            let store = store.clone();
            async move {
                let peeked = store
                    .peek(
                        "SELECT nonce FROM guard_redeemed_states ORDER BY nonce",
                        &[],
                    )
                    .await
                    .expect("peek");
                peeked
                    .iter()
                    .map(|r| r.text("nonce").unwrap().to_owned())
                    .collect::<Vec<_>>()
            }
        };
        let insert = "INSERT INTO guard_redeemed_states (nonce, expires_at) VALUES ($1, 0)";
        runtime.block_on(async {
            let mut tx = store.begin().await.unwrap();
            tx.execute(insert, &[SqlValue::from("committed")])
                .await
                .unwrap();
            tx.commit().await.unwrap();
            let mut open = store.begin().await.unwrap();
            open.execute(insert, &[SqlValue::from("open")])
                .await
                .unwrap();
            // The writer's turn is held: a transaction would wait here for ever.
            let seen = tokio::time::timeout(Duration::from_secs(30), nonces(&store)).await;
            assert_eq!(
                seen.expect("the peek did not wait for the writer"),
                ["committed"],
                "the last commit, not the open write"
            );
            open.commit().await.unwrap();
            assert_eq!(nonces(&store).await, ["committed", "open"]);
        });
    }
}
