//! The operation store's own plumbing: guard's tables carry a schema version and an older
//! store is migrated (stored payloads re-encoded as RFC 8785 canonical JSON with their
//! digests), a newer one refused; and the SQLite store does its blocking work off the async
//! runtime's workers, ending every transaction it began.

use std::{
    path::Path,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use crate::support::orders::fresh_schema;
use guard_tests::pg_url;
use rmcp_guard::ops::{OperationStore, PgStore, SqliteStore, Statement};
use rmcp_guard::outcome::Outcome;
use sha2::{Digest, Sha256};

const UNVERSIONED_SQLITE: &str = include_str!("../fixtures/store/unversioned_sqlite.sql");
const UNVERSIONED_POSTGRES: &str = include_str!("../fixtures/store/unversioned_postgres.sql");

/// Payloads as an older guard stored them: one its canonical form changes (`1.0`, and keys
/// it sorted by code point), one already canonical, one with no canonical form at all.
const OLD_PAYLOADS: [(&str, &str); 3] = [
    ("op-float", r#"{"order_id":1.0,"reason":"x","דּ":1,"😀":2}"#),
    ("op-plain", r#"{"order_id":2,"reason":"y"}"#),
    ("op-huge", r#"{"order_id":9007199254740993}"#),
];

/// What each payload reads after the migration.
const NEW_PAYLOADS: [(&str, &str); 3] = [
    ("op-float", r#"{"order_id":1,"reason":"x","😀":2,"דּ":1}"#),
    ("op-plain", r#"{"order_id":2,"reason":"y"}"#),
    ("op-huge", r#"{"order_id":9007199254740993}"#),
];

fn sha256_hex(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The insert of one old intent, `$1`..`$3` = id, payload, digest.
const INSERT_OLD: &str = "INSERT INTO guard_operations (operation_id, tenant, user_id, op, target, \
     payload, payload_sha256, preview, status, expires_at, created_at, trace_id) \
     VALUES ($1, 't', 'u', 'cancel_order', $1, $2, $3, '{}', 'PREPARED', 4102444800000, 0, 'trace')";

/// Two rows of the audit table an older guard wrote, oldest first.
const OLD_AUDIT: &str =
    "INSERT INTO guard_audit (trace_id, tenant, user_id, tool, op, outcome, at) VALUES
    ('trace-1', 't', 'u', 'cancel_order', 'prepare', 'PREPARED', 1000),
    ('trace-2', 't', 'u', 'cancel_order', 'confirm', 'SUBMITTED', 2000)";

fn old_sqlite_store(path: &Path) {
    let connection = rusqlite::Connection::open(path).unwrap();
    connection.execute_batch(UNVERSIONED_SQLITE).unwrap();
    connection.execute_batch(OLD_AUDIT).unwrap();
    for (id, payload) in OLD_PAYLOADS {
        connection
            .execute(
                &INSERT_OLD.replace('$', "?"),
                (id, payload, sha256_hex(payload)),
            )
            .unwrap();
    }
}

/// (version, [(id, payload, digest)]) as the file holds them.
fn sqlite_contents(path: &Path) -> (i64, Vec<(String, String, String)>) {
    let connection = rusqlite::Connection::open(path).unwrap();
    let version = connection
        .query_row("SELECT version FROM guard_schema_version", [], |row| {
            row.get(0)
        })
        .unwrap();
    let mut select = connection
        .prepare(
            "SELECT operation_id, payload, payload_sha256 FROM guard_operations \
             ORDER BY operation_id",
        )
        .unwrap();
    let rows = select
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    (version, rows)
}

fn assert_migrated(version: i64, rows: &[(String, String, String)]) {
    assert_eq!(version, 18, "the store is at this build's schema version");
    let mut expected: Vec<_> = NEW_PAYLOADS.to_vec();
    expected.sort();
    for ((id, payload, digest), (want_id, want_payload)) in rows.iter().zip(expected) {
        assert_eq!((id.as_str(), payload.as_str()), (want_id, want_payload));
        assert_eq!(
            digest,
            &sha256_hex(payload),
            "{id}: the digest is over the stored text, so a confirm still verifies it"
        );
    }
    assert_eq!(rows.len(), NEW_PAYLOADS.len());
}

#[test]
fn an_unversioned_sqlite_store_is_migrated_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("guard.db");
    old_sqlite_store(&path);

    drop(SqliteStore::open(&path).expect("the old store opens"));
    let (version, rows) = sqlite_contents(&path);
    assert_migrated(version, &rows);
    let moved = legacy_entries(&path);
    // The purge's statement, as the store sends it.
    let connection = rusqlite::Connection::open(&path).unwrap();
    let plan: Vec<String> = connection
        .prepare(
            "EXPLAIN QUERY PLAN DELETE FROM guard_redeemed_states WHERE rowid IN (
                 SELECT rowid FROM guard_redeemed_states WHERE expires_at <= 1 LIMIT 500)",
        )
        .unwrap()
        .query_map([], |row| row.get(3))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let plan = plan.join("; ");
    assert!(
        plan.contains("guard_redeemed_states_expiry"),
        "the purge of redeemed states reads the expiry index: {plan}"
    );

    // Opening again changes nothing, and moves nothing twice.
    drop(SqliteStore::open(&path).expect("the migrated store opens"));
    assert_eq!(sqlite_contents(&path), (version, rows));
    assert_eq!(legacy_entries(&path), moved);
}

/// The old audit table's rows are in the log, in their order, marked as carried over; the
/// old table is gone; the log verifies.
fn legacy_entries(path: &Path) -> Vec<(String, Option<Outcome>)> {
    let connection = rusqlite::Connection::open(path).unwrap();
    let old_tables: i64 = connection
        .query_row(
            "SELECT COUNT(*) FROM sqlite_master WHERE name = 'guard_audit'",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(old_tables, 0, "the old audit table is dropped");
    let entries: Vec<String> = connection
        .prepare("SELECT entry FROM guard_audit_log ORDER BY seq")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let moved: Vec<(String, Option<Outcome>)> = entries
        .iter()
        .map(|e| serde_json::from_str::<serde_json::Value>(e).unwrap())
        .map(|e| {
            assert_eq!(e["legacy"], true, "{e}");
            (
                e["trace_id"].as_str().unwrap().to_owned(),
                Outcome::parse(e["outcome"].as_str().unwrap()),
            )
        })
        .collect();
    assert_eq!(
        moved,
        [
            ("trace-1".to_owned(), Some(Outcome::Prepared)),
            ("trace-2".to_owned(), Some(Outcome::Submitted))
        ]
    );
    let store = SqliteStore::open(path).unwrap();
    let verified = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(rmcp_guard::audit::AuditLog::new(store, "old store").verify(None))
        .expect("the carried-over log verifies");
    assert_eq!(verified.records, 2);
    moved
}

/// Several openers of one old file (threads with their own connections, as processes would
/// be) take turns on the write lock: one migrates, the others find it done.
#[test]
fn concurrent_sqlite_openers_migrate_one_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = Arc::new(dir.path().join("guard.db"));
    old_sqlite_store(&path);
    let openers: Vec<_> = (0..4)
        .map(|_| {
            let path = path.clone();
            std::thread::spawn(move || SqliteStore::open(&*path).map(drop))
        })
        .collect();
    for opener in openers {
        opener.join().unwrap().expect("every opener succeeds");
    }
    let (version, rows) = sqlite_contents(&path);
    assert_migrated(version, &rows);
}

#[test]
fn a_store_from_a_newer_guard_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("guard.db");
    drop(SqliteStore::open(&path).unwrap());
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute("UPDATE guard_schema_version SET version = 1000", [])
        .unwrap();
    let error = SqliteStore::open(&path).unwrap_err().to_string();
    assert!(
        error.contains("schema version 1000, newer than this build knows"),
        "{error}"
    );
    assert!(
        error.contains("run the guard release that wrote them"),
        "{error}"
    );
}

/// While another connection holds the write lock, a transaction waiting for it must not
/// block the runtime: on a single-threaded runtime a ticker keeps running until its first
/// statement returns. With rusqlite called on the runtime's thread, the ticker would not move.
#[test]
fn a_waiting_sqlite_transaction_does_not_block_the_runtime() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("guard.db");
    let store = SqliteStore::open(&path).unwrap();

    let holder = rusqlite::Connection::open(&path).unwrap();
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();
    let release = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        holder.execute_batch("ROLLBACK").unwrap();
    });

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let ticks = Arc::new(AtomicU64::new(0));
    let ticks_seen = runtime.block_on(async {
        let ticker = tokio::spawn({
            let ticks = ticks.clone();
            async move {
                loop {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    ticks.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
        // `BEGIN IMMEDIATE` goes with the transaction's first statement: that is what waits.
        let mut tx = store.begin().await.expect("begin");
        tx.query("SELECT 1", &[])
            .await
            .expect("the lock is released in time");
        let seen = ticks.load(Ordering::Relaxed);
        tx.rollback().await.unwrap();
        ticker.abort();
        seen
    });
    release.join().unwrap();
    assert!(
        ticks_seen > 0,
        "the runtime's only thread was blocked while the transaction waited for the lock"
    );
}

/// A transaction whose commit is never awaited, or that is simply dropped, is rolled back
/// before the next writer begins: nothing is half-written and the store stays usable.
#[tokio::test]
async fn abandoned_sqlite_transactions_end_before_the_next_begins() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("guard.db")).unwrap();
    let mut tx = store.begin().await.unwrap();
    tx.execute("CREATE TABLE scratch (n INTEGER)", &[])
        .await
        .unwrap();
    tx.commit().await.unwrap();

    let mut tx = store.begin().await.unwrap();
    tx.execute("INSERT INTO scratch (n) VALUES (1)", &[])
        .await
        .unwrap();
    drop(tx.commit()); // never polled: the transaction inside it is dropped unfinished

    let mut tx = store.begin().await.unwrap();
    tx.execute("INSERT INTO scratch (n) VALUES (2)", &[])
        .await
        .unwrap();
    drop(tx);

    let mut tx = store.begin().await.expect("the store is still usable");
    let rows = tx.query("SELECT n FROM scratch", &[]).await.unwrap();
    assert!(rows.is_empty(), "nothing abandoned was committed: {rows:?}");
    tx.rollback().await.unwrap();
}

/// Four migrators at once on an unversioned PostgreSQL store: the advisory lock makes them
/// take turns, the payloads are re-encoded once, and the version is recorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_unversioned_postgres_store_is_migrated_once() {
    let Some(url) = pg_url("the PostgreSQL schema migration test") else {
        return;
    };
    let schema = fresh_schema("guard_migrate");
    let config = order_cancel::stores::pg_config(&url, &schema, None).unwrap();
    let (admin, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    admin
        .batch_execute(&format!(
            "CREATE SCHEMA {schema}; SET search_path = {schema}; {UNVERSIONED_POSTGRES}"
        ))
        .await
        .unwrap();
    for (id, payload) in OLD_PAYLOADS {
        admin
            .execute(INSERT_OLD, &[&id, &payload, &sha256_hex(payload)])
            .await
            .unwrap();
    }

    let migrators: Vec<_> = (0..4)
        .map(|_| {
            let store = PgStore::from_config(config.clone(), 1).unwrap();
            tokio::spawn(async move { store.migrate().await })
        })
        .collect();
    for migrator in migrators {
        migrator.await.unwrap().expect("every migrator succeeds");
    }

    let version: i64 = admin
        .query_one("SELECT version FROM guard_schema_version", &[])
        .await
        .unwrap()
        .get(0);
    let rows: Vec<(String, String, String)> = admin
        .query(
            "SELECT operation_id, payload, payload_sha256 FROM guard_operations \
             ORDER BY operation_id",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|row| (row.get(0), row.get(1), row.get(2)))
        .collect();
    let triggers: i64 = admin
        .query_one(
            "SELECT count(*) FROM pg_trigger WHERE tgrelid = 'guard_operations'::regclass \
             AND tgname IN ('guard_operations_immutable', 'guard_operations_submitted_has_effect')",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    admin
        .batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
        .await
        .unwrap();
    assert_migrated(version, &rows);
    assert_eq!(triggers, 2, "the database's own guards are in place");
}

/// What a pipeline of statements answers on `store`: each statement's rows or changed count,
/// in order; the first failure stops it (the statements after it do not run) and nothing
/// of it commits.
async fn a_pipeline_answers_in_order_and_stops_at_its_first_failure(store: &dyn OperationStore) {
    let mut tx = store.begin().await.unwrap();
    tx.execute("CREATE TABLE scratch (n BIGINT PRIMARY KEY)", &[])
        .await
        .unwrap();
    tx.commit().await.unwrap();

    let insert = |n: i64| Statement::execute("INSERT INTO scratch (n) VALUES ($1)", vec![n.into()]);
    let mut tx = store.begin().await.unwrap();
    let done = tx
        .pipeline(&[
            insert(1),
            insert(2),
            Statement::execute("UPDATE scratch SET n = n + 10", vec![]),
            Statement::query("SELECT n FROM scratch ORDER BY n", vec![]),
        ])
        .await
        .unwrap();
    let changed: Vec<u64> = done.iter().map(|d| d.changed).collect();
    assert_eq!(changed, [1, 1, 2, 2]);
    let read: Vec<i64> = done[3].rows.iter().map(|r| r.int("n").unwrap()).collect();
    assert_eq!(read, [11, 12]);
    tx.commit().await.unwrap();

    let mut tx = store.begin().await.unwrap();
    let failed = tx
        .pipeline(&[insert(3), insert(11), insert(4)])
        .await
        .expect_err("the duplicate key fails the pipeline");
    assert!(failed.is_unique(), "{failed}");
    tx.rollback().await.unwrap();

    let mut tx = store.begin().await.unwrap();
    let rows = tx
        .query("SELECT n FROM scratch ORDER BY n", &[])
        .await
        .unwrap();
    let kept: Vec<i64> = rows.iter().map(|r| r.int("n").unwrap()).collect();
    assert_eq!(kept, [11, 12], "nothing of the failed pipeline stayed");
    tx.rollback().await.unwrap();
}

#[tokio::test]
async fn a_sqlite_pipeline_answers_in_order_and_stops_at_its_first_failure() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("guard.db")).unwrap();
    a_pipeline_answers_in_order_and_stops_at_its_first_failure(&store).await;
}

/// A connection to `url` as its own role, after creating `schema` and running `then`.
async fn admin_on_new_schema(url: &str, schema: &str, then: &str) -> tokio_postgres::Client {
    let (admin, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    admin
        .batch_execute(&format!("CREATE SCHEMA {schema}; {then}"))
        .await
        .unwrap();
    admin
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_pipeline_answers_in_order_and_stops_at_its_first_failure() {
    let Some(url) = pg_url("the PostgreSQL pipeline test") else {
        return;
    };
    let schema = fresh_schema("guard_pipeline");
    let admin = admin_on_new_schema(&url, &schema, "").await;
    let config = order_cancel::stores::pg_config(&url, &schema, None).unwrap();
    let store = PgStore::from_config(config, 2).unwrap();
    a_pipeline_answers_in_order_and_stops_at_its_first_failure(&store).await;
    admin
        .batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
        .await
        .unwrap();
}

/// `BEGIN IMMEDIATE` goes with a transaction's first statement, even a read: from that read
/// until the commit, no other connection (another process) can write, so what the
/// transaction read stays true until it writes.
#[tokio::test]
async fn a_sqlite_transaction_holds_the_write_lock_from_its_first_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("guard.db");
    let store = SqliteStore::open(&path).unwrap();
    let other = rusqlite::Connection::open(&path).unwrap();
    other.busy_timeout(Duration::ZERO).unwrap();
    let try_write = |other: &rusqlite::Connection| {
        other
            .execute_batch("BEGIN IMMEDIATE; ROLLBACK")
            .map_err(|e| e.sqlite_error_code())
    };

    let tx = store.begin().await.unwrap();
    assert_eq!(try_write(&other), Ok(()), "begin alone sends nothing");
    let mut tx = tx;
    tx.query("SELECT COUNT(*) AS n FROM guard_operations", &[])
        .await
        .unwrap();
    assert_eq!(
        try_write(&other),
        Err(Some(rusqlite::ErrorCode::DatabaseBusy)),
        "another connection wrote between the transaction's read and its commit"
    );
    tx.commit().await.unwrap();
    assert_eq!(try_write(&other), Ok(()), "the commit released the lock");
}

/// A verifier's PostgreSQL store (`PgStore::connect_read_only`, as `guard-audit --pg`
/// opens it): every transaction is `READ ONLY`, and a schema without guard's log, at
/// another schema version, or holding a planted legacy audit table is refused, with no
/// table created and no row changed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_postgres_store_refuses_what_it_cannot_read_and_changes_nothing() {
    let Some(url) = pg_url("the read-only PostgreSQL store test") else {
        return;
    };
    let schema = fresh_schema("guard_read_only");
    let admin = admin_on_new_schema(
        &url,
        &schema,
        &format!("CREATE TABLE {schema}.notes (n INT); INSERT INTO {schema}.notes VALUES (1)"),
    )
    .await;
    let separator = if url.contains('?') { '&' } else { '?' };
    let reader_url = format!("{url}{separator}options=-c%20search_path%3D{schema}");
    let reader = PgStore::connect_read_only(&reader_url).unwrap();
    // What the schema holds: its tables, the log's rows, the version and the planted rows.
    let state = || async {
        let mut seen = Vec::new();
        for row in admin
            .query(
                "SELECT tablename FROM pg_catalog.pg_tables WHERE schemaname = $1 ORDER BY 1",
                &[&schema],
            )
            .await
            .unwrap()
        {
            let table: String = row.get(0);
            let rows = admin
                .query(
                    &format!("SELECT t::text FROM {schema}.{table} t ORDER BY 1"),
                    &[],
                )
                .await
                .unwrap();
            seen.push((
                table,
                rows.iter()
                    .map(|r| r.get::<_, String>(0))
                    .collect::<Vec<_>>(),
            ));
        }
        seen
    };
    let refused = |why: &'static str| {
        let reader = reader.clone();
        async move {
            let before = state().await;
            let error = reader.check_schema().await.unwrap_err().to_string();
            assert!(error.contains(why), "{error}");
            assert_eq!(state().await, before, "refusing ({why}) changed the schema");
        }
    };

    refused("no guard audit log").await;

    let writer = PgStore::from_config(
        order_cancel::stores::pg_config(&url, &schema, None).unwrap(),
        1,
    )
    .unwrap();
    writer.migrate().await.unwrap();
    let log = rmcp_guard::audit::AuditLog::new(writer, "read only test");
    for i in 0..3 {
        let event =
            rmcp_guard::audit::Event::new("delete_file", Outcome::Executed, format!("t-{i}"));
        log.append(None, &event).await.unwrap();
    }
    reader
        .check_schema()
        .await
        .expect("a store of this version is read");
    let read = rmcp_guard::audit::AuditLog::new(reader.clone(), "read only test");
    let before = state().await;
    assert_eq!(read.verify(None).await.expect("verifies").records, 3);
    let write = read
        .append(
            None,
            &rmcp_guard::audit::Event::new("x", Outcome::Executed, "t-x"),
        )
        .await;
    assert!(write.is_err(), "a read-only store cannot write");
    assert_eq!(state().await, before, "reading changed the schema");

    let version = |change: &'static str| {
        let admin = &admin;
        let schema = &schema;
        async move {
            admin
                .batch_execute(&format!(
                    "UPDATE {schema}.guard_schema_version SET version = version {change}"
                ))
                .await
                .unwrap();
        }
    };
    version("+ 1").await;
    refused("newer than this build knows").await;
    version("- 2").await;
    refused("older than this build's").await;
    version("+ 1").await;
    admin
        .batch_execute(&format!(
            "CREATE TABLE {schema}.guard_audit (
                 audit_id BIGINT PRIMARY KEY, trace_id TEXT, tenant TEXT, user_id TEXT,
                 tool TEXT, op TEXT, operation_id TEXT, target TEXT, summary TEXT,
                 outcome TEXT, at BIGINT);
             INSERT INTO {schema}.guard_audit (audit_id, trace_id, tool, outcome, at)
                 VALUES (1, 'planted', 'delete_file', 'executed', 1)"
        ))
        .await
        .unwrap();
    refused("`guard_audit`").await;
    admin
        .batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
        .await
        .unwrap();
}
