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

use std::{error::Error, future::Future, sync::Arc};

use bytes::BytesMut;
use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod};
use tokio_postgres::{
    NoTls,
    error::SqlState,
    types::{IsNull, ToSql, Type, to_sql_checked},
};

use super::{
    OperationStore,
    migrate::{self, Step},
    schema::POSTGRES_GUARDS,
    sql::{BoxFuture, Dialect, Done, Kind, Row, SqlValue, Statement, StoreError, Tx, TxBackend},
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
            Ok(Tx::new(Box::new(PgTx {
                client: Some(client),
                begun: false,
            })))
        })
    }

    /// One statement on a pooled connection, outside a transaction: one round trip.
    fn peek<'a>(
        &'a self,
        sql: &'a str,
        params: &'a [SqlValue],
    ) -> BoxFuture<'a, Result<Vec<Row>, StoreError>> {
        Box::pin(async move { query(&self.client().await?, sql, params).await })
    }
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("status", &self.pool.status())
            .finish()
    }
}

/// The columns of `guard_operations` that guard updates. Every `UPDATE` guard issues on that
/// table (expiring, rejecting and submitting an intent) sets only these, so they are the only
/// ones the server's role needs `UPDATE` on.
pub const OPERATION_UPDATE_COLUMNS: &[&str] = &["status", "result", "confirmed_at"];

/// A name PostgreSQL reads the same quoted or not: a lowercase letter or `_`, then lowercase
/// letters, digits and `_`, at most 63 bytes.
fn identifier<'a>(what: &str, name: &'a str) -> Result<&'a str, StoreError> {
    let mut chars = name.chars();
    let plain = matches!(chars.next(), Some('a'..='z' | '_'))
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && name.len() <= 63;
    if plain {
        Ok(name)
    } else {
        Err(StoreError::Other(format!(
            "{what} `{name}` is not a plain PostgreSQL name; use lowercase letters, digits and _ (starting with a letter or _), at most 63 characters"
        )))
    }
}

/// A type name as written in a signature: letters, digits, `_`, spaces, `.`, `,`, `(`, `)`,
/// `[` and `]` (so `TEXT`, `BIGINT`, `NUMERIC(12, 2)`, `TEXT[]`, `myschema.mytype`).
fn type_name<'a>(what: &str, ty: &'a str) -> Result<&'a str, StoreError> {
    let ok = !ty.trim().is_empty()
        && ty
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || " _.,()[]".contains(c));
    if ok {
        Ok(ty)
    } else {
        Err(StoreError::Other(format!(
            "{what} `{ty}` is not a type name guard can write into SQL; use letters, digits, _, spaces, dots, commas, parentheses and []"
        )))
    }
}

/// The grants a server's role needs on guard's tables in `schema`, and nothing more: run
/// them as the tables' owner after [`PgStore::migrate`].
///
/// - `guard_operations`: `SELECT`, `INSERT`, and `UPDATE` of [`OPERATION_UPDATE_COLUMNS`]
///   only (which also lets guard lock an intent with `FOR UPDATE`);
/// - `guard_operation_effects`, `guard_audit_log`, `guard_audit_checkpoints` and
///   `guard_audit_cosignatures`: `SELECT` and `INSERT`, never `UPDATE`, `DELETE` or
///   `TRUNCATE`;
/// - `guard_audit_queue`: `SELECT`, `INSERT`, `DELETE` (a server's sequencer moves queued
///   entries into the log; a trigger refuses to delete one the log does not hold);
/// - `guard_rate_buckets`: `SELECT`, `INSERT`, and `UPDATE` of `tool` only (the bucket row is
///   locked with `FOR UPDATE`, which needs `UPDATE` on some column);
/// - `guard_rate_events` and `guard_redeemed_states`: `SELECT`, `INSERT`, `DELETE` (guard
///   prunes old rows);
/// - `guard_idempotency`: `SELECT`, `INSERT`, `DELETE` (expired keys are purged), and
///   `UPDATE` of `status`, `result` and `completed_at` only (which also lets the purge pass
///   over rows a running call holds with `FOR UPDATE SKIP LOCKED`);
/// - `guard_undo`: `SELECT`, `INSERT`, and `UPDATE` of `status`, `closed_at` and `result`
///   only (which also lets an undo lock its window and a purge claim one with
///   `FOR UPDATE SKIP LOCKED`); never `DELETE`;
/// - `guard_deferred`: `SELECT`, `INSERT`, and `UPDATE` of `status`, `closed_at` and
///   `result` only (which also lets a withdrawal lock its call and a runner claim one with
///   `FOR UPDATE SKIP LOCKED`); never `DELETE`;
/// - `guard_grants`: `SELECT`, `INSERT`, and `UPDATE` of `used`, `revoked_at` and
///   `revoked_by` only (which also lets a revocation lock its grant); never `DELETE`;
/// - `guard_budgets`: `SELECT`, `INSERT`, `DELETE` (ended periods are purged; a trigger
///   keeps an open one), and `UPDATE` of `opened_at`, `expires_at`, `items` and `bytes`
///   (a trigger lets them only grow within a period);
/// - `guard_approvals`: `SELECT`, `INSERT`, `DELETE` (ended approvals are purged), and
///   `UPDATE` of `status`, `ended_by`, `ended_at` and `typed` only;
/// - `guard_approval_links`: `SELECT`, `INSERT`, and `UPDATE` of `viewed_at`, `used_at` and
///   `refusals` only;
/// - `guard_approval_decisions`: `SELECT` and `INSERT`, never `UPDATE` or `DELETE` (a purged
///   approval takes its decisions with it);
/// - `guard_approval_uses`: `SELECT` and `INSERT` only (an approval lets its effect run once,
///   and a purged approval takes its use with it);
/// - `guard_approval_tasks`: `SELECT`, `INSERT`, and `UPDATE` of `runner`, `run_at`, `ended`
///   and `result` only (a purged approval takes its task with it);
/// - `guard_store_identity`: `SELECT` only (the store's id, which request states name).
///
/// Every table's rights are revoked from `role` first, so running it again over a role that
/// held more leaves it with exactly these.
pub fn operation_grants_sql(schema: &str, role: &str) -> Result<String, StoreError> {
    let schema = identifier("schema", schema)?;
    let role = identifier("role", role)?;
    let columns = OPERATION_UPDATE_COLUMNS.join(", ");
    Ok(format!(
        "GRANT USAGE ON SCHEMA {schema} TO {role};
         REVOKE ALL ON {schema}.guard_operations, {schema}.guard_operation_effects,
             {schema}.guard_rate_buckets, {schema}.guard_rate_events,
             {schema}.guard_redeemed_states, {schema}.guard_idempotency,
             {schema}.guard_audit_log, {schema}.guard_audit_checkpoints,
             {schema}.guard_audit_cosignatures, {schema}.guard_undo, {schema}.guard_approvals,
             {schema}.guard_approval_links, {schema}.guard_approval_decisions,
             {schema}.guard_approval_uses, {schema}.guard_approval_tasks,
             {schema}.guard_audit_queue, {schema}.guard_deferred, {schema}.guard_grants,
             {schema}.guard_store_identity, {schema}.guard_budgets FROM {role};
         GRANT SELECT, INSERT ON {schema}.guard_operations TO {role};
         GRANT UPDATE ({columns}) ON {schema}.guard_operations TO {role};
         GRANT SELECT, INSERT ON {schema}.guard_operation_effects TO {role};
         GRANT SELECT, INSERT ON {schema}.guard_rate_buckets TO {role};
         GRANT UPDATE (tool) ON {schema}.guard_rate_buckets TO {role};
         GRANT SELECT, INSERT, DELETE ON {schema}.guard_rate_events TO {role};
         GRANT SELECT, INSERT, DELETE ON {schema}.guard_redeemed_states TO {role};
         GRANT SELECT, INSERT, DELETE ON {schema}.guard_idempotency TO {role};
         GRANT UPDATE (status, result, completed_at) ON {schema}.guard_idempotency TO {role};
         GRANT SELECT, INSERT ON {schema}.guard_audit_log TO {role};
         GRANT SELECT, INSERT ON {schema}.guard_audit_checkpoints TO {role};
         GRANT SELECT, INSERT ON {schema}.guard_audit_cosignatures TO {role};
         GRANT SELECT, INSERT ON {schema}.guard_undo TO {role};
         GRANT UPDATE (status, closed_at, result) ON {schema}.guard_undo TO {role};
         GRANT SELECT, INSERT ON {schema}.guard_deferred TO {role};
         GRANT UPDATE (status, closed_at, result) ON {schema}.guard_deferred TO {role};
         GRANT SELECT, INSERT ON {schema}.guard_grants TO {role};
         GRANT UPDATE (used, revoked_at, revoked_by) ON {schema}.guard_grants TO {role};
         GRANT SELECT, INSERT, DELETE ON {schema}.guard_budgets TO {role};
         GRANT UPDATE (opened_at, expires_at, items, bytes) ON {schema}.guard_budgets TO {role};
         GRANT SELECT, INSERT, DELETE ON {schema}.guard_approvals TO {role};
         GRANT UPDATE (status, ended_by, ended_at, typed) ON {schema}.guard_approvals TO {role};
         GRANT SELECT, INSERT ON {schema}.guard_approval_links TO {role};
         GRANT UPDATE (viewed_at, used_at, refusals) ON {schema}.guard_approval_links TO {role};
         GRANT SELECT, INSERT ON {schema}.guard_approval_decisions TO {role};
         GRANT SELECT, INSERT ON {schema}.guard_approval_uses TO {role};
         GRANT SELECT, INSERT ON {schema}.guard_approval_tasks TO {role};
         GRANT UPDATE (runner, run_at, ended, result) ON {schema}.guard_approval_tasks TO {role};
         GRANT SELECT, INSERT, DELETE ON {schema}.guard_audit_queue TO {role};
         GRANT SELECT ON {schema}.guard_store_identity TO {role};"
    ))
}

/// A `SECURITY DEFINER` function for [`definer_function_sql`] to render.
///
/// The body runs with its owner's rights whoever calls it, so it must name every table,
/// view, function and type with its schema (`orders.orders`, not `orders`): the rendered
/// `search_path` already puts the caller's temporary schema last, and qualified names leave
/// nothing for a caller to shadow at all.
#[derive(Debug, Clone)]
pub struct DefinerFunction<'a> {
    /// The schema the function lives in; also the only schema on its `search_path`.
    pub schema: &'a str,
    /// The function's name.
    pub name: &'a str,
    /// Parameters, as (name, type): `&[("p_tenant", "TEXT"), ("p_order", "BIGINT")]`.
    pub params: &'a [(&'a str, &'a str)],
    /// What it returns: `TEXT`, `SETOF TEXT`, `TABLE (status TEXT)`, `void`.
    pub returns: &'a str,
    /// `sql` or `plpgsql`.
    pub language: &'a str,
    /// The body, every reference schema-qualified.
    pub body: &'a str,
    /// The role that owns the function and whose rights it runs with: an existing `NOLOGIN`
    /// role that is not a superuser and holds only what the body needs.
    pub owner: &'a str,
    /// The roles that may call it; nobody else may (EXECUTE is revoked from `PUBLIC`).
    pub callers: &'a [&'a str],
}

/// Renders `function` as hardened statements, to run as one batch (one transaction, e.g.
/// with `batch_execute`) by a role allowed to create the function and hand it to its owner
/// (a superuser, or a member of the owner role that may create in the schema).
///
/// The statements follow this checklist, every item of which a `SECURITY DEFINER`
/// function needs:
///
/// 1. **`SET search_path = <schema>, pg_temp`**, with `pg_temp` explicitly last. PostgreSQL
///    searches the caller's temporary schema *first* for tables and views unless `pg_temp`
///    is named in the path, and every role may create temporary tables by default, so
///    without it a caller's `CREATE TEMP VIEW orders AS …` runs inside the function with
///    the owner's rights. A caller's own `SET search_path` does not reach the function.
/// 2. **Every reference schema-qualified** in the body (see [`DefinerFunction`]).
/// 3. **A dedicated owner role**, `NOLOGIN`, not a superuser, without `BYPASSRLS`, holding
///    only the rights the body needs; the rendered batch first checks this and that no
///    caller is a member of it (which would let the caller act as the owner outright), and
///    refuses with an error otherwise.
/// 4. **`EXECUTE` revoked from `PUBLIC`** (PostgreSQL grants it to everyone on creation, so
///    the revoke is in the same transaction) and granted only to `callers`.
/// 5. Recommended outside this function: revoke `TEMPORARY` on the database from `PUBLIC`
///    (`REVOKE TEMPORARY ON DATABASE db FROM PUBLIC`) and grant it back only to roles that
///    need temporary tables, so callers cannot even create the objects item 1 guards against.
///
/// Names must be plain lowercase PostgreSQL names, types plain type names, and the body
/// may not contain the `$guard_definer$` quote; anything else is refused with a message
/// naming the part.
pub fn definer_function_sql(function: &DefinerFunction<'_>) -> Result<String, StoreError> {
    const QUOTE: &str = "$guard_definer$";
    let schema = identifier("schema", function.schema)?;
    let name = identifier("function name", function.name)?;
    let owner = identifier("owner role", function.owner)?;
    let language = match function.language.to_ascii_lowercase().as_str() {
        "sql" => "sql",
        "plpgsql" => "plpgsql",
        other => {
            return Err(StoreError::Other(format!(
                "language `{other}` is not one definer_function_sql writes; use sql or plpgsql"
            )));
        }
    };
    let returns = type_name("return type", function.returns)?;
    if function.body.contains(QUOTE) {
        return Err(StoreError::Other(format!(
            "the body of {schema}.{name} contains {QUOTE}, the quote it is written in; remove it"
        )));
    }
    if function.callers.is_empty() {
        return Err(StoreError::Other(format!(
            "{schema}.{name} has no callers; name the role that may execute it"
        )));
    }
    let mut params = Vec::new();
    let mut types = Vec::new();
    for (param, ty) in function.params {
        params.push(format!(
            "{} {}",
            identifier("parameter", param)?,
            type_name("parameter type", ty)?
        ));
        types.push(*ty);
    }
    let mut callers = Vec::new();
    for caller in function.callers {
        let caller = identifier("caller role", caller)?;
        if caller == owner {
            return Err(StoreError::Other(format!(
                "{caller} is both the owner and a caller of {schema}.{name}; the owner must be a role of its own that nobody logs in as"
            )));
        }
        callers.push(caller);
    }
    let signature = format!("{schema}.{name}({})", types.join(", "));
    let mut sql = format!(
        "DO {QUOTE} BEGIN
             IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = '{owner}'
                            AND NOT rolsuper AND NOT rolcanlogin AND NOT rolbypassrls) THEN
                 RAISE EXCEPTION 'the owner of {signature} must be an existing NOLOGIN role that is not a superuser and does not bypass row security: {owner} is not'
                     USING HINT = 'CREATE ROLE {owner} NOLOGIN, grant it only what the function needs, and run this again.';
             END IF;
         END {QUOTE};
         CREATE OR REPLACE FUNCTION {schema}.{name}({params}) RETURNS {returns}
             LANGUAGE {language} SECURITY DEFINER SET search_path = {schema}, pg_temp
             AS {QUOTE}{body}{QUOTE};
         ALTER FUNCTION {signature} OWNER TO {owner};
         REVOKE ALL ON FUNCTION {signature} FROM PUBLIC;
         GRANT EXECUTE ON FUNCTION {signature} TO {callers};",
        params = params.join(", "),
        body = function.body,
        callers = callers.join(", "),
    );
    for caller in &callers {
        sql.push_str(&format!(
            "
         DO {QUOTE} BEGIN
             IF pg_catalog.pg_has_role('{caller}', '{owner}', 'MEMBER') THEN
                 RAISE EXCEPTION '{caller} may act as {owner}, the owner of {signature}, so the function protects nothing from it'
                     USING HINT = 'REVOKE {owner} FROM {caller}, and make sure {caller} is not a superuser.';
             END IF;
         END {QUOTE};"
        ));
    }
    Ok(sql)
}

/// An open transaction on a pooled connection. `None` once committed or rolled back.
struct PgTx {
    client: Option<Object>,
    /// Whether `BEGIN` was sent (with the first statement).
    begun: bool,
}

impl PgTx {
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

/// Runs `statements` in order, all sent before the first answer is awaited.
async fn run_all(client: &Object, statements: &[Statement]) -> Result<Vec<Done>, StoreError> {
    let prepared = prepare_all(client, statements).await?;
    execute_all(client, statements, &prepared).await
}

async fn prepare_all(
    client: &Object,
    statements: &[Statement],
) -> Result<Vec<tokio_postgres::Statement>, StoreError> {
    futures_util::future::try_join_all(statements.iter().map(|s| client.prepare_cached(s.sql())))
        .await
        .map_err(pg_error)
}

/// Sends every statement the first time it is polled, in order (a prepared statement's
/// request goes out before its future first waits), then collects the answers.
async fn execute_all(
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
async fn query(client: &Object, sql: &str, params: &[SqlValue]) -> Result<Vec<Row>, StoreError> {
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

/// What a PostgreSQL error means: the one reading of its SQLSTATEs, for the store and for
/// the tools' read handle.
pub(crate) fn kind(error: &tokio_postgres::Error) -> Kind {
    let Some(code) = error.code() else {
        return Kind::Other;
    };
    if *code == SqlState::UNIQUE_VIOLATION {
        Kind::Unique
    } else if code.code().starts_with("23") {
        // Class 23: integrity constraint violation (foreign key, check, not null, exclusion).
        Kind::Constraint
    } else if *code == SqlState::T_R_SERIALIZATION_FAILURE
        || *code == SqlState::T_R_DEADLOCK_DETECTED
        || *code == SqlState::LOCK_NOT_AVAILABLE
    {
        Kind::Busy
    } else if *code == SqlState::READ_ONLY_SQL_TRANSACTION {
        Kind::ReadOnly
    } else if *code == SqlState::SYNTAX_ERROR
        && error
            .as_db_error()
            .is_some_and(|e| e.message().contains("multiple commands"))
    {
        Kind::MultipleStatements
    } else {
        Kind::Other
    }
}

fn pg_error(error: tokio_postgres::Error) -> StoreError {
    let kind = kind(&error);
    let text = match (kind, error.as_db_error()) {
        (Kind::Unique | Kind::Constraint | Kind::Busy, _) | (_, None) => error.to_string(),
        (_, Some(db)) => format!("{}: {}", db.code().code(), db.message()),
    };
    kind.store_error(text)
}

#[cfg(test)]
mod tests {
    use super::{DefinerFunction, definer_function_sql, operation_grants_sql};

    fn lock() -> DefinerFunction<'static> {
        DefinerFunction {
            schema: "shop",
            name: "lock_order",
            params: &[("p_tenant", "TEXT"), ("p_order", "BIGINT")],
            returns: "TEXT",
            language: "sql",
            body: "SELECT status FROM shop.orders WHERE order_id = p_order FOR SHARE",
            owner: "shop_definer",
            callers: &["shop_app"],
        }
    }

    #[test]
    fn renders_pg_temp_last_owner_and_revoke_before_grant() {
        let sql = definer_function_sql(&lock()).unwrap();
        assert!(sql.contains("SECURITY DEFINER SET search_path = shop, pg_temp"));
        assert!(
            sql.contains("ALTER FUNCTION shop.lock_order(TEXT, BIGINT) OWNER TO shop_definer;")
        );
        let revoke = sql
            .find("REVOKE ALL ON FUNCTION shop.lock_order(TEXT, BIGINT) FROM PUBLIC;")
            .unwrap();
        let grant = sql
            .find("GRANT EXECUTE ON FUNCTION shop.lock_order(TEXT, BIGINT) TO shop_app;")
            .unwrap();
        assert!(revoke < grant);
        assert!(sql.contains("NOT rolsuper AND NOT rolcanlogin AND NOT rolbypassrls"));
        assert!(sql.contains("pg_has_role('shop_app', 'shop_definer', 'MEMBER')"));
    }

    #[test]
    fn refuses_what_it_cannot_write_safely() {
        let cases: [(DefinerFunction<'static>, &str); 7] = [
            (
                DefinerFunction {
                    schema: "Shop",
                    ..lock()
                },
                "schema `Shop`",
            ),
            (
                DefinerFunction {
                    name: "x; DROP",
                    ..lock()
                },
                "function name",
            ),
            (
                DefinerFunction {
                    owner: "shop_app",
                    ..lock()
                },
                "both the owner and a caller",
            ),
            (
                DefinerFunction {
                    callers: &[],
                    ..lock()
                },
                "has no callers",
            ),
            (
                DefinerFunction {
                    language: "c",
                    ..lock()
                },
                "language `c`",
            ),
            (
                DefinerFunction {
                    body: "$guard_definer$; DROP TABLE x; --",
                    ..lock()
                },
                "contains $guard_definer$",
            ),
            (
                DefinerFunction {
                    params: &[("p", "TEXT'); DROP")],
                    ..lock()
                },
                "parameter type",
            ),
        ];
        for (function, expected) in cases {
            let error = definer_function_sql(&function).unwrap_err().to_string();
            assert!(error.contains(expected), "{expected}: {error}");
        }
    }

    #[test]
    fn grants_update_of_three_columns_only() {
        let sql = operation_grants_sql("shop", "shop_app").unwrap();
        assert!(
            sql.contains("GRANT UPDATE (status, result, confirmed_at) ON shop.guard_operations")
        );
        assert!(!sql.contains("UPDATE ON shop.guard_operations"));
        assert!(!sql.contains("DELETE ON shop.guard_audit_log"));
        assert!(!sql.contains("DELETE ON shop.guard_operation_effects"));
        assert!(operation_grants_sql("shop", "app; DROP").is_err());
    }
}
