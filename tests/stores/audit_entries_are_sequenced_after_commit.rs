//! On PostgreSQL a guarded call's audit entry commits with its effect in a queue, taking no
//! log-wide lock, and a sequencer places it in the log after: calls go on while the log's
//! lock is held; a queue row that commits late with a lower id is still placed, once; a
//! sequencer that dies mid-batch hands over; the server's role cannot drop a queued entry;
//! a reader shows it as pending, never as missing; the server's own sequencer places it
//! without being asked, and an idle server places what another process left queued; a
//! server that settles before it stops leaves none of its own entries pending.

use crate::support;

use std::time::Duration;

use rmcp_guard::{
    Guarded,
    audit::AuditLog,
    ops::{OperationStore, SqlValue},
    outcome::Outcome,
};

use support::orders::{Engine, SCOPE, World, body, confirm, connect, prepare};

const ORIGIN: &str = "guard audit log";
const ORDER: &str = "A10001";
/// The log's advisory lock, as guard takes it: its fixed id hashed with the store's schema.
const AUDIT_APPEND: &str =
    "SELECT pg_advisory_xact_lock(hashtextextended(current_schema(), 7237150515))";

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
    // The queue first, then the log: an entry the sequencer moves between the two reads is
    // seen in both, never in neither (the other order could miss it).
    let pending = log
        .pending_of(trace)
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.outcome)
        .collect();
    let placed = log
        .by_trace(trace)
        .await
        .unwrap()
        .iter()
        .map(|r| r.json().unwrap()["outcome"].as_str().unwrap().to_owned())
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
    holder.execute(AUDIT_APPEND, &[]).await.unwrap();
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
    dying.execute(AUDIT_APPEND, &[]).await.unwrap();
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
        // Seen in both when it moved between the two reads; never in neither, never twice
        // in either.
        assert!(
            placed.len() <= 1 && pending.len() <= 1 && placed.len() + pending.len() >= 1,
            "the entry is pending or placed, once: placed {placed:?}, pending {pending:?}"
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

/// An entry another process committed to the queue and left there (it stopped before its
/// sequencer ran) is placed by a server that has only opened the store and serves no call:
/// within the documented second, here polled for at most ten.
#[tokio::test(flavor = "multi_thread")]
async fn an_idle_server_places_an_entry_another_process_left_queued() {
    let Some(world) = postgres().await else {
        return;
    };
    // Committed through the server's role by a handle that never sequences, as a process
    // that stops right after its commit leaves it.
    let mut tx = world.store.begin().await.unwrap();
    let (sql, params) = queue_row("stranger", 4);
    tx.execute(&sql, &params).await.unwrap();
    tx.commit().await.unwrap();
    assert_eq!(
        placed_and_pending(&world, "stranger").await,
        (vec![], vec!["executed".to_owned()]),
        "queued and left"
    );

    let idle = world.server("tenant_demo", "alice", &[SCOPE]);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let (placed, pending) = placed_and_pending(&world, "stranger").await;
        if placed.len() == 1 {
            assert!(pending.is_empty() || pending.len() == 1, "{pending:?}");
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "an idle server left another process's entry pending: {pending:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let records = reader(&world).by_trace("stranger").await.unwrap();
    assert_eq!(records.len(), 1, "placed once");
    reader(&world).verify(None).await.expect("the log verifies");
    drop(idle);
}

/// A server that settles its log before it stops (as the examples do on shutdown) places
/// its own queued entries first, even those its sequencer could not place because another
/// held the log's lock: none is left pending for a stranger to place.
#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_settles_before_it_stops_leaves_none_of_its_entries_pending() {
    let Some(world) = postgres().await else {
        return;
    };
    let server = world.server("tenant_demo", "alice", &[SCOPE]);
    let alice = connect(server.clone()).await;
    let holder = connection(&world).await;
    holder.batch_execute("BEGIN").await.unwrap();
    holder.execute(AUDIT_APPEND, &[]).await.unwrap();
    let id = prepare(&alice, ORDER).await;
    let confirmed = confirm(&alice, &id).await;
    assert_eq!(body(&confirmed)["status"], "SUBMITTED");
    let trace = trace_of(&confirmed);
    assert_eq!(
        placed_and_pending(&world, &trace).await,
        (vec![], vec![Outcome::Submitted.to_string()]),
        "pending while the log is locked"
    );
    // The lock is released while the settle is under way.
    let release = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        holder.batch_execute("ROLLBACK").await.unwrap();
    });
    let _ = alice.cancel().await;
    tokio::time::timeout(Duration::from_secs(10), server.guard().audit_settled())
        .await
        .expect("the settle ends once the lock is free");
    assert_eq!(
        placed_and_pending(&world, &trace).await,
        (vec![Outcome::Submitted.to_string()], vec![]),
        "placed before the settle returned"
    );
    release.await.unwrap();
}

/// Four server processes confirm operations concurrently and one is SIGKILLed mid-run:
/// every operation that became SUBMITTED has exactly one SUBMITTED entry once a surviving
/// sequencer has run (what the killed process committed but never sequenced included), none
/// has two, nothing stays pending, and the log is one chain.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn four_processes_and_a_kill_leave_one_entry_per_effect() {
    use support::orders::{paid_orders, seed_rows};
    let orders = paid_orders(30_000, 160);
    let Some(world) = World::with_orders(Engine::Postgres, &seed_rows(&orders)).await else {
        return;
    };
    let mut ids = Vec::new();
    for (order_id, order_no) in &orders {
        ids.push(world.stored_intent(*order_id, order_no, "alice").await);
    }
    let mut servers = Vec::new();
    for _ in 0..4 {
        servers.push(super::confirms_hold_across_processes::spawn(&world, None).await);
    }
    let victim = servers[0].1;
    let mut calls = tokio::task::JoinSet::new();
    for (i, id) in ids.iter().enumerate() {
        let server = servers[i % 4].0.peer().clone();
        let id = id.clone();
        calls.spawn(async move {
            let arguments = serde_json::json!({"operation_id": id});
            let _ = server
                .call_tool(
                    rmcp::model::CallToolRequestParams::new("confirm_order_cancel")
                        .with_arguments(arguments.as_object().unwrap().clone()),
                )
                .await;
        });
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &victim.to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    while calls.join_next().await.is_some() {}

    // The test is the surviving sequencer here: it places whatever is still queued.
    let log = AuditLog::shared(world.owner.clone(), ORIGIN);
    log.sequence().await.unwrap();
    assert!(
        log.pending().await.unwrap().is_empty(),
        "nothing stays pending"
    );
    let verified = log.verify(None).await.expect("one chain");
    let submitted = world
        .count(
            "SELECT COUNT(*) AS n FROM guard_operations WHERE status = 'SUBMITTED'",
            &[],
        )
        .await;
    assert!(submitted > 0, "some confirms went through");
    let entries = world
        .count(
            "SELECT COUNT(*) AS n FROM guard_audit_log WHERE outcome = 'SUBMITTED'",
            &[],
        )
        .await;
    let matched = world
        .count(
            "SELECT COUNT(*) AS n FROM guard_operations o
             WHERE o.status = 'SUBMITTED' AND (SELECT COUNT(*) FROM guard_audit_log l
                 WHERE l.operation_id = o.operation_id AND l.outcome = 'SUBMITTED') = 1",
            &[],
        )
        .await;
    assert_eq!(
        (entries, matched),
        (submitted, submitted),
        "one SUBMITTED entry per effect, none without one ({} records)",
        verified.records
    );
    for (server, _) in servers {
        let _ = server.cancel().await;
    }
}
