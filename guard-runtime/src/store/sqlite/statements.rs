//! Statements run on the connection's thread, written with PostgreSQL's `$1`, `$2`, … and
//! numbered for SQLite, each prepared once per connection.

use std::sync::Arc;

use rusqlite::Connection;

use super::{
    errors::store_error,
    values::{from_sqlite, to_sqlite},
};
use crate::store::sql::{Done, Row, Statement, StoreError, numbered_for_sqlite};

/// Runs `sql` (written with `$1`, `$2`, …) on `connection`: its rows if `wants_rows`, else
/// the rows it changed.
pub(super) fn run(
    connection: &mut Connection,
    sql: &str,
    params: impl IntoIterator<Item = rusqlite::types::Value>,
    wants_rows: bool,
) -> rusqlite::Result<Done> {
    let mut prepared = connection.prepare_cached(&numbered_for_sqlite(sql))?;
    let params = rusqlite::params_from_iter(params);
    if wants_rows {
        let rows = rows(&mut prepared, params)?;
        Ok(Done {
            changed: rows.len() as u64,
            rows,
        })
    } else {
        let changed = prepared.execute(params)? as u64;
        Ok(Done {
            rows: Vec::new(),
            changed,
        })
    }
}

/// Runs one statement of a pipeline.
pub(super) fn run_statement(
    connection: &mut Connection,
    statement: &Statement,
) -> rusqlite::Result<Done> {
    let params = statement.params().iter().map(to_sqlite);
    run(connection, statement.sql(), params, statement.wants_rows())
}

/// Runs `statements` in order, stopping at the first that fails.
pub(super) fn run_all(
    connection: &mut Connection,
    statements: &[Statement],
) -> Result<Vec<Done>, StoreError> {
    statements
        .iter()
        .map(|s| run_statement(connection, s).map_err(store_error))
        .collect()
}

fn rows(
    statement: &mut rusqlite::Statement<'_>,
    params: impl rusqlite::Params,
) -> rusqlite::Result<Vec<Row>> {
    let columns: Arc<[String]> = statement.column_names().map(str::to_owned).collect();
    let width = columns.len();
    let mut rows = statement.query(params)?;
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        let values = (0..width)
            .map(|i| row.get_ref(i).map(from_sqlite))
            .collect::<rusqlite::Result<Vec<_>>>()?;
        out.push(Row::new(columns.clone(), values));
    }
    Ok(out)
}
