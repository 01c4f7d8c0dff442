//! The embedded operation store: one SQLite file in WAL mode. A transaction starts with
//! `BEGIN IMMEDIATE`, which takes the database's write lock up front, so two confirms of one
//! operation (in this process or another) run one after the other, never interleaved.

use std::{path::Path, sync::Arc, time::Duration};

use rusqlite::{Connection, ErrorCode, types::ValueRef};
use tokio::sync::{Mutex, OwnedMutexGuard};

use super::{
    OperationStore,
    schema::SQLITE_SCHEMA,
    sql::{BoxFuture, Dialect, Row, SqlValue, StoreError, Tx, TxBackend, numbered_for_sqlite},
};

/// How long a transaction waits for another process's write lock before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The SQLite operation store. One connection per process: SQLite runs one writer at a time
/// anyway, and a single connection keeps its statement cache warm.
#[derive(Clone)]
pub struct SqliteStore {
    connection: Arc<Mutex<Connection>>,
}

impl SqliteStore {
    /// Opens (or creates) the store at `path`, in WAL mode, with guard's tables.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let connection = Connection::open(path.as_ref()).map_err(store_error)?;
        connection.busy_timeout(BUSY_TIMEOUT).map_err(store_error)?;
        let mode: String = connection
            .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
            .map_err(store_error)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::Other(format!(
                "{} cannot use WAL (journal mode is {mode}); put the store on a local disk",
                path.as_ref().display()
            )));
        }
        connection
            .execute_batch("PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;")
            .map_err(store_error)?;
        connection
            .execute_batch(SQLITE_SCHEMA)
            .map_err(store_error)?;
        Ok(Self {
            connection: Arc::new(Mutex::new(connection)),
        })
    }
}

impl OperationStore for SqliteStore {
    fn begin(&self) -> BoxFuture<'_, Result<Tx, StoreError>> {
        Box::pin(async move {
            let connection = self.connection.clone().lock_owned().await;
            connection
                .execute_batch("BEGIN IMMEDIATE")
                .map_err(store_error)?;
            Ok(Tx::new(Box::new(SqliteTx {
                connection,
                open: true,
            })))
        })
    }
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore").finish_non_exhaustive()
    }
}

struct SqliteTx {
    connection: OwnedMutexGuard<Connection>,
    open: bool,
}

impl SqliteTx {
    fn run<T>(
        &mut self,
        sql: &str,
        params: &[SqlValue],
        f: impl FnOnce(&mut rusqlite::Statement<'_>, &[rusqlite::types::Value]) -> rusqlite::Result<T>,
    ) -> Result<T, StoreError> {
        let sql = numbered_for_sqlite(sql);
        let mut statement = self.connection.prepare_cached(&sql).map_err(store_error)?;
        let params: Vec<rusqlite::types::Value> = params.iter().map(to_sqlite).collect();
        f(&mut statement, &params).map_err(store_error)
    }

    fn end(&mut self, statement: &str) -> Result<(), StoreError> {
        self.open = false;
        self.connection
            .execute_batch(statement)
            .map_err(store_error)
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
        let result = self.run(sql, params, |statement, params| {
            statement
                .execute(rusqlite::params_from_iter(params))
                .map(|n| n as u64)
        });
        Box::pin(std::future::ready(result))
    }

    fn query<'a>(
        &'a mut self,
        sql: &'a str,
        params: &'a [SqlValue],
    ) -> BoxFuture<'a, Result<Vec<Row>, StoreError>> {
        let result = self.run(sql, params, |statement, params| {
            let columns: Arc<[String]> = statement
                .column_names()
                .map(str::to_owned)
                .collect();
            let width = columns.len();
            let mut rows = statement.query(rusqlite::params_from_iter(params))?;
            let mut out = Vec::new();
            while let Some(row) = rows.next()? {
                let values = (0..width)
                    .map(|i| row.get_ref(i).map(from_sqlite))
                    .collect::<rusqlite::Result<Vec<_>>>()?;
                out.push(Row::new(columns.clone(), values));
            }
            Ok(out)
        });
        Box::pin(std::future::ready(result))
    }

    fn commit(mut self: Box<Self>) -> BoxFuture<'static, Result<(), StoreError>> {
        let result = self.end("COMMIT");
        if result.is_err() {
            // A failed COMMIT leaves the transaction open; end it so the connection is usable.
            let _ = self.connection.execute_batch("ROLLBACK");
        }
        Box::pin(std::future::ready(result))
    }

    fn rollback(mut self: Box<Self>) -> BoxFuture<'static, Result<(), StoreError>> {
        let result = self.end("ROLLBACK");
        Box::pin(std::future::ready(result))
    }
}

impl Drop for SqliteTx {
    /// A transaction dropped unfinished (an error path, a cancelled call) rolls back.
    fn drop(&mut self) {
        if self.open
            && let Err(error) = self.connection.execute_batch("ROLLBACK")
        {
            tracing::error!(%error, "could not roll back an abandoned SQLite transaction");
        }
    }
}

fn to_sqlite(value: &SqlValue) -> rusqlite::types::Value {
    use rusqlite::types::Value;
    match value {
        SqlValue::Null => Value::Null,
        SqlValue::Int(v) => Value::Integer(*v),
        SqlValue::Real(v) => Value::Real(*v),
        SqlValue::Text(v) => Value::Text(v.clone()),
    }
}

fn from_sqlite(value: ValueRef<'_>) -> SqlValue {
    match value {
        ValueRef::Null => SqlValue::Null,
        ValueRef::Integer(v) => SqlValue::Int(v),
        ValueRef::Real(v) => SqlValue::Real(v),
        ValueRef::Text(v) | ValueRef::Blob(v) => {
            SqlValue::Text(String::from_utf8_lossy(v).into_owned())
        }
    }
}

fn store_error(error: rusqlite::Error) -> StoreError {
    match &error {
        rusqlite::Error::SqliteFailure(e, _) => match e.code {
            ErrorCode::ConstraintViolation
                if matches!(
                    e.extended_code,
                    rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE
                        | rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY
                ) =>
            {
                StoreError::Unique(error.to_string())
            }
            ErrorCode::ConstraintViolation => StoreError::Constraint(error.to_string()),
            ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked => {
                StoreError::Busy(error.to_string())
            }
            _ => StoreError::Other(error.to_string()),
        },
        _ => StoreError::Other(error.to_string()),
    }
}
