//! The one connection `guard-audit` holds to an operation store, SQLite (rusqlite) or
//! PostgreSQL (tokio-postgres), reduced to what its commands need: statements with `$N`
//! parameters, rows of integers and text, and transactions. A reader's connection cannot
//! write: SQLite's file is opened `immutable=1` (no write-ahead log beside it) or
//! `mode=ro`, PostgreSQL's transactions are `READ ONLY`.

use std::{path::Path, time::Duration};

use rusqlite::{OpenFlags, types::ValueRef};
use tokio_postgres::types::{ToSql, Type};

/// How long a SQLite statement waits on a server's write lock before it fails.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// A statement's parameter.
#[derive(Debug, Clone)]
pub(crate) enum Param {
    Int(i64),
    Text(Option<String>),
}

impl From<i64> for Param {
    fn from(value: i64) -> Self {
        Self::Int(value)
    }
}

impl From<&str> for Param {
    fn from(value: &str) -> Self {
        Self::Text(Some(value.to_owned()))
    }
}

impl From<Option<&str>> for Param {
    fn from(value: Option<&str>) -> Self {
        Self::Text(value.map(str::to_owned))
    }
}

/// A column's value, as guard's tables hold them.
#[derive(Debug, Clone)]
enum Cell {
    Int(i64),
    Text(String),
    Null,
}

/// One row of an answer, by column name.
#[derive(Debug, Clone)]
pub(crate) struct Row(Vec<(String, Cell)>);

impl Row {
    fn cell(&self, name: &str) -> Result<&Cell, String> {
        self.0
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, c)| c)
            .ok_or_else(|| format!("the store's answer has no column `{name}`; run guard-audit verify on a store guard wrote"))
    }

    pub(crate) fn int(&self, name: &str) -> Result<i64, String> {
        match self.cell(name)? {
            Cell::Int(value) => Ok(*value),
            _ => Err(format!(
                "column `{name}` is not an integer; the store is not one guard wrote, or it was altered"
            )),
        }
    }

    pub(crate) fn opt_text(&self, name: &str) -> Result<Option<&str>, String> {
        match self.cell(name)? {
            Cell::Text(value) => Ok(Some(value)),
            Cell::Null => Ok(None),
            Cell::Int(_) => Err(format!(
                "column `{name}` is not text; the store is not one guard wrote, or it was altered"
            )),
        }
    }

    pub(crate) fn text(&self, name: &str) -> Result<&str, String> {
        self.opt_text(name)?.ok_or_else(|| {
            format!("column `{name}` is empty (NULL); the store is not one guard wrote, or it was altered")
        })
    }
}

/// A connection to the store.
pub(crate) enum Db {
    Sqlite {
        connection: rusqlite::Connection,
        /// The private copy the connection reads, if any: removed after it closes.
        _copy: Option<tempfile::TempDir>,
    },
    Postgres(tokio_postgres::Client),
}

impl Db {
    /// The existing SQLite file at `path`: read-only unless `write`. Nothing is created
    /// beside it: a copy with a write-ahead log and no index is read from a private copy.
    pub(crate) fn sqlite(path: &Path, write: bool) -> Result<Self, String> {
        let shown = path.display();
        let absolute = std::fs::canonicalize(path).map_err(|e| {
            format!("cannot open {shown}: {e}; give the SQLite file of an existing guard store")
        })?;
        let copy = if write {
            None
        } else {
            super::copy::private(&absolute)?
        };
        let opened = copy
            .as_ref()
            .map_or(absolute.as_path(), |(_, at)| at.as_path());
        let flags = if write {
            OpenFlags::SQLITE_OPEN_READ_WRITE
        } else {
            OpenFlags::SQLITE_OPEN_READ_ONLY
        } | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let connection = rusqlite::Connection::open_with_flags(uri(opened, write), flags)
            .map_err(|e| format!("{shown}: {e}"))?;
        connection
            .busy_timeout(BUSY_TIMEOUT)
            .map_err(|e| format!("{shown}: {e}"))?;
        Ok(Self::Sqlite {
            connection,
            _copy: copy.map(|(dir, _)| dir),
        })
    }

    /// A connection to the PostgreSQL database at `url`, whose transactions are all
    /// `READ ONLY` unless `write`.
    pub(crate) async fn postgres(url: &str, write: bool) -> Result<Self, String> {
        let mut config: tokio_postgres::Config = url
            .parse()
            .map_err(|e| format!("the PostgreSQL URL is not valid: {e}"))?;
        if !write {
            let options = match config.get_options() {
                Some(given) => format!("{given} -c default_transaction_read_only=on"),
                None => "-c default_transaction_read_only=on".to_owned(),
            };
            config.options(&options);
        }
        let (client, connection) = config
            .connect(tokio_postgres::NoTls)
            .await
            .map_err(|e| format!("cannot connect to PostgreSQL: {e}"))?;
        tokio::spawn(connection);
        Ok(Self::Postgres(client))
    }

    pub(crate) fn is_postgres(&self) -> bool {
        matches!(self, Self::Postgres(_))
    }

    /// Runs `sql`, a statement without parameters or answer (`BEGIN`, `COMMIT`, ...).
    pub(crate) async fn batch(&self, sql: &str) -> Result<(), String> {
        match self {
            Self::Sqlite { connection, .. } => connection.execute_batch(sql).map_err(sqlite_error),
            Self::Postgres(client) => client.batch_execute(sql).await.map_err(pg_error),
        }
    }

    /// The rows `sql` answers.
    pub(crate) async fn query(&self, sql: &str, params: &[Param]) -> Result<Vec<Row>, String> {
        match self {
            Self::Sqlite { connection, .. } => {
                let mut statement = connection.prepare(sql).map_err(sqlite_error)?;
                let names: Vec<String> = statement.column_names().map(str::to_owned).collect();
                let mut rows = statement
                    .query(rusqlite::params_from_iter(params.iter().map(sqlite_value)))
                    .map_err(sqlite_error)?;
                let mut out = Vec::new();
                while let Some(row) = rows.next().map_err(sqlite_error)? {
                    let mut cells = Vec::with_capacity(names.len());
                    for (i, name) in names.iter().enumerate() {
                        let cell = match row.get_ref(i).map_err(sqlite_error)? {
                            ValueRef::Integer(value) => Cell::Int(value),
                            ValueRef::Text(bytes) => {
                                Cell::Text(String::from_utf8_lossy(bytes).into_owned())
                            }
                            ValueRef::Null => Cell::Null,
                            ValueRef::Real(_) | ValueRef::Blob(_) => {
                                return Err(format!(
                                    "column `{name}` holds a number or bytes where guard keeps text or integers; the store was altered"
                                ));
                            }
                        };
                        cells.push((name.clone(), cell));
                    }
                    out.push(Row(cells));
                }
                Ok(out)
            }
            Self::Postgres(client) => {
                let values = pg_values(params);
                let refs: Vec<&(dyn ToSql + Sync)> = values.iter().map(|v| v.as_ref()).collect();
                let rows = client.query(sql, &refs).await.map_err(pg_error)?;
                rows.iter().map(pg_row).collect()
            }
        }
    }

    /// Runs `sql`, answering how many rows it changed.
    pub(crate) async fn execute(&self, sql: &str, params: &[Param]) -> Result<u64, String> {
        match self {
            Self::Sqlite { connection, .. } => connection
                .execute(
                    sql,
                    rusqlite::params_from_iter(params.iter().map(sqlite_value)),
                )
                .map(|n| n as u64)
                .map_err(sqlite_error),
            Self::Postgres(client) => {
                let values = pg_values(params);
                let refs: Vec<&(dyn ToSql + Sync)> = values.iter().map(|v| v.as_ref()).collect();
                client.execute(sql, &refs).await.map_err(pg_error)
            }
        }
    }

    /// The rows of `sql` in a transaction of their own that writes nothing.
    pub(crate) async fn read(&self, sql: &str, params: &[Param]) -> Result<Vec<Row>, String> {
        Ok(self
            .read_all(&[(sql, params)])
            .await?
            .pop()
            .unwrap_or_default())
    }

    /// The rows of each statement, all read in one transaction that writes nothing.
    pub(crate) async fn read_all(
        &self,
        statements: &[(&str, &[Param])],
    ) -> Result<Vec<Vec<Row>>, String> {
        self.batch("BEGIN").await?;
        let mut answers = Vec::with_capacity(statements.len());
        for (sql, params) in statements {
            match self.query(sql, params).await {
                Ok(rows) => answers.push(rows),
                Err(e) => {
                    let _ = self.batch("ROLLBACK").await;
                    return Err(e);
                }
            }
        }
        self.batch("ROLLBACK").await?;
        Ok(answers)
    }
}

/// The file's URI: `immutable=1` for a reader when no write-ahead log is beside it (nothing
/// is locked or created), `mode=ro` when a server may have it open, `mode=rw` to write.
fn uri(path: &Path, write: bool) -> String {
    let mut text = String::from("file:");
    for byte in path.as_os_str().as_encoded_bytes() {
        match byte {
            b'%' | b'?' | b'#' => text.push_str(&format!("%{byte:02X}")),
            b if b.is_ascii() => text.push(char::from(*b)),
            b => text.push_str(&format!("%{b:02X}")),
        }
    }
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    let live = std::fs::metadata(&wal).is_ok_and(|m| m.len() > 0);
    text.push_str(match (write, live) {
        (true, _) => "?mode=rw",
        (false, false) => "?immutable=1",
        (false, true) => "?mode=ro",
    });
    text
}

fn sqlite_value(param: &Param) -> rusqlite::types::Value {
    match param {
        Param::Int(value) => rusqlite::types::Value::Integer(*value),
        Param::Text(Some(value)) => rusqlite::types::Value::Text(value.clone()),
        Param::Text(None) => rusqlite::types::Value::Null,
    }
}

fn sqlite_error(error: rusqlite::Error) -> String {
    format!("SQLite: {error}")
}

fn pg_values(params: &[Param]) -> Vec<Box<dyn ToSql + Sync>> {
    params
        .iter()
        .map(|param| -> Box<dyn ToSql + Sync> {
            match param {
                Param::Int(value) => Box::new(*value),
                Param::Text(value) => Box::new(value.clone()),
            }
        })
        .collect()
}

fn pg_row(row: &tokio_postgres::Row) -> Result<Row, String> {
    let mut cells = Vec::with_capacity(row.len());
    for (i, column) in row.columns().iter().enumerate() {
        let name = column.name();
        let wrong = |e: tokio_postgres::Error| format!("column `{name}`: {e}");
        let cell = match *column.type_() {
            Type::INT8 => row
                .try_get::<_, Option<i64>>(i)
                .map_err(wrong)?
                .map(Cell::Int),
            Type::INT4 => row
                .try_get::<_, Option<i32>>(i)
                .map_err(wrong)?
                .map(|v| Cell::Int(v.into())),
            Type::INT2 => row
                .try_get::<_, Option<i16>>(i)
                .map_err(wrong)?
                .map(|v| Cell::Int(v.into())),
            _ => row
                .try_get::<_, Option<String>>(i)
                .map_err(wrong)?
                .map(Cell::Text),
        };
        cells.push((name.to_owned(), cell.unwrap_or(Cell::Null)));
    }
    Ok(Row(cells))
}

fn pg_error(error: tokio_postgres::Error) -> String {
    match error.as_db_error() {
        Some(db) => format!("PostgreSQL: {}", db.message()),
        None => format!("PostgreSQL: {error}"),
    }
}
