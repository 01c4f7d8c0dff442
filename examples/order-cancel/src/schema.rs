//! The orders database: its tables (orders, cancellation requests, support tickets) on each engine, the demo's seed rows, and (on PostgreSQL)
//! the server's role, which may read orders and file cancellation requests but may not
//! update orders, nor rewrite guard's intents beyond their status, result and confirmation
//! time.

use rmcp_guard::ops::{Dialect, StoreError, Tx, pg};

/// The role the server connects as on PostgreSQL.
pub const APP_ROLE: &str = "order_cancel_app";

/// The order tables; `{order_id}` and `{request_id}` are the engine's key column types.
const TABLES: &str = "
CREATE TABLE IF NOT EXISTS orders (
    order_id    {order_id},
    tenant      TEXT NOT NULL,
    order_no    TEXT NOT NULL,
    status      TEXT NOT NULL CHECK (status IN ('PENDING', 'PAID', 'SHIPPED', 'CLOSED')),
    total_cents BIGINT NOT NULL,
    is_deleted  INTEGER NOT NULL DEFAULT 0,
    UNIQUE (tenant, order_no)
);
CREATE TABLE IF NOT EXISTS order_cancel_requests (
    request_id          {request_id},
    tenant              TEXT NOT NULL,
    order_id            BIGINT NOT NULL REFERENCES orders (order_id),
    requested_by        TEXT NOT NULL,
    reason              TEXT NOT NULL,
    status              TEXT NOT NULL,
    source_operation_id TEXT NOT NULL,
    created_at          BIGINT NOT NULL,
    CONSTRAINT order_cancel_requests_one_per_operation UNIQUE (source_operation_id)
);
CREATE UNIQUE INDEX IF NOT EXISTS order_cancel_requests_one_pending
    ON order_cancel_requests (order_id) WHERE status = 'PENDING';
CREATE TABLE IF NOT EXISTS support_tickets (
    ticket_id  {request_id},
    tenant     TEXT NOT NULL,
    order_id   BIGINT NOT NULL REFERENCES orders (order_id),
    opened_by  TEXT NOT NULL,
    subject    TEXT NOT NULL,
    created_at BIGINT NOT NULL
);";

/// Creates the order tables (SQLite: through the store's own transaction).
pub async fn create_tables(tx: &mut Tx) -> Result<(), StoreError> {
    let (order_id, request_id) = match tx.dialect() {
        Dialect::Sqlite => ("INTEGER PRIMARY KEY", "INTEGER PRIMARY KEY AUTOINCREMENT"),
        Dialect::Postgres => ("BIGINT PRIMARY KEY", "BIGSERIAL PRIMARY KEY"),
    };
    let tables = TABLES
        .replace("{order_id}", order_id)
        .replace("{request_id}", request_id);
    for statement in tables.split(';').filter(|s| !s.trim().is_empty()) {
        tx.execute(statement, &[]).await?;
    }
    Ok(())
}

/// One order row.
pub struct SeedOrder<'a> {
    pub order_id: i64,
    pub tenant: &'a str,
    pub order_no: &'a str,
    pub status: &'a str,
    pub total_cents: i64,
}

/// The demo's orders: two tenants, orders in each status.
pub const DEMO_ORDERS: &[SeedOrder<'static>] = &[
    SeedOrder {
        order_id: 1001,
        tenant: "tenant_demo",
        order_no: "A10001",
        status: "PAID",
        total_cents: 12900,
    },
    SeedOrder {
        order_id: 1002,
        tenant: "tenant_demo",
        order_no: "A10002",
        status: "PENDING",
        total_cents: 4550,
    },
    SeedOrder {
        order_id: 1003,
        tenant: "tenant_demo",
        order_no: "A10003",
        status: "SHIPPED",
        total_cents: 30000,
    },
    SeedOrder {
        order_id: 1004,
        tenant: "tenant_demo",
        order_no: "A10004",
        status: "PAID",
        total_cents: 8800,
    },
    SeedOrder {
        order_id: 2001,
        tenant: "tenant_other",
        order_no: "B20001",
        status: "PAID",
        total_cents: 5000,
    },
];

/// Inserts `orders` that are not there yet.
pub async fn seed(tx: &mut Tx, orders: &[SeedOrder<'_>]) -> Result<(), StoreError> {
    for o in orders {
        tx.execute(
            "INSERT INTO orders (order_id, tenant, order_no, status, total_cents)
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
            &[
                o.order_id.into(),
                o.tenant.into(),
                o.order_no.into(),
                o.status.into(),
                o.total_cents.into(),
            ],
        )
        .await?;
    }
    Ok(())
}

/// The role that owns `order_cancel_lock` and whose rights it runs with: `NOLOGIN`, not a
/// superuser, and allowed only to read and row-lock `orders`.
pub const LOCK_OWNER_ROLE: &str = "order_cancel_definer";

/// The body of `order_cancel_lock`: every name schema-qualified.
fn lock_body(schema: &str) -> String {
    format!(
        " SELECT o.status FROM {schema}.orders AS o
          WHERE o.tenant OPERATOR(pg_catalog.=) p_tenant
            AND o.order_id OPERATOR(pg_catalog.=) p_order
            AND o.is_deleted OPERATOR(pg_catalog.=) 0
          FOR SHARE "
    )
}

/// PostgreSQL, run by the schema owner: the tables in `schema`, guard's tables (created
/// beforehand with `PgStore::migrate` under the same `search_path`), the server's role and
/// its grants, and `order_cancel_lock`, the one way that role may lock an order.
///
/// The server's role may read orders, file cancellation requests, and use guard's tables
/// through [`operation_grants_sql`](rmcp_guard::ops::pg::operation_grants_sql) (which
/// leaves it `UPDATE` of an intent's status, result and confirmation time only). The lock
/// function is rendered by
/// [`definer_function_sql`](rmcp_guard::ops::pg::definer_function_sql): owned by
/// [`LOCK_OWNER_ROLE`], `search_path` pinned to `schema, pg_temp`, callable by the server's
/// role alone.
pub fn postgres_grants(schema: &str) -> Result<String, StoreError> {
    let guard_grants = pg::operation_grants_sql(schema, APP_ROLE)?;
    let lock_body = lock_body(schema);
    let lock = pg::definer_function_sql(&pg::DefinerFunction {
        schema,
        name: "order_cancel_lock",
        params: &[("p_tenant", "TEXT"), ("p_order", "BIGINT")],
        returns: "TEXT",
        language: "sql",
        body: &lock_body,
        owner: LOCK_OWNER_ROLE,
        callers: &[APP_ROLE],
    })?;
    // Roles are shared by every database of the cluster: concurrent setups take turns, so
    // two never alter one role at once. The id is the example's own and database-wide, as
    // roles are: guard's locks are hashed with their store's schema, so none is this one.
    Ok(format!(
        "SELECT pg_catalog.pg_advisory_xact_lock(7237150600);
         DO $$ BEGIN
             CREATE ROLE {APP_ROLE} LOGIN;
         EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
         END $$;
         DO $$ BEGIN
             CREATE ROLE {LOCK_OWNER_ROLE} NOLOGIN;
         EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
         END $$;
         -- Roles belong to the whole cluster: alter one only when it needs it, so setups in
         -- other databases never update the same role at once.
         DO $$ BEGIN
             IF EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = '{APP_ROLE}'
                        AND (rolsuper OR rolcreatedb OR rolcreaterole OR rolreplication
                             OR rolbypassrls)) THEN
                 ALTER ROLE {APP_ROLE} NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;
             END IF;
             IF EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = '{LOCK_OWNER_ROLE}'
                        AND (rolcanlogin OR rolsuper OR rolcreatedb OR rolcreaterole
                             OR rolreplication OR rolbypassrls)) THEN
                 ALTER ROLE {LOCK_OWNER_ROLE} NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;
             END IF;
         END $$;
         REVOKE {LOCK_OWNER_ROLE} FROM {APP_ROLE};
         GRANT USAGE ON SCHEMA {schema} TO {APP_ROLE}, {LOCK_OWNER_ROLE};
         REVOKE ALL ON {schema}.orders, {schema}.order_cancel_requests, {schema}.support_tickets FROM {APP_ROLE}, {LOCK_OWNER_ROLE};
         GRANT SELECT ON {schema}.orders TO {APP_ROLE};
         GRANT SELECT, INSERT ON {schema}.order_cancel_requests TO {APP_ROLE};
         GRANT USAGE ON SEQUENCE {schema}.order_cancel_requests_request_id_seq TO {APP_ROLE};
         GRANT SELECT, INSERT ON {schema}.support_tickets TO {APP_ROLE};
         GRANT USAGE ON SEQUENCE {schema}.support_tickets_ticket_id_seq TO {APP_ROLE};
         -- The lock's owner reads orders and row-locks them (FOR SHARE needs UPDATE on some
         -- column); it never runs anything but order_cancel_lock.
         GRANT SELECT, UPDATE (status) ON {schema}.orders TO {LOCK_OWNER_ROLE};
         {guard_grants}
         {lock}"
    ))
}

/// Statements that take the database's `TEMPORARY` right away from every role that is not
/// granted it by name (PostgreSQL gives it to `PUBLIC`, so revoking it from the server's
/// role alone changes nothing), for `setup-postgres --revoke-temp`. A role that needs
/// temporary tables afterwards needs `GRANT TEMPORARY ON DATABASE … TO role`.
pub fn revoke_temp_sql() -> String {
    format!(
        "DO $$ BEGIN
             EXECUTE pg_catalog.format('REVOKE TEMPORARY ON DATABASE %I FROM PUBLIC', pg_catalog.current_database());
             EXECUTE pg_catalog.format('REVOKE TEMPORARY ON DATABASE %I FROM {APP_ROLE}', pg_catalog.current_database());
         END $$;"
    )
}
