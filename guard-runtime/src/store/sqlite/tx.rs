//! A transaction on the store's connection: it holds this process's turn from `BEGIN` to its
//! end, and sends its end right away, so the next writer's `BEGIN` always comes after it.

use rusqlite::Connection;
use tokio::sync::OwnedMutexGuard;

use super::{
    errors::store_error,
    statements::{run, run_all, run_statement},
    values::owned,
    worker::Worker,
};
use crate::store::sql::{
    BoxFuture, Dialect, Done, Row, SqlValue, Statement, StoreError, Then, TxBackend,
};

pub(super) struct SqliteTx {
    worker: Worker,
    /// Released after `Drop` has queued the rollback, so the next writer's `BEGIN` runs
    /// after it.
    _turn: OwnedMutexGuard<()>,
    /// Whether `BEGIN IMMEDIATE` was queued (with the first statement) and the transaction
    /// not yet ended.
    begun: bool,
    /// The store's `BEGIN` statement.
    begin: &'static str,
}

impl SqliteTx {
    /// A transaction holding `turn`, not begun yet; `begin` is the store's `BEGIN` statement.
    pub(super) fn new(worker: Worker, turn: OwnedMutexGuard<()>, begin: &'static str) -> Self {
        Self {
            worker,
            _turn: turn,
            begun: false,
            begin,
        }
    }

    /// Sends `job` to the connection, after `BEGIN IMMEDIATE` if this is the transaction's
    /// first.
    fn job<'a, T: Send + 'static>(
        &'a mut self,
        job: impl FnOnce(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> BoxFuture<'a, Result<T, StoreError>> {
        let begin = (!std::mem::replace(&mut self.begun, true)).then_some(self.begin);
        let answer = self.worker.request(move |connection| {
            if let Some(begin) = begin {
                connection.execute_batch(begin)?;
            }
            job(connection)
        });
        Box::pin(async move { answer?.await })
    }

    /// Ends the transaction: `finish` runs on the connection and answers whether to commit.
    /// Sent now, so it is queued ahead of the next writer's `BEGIN` even if the returned
    /// future is never polled.
    fn end(
        mut self: Box<Self>,
        finish: impl FnOnce(&mut Connection) -> Result<bool, StoreError> + Send + 'static,
    ) -> BoxFuture<'static, Result<(), StoreError>> {
        let begin = (!self.begun).then_some(self.begin);
        let answer = self.worker.request(move |connection| {
            let ended = begin
                .map_or(Ok(()), |begin| {
                    connection.execute_batch(begin).map_err(store_error)
                })
                .and_then(|()| finish(connection))
                .and_then(|commit| {
                    let end = if commit { "COMMIT" } else { "ROLLBACK" };
                    connection.execute_batch(end).map_err(store_error)
                });
            if !connection.is_autocommit() {
                // A failed statement or COMMIT leaves the transaction open; end it so the
                // connection is usable.
                let _ = connection.execute_batch("ROLLBACK");
            }
            Ok(ended)
        });
        self.begun = answer.is_err();
        Box::pin(async move {
            let result = answer?.await.and_then(|ended| ended);
            drop(self);
            result
        })
    }
}

impl TxBackend for SqliteTx {
    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    fn execute<'a>(
        &'a mut self,
        sql: &'a str,
        params: &'a [SqlValue],
    ) -> BoxFuture<'a, Result<u64, StoreError>> {
        let (sql, params) = owned(sql, params);
        self.job(move |connection| Ok(run(connection, &sql, params, false)?.changed))
    }

    fn query<'a>(
        &'a mut self,
        sql: &'a str,
        params: &'a [SqlValue],
    ) -> BoxFuture<'a, Result<Vec<Row>, StoreError>> {
        let (sql, params) = owned(sql, params);
        self.job(move |connection| Ok(run(connection, &sql, params, true)?.rows))
    }

    /// One trip to the connection's thread for all of them.
    fn pipeline<'a>(
        &'a mut self,
        statements: &'a [Statement],
    ) -> BoxFuture<'a, Result<Vec<Done>, StoreError>> {
        let statements = statements.to_vec();
        self.job(move |connection| {
            statements
                .iter()
                .map(|s| run_statement(connection, s))
                .collect()
        })
    }

    /// One trip for the statements and the commit.
    fn commit_after(
        self: Box<Self>,
        statements: Vec<Statement>,
    ) -> BoxFuture<'static, Result<(), StoreError>> {
        self.end(move |connection| {
            run_all(connection, &statements)?;
            Ok(true)
        })
    }

    /// One trip: `then` runs on the connection's thread, between the statements.
    fn commit_then(
        self: Box<Self>,
        statements: Vec<Statement>,
        then: Then,
    ) -> BoxFuture<'static, Result<(), StoreError>> {
        self.end(move |connection| {
            let more = then(run_all(connection, &statements)?)?;
            run_all(connection, &more)?;
            Ok(true)
        })
    }

    fn batch<'a>(&'a mut self, sql: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        let sql = sql.to_owned();
        self.job(move |connection| connection.execute_batch(&sql))
    }

    fn commit(self: Box<Self>) -> BoxFuture<'static, Result<(), StoreError>> {
        if !self.begun {
            // Nothing was read or written: there is nothing to commit.
            return Box::pin(async { Ok(()) });
        }
        self.end(|_| Ok(true))
    }

    fn rollback(self: Box<Self>) -> BoxFuture<'static, Result<(), StoreError>> {
        if !self.begun {
            return Box::pin(async { Ok(()) });
        }
        self.end(|_| Ok(false))
    }
}

impl Drop for SqliteTx {
    /// A transaction dropped unfinished (an error path, a cancelled call) rolls back.
    fn drop(&mut self) {
        if self.begun {
            let queued = self.worker.send(|connection| {
                if connection.is_autocommit() {
                    // Its `BEGIN` failed: there is nothing to roll back.
                    return;
                }
                if let Err(error) = connection.execute_batch("ROLLBACK") {
                    tracing::error!(%error, "could not roll back an abandoned SQLite transaction");
                }
            });
            if let Err(error) = queued {
                tracing::error!(%error, "could not roll back an abandoned SQLite transaction");
            }
        }
    }
}
