//! The operation store for several server processes: PostgreSQL. Each transaction is a
//! pooled connection in `READ COMMITTED`; guard locks the intent row with
//! `SELECT … FOR UPDATE`, so concurrent confirms of one operation queue on that row and each
//! later one reads the committed `SUBMITTED` status.

use std::{error::Error, sync::Arc};

use bytes::BytesMut;
use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod};
use tokio_postgres::{
    NoTls,
    error::SqlState,
    types::{IsNull, ToSql, Type, to_sql_checked},
};

use super::{
    OperationStore,
    schema::POSTGRES_SCHEMA,
    sql::{BoxFuture, Dialect, Row, SqlValue, StoreError, Tx, TxBackend},
};

/// The PostgreSQL operation store: a pool of connections to one database.
#[derive(Clone)]
pub struct PgStore {
    pool: Pool,
}

impl PgStore {
    /// Connections to `url` (a `postgres://` URL), at most `max_connections` at a time.
    /// Guard's tables must exist: create them once with [`PgStore::migrate`], as a role that
    /// may create tables.
    pub fn connect(url: &str, max_connections: usize) -> Result<Self, StoreError> {
        let config: tokio_postgres::Config = url
            .parse()
            .map_err(|e| StoreError::Other(format!("the PostgreSQL URL is not valid: {e}")))?;
        Self::from_config(config, max_connections)
    }

    /// Like [`connect`](Self::connect), from a built configuration (to set the role, the
    /// `search_path` or other session options).
    pub fn from_config(
        config: tokio_postgres::Config,
        max_connections: usize,
    ) -> Result<Self, StoreError> {
        let manager = Manager::from_config(
            config,
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(max_connections.max(1))
            .build()
            .map_err(|e| StoreError::Other(format!("cannot build the connection pool: {e}")))?;
        Ok(Self { pool })
    }

    /// Creates guard's tables if they are missing. Safe to run from several processes at once:
    /// an advisory lock makes them take turns.
    pub async fn migrate(&self) -> Result<(), StoreError> {
        let client = self.client().await?;
        client
            .batch_execute(&format!(
                "BEGIN; SELECT pg_advisory_xact_lock(7237150514); {POSTGRES_SCHEMA} COMMIT;"
            ))
            .await
            .map_err(pg_error)
    }

    async fn client(&self) -> Result<Object, StoreError> {
        self.pool
            .get()
            .await
            .map_err(|e| StoreError::Other(format!("no PostgreSQL connection: {e}")))
    }
}

impl OperationStore for PgStore {
    fn begin(&self) -> BoxFuture<'_, Result<Tx, StoreError>> {
        Box::pin(async move {
            let client = self.client().await?;
            client.batch_execute("BEGIN").await.map_err(pg_error)?;
            Ok(Tx::new(Box::new(PgTx {
                client: Some(client),
            })))
        })
    }
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("status", &self.pool.status())
            .finish()
    }
}

/// An open transaction on a pooled connection. `None` once committed or rolled back.
struct PgTx {
    client: Option<Object>,
}

impl PgTx {
    fn client(&self) -> Result<&Object, StoreError> {
        self.client
            .as_ref()
            .ok_or_else(|| StoreError::Other("the transaction has ended".into()))
    }

    async fn end(mut self: Box<Self>, statement: &'static str) -> Result<(), StoreError> {
        let client = self
            .client
            .take()
            .ok_or_else(|| StoreError::Other("the transaction has ended".into()))?;
        match client.batch_execute(statement).await {
            Ok(()) => Ok(()),
            Err(error) => {
                // The connection's state is unknown: keep it out of the pool.
                drop(Object::take(client));
                Err(pg_error(error))
            }
        }
    }
}

impl TxBackend for PgTx {
    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    fn execute<'a>(
        &'a mut self,
        sql: &'a str,
        params: &'a [SqlValue],
    ) -> BoxFuture<'a, Result<u64, StoreError>> {
        Box::pin(async move {
            let client = self.client()?;
            let statement = client.prepare_cached(sql).await.map_err(pg_error)?;
            let params: Vec<&(dyn ToSql + Sync)> =
                params.iter().map(|p| p as &(dyn ToSql + Sync)).collect();
            client.execute(&statement, &params).await.map_err(pg_error)
        })
    }

    fn query<'a>(
        &'a mut self,
        sql: &'a str,
        params: &'a [SqlValue],
    ) -> BoxFuture<'a, Result<Vec<Row>, StoreError>> {
        Box::pin(async move {
            let client = self.client()?;
            let statement = client.prepare_cached(sql).await.map_err(pg_error)?;
            let params: Vec<&(dyn ToSql + Sync)> =
                params.iter().map(|p| p as &(dyn ToSql + Sync)).collect();
            let rows = client.query(&statement, &params).await.map_err(pg_error)?;
            let columns: Arc<[String]> = statement
                .columns()
                .iter()
                .map(|c| c.name().to_owned())
                .collect();
            rows.iter()
                .map(|row| {
                    let values = (0..columns.len())
                        .map(|i| from_pg(row, i))
                        .collect::<Result<Vec<_>, _>>()?;
                    Ok(Row::new(columns.clone(), values))
                })
                .collect()
        })
    }

    fn commit(self: Box<Self>) -> BoxFuture<'static, Result<(), StoreError>> {
        Box::pin(self.end("COMMIT"))
    }

    fn rollback(self: Box<Self>) -> BoxFuture<'static, Result<(), StoreError>> {
        Box::pin(self.end("ROLLBACK"))
    }
}

impl Drop for PgTx {
    /// An unfinished transaction cannot be rolled back without awaiting, so its connection is
    /// taken out of the pool and closed; the server then rolls the transaction back.
    fn drop(&mut self) {
        if let Some(client) = self.client.take() {
            drop(Object::take(client));
        }
    }
}

impl ToSql for SqlValue {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        match self {
            SqlValue::Null => Ok(IsNull::Yes),
            SqlValue::Int(v) => match *ty {
                Type::INT2 => i16::try_from(*v)?.to_sql(ty, out),
                Type::INT4 => i32::try_from(*v)?.to_sql(ty, out),
                Type::INT8 => v.to_sql(ty, out),
                _ => Err(mismatch("an integer", ty)),
            },
            SqlValue::Real(v) => match *ty {
                Type::FLOAT4 => (*v as f32).to_sql(ty, out),
                Type::FLOAT8 => v.to_sql(ty, out),
                _ => Err(mismatch("a real number", ty)),
            },
            SqlValue::Text(v) => match *ty {
                Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN => {
                    v.as_str().to_sql(ty, out)
                }
                _ => Err(mismatch("text", ty)),
            },
        }
    }

    fn accepts(_: &Type) -> bool {
        // Checked per value in `to_sql`, which names the mismatch.
        true
    }

    to_sql_checked!();
}

fn mismatch(what: &str, ty: &Type) -> Box<dyn Error + Sync + Send> {
    format!("cannot bind {what} to a parameter of type {ty}; cast the parameter in SQL").into()
}

fn from_pg(row: &tokio_postgres::Row, i: usize) -> Result<SqlValue, StoreError> {
    let ty = row.columns()[i].type_().clone();
    let read = |e: tokio_postgres::Error| StoreError::Column(e.to_string());
    Ok(match ty {
        Type::INT2 => row
            .try_get::<_, Option<i16>>(i)
            .map_err(read)?
            .map(i64::from)
            .into(),
        Type::INT4 => row
            .try_get::<_, Option<i32>>(i)
            .map_err(read)?
            .map(i64::from)
            .into(),
        Type::INT8 => row.try_get::<_, Option<i64>>(i).map_err(read)?.into(),
        Type::BOOL => row
            .try_get::<_, Option<bool>>(i)
            .map_err(read)?
            .map(i64::from)
            .into(),
        Type::FLOAT4 => row
            .try_get::<_, Option<f32>>(i)
            .map_err(read)?
            .map(f64::from)
            .into(),
        Type::FLOAT8 => row.try_get::<_, Option<f64>>(i).map_err(read)?.into(),
        Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME => {
            row.try_get::<_, Option<String>>(i).map_err(read)?.into()
        }
        other => {
            return Err(StoreError::Column(format!(
                "column `{}` has type {other}, which guard does not read; cast it to text or bigint in SQL",
                row.columns()[i].name()
            )));
        }
    })
}

fn pg_error(error: tokio_postgres::Error) -> StoreError {
    match error.code() {
        Some(code) if *code == SqlState::UNIQUE_VIOLATION => StoreError::Unique(error.to_string()),
        // Class 23: integrity constraint violation (foreign key, check, not null, exclusion).
        Some(code) if code.code().starts_with("23") => StoreError::Constraint(error.to_string()),
        Some(code)
            if *code == SqlState::T_R_SERIALIZATION_FAILURE
                || *code == SqlState::T_R_DEADLOCK_DETECTED
                || *code == SqlState::LOCK_NOT_AVAILABLE =>
        {
            StoreError::Busy(error.to_string())
        }
        _ => StoreError::Other(match error.as_db_error() {
            Some(db) => format!("{}: {}", db.code().code(), db.message()),
            None => error.to_string(),
        }),
    }
}
