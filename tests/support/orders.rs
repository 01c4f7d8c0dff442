//! A throwaway order-cancel world on either store: the store, an owner's handle that may do
//! anything (to ship an order or age an intent behind the server's back), and servers for
//! any caller, connected in process.

use std::sync::{
    Arc,
    atomic::{AtomicU64, Ordering},
};

use guard_tests::pg_url;
use order_cancel::{OrderCancel, schema, stores};
use rmcp::{RoleClient, ServiceExt, model::CallToolResult, service::RunningService};
use rmcp_guard::{
    EnvIdentity, Guard, Identity,
    ops::{OperationStore, Operations, PgStore, SqlValue},
};
use serde_json::Value;
use sha2::Digest;

use super::call;
use rmcp_guard::outcome::Outcome;

pub const SCOPE: &str = "order.cancel.request";

/// Which store a world runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    Sqlite,
    Postgres,
}

/// `count` PAID orders of tenant_demo, ids from `first`, numbered `P{id}`.
pub fn paid_orders(first: i64, count: i64) -> Vec<(i64, String)> {
    (first..first + count)
        .map(|id| (id, format!("P{id:06}")))
        .collect()
}

/// Seed rows for `orders`.
pub fn seed_rows(orders: &[(i64, String)]) -> Vec<schema::SeedOrder<'_>> {
    orders
        .iter()
        .map(|(id, no)| schema::SeedOrder {
            order_id: *id,
            tenant: "tenant_demo",
            order_no: no,
            status: "PAID",
            total_cents: 100,
        })
        .collect()
}

pub struct World {
    pub engine: Engine,
    /// The server's store (on PostgreSQL: the server's restricted role).
    pub store: Arc<dyn OperationStore>,
    /// The schema owner's store, for setting the scene and reading the truth.
    pub owner: Arc<dyn OperationStore>,
    pub schema: Option<String>,
    dir: Option<tempfile::TempDir>,
}

/// A schema name unique to this test process and call.
pub fn fresh_schema(prefix: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        "{prefix}_{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

impl World {
    /// A fresh world on `engine` with the demo orders, or `None` if PostgreSQL is not
    /// configured (after printing that the test was skipped).
    pub async fn new(engine: Engine) -> Option<Self> {
        super::events::install();
        Self::with_orders(engine, schema::DEMO_ORDERS).await
    }

    pub async fn with_orders(engine: Engine, orders: &[schema::SeedOrder<'_>]) -> Option<Self> {
        match engine {
            Engine::Sqlite => {
                let dir = tempfile::tempdir().expect("temp dir");
                let store = stores::open_sqlite(&dir.path().join("orders.db"), orders)
                    .await
                    .expect("SQLite store opens");
                let store: Arc<dyn OperationStore> = Arc::new(store);
                Some(Self {
                    engine,
                    owner: store.clone(),
                    store,
                    schema: None,
                    dir: Some(dir),
                })
            }
            Engine::Postgres => {
                let url = pg_url("this two-phase test")?;
                let schema = fresh_schema("guard_oc");
                stores::setup_postgres(&url, &schema, orders)
                    .await
                    .expect("PostgreSQL schema set up");
                let owner = PgStore::from_config(
                    stores::pg_config(&url, &schema, None).expect("owner config"),
                    2,
                )
                .expect("owner pool");
                let store = stores::connect_postgres(&url, &schema, 16).expect("server role pool");
                Some(Self {
                    engine,
                    store: Arc::new(store),
                    owner: Arc::new(owner),
                    schema: Some(schema),
                    dir: None,
                })
            }
        }
    }

    /// The SQLite file, for a server process to open too.
    pub fn sqlite_path(&self) -> Option<std::path::PathBuf> {
        self.dir.as_ref().map(|d| d.path().join("orders.db"))
    }

    /// The server as `user` of `tenant` holding `scopes`, with guard's audit table.
    pub fn server(&self, tenant: &str, user: &str, scopes: &[&str]) -> OrderCancel {
        self.server_configured(tenant, user, scopes, |operations| operations)
    }

    /// The server as `user` of `tenant` holding `scopes`, its operations configured further
    /// by `configure` (another audit sink, a deployment's rate).
    pub fn server_configured(
        &self,
        tenant: &str,
        user: &str,
        scopes: &[&str],
        configure: impl FnOnce(Operations) -> Operations,
    ) -> OrderCancel {
        let identity = EnvIdentity::new(Identity::new(tenant, user, scopes.iter().copied()));
        let operations = configure(Operations::new(self.store.clone(), identity));
        OrderCancel::new(
            Guard::ephemeral()
                .expect("guard key")
                .with_operations(operations),
        )
    }

    /// alice of tenant_demo, who may cancel.
    pub async fn alice(&self) -> Client {
        connect(self.server("tenant_demo", "alice", &[SCOPE])).await
    }

    /// Runs `sql` as the owner; returns the changed row count.
    pub async fn exec(&self, sql: &str, params: &[SqlValue]) -> u64 {
        let mut tx = self.owner.begin().await.expect("owner tx");
        let n = tx.execute(sql, params).await.expect("owner statement");
        tx.commit().await.expect("owner commit");
        n
    }

    /// Takes `table` away from the server: the app role loses `privilege` on it (PostgreSQL),
    /// or it is renamed away (SQLite). Returns the statement that gives it back.
    pub async fn take_away(&self, privilege: &str, table: &str) -> String {
        let (take, give) = match self.engine {
            Engine::Postgres => (
                format!("REVOKE {privilege} ON {table} FROM order_cancel_app"),
                format!("GRANT {privilege} ON {table} TO order_cancel_app"),
            ),
            Engine::Sqlite => (
                format!("ALTER TABLE {table} RENAME TO {table}_away"),
                format!("ALTER TABLE {table}_away RENAME TO {table}"),
            ),
        };
        self.exec(&take, &[]).await;
        give
    }

    /// The rows of `sql`, run as the owner, once the audit log's sequencer has placed every
    /// entry committed so far (a call answers before its entry is sequenced on PostgreSQL).
    pub async fn query(&self, sql: &str, params: &[SqlValue]) -> Vec<rmcp_guard::ops::Row> {
        rmcp_guard::audit::AuditLog::shared(self.owner.clone(), "guard audit log")
            .sequence()
            .await
            .expect("the queued audit entries are sequenced");
        let mut tx = self.owner.begin().await.expect("owner tx");
        let rows = tx.query(sql, params).await.expect("owner query");
        tx.rollback().await.expect("owner rollback");
        rows
    }

    pub async fn count(&self, sql: &str, params: &[SqlValue]) -> i64 {
        self.query(sql, params).await[0]
            .int("n")
            .expect("count column n")
    }

    /// Cancellation requests filed for `order_id`.
    pub async fn requests(&self, order_id: i64) -> i64 {
        self.count(
            "SELECT COUNT(*) AS n FROM order_cancel_requests WHERE order_id = $1",
            &[order_id.into()],
        )
        .await
    }

    /// Rows in guard's effect table for `operation_id` (its primary key allows one).
    pub async fn effects(&self, operation_id: &str) -> i64 {
        self.count(
            "SELECT COUNT(*) AS n FROM guard_operation_effects WHERE operation_id = $1",
            &[operation_id.into()],
        )
        .await
    }

    /// The stored status of an intent.
    pub async fn status(&self, operation_id: &str) -> String {
        self.query(
            "SELECT status FROM guard_operations WHERE operation_id = $1",
            &[operation_id.into()],
        )
        .await[0]
            .text("status")
            .expect("status")
            .to_owned()
    }

    /// Stores a `PREPARED` intent for `user` of tenant_demo to cancel `order`, exactly as
    /// `prepare_order_cancel` writes it, without the prepare's rate limit (5 per minute per
    /// user), for tests that need hundreds of intents of one user.
    pub async fn stored_intent(&self, order_id: i64, order_no: &str, user: &str) -> String {
        let id = uuid::Uuid::new_v4().to_string();
        self.store_intent(&id, order_id, order_no, user).await;
        id
    }

    /// [`stored_intent`](Self::stored_intent) under a given operation id.
    pub async fn store_intent(&self, id: &str, order_id: i64, order_no: &str, user: &str) {
        let payload = rmcp_guard::canonical::canonical_json(&serde_json::json!({
            "order_id": order_id,
            "order_no": order_no,
            "reason": "customer changed their mind",
        }))
        .expect("the payload has a canonical form");
        let hash: String = sha2::Sha256::digest(payload.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let now = rmcp_guard::ops::now_ms();
        self.exec(
            "INSERT INTO guard_operations
                (operation_id, tenant, user_id, op, target, payload, payload_sha256, preview,
                 status, expires_at, created_at, trace_id)
             VALUES ($1, 'tenant_demo', $2, 'order_cancel', $3, $4, $5, '{}', 'PREPARED', $6, $7, 'fixture')",
            &[
                id.into(),
                user.into(),
                order_id.to_string().into(),
                payload.into(),
                hash.into(),
                (now + 600_000).into(),
                now.into(),
            ],
        )
        .await;
    }

    /// PostgreSQL: waits until a statement containing `statement` is blocked on a lock, so
    /// the call that runs it is known to be inside its transaction.
    pub async fn wait_for_lock_wait(&self, statement: &str) {
        for _ in 0..600 {
            if self.waits_on_a_lock(statement).await {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        panic!("no statement `{statement}` ever waited on a lock");
    }

    /// PostgreSQL: whether a statement containing `statement` is blocked on a lock now.
    pub async fn waits_on_a_lock(&self, statement: &str) -> bool {
        self.count(
            "SELECT COUNT(*) AS n FROM pg_stat_activity
             WHERE wait_event_type = 'Lock' AND strpos(query, $1) > 0
               AND pid <> pg_backend_pid()",
            &[statement.into()],
        )
        .await
            > 0
    }

    /// Audit outcomes for `operation_id`, oldest first.
    pub async fn audit_outcomes(&self, operation_id: &str) -> Vec<Outcome> {
        self.query(
            "SELECT outcome FROM guard_audit_log WHERE operation_id = $1 ORDER BY seq",
            &[operation_id.into()],
        )
        .await
        .iter()
        .map(|r| {
            let outcome = r.text("outcome").expect("outcome");
            Outcome::parse(outcome)
                .unwrap_or_else(|| panic!("the audit log names an unknown outcome {outcome:?}"))
        })
        .collect()
    }
}

impl Drop for World {
    /// A PostgreSQL world drops its schema (on a thread of its own: `drop` cannot await).
    /// The test's runtime is blocked while it waits, so its background tasks (the audit
    /// sequencer, a gathering audit writer) cannot finish a transaction they have open on
    /// the schema's tables, and the drop would wait for them forever: their connections are
    /// ended first (only those holding locks on this schema's tables).
    fn drop(&mut self) {
        let (Some(schema), Some(url)) = (self.schema.take(), guard_tests::configured_pg_url())
        else {
            return;
        };
        let dropped = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            runtime.block_on(async {
                let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
                    .await
                    .expect("connect to drop the test schema");
                tokio::spawn(connection);
                // A lock given to a waiter while the holders end is ended on the next try.
                let mut tries = 0;
                loop {
                    client
                        .execute(
                            "SELECT pg_terminate_backend(l.pid)
                             FROM pg_locks l
                             JOIN pg_class c ON c.oid = l.relation
                             JOIN pg_namespace n ON n.oid = c.relnamespace
                             WHERE n.nspname = $1 AND l.pid <> pg_backend_pid()",
                            &[&schema],
                        )
                        .await?;
                    tries += 1;
                    match client
                        .batch_execute(&format!(
                            "SET lock_timeout = '5s'; DROP SCHEMA IF EXISTS {schema} CASCADE"
                        ))
                        .await
                    {
                        Err(error)
                            if tries < 10
                                && error.code()
                                    == Some(
                                        &tokio_postgres::error::SqlState::LOCK_NOT_AVAILABLE,
                                    ) =>
                        {
                            continue;
                        }
                        done => break done,
                    }
                }
            })
        })
        .join();
        if let Ok(Err(error)) = dropped {
            eprintln!("could not drop a test schema: {error}");
        }
    }
}

pub type Client = RunningService<RoleClient, ()>;

/// Serves `server` in process and connects a plain client to it.
pub async fn connect(server: OrderCancel) -> Client {
    super::events::install();
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    ().serve(client_io).await.expect("client connects")
}

/// The structured body of a successful result.
pub fn body(result: &CallToolResult) -> &Value {
    assert_ne!(
        result.is_error,
        Some(true),
        "expected success, got {result:?}"
    );
    result
        .structured_content
        .as_ref()
        .expect("structured content")
}

/// The text of an error result, which starts with its `[CODE]`.
#[track_caller]
pub fn error_text(result: &CallToolResult) -> String {
    assert!(super::is_error(result), "expected an error, got {result:?}");
    super::text(result)
}

/// The refusal of preparing to cancel `order_no` for `reason`.
pub async fn prepare_refused(client: &Client, order_no: &str, reason: &str) -> String {
    let args = serde_json::json!({"order_no": order_no, "reason": reason});
    error_text(&call(client, "prepare_order_cancel", args).await)
}

/// Prepares cancelling `order_no`; returns the operation_id.
pub async fn prepare(client: &Client, order_no: &str) -> String {
    let result = call(
        client,
        "prepare_order_cancel",
        serde_json::json!({"order_no": order_no, "reason": "customer changed their mind"}),
    )
    .await;
    body(&result)["operation_id"]
        .as_str()
        .expect("operation_id")
        .to_owned()
}

pub async fn confirm(client: &Client, operation_id: &str) -> CallToolResult {
    call(
        client,
        "confirm_order_cancel",
        serde_json::json!({"operation_id": operation_id}),
    )
    .await
}
