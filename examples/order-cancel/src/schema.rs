//! The orders database: its tables on each engine, the demo's seed rows, and (on PostgreSQL)
//! the server's role, which may read orders and file cancellation requests but may not
//! update orders.

use guard_runtime::ops::{Dialect, StoreError, Tx};

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
    ON order_cancel_requests (order_id) WHERE status = 'PENDING';";

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

/// PostgreSQL, run by the schema owner: the tables in `schema`, guard's tables (created
/// beforehand with `PgStore::migrate` under the same `search_path`), the server's role and
/// its grants, and `order_cancel_lock`, the one way that role may lock an order.
pub fn postgres_grants(schema: &str) -> String {
    format!(
        "DO $$ BEGIN
             CREATE ROLE {APP_ROLE} LOGIN;
         EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
         END $$;
         GRANT USAGE ON SCHEMA {schema} TO {APP_ROLE};
         REVOKE ALL ON {schema}.orders FROM {APP_ROLE};
         GRANT SELECT ON {schema}.orders TO {APP_ROLE};
         GRANT SELECT, INSERT ON {schema}.order_cancel_requests TO {APP_ROLE};
         GRANT USAGE ON SEQUENCE {schema}.order_cancel_requests_request_id_seq TO {APP_ROLE};
         GRANT SELECT, INSERT, UPDATE ON {schema}.guard_operations TO {APP_ROLE};
         GRANT SELECT, INSERT ON {schema}.guard_operation_effects TO {APP_ROLE};
         GRANT SELECT, INSERT, UPDATE ON {schema}.guard_rate_buckets TO {APP_ROLE};
         GRANT SELECT, INSERT, DELETE ON {schema}.guard_rate_events TO {APP_ROLE};
         GRANT SELECT, INSERT, DELETE ON {schema}.guard_redeemed_states TO {APP_ROLE};
         GRANT SELECT, INSERT ON {schema}.guard_audit TO {APP_ROLE};
         GRANT USAGE ON SEQUENCE {schema}.guard_audit_audit_id_seq TO {APP_ROLE};
         CREATE OR REPLACE FUNCTION {schema}.order_cancel_lock(p_tenant TEXT, p_order BIGINT)
             RETURNS TEXT LANGUAGE sql SECURITY DEFINER SET search_path = {schema} AS
             $f$ SELECT status FROM orders
                 WHERE tenant = p_tenant AND order_id = p_order AND is_deleted = 0
                 FOR SHARE $f$;
         REVOKE ALL ON FUNCTION {schema}.order_cancel_lock(TEXT, BIGINT) FROM PUBLIC;
         GRANT EXECUTE ON FUNCTION {schema}.order_cancel_lock(TEXT, BIGINT) TO {APP_ROLE};"
    )
}
