//! Least privilege on PostgreSQL, tested as the attacker: a real connection logged in as
//! order-cancel's own server role (`order_cancel_app`), sending the SQL a compromised server
//! would send. Every attempt must be refused by the database itself, and the normal prepare
//! and confirm must still work as that role.
//!
//! Each test sets up a schema of its own (and the test that revokes TEMPORARY a database of
//! its own); roles made here have unique names and are dropped at the end, so runs can
//! repeat and overlap with other PostgreSQL tests.

use crate::support;

use std::sync::atomic::{AtomicU64, Ordering};

use crate::support::orders::{Engine, World, body, confirm, prepare};
use order_cancel::schema::{APP_ROLE, LOCK_OWNER_ROLE};
use tokio_postgres::{Client, NoTls, error::SqlState};

const ORDER: &str = "A10001";
const ORDER_ID: i64 = 1001;

/// A connection to the world's schema logged in as `role` (trust authentication).
async fn connect_as(world: &World, role: &str) -> Client {
    let url = guard_tests::pg_url("least privilege").expect("checked by World::new");
    let schema = world.schema.as_deref().expect("a PostgreSQL world");
    let config = order_cancel::stores::pg_config(&url, schema, Some(role)).expect("config");
    let (client, connection) = config.connect(NoTls).await.expect("log in");
    tokio::spawn(connection);
    client
}

/// A connection as the server's own role.
async fn app(world: &World) -> Client {
    connect_as(world, APP_ROLE).await
}

/// The owner's connection (the superuser of the test cluster).
async fn owner(world: &World) -> Client {
    connect_as(world, "postgres").await
}

/// Runs `sql` and returns the database's refusal; fails the test if it was allowed.
#[track_caller]
fn refusal(result: Result<(), tokio_postgres::Error>, sql: &str) -> tokio_postgres::error::DbError {
    match result {
        Ok(()) => panic!("the database allowed: {sql}"),
        Err(error) => error
            .as_db_error()
            .unwrap_or_else(|| panic!("{sql}: not a database refusal: {error}"))
            .clone(),
    }
}

/// `sql` is refused with `code`.
async fn refused_with(client: &Client, sql: &str, code: &SqlState) -> String {
    let error = refusal(client.batch_execute(sql).await, sql);
    assert_eq!(error.code(), code, "{sql}: {error:?}");
    error.message().to_owned()
}

/// `sql` is refused for lack of privilege.
async fn denied(client: &Client, sql: &str) -> String {
    refused_with(client, sql, &SqlState::INSUFFICIENT_PRIVILEGE).await
}

async fn order_status(owner: &Client) -> String {
    owner
        .query_one(
            "SELECT status FROM orders WHERE order_id = $1",
            &[&ORDER_ID],
        )
        .await
        .expect("read the order")
        .get(0)
}

async fn lock_status(client: &Client) -> String {
    client
        .query_one(
            "SELECT order_cancel_lock('tenant_demo', $1::BIGINT)",
            &[&ORDER_ID],
        )
        .await
        .expect("order_cancel_lock answers")
        .get(0)
}

/// A role made for one test: unique per process and call, dropped with everything it holds.
struct TempRole {
    name: String,
    owner: Client,
    /// Set once [`TempRole::remove`] has dropped it; otherwise `Drop` does (a test that
    /// failed half-way).
    dropped: bool,
}

impl TempRole {
    async fn create(owner: Client, what: &str) -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let name = format!(
            "guard_lp_{what}_{}_{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        owner
            .batch_execute(&format!("CREATE ROLE {name} LOGIN"))
            .await
            .expect("create a test role");
        Self {
            name,
            owner,
            dropped: false,
        }
    }

    async fn remove(mut self) {
        self.owner
            .batch_execute(&format!("DROP OWNED BY {0}; DROP ROLE {0}", self.name))
            .await
            .expect("drop the test role");
        self.dropped = true;
    }
}

impl Drop for TempRole {
    fn drop(&mut self) {
        let Some(url) = guard_tests::configured_pg_url() else {
            return;
        };
        if self.dropped {
            return;
        }
        let name = &self.name;
        clean_up(
            url,
            format!("DROP OWNED BY {name}; DROP ROLE IF EXISTS {name}"),
            &format!("the test role {name}"),
        );
    }
}

/// Runs `sql` on a connection of its own, on a thread of its own (`drop` cannot await);
/// a failure is reported, since a test that is ending can do nothing else about it.
fn clean_up(url: String, sql: String, what: &str) {
    let done = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        runtime.block_on(async {
            let (client, connection) = tokio_postgres::connect(&url, NoTls).await?;
            tokio::spawn(connection);
            client.batch_execute(&sql).await
        })
    })
    .join();
    if let Ok(Err(error)) = done {
        eprintln!("could not drop {what}: {error}");
    }
}

/// The attack the independent test found, against the function as order-cancel used to
/// define it (owned by the superuser, `search_path` without `pg_temp`): a temporary view
/// named `orders` that calls the caller's own function makes that function run as the
/// superuser and close the order. This proves the attack in the next test is real.
#[tokio::test]
async fn temp_view_hijack_works_against_an_unhardened_definer() {
    let Some(world) = World::new(Engine::Postgres).await else {
        return;
    };
    let schema = world.schema.clone().unwrap();
    let owner = owner(&world).await;
    owner
        .batch_execute(&format!(
            "CREATE FUNCTION {schema}.naive_lock(p_tenant TEXT, p_order BIGINT)
                 RETURNS TEXT LANGUAGE sql SECURITY DEFINER SET search_path = {schema} AS
                 $f$ SELECT status FROM orders
                     WHERE tenant = p_tenant AND order_id = p_order AND is_deleted = 0
                     FOR SHARE $f$;
             REVOKE ALL ON FUNCTION {schema}.naive_lock(TEXT, BIGINT) FROM PUBLIC;
             GRANT EXECUTE ON FUNCTION {schema}.naive_lock(TEXT, BIGINT) TO {APP_ROLE};"
        ))
        .await
        .expect("the unhardened function");
    let app = app(&world).await;
    app.batch_execute(&hijack_view(&schema))
        .await
        .expect("temporary objects");
    app.query_one("SELECT naive_lock('tenant_demo', 1001)", &[])
        .await
        .expect("the hijacked call");
    assert_eq!(order_status(&owner).await, "CLOSED");
}

/// A temporary function that closes order 1001, and a temporary view named `orders` that
/// calls it while looking like the order.
fn hijack_view(schema: &str) -> String {
    format!(
        "CREATE FUNCTION pg_temp.close_it() RETURNS TEXT LANGUAGE sql AS
             $f$ UPDATE {schema}.orders SET status = 'CLOSED' WHERE order_id = 1001
                 RETURNING 'PAID' $f$;
         CREATE TEMP VIEW orders AS
             SELECT 1001::BIGINT AS order_id, 'tenant_demo'::TEXT AS tenant,
                    pg_temp.close_it() AS status, 0 AS is_deleted;"
    )
}

#[tokio::test]
async fn temp_view_hijack_of_the_lock_function_is_refused() {
    let Some(world) = World::new(Engine::Postgres).await else {
        return;
    };
    let schema = world.schema.clone().unwrap();
    let owner = owner(&world).await;
    let app = app(&world).await;
    app.batch_execute(&hijack_view(&schema))
        .await
        .expect("temporary objects");
    // The view would close the order if anything ran it with rights on orders; the role's
    // own call of it is denied.
    denied(&app, "SELECT * FROM pg_temp.orders").await;
    assert_eq!(lock_status(&app).await, "PAID");
    // Even a caller that puts its temporary schema first reaches only the real table.
    app.batch_execute(&format!("SET search_path = pg_temp, {schema}"))
        .await
        .expect("the caller's own search_path");
    assert_eq!(lock_status(&app).await, "PAID");
    assert_eq!(order_status(&owner).await, "PAID");
}

#[tokio::test]
async fn temp_table_hijack_neither_fakes_the_status_nor_skips_the_lock() {
    let Some(world) = World::new(Engine::Postgres).await else {
        return;
    };
    let schema = world.schema.clone().unwrap();
    let owner = owner(&world).await;
    let app = app(&world).await;
    app.batch_execute(
        "CREATE TEMP TABLE orders (order_id BIGINT, tenant TEXT, status TEXT, is_deleted INTEGER);
         INSERT INTO pg_temp.orders VALUES (1001, 'tenant_demo', 'PENDING', 0);",
    )
    .await
    .expect("a temporary table");
    for path in [
        format!("SET search_path = {schema}"),
        format!("SET search_path = pg_temp, {schema}"),
        format!("SET search_path = {schema}, pg_temp"),
    ] {
        app.batch_execute(&path).await.expect("search_path");
        app.batch_execute("BEGIN").await.expect("begin");
        assert_eq!(lock_status(&app).await, "PAID", "{path}");
        // The real row is share-locked while the caller's transaction lasts.
        refused_with(
            &owner,
            "SELECT status FROM orders WHERE order_id = 1001 FOR UPDATE NOWAIT",
            &SqlState::LOCK_NOT_AVAILABLE,
        )
        .await;
        app.batch_execute("ROLLBACK").await.expect("rollback");
    }
}

#[tokio::test]
async fn the_lock_function_is_owned_by_a_nologin_non_superuser_and_pins_pg_temp_last() {
    let Some(world) = World::new(Engine::Postgres).await else {
        return;
    };
    let schema = world.schema.clone().unwrap();
    let owner = owner(&world).await;
    let row = owner
        .query_one(
            "SELECT r.rolname::TEXT, r.rolsuper, r.rolcanlogin, p.prosecdef,
                    array_to_string(p.proconfig, ';')
             FROM pg_proc p JOIN pg_roles r ON r.oid = p.proowner
             WHERE p.proname = 'order_cancel_lock' AND p.pronamespace = $1::TEXT::regnamespace",
            &[&schema],
        )
        .await
        .expect("the lock function");
    assert_eq!(row.get::<_, String>(0), LOCK_OWNER_ROLE);
    assert!(!row.get::<_, bool>(1), "the owner must not be a superuser");
    assert!(!row.get::<_, bool>(2), "the owner must not log in");
    assert!(row.get::<_, bool>(3), "SECURITY DEFINER");
    assert_eq!(
        row.get::<_, String>(4),
        format!("search_path={schema}, pg_temp")
    );
    // Nobody but the server's role may call it.
    let other = TempRole::create(owner, "caller").await;
    other
        .owner
        .batch_execute(&format!("GRANT USAGE ON SCHEMA {schema} TO {}", other.name))
        .await
        .expect("schema usage");
    let stranger = connect_as(&world, &other.name).await;
    denied(&stranger, "SELECT order_cancel_lock('tenant_demo', 1001)").await;
    drop(stranger);
    other.remove().await;
}

/// Every column but status, result and confirmed_at, with a value to write into it.
const FROZEN_COLUMNS: &[(&str, &str)] = &[
    ("tenant", "'tenant_other'"),
    ("user_id", "'mallory'"),
    ("payload", "'{\"order_id\":2001}'"),
    ("payload_sha256", "repeat('0', 64)"),
    ("expires_at", "expires_at + 86400000"),
    ("op", "'other_op'"),
    ("target", "'2001'"),
    ("preview", "'{}'"),
    ("created_at", "0"),
    ("trace_id", "'forged'"),
    ("operation_id", "'forged-id'"),
];

#[tokio::test]
async fn the_app_role_cannot_rewrite_an_intent() {
    let Some(world) = World::new(Engine::Postgres).await else {
        return;
    };
    let alice = world.alice().await;
    let id = prepare(&alice, ORDER).await;
    let app = app(&world).await;
    for (column, value) in FROZEN_COLUMNS {
        let message = denied(
            &app,
            &format!("UPDATE guard_operations SET {column} = {value} WHERE operation_id = '{id}'"),
        )
        .await;
        assert!(message.contains("guard_operations"), "{column}: {message}");
    }
    denied(
        &app,
        &format!("DELETE FROM guard_operations WHERE operation_id = '{id}'"),
    )
    .await;
    // The columns guard does update carry a result only with the move to SUBMITTED.
    for forged in [
        "result = '{\"forged\":true}'",
        "confirmed_at = 1",
        "status = 'REJECTED', result = '{}'",
    ] {
        let message = denied(
            &app,
            &format!("UPDATE guard_operations SET {forged} WHERE operation_id = '{id}'"),
        )
        .await;
        assert!(
            message.contains("only once it is SUBMITTED"),
            "{forged}: {message}"
        );
    }
    // Untouched: the confirm carries out exactly what was prepared.
    assert_eq!(body(&confirm(&alice, &id).await)["status"], "SUBMITTED");
    assert_eq!(world.requests(ORDER_ID).await, 1);
}

/// A role that was granted table-wide rights on guard_operations (a careless deployment)
/// still cannot change an intent's identity, payload, digest or expiry, nor reopen a closed
/// intent, nor insert one that is already carried out: the trigger refuses.
#[tokio::test]
async fn a_role_with_table_wide_rights_still_cannot_rewrite_an_intent() {
    let Some(world) = World::new(Engine::Postgres).await else {
        return;
    };
    let schema = world.schema.clone().unwrap();
    let alice = world.alice().await;
    let open = prepare(&alice, ORDER).await;
    let closed = prepare(&alice, "A10004").await;
    assert_eq!(body(&confirm(&alice, &closed).await)["status"], "SUBMITTED");
    let wide = TempRole::create(owner(&world).await, "wide").await;
    wide.owner
        .batch_execute(&format!(
            "GRANT USAGE ON SCHEMA {schema} TO {0};
             GRANT SELECT, INSERT, UPDATE ON {schema}.guard_operations TO {0};",
            wide.name
        ))
        .await
        .expect("table-wide rights");
    let client = connect_as(&world, &wide.name).await;
    for (column, value) in FROZEN_COLUMNS {
        let message = denied(
            &client,
            &format!(
                "UPDATE guard_operations SET {column} = {value} WHERE operation_id = '{open}'"
            ),
        )
        .await;
        assert!(message.contains("immutable"), "{column}: {message}");
    }
    let reopened = denied(
        &client,
        &format!(
            "UPDATE guard_operations SET status = 'PREPARED', result = NULL WHERE operation_id = '{closed}'"
        ),
    )
    .await;
    assert!(
        reopened.contains("SUBMITTED and may not change"),
        "{reopened}"
    );
    let inserted = denied(
        &client,
        "INSERT INTO guard_operations
            (operation_id, tenant, user_id, op, target, payload, payload_sha256, preview,
             status, expires_at, result, created_at, confirmed_at, trace_id)
         VALUES ('forged', 'tenant_demo', 'alice', 'order_cancel', '1002', '{}', '', '{}',
                 'SUBMITTED', 0, '{}', 0, 0, 'forged')",
    )
    .await;
    assert!(inserted.contains("must be PREPARED"), "{inserted}");
    drop(client);
    wide.remove().await;
    // The intent still confirms as prepared.
    assert_eq!(body(&confirm(&alice, &open).await)["status"], "SUBMITTED");
    assert_eq!(world.requests(ORDER_ID).await, 1);
}

#[tokio::test]
async fn submitted_without_an_effect_row_is_refused_at_commit() {
    let Some(world) = World::new(Engine::Postgres).await else {
        return;
    };
    let alice = world.alice().await;
    let id = prepare(&alice, ORDER).await;
    let app = app(&world).await;
    let forge = format!(
        "UPDATE guard_operations SET status = 'SUBMITTED', result = '{{}}', confirmed_at = 1
         WHERE operation_id = '{id}'"
    );
    let message = refused_with(&app, &forge, &SqlState::INTEGRITY_CONSTRAINT_VIOLATION).await;
    assert!(message.contains("without its effect row"), "{message}");
    // A temporary effect table of the same name does not satisfy the check, whatever the
    // caller's search_path.
    let schema = world.schema.clone().unwrap();
    app.batch_execute(&format!(
        "CREATE TEMP TABLE guard_operation_effects (operation_id TEXT, committed_at BIGINT);
         INSERT INTO pg_temp.guard_operation_effects VALUES ('{id}', 1);
         SET search_path = pg_temp, {schema};"
    ))
    .await
    .expect("a temporary effect table");
    refused_with(
        &app,
        &format!("BEGIN; {forge}; COMMIT;"),
        &SqlState::INTEGRITY_CONSTRAINT_VIOLATION,
    )
    .await;
    app.batch_execute("ROLLBACK").await.ok();
    // Checking at once instead of at commit changes nothing.
    refused_with(
        &app,
        &format!("BEGIN; SET CONSTRAINTS ALL IMMEDIATE; {forge}; COMMIT;"),
        &SqlState::INTEGRITY_CONSTRAINT_VIOLATION,
    )
    .await;
    app.batch_execute("ROLLBACK").await.ok();
    // Nor may the role switch triggers off.
    denied(&app, "SET session_replication_role = replica").await;
    assert_eq!(world.status(&id).await, "PREPARED");
    assert_eq!(body(&confirm(&alice, &id).await)["status"], "SUBMITTED");
    assert_eq!(world.effects(&id).await, 1);
}

#[tokio::test]
async fn the_app_role_is_refused_everything_else() {
    let Some(world) = World::new(Engine::Postgres).await else {
        return;
    };
    let schema = world.schema.clone().unwrap();
    let alice = world.alice().await;
    let id = prepare(&alice, ORDER).await;
    assert_eq!(body(&confirm(&alice, &id).await)["status"], "SUBMITTED");
    let app = app(&world).await;
    let statements = [
        "UPDATE orders SET status = 'CLOSED' WHERE order_id = 1001".to_owned(),
        "DELETE FROM orders WHERE order_id = 1001".into(),
        "INSERT INTO orders (order_id, tenant, order_no, status, total_cents) VALUES (9, 't', 'X00009', 'PAID', 1)".into(),
        "SELECT status FROM orders WHERE order_id = 1001 FOR UPDATE".into(),
        "UPDATE order_cancel_requests SET status = 'DONE'".into(),
        "DELETE FROM order_cancel_requests".into(),
        "UPDATE guard_operation_effects SET committed_at = 0".into(),
        "DELETE FROM guard_operation_effects".into(),
        "UPDATE guard_audit_log SET outcome = 'NOTHING'".into(),
        "DELETE FROM guard_audit_log".into(),
        "DELETE FROM guard_operations".into(),
        "TRUNCATE orders".into(),
        "TRUNCATE order_cancel_requests".into(),
        "TRUNCATE guard_operations CASCADE".into(),
        "TRUNCATE guard_operation_effects".into(),
        "TRUNCATE guard_audit_log".into(),
        format!("CREATE TABLE {schema}.planted (x INTEGER)"),
        format!("CREATE FUNCTION {schema}.planted() RETURNS INTEGER LANGUAGE sql AS 'SELECT 1'"),
        "DROP TABLE guard_audit_log".into(),
        "ALTER TABLE guard_operations DISABLE TRIGGER USER".into(),
        "DROP TRIGGER guard_operations_immutable ON guard_operations".into(),
        "CREATE OR REPLACE FUNCTION order_cancel_lock(p_tenant TEXT, p_order BIGINT) RETURNS TEXT LANGUAGE sql AS 'SELECT ''PAID'''".into(),
        "ALTER FUNCTION order_cancel_lock(TEXT, BIGINT) SECURITY INVOKER".into(),
        format!("SET ROLE {LOCK_OWNER_ROLE}"),
        "SET ROLE postgres".into(),
        format!("SET SESSION AUTHORIZATION {LOCK_OWNER_ROLE}"),
    ];
    for sql in &statements {
        denied(&app, sql).await;
    }
    // A GRANT of rights the role holds without grant option is not an error in PostgreSQL
    // (only a warning that nothing was granted), so what counts is that nothing changed.
    for grant in [
        format!("GRANT UPDATE ON orders TO {APP_ROLE}"),
        "GRANT UPDATE ON guard_operations TO PUBLIC".to_owned(),
        "GRANT DELETE ON guard_audit_log TO PUBLIC".to_owned(),
    ] {
        let _ = app.batch_execute(&grant).await;
    }
    denied(
        &app,
        "UPDATE orders SET status = 'CLOSED' WHERE order_id = 1001",
    )
    .await;
    denied(&app, "UPDATE guard_operations SET tenant = 'x'").await;
    denied(&app, "DELETE FROM guard_audit_log").await;
    // Nothing moved.
    let owner = owner(&world).await;
    assert_eq!(order_status(&owner).await, "PAID");
    assert_eq!(world.requests(ORDER_ID).await, 1);
    assert_eq!(world.effects(&id).await, 1);
}

#[tokio::test]
async fn prepare_confirm_and_repeat_work_as_the_app_role() {
    let Some(world) = World::new(Engine::Postgres).await else {
        return;
    };
    let alice = world.alice().await;
    let id = prepare(&alice, ORDER).await;
    let first = confirm(&alice, &id).await;
    assert_eq!(body(&first)["status"], "SUBMITTED");
    let again = confirm(&alice, &id).await;
    assert_eq!(body(&again)["status"], "SUBMITTED");
    assert_eq!(world.requests(ORDER_ID).await, 1);
    assert_eq!(world.effects(&id).await, 1);
    assert_eq!(world.status(&id).await, "SUBMITTED");
}

/// `setup-postgres --revoke-temp`: in a database of its own, the server's role can create a
/// temporary table before and cannot after.
#[tokio::test]
async fn revoke_temp_takes_temporary_tables_away_from_the_app_role() {
    let Some(url) = guard_tests::pg_url("the TEMPORARY revoke test") else {
        return;
    };
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let db = format!(
        "guard_lp_db_{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    let (admin, connection) = tokio_postgres::connect(&url, NoTls).await.expect("connect");
    tokio::spawn(connection);
    admin
        .batch_execute(&format!("CREATE DATABASE {db}"))
        .await
        .expect("a test database");
    let _dropped_at_end = DropDatabase {
        url: url.clone(),
        name: db.clone(),
    };
    let (base, _) = url.rsplit_once('/').expect("a URL ending in /DATABASE");
    let db_url = format!("{base}/{db}");
    order_cancel::stores::setup_postgres(&db_url, "shop", order_cancel::schema::DEMO_ORDERS)
        .await
        .expect("setup");
    let app_session = || async {
        let config = order_cancel::stores::pg_config(&db_url, "shop", Some(APP_ROLE)).unwrap();
        let (client, connection) = config.connect(NoTls).await.expect("log in as the app");
        tokio::spawn(connection);
        client
    };
    let before = app_session().await;
    before
        .batch_execute("CREATE TEMP TABLE orders (x INTEGER)")
        .await
        .expect("by default every role may create temporary tables");
    drop(before);
    // The operator's command: setup again (it may run any number of times) and revoke.
    let root = support::external::workspace_root();
    let bin = support::external::example_bin(&root, "order-cancel", "ORDER_CANCEL_BIN");
    let revoked = std::process::Command::new(&bin)
        .args([
            "--pg",
            &db_url,
            "--pg-schema",
            "shop",
            "setup-postgres",
            "--revoke-temp",
        ])
        .output()
        .expect("order-cancel runs");
    assert!(
        revoked.status.success(),
        "{}",
        support::external::show("order-cancel setup-postgres --revoke-temp", &revoked)
    );
    assert!(
        String::from_utf8_lossy(&revoked.stderr)
            .contains("TEMPORARY on the database is revoked from PUBLIC and order_cancel_app"),
        "{}",
        support::external::show("order-cancel setup-postgres --revoke-temp", &revoked)
    );
    let after = app_session().await;
    let refused = after
        .batch_execute("CREATE TEMP TABLE orders (x INTEGER)")
        .await;
    drop(after);
    let error = refusal(refused, "CREATE TEMP TABLE as the app after the revoke");
    assert_eq!(error.code(), &SqlState::INSUFFICIENT_PRIVILEGE, "{error:?}");
}

/// Drops a test database when the test ends, however it ends.
struct DropDatabase {
    url: String,
    name: String,
}

impl Drop for DropDatabase {
    fn drop(&mut self) {
        let name = &self.name;
        clean_up(
            self.url.clone(),
            format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
            &format!("the test database {name}"),
        );
    }
}

/// `definer_function_sql` refuses, in the database, an owner that is a superuser or may log
/// in, and a caller that is a member of the owner.
#[tokio::test]
async fn definer_function_sql_refuses_an_owner_that_is_not_a_dedicated_role() {
    let Some(world) = World::new(Engine::Postgres).await else {
        return;
    };
    let schema = world.schema.clone().unwrap();
    let login = TempRole::create(owner(&world).await, "login").await;
    let render = |fn_owner: &str, caller: &str| {
        rmcp_guard::ops::pg::definer_function_sql(&rmcp_guard::ops::pg::DefinerFunction {
            schema: &schema,
            name: "peek",
            params: &[],
            returns: "BIGINT",
            language: "sql",
            body: &format!("SELECT count(*) FROM {schema}.orders"),
            owner: fn_owner,
            callers: &[caller],
        })
        .expect("renders")
    };
    let admin = &login.owner;
    for fn_owner in ["postgres", login.name.as_str()] {
        let sql = render(fn_owner, APP_ROLE);
        let error = refusal(admin.batch_execute(&sql).await, &sql);
        assert!(
            error.message().contains("must be an existing NOLOGIN role"),
            "{fn_owner}: {error:?}"
        );
    }
    // A caller that is a member of the owner could act as the owner outright.
    let member = TempRole::create(owner(&world).await, "member").await;
    admin
        .batch_execute(&format!("GRANT {LOCK_OWNER_ROLE} TO {}", member.name))
        .await
        .expect("membership");
    let sql = render(LOCK_OWNER_ROLE, &member.name);
    let error = refusal(admin.batch_execute(&sql).await, &sql);
    assert!(error.message().contains("may act as"), "{error:?}");
    // The refused batch left nothing behind.
    let left: i64 = admin
        .query_one(
            "SELECT count(*) FROM pg_proc WHERE proname = 'peek' AND pronamespace = $1::TEXT::regnamespace",
            &[&schema],
        )
        .await
        .expect("count")
        .get(0);
    assert_eq!(left, 0);
    // The same function for a dedicated owner and the server's role is created.
    admin
        .batch_execute(&render(LOCK_OWNER_ROLE, APP_ROLE))
        .await
        .expect("a hardened definer");
    member.remove().await;
    login.remove().await;
}
