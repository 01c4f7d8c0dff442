//! A transaction on one pooled connection. `BEGIN` goes out with the first statement and
//! `COMMIT` with the last ones, so a short transaction costs as few round trips as it can;
//! a connection whose state is unknown never goes back to the pool.

use std::future::Future;

use deadpool_postgres::Object;
use tokio_postgres::types::ToSql;

use super::{
    errors::pg_error,
    statements::{execute_all, prepare_all, query, run_all},
};
use crate::store::sql::{
    BoxFuture, Dialect, Done, Row, SqlValue, Statement, StoreError, TxBackend,
};

/// An open transaction on a pooled connection. `None` once committed or rolled back.
pub(super) struct PgTx {
    client: Option<Object>,
    /// Whether `BEGIN` was sent (with the first statement).
    begun: bool,
}

impl PgTx {
    /// A transaction on `client`, not begun yet.
    pub(super) fn new(client: Object) -> Self {
        Self {
            client: Some(client),
            begun: false,
        }
    }

    fn client(&self) -> Result<&Object, StoreError> {
        self.client
            .as_ref()
            .ok_or_else(|| StoreError::Other("the transaction has ended".into()))
    }

    /// Runs `work` on the connection, sent right behind `BEGIN` if the transaction has not
    /// begun: tokio-postgres pipelines requests polled together, so both go in one round
    /// trip.
    async fn started<'a, T, F>(
        &'a mut self,
        work: impl FnOnce(&'a Object) -> F,
    ) -> Result<T, StoreError>
    where
        F: Future<Output = Result<T, StoreError>> + 'a,
    {
        let begin = !std::mem::replace(&mut self.begun, true);
        let client = self.client()?;
        let (began, done) = tokio::join!(
            async {
                if begin {
                    client.batch_execute("BEGIN").await.map_err(pg_error)
                } else {
                    Ok(())
                }
            },
            work(client)
        );
        began?;
        done
    }

    async fn end(
        mut self: Box<Self>,
        statements: Vec<Statement>,
        end: &'static str,
    ) -> Result<(), StoreError> {
        if !self.begun && statements.is_empty() {
            // Nothing was read or written: the connection goes back to the pool as it was.
            return Ok(());
        }
        let ran = self
            .started(|client| async move {
                // Prepared first, so `end` cannot be sent before the last statement is.
                let prepared = prepare_all(client, &statements).await?;
                let (ran, ended) =
                    tokio::join!(execute_all(client, &statements, &prepared), async {
                        client.batch_execute(end).await.map_err(pg_error)
                    });
                // A failed statement aborts the transaction, and PostgreSQL answers its COMMIT
                // with a rollback: the statement's error is the outcome.
                ran?;
                ended
            })
            .await;
        let client = self
            .client
            .take()
            .ok_or_else(|| StoreError::Other("the transaction has ended".into()))?;
        if ran.is_err() {
            // The connection's state is unknown: keep it out of the pool.
            drop(Object::take(client));
        }
        ran
    }
}

impl TxBackend for PgTx {
    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    fn batch<'a>(&'a mut self, sql: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(self.started(move |client| async move {
            client.batch_execute(sql).await.map_err(pg_error)
        }))
    }

    fn execute<'a>(
        &'a mut self,
        sql: &'a str,
        params: &'a [SqlValue],
    ) -> BoxFuture<'a, Result<u64, StoreError>> {
        Box::pin(self.started(move |client| async move {
            let statement = client.prepare_cached(sql).await.map_err(pg_error)?;
            let params: Vec<&(dyn ToSql + Sync)> =
                params.iter().map(|p| p as &(dyn ToSql + Sync)).collect();
            client.execute(&statement, &params).await.map_err(pg_error)
        }))
    }

    fn query<'a>(
        &'a mut self,
        sql: &'a str,
        params: &'a [SqlValue],
    ) -> BoxFuture<'a, Result<Vec<Row>, StoreError>> {
        Box::pin(self.started(move |client| query(client, sql, params)))
    }

    /// All of them in one round trip.
    fn pipeline<'a>(
        &'a mut self,
        statements: &'a [Statement],
    ) -> BoxFuture<'a, Result<Vec<Done>, StoreError>> {
        Box::pin(self.started(move |client| run_all(client, statements)))
    }

    /// The statements and the `COMMIT` in one round trip.
    fn commit_after(
        self: Box<Self>,
        statements: Vec<Statement>,
    ) -> BoxFuture<'static, Result<(), StoreError>> {
        Box::pin(self.end(statements, "COMMIT"))
    }

    fn commit(self: Box<Self>) -> BoxFuture<'static, Result<(), StoreError>> {
        Box::pin(self.end(Vec::new(), "COMMIT"))
    }

    fn rollback(self: Box<Self>) -> BoxFuture<'static, Result<(), StoreError>> {
        Box::pin(self.end(Vec::new(), "ROLLBACK"))
    }
}

impl Drop for PgTx {
    /// An unfinished transaction cannot be rolled back without awaiting, so its connection is
    /// taken out of the pool and closed; the server then rolls the transaction back. One
    /// that never began goes back to the pool.
    fn drop(&mut self) {
        if let Some(client) = self.client.take()
            && self.begun
        {
            drop(Object::take(client));
        }
    }
}
