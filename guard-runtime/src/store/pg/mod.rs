//! The operation store for several server processes: PostgreSQL. Each transaction is a
//! pooled connection in `READ COMMITTED`; guard locks the intent row with
//! `SELECT … FOR UPDATE`, so concurrent confirms of one operation queue on that row and each
//! later one reads the committed `SUBMITTED` status.
//!
//! # Least privilege against the server's own role
//!
//! Assume the role the server connects as is the attacker: whoever controls the process
//! can send any SQL that role may send. Three pieces keep that role to what guard needs:
//!
//! - [`operation_grants_sql`] renders the grants on guard's tables: `UPDATE` on
//!   `guard_operations` only for the columns guard updates ([`OPERATION_UPDATE_COLUMNS`]),
//!   no `UPDATE` or `DELETE` on effects or audit.
//! - [`PgStore::migrate`] adds two triggers that the database enforces for every role but the
//!   tables' owner: an intent's identity, payload, digest and expiry never change and a closed
//!   intent never moves again; and `SUBMITTED` needs its row in `guard_operation_effects`
//!   (checked at commit).
//! - [`definer_function_sql`] renders a `SECURITY DEFINER` function the way PostgreSQL's own
//!   documentation asks for it, for a deployment that lets its role do one narrow thing on a
//!   table it may not touch (lock an order, say).
//!
//! The store and its pool are here; a transaction on one connection is in `tx`, statements
//! sent together and their rows read back in `statements`, guard's values as PostgreSQL's
//! and back in `values`, and the reading of SQLSTATEs in `errors`. The least-privilege SQL
//! is rendered by `grants` and `definer`; `names` checks what they write into it.

mod definer;
mod errors;
mod grants;
mod names;
mod statements;
mod tx;
mod values;

use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod};
use tokio_postgres::NoTls;

pub use definer::{DefinerFunction, definer_function_sql};
pub(crate) use errors::kind;
pub use grants::{OPERATION_UPDATE_COLUMNS, operation_grants_sql};
use tx::PgTx;

use super::{
    OperationStore,
    migrate::{self, Step},
    schema::POSTGRES_GUARDS,
    sql::{BoxFuture, Row, SqlValue, StoreError, Tx},
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

    /// Brings the tables to the last of `steps` and (re)creates the triggers
    /// (`PgStore::migrate` passes guard's schema).
    pub(crate) async fn migrate_with(&self, steps: &[Step]) -> Result<(), StoreError> {
        let mut tx = self.begin().await?;
        migrate::run(&mut tx, steps).await?;
        // The triggers are definitions, not steps: the latest ones replace older ones.
        tx.batch(POSTGRES_GUARDS).await?;
        tx.commit().await
    }

    async fn client(&self) -> Result<Object, StoreError> {
        self.pool
            .get()
            .await
            .map_err(|e| StoreError::Other(format!("no PostgreSQL connection: {e}")))
    }
}

impl OperationStore for PgStore {
    /// Takes a pooled connection; `BEGIN` is sent with the transaction's first statement, so
    /// it costs no round trip of its own.
    fn begin(&self) -> BoxFuture<'_, Result<Tx, StoreError>> {
        Box::pin(async move {
            let client = self.client().await?;
            Ok(Tx::new(Box::new(PgTx::new(client))))
        })
    }

    /// One statement on a pooled connection, outside a transaction: one round trip.
    fn peek<'a>(
        &'a self,
        sql: &'a str,
        params: &'a [SqlValue],
    ) -> BoxFuture<'a, Result<Vec<Row>, StoreError>> {
        Box::pin(async move { statements::query(&self.client().await?, sql, params).await })
    }
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("status", &self.pool.status())
            .finish()
    }
}
