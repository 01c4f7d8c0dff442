//! Where guard keeps what must outlive a call: one narrow SQL surface ([`Tx`]) over two
//! engines, the schema and its versioned steps, and the locks that make writers take turns.
//!
//! Everything above this layer (the audit log, two-phase operations, idempotency keys, used
//! MRTR states) writes through a [`Tx`] from an [`OperationStore`]; the same statement text
//! runs on SQLite and PostgreSQL, and engine errors are mapped once per engine into
//! [`StoreError`].

pub(crate) mod approvals;
mod expiring;
pub(crate) mod identity;
pub(crate) mod ledger;
pub(crate) mod lock;
pub(crate) mod migrate;
#[cfg(feature = "postgres")]
pub mod pg;
pub(crate) mod purge;
mod schema;
pub(crate) mod spent;
mod sql;
#[cfg(feature = "sqlite")]
pub(crate) mod sqlite;

use std::sync::Arc;

#[cfg(feature = "postgres")]
pub use pg::PgStore;
pub(crate) use sql::Kind;
pub use sql::{
    BoxFuture, Dialect, Done, Row, SqlValue, Statement, StoreError, Then, Tx, TxBackend,
};
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteStore;

/// Where intents, results, rate counters and the audit log live. One method:
/// begin a transaction that serialises with every other transaction touching the same
/// intent. Implement [`TxBackend`] and this trait to add an engine.
pub trait OperationStore: Send + Sync + 'static {
    /// Begins a transaction.
    fn begin(&self) -> BoxFuture<'_, Result<Tx, StoreError>>;

    /// Runs one read-only query outside any writer's turn. It sees what was committed when
    /// it ran and may miss a write committing meanwhile, so it suits only a look whose
    /// "nothing there" is safe to act on (no grant found: the human is asked). The default
    /// reads in a transaction of its own.
    fn peek<'a>(
        &'a self,
        sql: &'a str,
        params: &'a [SqlValue],
    ) -> BoxFuture<'a, Result<Vec<Row>, StoreError>> {
        Box::pin(read_alone(self, sql, params))
    }
}

/// One query in a transaction of its own, rolled back.
pub(crate) async fn read_alone<S: OperationStore + ?Sized>(
    store: &S,
    sql: &str,
    params: &[SqlValue],
) -> Result<Vec<Row>, StoreError> {
    let mut tx = store.begin().await?;
    let rows = tx.query(sql, params).await;
    tx.rollback().await?;
    rows
}

impl<T: OperationStore + ?Sized> OperationStore for Arc<T> {
    fn begin(&self) -> BoxFuture<'_, Result<Tx, StoreError>> {
        (**self).begin()
    }

    fn peek<'a>(
        &'a self,
        sql: &'a str,
        params: &'a [SqlValue],
    ) -> BoxFuture<'a, Result<Vec<Row>, StoreError>> {
        (**self).peek(sql, params)
    }
}

/// Milliseconds since the Unix epoch, the unit of every time guard stores (effects that
/// store times beside guard's can use it too).
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}
