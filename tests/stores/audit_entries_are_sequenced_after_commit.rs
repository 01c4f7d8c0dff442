//! On PostgreSQL a guarded call's audit entry commits with its effect in a queue, taking no
//! log-wide lock, and a sequencer places it in the log after: calls go on while the log's
//! lock is held; a queue row that commits late with a lower id is still placed, once; a
//! sequencer that dies mid-batch hands over; the server's role cannot drop a queued entry;
//! a reader shows it as pending, never as missing; the server's own sequencer places it
//! without being asked.

use crate::support;

use std::time::Duration;

use rmcp_guard::{
    audit::AuditLog,
    ops::{OperationStore, SqlValue},
    outcome::Outcome,
};

use support::orders::{Engine, World, body, confirm, prepare};

const ORIGIN: &str = "guard audit log";
const ORDER: &str = "A10001";
/// The log's advisory lock, as guard takes it (a fixed id, kept across releases).
const AUDIT_APPEND: i64 = 7_237_150_515;

/// A PostgreSQL world, or `None` when the database is not configured (skipped loudly).
async fn postgres() -> Option<World> {
    World::new(Engine::Postgres).await
}

/// A plain connection to the world's schema, outside any pool.
async fn connection(world: &World) -> tokio_postgres::Client {
    let url = guard_tests::configured_pg_url().expect("the world had the URL");
    let mut config: tokio_postgres::Config = url.parse().expect("PostgreSQL URL");
    config.options(format!(
        "-c search_path={}",
        world
            .schema
            .as_deref()
            .expect("a PostgreSQL world has a schema")
    ));
    let (client, connection) = config
        .connect(tokio_postgres::NoTls)
        .await
        .expect("connect");
    tokio::spawn(connection);
    client
}

/// The log as a verifier reads it: nothing is sequenced by reading.
fn reader(world: &World) -> AuditLog {
    AuditLog::shared(world.owner.clone(), ORIGIN).read_only()
}

/// The outcomes the log holds for `trace`, and those still pending.
async fn placed_and_pending(world: &World, trace: &str) -> (Vec<String>, Vec<String>) {
    let log = reader(world);
    let placed = log
        .by_trace(trace)
        .await
        .unwrap()
        .iter()
        .map(|r| r.json().unwrap()["outcome"].as_str().unwrap().to_owned())
        .collect();
    let pending = log
        .pending_of(trace)
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.outcome)
        .collect();
    (placed, pending)
}

fn trace_of(result: &rmcp::model::CallToolResult) -> String {
    support::trace_id(result).expect("trace id")
}

/// While another transaction holds the log's lock (a sequencer mid-batch, or an
/// `AuditLog::append`), a prepare and a confirm still commit and answer: their entries are
/// queued, pending, and placed once the lock is free.
#[tokio::test(flavor = "multi_thread")]
async fn postgres_calls_commit_while_the_log_is_locked() {
    let Some(world) = postgres().await else {
        return;
    };
    let alice = world.alice().await;
    let holder = connection(&world).await;
    holder.batch_execute("BEGIN").await.unwrap();
    holder
        .execute("SELECT pg_advisory_xact_lock($1)", &[&AUDIT_APPEND])
        .await
        .unwrap();
    let id = tokio::time::timeout(Duration::from_secs(10), prepare(&alice, ORDER))
        .await
        .expect("a prepare does not wait for the log's lock");
    let confirmed = tokio::time::timeout(Duration::from_secs(10), confirm(&alice, &id))
        .await
        .expect("a confirm does not wait for the log's lock");
    assert_eq!(body(&confirmed)["status"], "SUBMITTED");
    let trace = trace_of(&confirmed);
    assert_eq!(
        placed_and_pending(&world, &trace).await,
        (vec![], vec![Outcome::Submitted.to_string()]),
        "committed with the effect, pending while the log is locked"
    );
    holder.batch_execute("ROLLBACK").await.unwrap();
    AuditLog::shared(world.owner.clone(), ORIGIN)
        .sequence()
        .await
        .unwrap();
    assert_eq!(
        placed_and_pending(&world, &trace).await,
        (vec![Outcome::Submitted.to_string()], vec![])
    );
    assert_eq!(
        world.audit_outcomes(&id).await,
        [Outcome::Prepared, Outcome::Submitted]
    );
    reader(&world).verify(None).await.expect("the log verifies");
}

/// The statement a guarded transaction queues an entry with, for an entry of `trace`.
fn queue_row(trace: &str, at: i64) -> (String, Vec<SqlValue>) {
    (
        "INSERT INTO guard_audit_queue (body, trace_id, tool, outcome, at)
         VALUES ($1, $2, 'late_tool', 'executed', $3)"
            .to_owned(),
        vec![
            format!(
                "{{\"at\":{at},\"outcome\":\"executed\",\"tool\":\"late_tool\",\"trace_id\":\"{trace}\"}}"
            )
            .into(),
            trace.into(),
            at.into(),
        ],
    )
}

/// A queue row that commits after a higher id was already sequenced is placed by a later
/// batch, after it: no gap, nothing placed twice, nothing left queued.
#[tokio::test(flavor = "multi_thread")]
async fn a_late_commit_with_a_lower_queue_id_is_still_sequenced() {
    let Some(world) = postgres().await else {
        return;
    };
    let log = AuditLog::shared(world.store.clone(), ORIGIN);
    let mut early = world.store.begin().await.unwrap();
    let (sql, params) = queue_row("late", 1);
    early.execute(&sql, &params).await.unwrap();
    let mut later = world.store.begin().await.unwrap();
    let (sql, params) = queue_row("first", 2);
    later.execute(&sql, &params).await.unwrap();
    later.commit().await.unwrap();
    assert_eq!(log.sequence().await.unwrap(), 1, "only the committed row");
    early.commit().await.unwrap();
    assert_eq!(log.sequence().await.unwrap(), 1, "the late row, once");
    assert_eq!(log.sequence().await.unwrap(), 0, "nothing twice");
    let records = log.records().await.unwrap();
    let traces: Vec<String> = records
        .iter()
        .map(|r| r.json().unwrap()["trace_id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(traces, ["first", "late"], "placed in the order integrated");
    assert_eq!(
        records.iter().map(|r| r.seq).collect::<Vec<_>>(),
        [0, 1],
        "no gap"
    );
    assert!(log.pending().await.unwrap().is_empty());
    log.verify(None).await.expect("the log verifies");
}

/// A sequencer whose backend dies mid-batch (its process killed, its connection cut) holds
/// the log's lock no longer: the next sequencer places what is queued.
#[tokio::test(flavor = "multi_thread")]
async fn a_dead_sequencer_hands_over() {
    let Some(world) = postgres().await else {
        return;
    };
    let alice = world.alice().await;
    let id = prepare(&alice, ORDER).await;
    let dying = connection(&world).await;
    dying.batch_execute("BEGIN").await.unwrap();
    dying
        .execute("SELECT pg_advisory_xact_lock($1)", &[&AUDIT_APPEND])
        .await
        .unwrap();
    let pid: i32 = dying
        .query_one("SELECT pg_backend_pid()", &[])
        .await
        .unwrap()
        .get(0);
    let confirmed = confirm(&alice, &id).await;
    assert_eq!(body(&confirmed)["status"], "SUBMITTED");
    let trace = trace_of(&confirmed);
    connection(&world)
        .await
        .execute("SELECT pg_terminate_backend($1)", &[&pid])
        .await
        .unwrap();
    tokio::time::timeout(
        Duration::from_secs(10),
        AuditLog::shared(world.owner.clone(), ORIGIN).sequence(),
    )
    .await
    .expect("the lock went with the dead backend")
    .unwrap();
    assert_eq!(
        placed_and_pending(&world, &trace).await,
        (vec![Outcome::Submitted.to_string()], vec![])
    );
}

/// The server's role may delete a queued entry only once the log holds it: a compromised
/// server cannot drop an entry it committed, nor rewrite it.
#[tokio::test(flavor = "multi_thread")]
async fn the_server_role_cannot_drop_a_queued_entry() {
    let Some(world) = postgres().await else {
        return;
    };
    let mut tx = world.store.begin().await.unwrap();
    let (sql, params) = queue_row("kept", 3);
    tx.execute(&sql, &params).await.unwrap();
    tx.commit().await.unwrap();
    for sql in [
        "DELETE FROM guard_audit_queue",
        "UPDATE guard_audit_queue SET outcome = 'declined'",
    ] {
        let mut tx = world.store.begin().await.unwrap();
        let refused = tx.execute(sql, &[]).await;
        assert!(refused.is_err(), "{sql} was allowed");
    }
    let log = AuditLog::shared(world.store.clone(), ORIGIN);
    assert_eq!(log.sequence().await.unwrap(), 1);
    assert_eq!(log.by_trace("kept").await.unwrap().len(), 1);
}

/// With nobody asking, the server's own sequencer places a call's entry soon after the
/// call (woken by its commit); a reader meanwhile shows it pending or placed, never missing.
#[tokio::test(flavor = "multi_thread")]
async fn the_server_sequences_its_entries_unasked() {
    let Some(world) = postgres().await else {
        return;
    };
    let alice = world.alice().await;
    let id = prepare(&alice, ORDER).await;
    let confirmed = confirm(&alice, &id).await;
    let trace = trace_of(&confirmed);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let (placed, pending) = placed_and_pending(&world, &trace).await;
        assert_eq!(
            placed.len() + pending.len(),
            1,
            "the entry is pending or placed, once"
        );
        if placed.len() == 1 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the server's sequencer did not place the entry"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
