//! Statements on one connection: each prepared once per connection, several sent before the
//! first answer is awaited (tokio-postgres pipelines what is polled together), and their rows
//! read back as guard's.

use std::sync::Arc;

use deadpool_postgres::Object;
use tokio_postgres::types::ToSql;

use super::{errors::pg_error, values::from_pg};
use crate::store::sql::{Done, Row, SqlValue, Statement, StoreError};

/// Runs `statements` in order, all sent before the first answer is awaited.
pub(super) async fn run_all(
    client: &Object,
    statements: &[Statement],
) -> Result<Vec<Done>, StoreError> {
    let prepared = prepare_all(client, statements).await?;
    execute_all(client, statements, &prepared).await
}

pub(super) async fn prepare_all(
    client: &Object,
    statements: &[Statement],
) -> Result<Vec<tokio_postgres::Statement>, StoreError> {
    futures_util::future::try_join_all(statements.iter().map(|s| client.prepare_cached(s.sql())))
        .await
        .map_err(pg_error)
}

/// Sends every statement the first time it is polled, in order (a prepared statement's
/// request goes out before its future first waits), then collects the answers.
pub(super) async fn execute_all(
    client: &Object,
    statements: &[Statement],
    prepared: &[tokio_postgres::Statement],
) -> Result<Vec<Done>, StoreError> {
    futures_util::future::try_join_all(statements.iter().zip(prepared).map(
        |(statement, prepared)| async move {
            let params = statement.params().iter().map(|p| p as &(dyn ToSql + Sync));
            let stream = client.query_raw(prepared, params).await.map_err(pg_error)?;
            let mut stream = std::pin::pin!(stream);
            let mut rows = Vec::new();
            while let Some(row) = futures_util::TryStreamExt::try_next(&mut stream)
                .await
                .map_err(pg_error)?
            {
                if statement.wants_rows() {
                    rows.push(row);
                }
            }
            let changed = stream.rows_affected().unwrap_or(rows.len() as u64);
            Ok(Done {
                rows: to_rows(prepared, &rows)?,
                changed,
            })
        },
    ))
    .await
}

/// The rows of `sql` on `client`, its statement prepared once per connection.
pub(super) async fn query(
    client: &Object,
    sql: &str,
    params: &[SqlValue],
) -> Result<Vec<Row>, StoreError> {
    let statement = client.prepare_cached(sql).await.map_err(pg_error)?;
    let params: Vec<&(dyn ToSql + Sync)> =
        params.iter().map(|p| p as &(dyn ToSql + Sync)).collect();
    let rows = client.query(&statement, &params).await.map_err(pg_error)?;
    to_rows(&statement, &rows)
}

/// tokio-postgres rows as guard's.
fn to_rows(
    statement: &tokio_postgres::Statement,
    rows: &[tokio_postgres::Row],
) -> Result<Vec<Row>, StoreError> {
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
}
