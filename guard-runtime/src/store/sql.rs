//! The narrow SQL surface that the operation store and the authors' effects share: one
//! transaction, values and rows. The same statement text runs on SQLite and PostgreSQL:
//! parameters are written `$1`, `$2`, … and the SQLite backend reads them as `?1`, `?2`.

use std::{fmt, future::Future, pin::Pin, sync::Arc};

use crate::error::{Code, ToolError};

/// A boxed, sendable future: what a store backend returns.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Which SQL engine runs a transaction, for the few statements that differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// SQLite.
    Sqlite,
    /// PostgreSQL.
    Postgres,
}

/// A statement parameter or a column value.
#[derive(Debug, Clone, PartialEq)]
pub enum SqlValue {
    /// SQL `NULL`.
    Null,
    /// An integer.
    Int(i64),
    /// A float.
    Real(f64),
    /// Text.
    Text(String),
}

impl From<i64> for SqlValue {
    fn from(v: i64) -> Self {
        SqlValue::Int(v)
    }
}

impl From<i32> for SqlValue {
    fn from(v: i32) -> Self {
        SqlValue::Int(v.into())
    }
}

impl From<f64> for SqlValue {
    fn from(v: f64) -> Self {
        SqlValue::Real(v)
    }
}

impl From<&str> for SqlValue {
    fn from(v: &str) -> Self {
        SqlValue::Text(v.to_owned())
    }
}

impl From<String> for SqlValue {
    fn from(v: String) -> Self {
        SqlValue::Text(v)
    }
}

impl From<&String> for SqlValue {
    fn from(v: &String) -> Self {
        SqlValue::Text(v.clone())
    }
}

impl<T: Into<SqlValue>> From<Option<T>> for SqlValue {
    fn from(v: Option<T>) -> Self {
        v.map_or(SqlValue::Null, Into::into)
    }
}

/// One result row, read by column name.
#[derive(Debug, Clone)]
pub struct Row {
    columns: Arc<[String]>,
    values: Vec<SqlValue>,
}

impl Row {
    /// A row of `values`, named by `columns`.
    pub fn new(columns: Arc<[String]>, values: Vec<SqlValue>) -> Self {
        Self { columns, values }
    }

    /// The value of `column`, if the row has that column.
    pub fn get(&self, column: &str) -> Option<&SqlValue> {
        let at = self.columns.iter().position(|c| c == column)?;
        self.values.get(at)
    }

    fn value(&self, column: &str) -> Result<&SqlValue, StoreError> {
        self.get(column)
            .ok_or_else(|| StoreError::Column(format!("the row has no column `{column}`")))
    }

    /// An integer column (NULL is an error).
    pub fn int(&self, column: &str) -> Result<i64, StoreError> {
        self.opt_int(column)?
            .ok_or_else(|| StoreError::Column(format!("column `{column}` is NULL")))
    }

    /// An integer column that may be NULL.
    pub fn opt_int(&self, column: &str) -> Result<Option<i64>, StoreError> {
        match self.value(column)? {
            SqlValue::Null => Ok(None),
            SqlValue::Int(v) => Ok(Some(*v)),
            other => Err(StoreError::Column(format!(
                "column `{column}` holds {other:?}, not an integer"
            ))),
        }
    }

    /// A text column (NULL is an error).
    pub fn text(&self, column: &str) -> Result<&str, StoreError> {
        self.opt_text(column)?
            .ok_or_else(|| StoreError::Column(format!("column `{column}` is NULL")))
    }

    /// A text column that may be NULL.
    pub fn opt_text(&self, column: &str) -> Result<Option<&str>, StoreError> {
        match self.value(column)? {
            SqlValue::Null => Ok(None),
            SqlValue::Text(v) => Ok(Some(v)),
            other => Err(StoreError::Column(format!(
                "column `{column}` holds {other:?}, not text"
            ))),
        }
    }
}

/// A store failure. Its text is for logs: the model only ever sees a stable code.
#[derive(Clone, thiserror::Error)]
pub enum StoreError {
    /// A unique constraint refused a second row.
    #[error("unique constraint violated: {0}")]
    Unique(String),
    /// Another integrity constraint (foreign key, check, not null, exclusion) refused the
    /// statement: SQLite's `SQLITE_CONSTRAINT_*`, PostgreSQL's SQLSTATE class 23. The
    /// statement had no effect; the data is not what the statement assumed.
    #[error("integrity constraint violated: {0}")]
    Constraint(String),
    /// The engine could not take a lock in time, or aborted the transaction to break a
    /// deadlock; trying again may succeed.
    #[error("the store is busy: {0}")]
    Busy(String),
    /// A row did not have the shape the reader expected.
    #[error("unexpected row shape: {0}")]
    Column(String),
    /// Anything else: connection lost, bad SQL, permission denied, disk full. Unlike a
    /// constraint violation, the store may not have answered at all.
    #[error("store failure: {0}")]
    Other(String),
}

/// Its sentence, as [`Display`](std::fmt::Display) says it: `main() -> Result<(), Box<dyn
/// Error>>` prints an error returned at start-up with `Debug`, and should say what to do.
impl std::fmt::Debug for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

/// What an engine's error means, decided once per engine (`sqlite::kind`, `pg::kind`) for
/// the operation store and the tools' database handles alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A unique or primary-key constraint refused a second row.
    Unique,
    /// Another integrity constraint refused the statement.
    Constraint,
    /// A lock could not be taken in time, or a deadlock was broken.
    Busy,
    /// The connection or transaction is read-only and the statement would write.
    ReadOnly,
    /// Several statements were sent where one is allowed (PostgreSQL's extended protocol
    /// says so; SQLite never does).
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    MultipleStatements,
    /// Anything else.
    Other,
}

impl Kind {
    /// The store's error for an engine error of this kind, described by `text`.
    pub(crate) fn store_error(self, text: String) -> StoreError {
        match self {
            Kind::Unique => StoreError::Unique(text),
            Kind::Constraint => StoreError::Constraint(text),
            Kind::Busy => StoreError::Busy(text),
            Kind::ReadOnly | Kind::MultipleStatements | Kind::Other => StoreError::Other(text),
        }
    }
}

impl StoreError {
    /// Whether a unique constraint refused the statement.
    pub fn is_unique(&self) -> bool {
        matches!(self, StoreError::Unique(_))
    }

    /// Whether the store refused the statement because of the data (any integrity
    /// constraint, unique included): a definite answer, not a lost connection.
    pub fn is_constraint(&self) -> bool {
        matches!(self, StoreError::Unique(_) | StoreError::Constraint(_))
    }
}

/// A store failure inside a tool: the detail goes to the log under a trace id. A constraint
/// violation means the data changed under the call: the model gets `STATE_CHANGED` (in a
/// confirm, guard closes the intent as `REJECTED`). Anything else is `UNAVAILABLE` (in a
/// confirm, guard turns it into "result unknown").
impl From<StoreError> for ToolError {
    fn from(error: StoreError) -> Self {
        let trace_id = crate::trace::new_id();
        if error.is_constraint() {
            tracing::warn!(%trace_id, %error, "the store refused a statement on a constraint");
            return ToolError::new(
                Code::StateChanged,
                format!(
                    "The data changed: the database refused the change because it conflicts with what is stored now, so nothing was changed (trace_id {trace_id})."
                ),
            );
        }
        tracing::error!(%trace_id, %error, "operation store failed");
        ToolError::new(
            Code::Unavailable,
            format!(
                "The database failed while serving this call. Try again later; quote trace_id {trace_id} to the operator if it persists."
            ),
        )
    }
}

/// One statement of a [`Tx::pipeline`]: its text (`$1`, `$2`, … for parameters), its
/// values, and whether its rows are wanted.
#[derive(Debug, Clone)]
pub struct Statement {
    sql: &'static str,
    params: Vec<SqlValue>,
    rows: bool,
}

impl Statement {
    /// A statement whose rows are wanted (a `SELECT`, an `INSERT … RETURNING`).
    pub fn query(sql: &'static str, params: Vec<SqlValue>) -> Self {
        Self {
            sql,
            params,
            rows: true,
        }
    }

    /// A statement whose changed-row count is wanted.
    pub fn execute(sql: &'static str, params: Vec<SqlValue>) -> Self {
        Self {
            sql,
            params,
            rows: false,
        }
    }

    /// The statement's text.
    pub fn sql(&self) -> &'static str {
        self.sql
    }

    /// Its parameters.
    pub fn params(&self) -> &[SqlValue] {
        &self.params
    }

    /// Whether its rows are wanted.
    pub fn wants_rows(&self) -> bool {
        self.rows
    }
}

/// What one statement of a pipeline did.
#[derive(Debug, Clone, Default)]
pub struct Done {
    /// The rows it returned (a [`Statement::query`]; empty for an execute).
    pub rows: Vec<Row>,
    /// The rows it changed (a [`Statement::execute`]; for a query, the rows returned).
    pub changed: u64,
}

/// What [`TxBackend::commit_then`] runs on what its first statements did: the statements
/// to run next, or why nothing may commit.
pub type Then = Box<dyn FnOnce(Vec<Done>) -> Result<Vec<Statement>, StoreError> + Send>;

/// What a store engine implements for one open transaction. Guard and the authors use it
/// through [`Tx`]. Dropping a backend that was neither committed nor rolled back must roll
/// it back (or discard its connection, which does the same).
pub trait TxBackend: Send + 'static {
    /// The engine.
    fn dialect(&self) -> Dialect;
    /// Runs one statement; returns the number of rows it changed.
    fn execute<'a>(
        &'a mut self,
        sql: &'a str,
        params: &'a [SqlValue],
    ) -> BoxFuture<'a, Result<u64, StoreError>>;
    /// Runs one statement and returns its rows.
    fn query<'a>(
        &'a mut self,
        sql: &'a str,
        params: &'a [SqlValue],
    ) -> BoxFuture<'a, Result<Vec<Row>, StoreError>>;
    /// Runs several statements separated by `;`, without parameters: guard's schema
    /// migration. A backend guard does not migrate need not run them.
    fn batch<'a>(&'a mut self, sql: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        let _ = sql;
        Box::pin(async {
            Err(StoreError::Other(
                "this store cannot run a batch of statements, so guard cannot create its tables in it".into(),
            ))
        })
    }
    /// Runs `statements` in order and answers what each did, stopping at the first that
    /// fails. An engine that can send them together (one round trip) should; this default
    /// runs them one by one.
    fn pipeline<'a>(
        &'a mut self,
        statements: &'a [Statement],
    ) -> BoxFuture<'a, Result<Vec<Done>, StoreError>> {
        Box::pin(async move {
            let mut done = Vec::with_capacity(statements.len());
            for statement in statements {
                done.push(if statement.rows {
                    let rows = self.query(statement.sql, &statement.params).await?;
                    Done {
                        changed: rows.len() as u64,
                        rows,
                    }
                } else {
                    let changed = self.execute(statement.sql, &statement.params).await?;
                    Done {
                        rows: Vec::new(),
                        changed,
                    }
                });
            }
            Ok(done)
        })
    }
    /// Runs `statements` like [`pipeline`](Self::pipeline), then commits if all of them
    /// succeeded and rolls back if one failed. The default sends the commit separately.
    fn commit_after(
        mut self: Box<Self>,
        statements: Vec<Statement>,
    ) -> BoxFuture<'static, Result<(), StoreError>> {
        Box::pin(async move {
            let ran = self.pipeline(&statements).await.map(drop);
            match ran {
                Ok(()) => self.commit().await,
                Err(error) => {
                    let _ = self.rollback().await;
                    Err(error)
                }
            }
        })
    }
    /// Runs `statements`, hands what they did to `then`, runs the statements `then` answers
    /// and commits; if any of them fails, or `then` refuses, nothing commits. For a write
    /// that depends on what the transaction just read (an audit entry chains to the last
    /// one). An engine that can run `then` where the statements run (SQLite, on its thread)
    /// does it all in one trip; this default takes two.
    fn commit_then(
        mut self: Box<Self>,
        statements: Vec<Statement>,
        then: Then,
    ) -> BoxFuture<'static, Result<(), StoreError>> {
        Box::pin(async move {
            let more = match self.pipeline(&statements).await.and_then(then) {
                Ok(more) => more,
                Err(error) => {
                    let _ = self.rollback().await;
                    return Err(error);
                }
            };
            self.commit_after(more).await
        })
    }
    /// Commits.
    fn commit(self: Box<Self>) -> BoxFuture<'static, Result<(), StoreError>>;
    /// Rolls back.
    fn rollback(self: Box<Self>) -> BoxFuture<'static, Result<(), StoreError>>;
}

/// One open transaction on an operation store. An effect gets `&mut Tx`, so it can read and
/// write inside guard's transaction but cannot commit or roll it back: guard does that, after
/// storing the result and the audit record.
pub struct Tx {
    backend: Box<dyn TxBackend>,
}

impl Tx {
    /// A transaction on `backend`.
    pub fn new(backend: Box<dyn TxBackend>) -> Self {
        Self { backend }
    }

    /// The engine, for the few statements that differ.
    pub fn dialect(&self) -> Dialect {
        self.backend.dialect()
    }

    /// Runs one statement (`$1`, `$2`, … for parameters); returns the rows it changed.
    pub async fn execute(&mut self, sql: &str, params: &[SqlValue]) -> Result<u64, StoreError> {
        self.backend.execute(sql, params).await
    }

    /// Runs one statement and returns its rows.
    pub async fn query(&mut self, sql: &str, params: &[SqlValue]) -> Result<Vec<Row>, StoreError> {
        self.backend.query(sql, params).await
    }

    /// Runs one statement and returns its first row, if any.
    pub async fn query_opt(
        &mut self,
        sql: &str,
        params: &[SqlValue],
    ) -> Result<Option<Row>, StoreError> {
        Ok(self.query(sql, params).await?.into_iter().next())
    }

    /// Runs `;`-separated statements without parameters (guard's schema migration; a store
    /// that wraps another forwards its [`TxBackend::batch`] here).
    pub async fn batch(&mut self, sql: &str) -> Result<(), StoreError> {
        self.backend.batch(sql).await
    }

    /// Runs `statements` in order, in one round trip where the engine allows, and answers
    /// what each did; stops at the first that fails.
    pub async fn pipeline(&mut self, statements: &[Statement]) -> Result<Vec<Done>, StoreError> {
        self.backend.pipeline(statements).await
    }

    /// Commits (guard's own use; effects get `&mut Tx`).
    pub async fn commit(self) -> Result<(), StoreError> {
        self.backend.commit().await
    }

    /// Runs `statements`, then commits, in one round trip where the engine allows; if one
    /// of them fails, nothing commits (guard's own use; effects get `&mut Tx`, and a store
    /// that wraps another forwards its [`TxBackend::commit_after`] here).
    pub async fn commit_after(self, statements: Vec<Statement>) -> Result<(), StoreError> {
        self.backend.commit_after(statements).await
    }

    /// Runs `statements`, then what `then` makes of their results, then commits, in one
    /// trip where the engine allows; if anything fails or `then` refuses, nothing commits
    /// (guard's own use; effects get `&mut Tx`, and a store that wraps another forwards its
    /// [`TxBackend::commit_then`] here).
    pub async fn commit_then(
        self,
        statements: Vec<Statement>,
        then: Then,
    ) -> Result<(), StoreError> {
        self.backend.commit_then(statements, then).await
    }

    /// Rolls back (guard's own use; effects get `&mut Tx`).
    pub async fn rollback(self) -> Result<(), StoreError> {
        self.backend.rollback().await
    }
}

impl fmt::Debug for Tx {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tx")
            .field("dialect", &self.dialect())
            .finish_non_exhaustive()
    }
}

/// `$1`, `$2`, … outside quoted text become `?1`, `?2`, …, SQLite's numbered parameters.
#[cfg(feature = "sqlite")]
pub(crate) fn numbered_for_sqlite(sql: &str) -> std::borrow::Cow<'_, str> {
    if !sql.contains('$') {
        return sql.into();
    }
    let mut out = String::with_capacity(sql.len());
    let mut quote: Option<char> = None;
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '\'' || c == '"' => quote = Some(c),
            None if c == '$' && chars.peek().is_some_and(char::is_ascii_digit) => {
                out.push('?');
                continue;
            }
            None => {}
        }
        out.push(c);
    }
    out.into()
}

#[cfg(all(test, feature = "sqlite"))]
mod tests {
    use super::numbered_for_sqlite;

    #[test]
    fn a_store_error_prints_its_sentence_with_debug() {
        let error = super::StoreError::Other("unable to open database file".into());
        assert_eq!(
            format!("{error:?}"),
            "store failure: unable to open database file"
        );
    }

    #[test]
    fn dollar_parameters_become_numbered_outside_quotes() {
        assert_eq!(
            numbered_for_sqlite("SELECT $1, '$2', \"$3\", $10 FROM t WHERE a = $2"),
            "SELECT ?1, '$2', \"$3\", ?10 FROM t WHERE a = ?2"
        );
        assert_eq!(numbered_for_sqlite("SELECT 1"), "SELECT 1");
    }
}
