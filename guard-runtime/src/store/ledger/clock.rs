//! The database's clock. Due times and deadlines of ledger rows are stored and compared on
//! it, never on a time a caller passes, so processes sharing a store agree on what is due
//! or expired.

use crate::store::{Dialect, StoreError, Tx};

/// The database's clock in ms since the Unix epoch, as SQL: PostgreSQL's
/// `clock_timestamp()`, SQLite's `julianday('now')`.
pub(crate) fn now_sql(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Postgres => {
            "(pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()) * 1000)::bigint"
        }
        Dialect::Sqlite => "CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)",
    }
}

/// The database's clock ([`now_sql`]), read in `tx`.
pub(crate) async fn now(tx: &mut Tx) -> Result<i64, StoreError> {
    let sql = format!("SELECT {} AS now", now_sql(tx.dialect()));
    tx.query_opt(&sql, &[])
        .await?
        .ok_or_else(|| StoreError::Other("the database did not tell the time".into()))?
        .int("now")
}
