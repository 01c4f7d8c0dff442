//! Idempotency keys on order-cancel's `open_ticket`, on SQLite and PostgreSQL: a repeat
//! returns the stored ticket, a reused key with other arguments is refused, a second call
//! while the first runs never runs twice, keys never cross users or tenants, an expired key
//! is purged and runs again, a retry after the client's connection dropped files one
//! ticket, and no tenant's call waits on a lock another tenant's held call holds.

use crate::support;

use std::time::Duration;

use crate::support::{
    assert_refused, call, code, is_error,
    orders::{Client, Engine, SCOPE, World, body, connect},
    outcome, text,
};
use rmcp::model::CallToolResult;
use rmcp_guard::{Code, outcome::Outcome};
use serde_json::{Value, json};
use tokio::task::JoinHandle;

fn ticket_args(key: &str, subject: &str) -> Value {
    json!({"request_id": key, "order_no": "A10001", "subject": subject})
}

async fn open(client: &Client, key: &str, subject: &str) -> CallToolResult {
    call(client, "open_ticket", ticket_args(key, subject)).await
}

async fn tickets(world: &World) -> i64 {
    world
        .count("SELECT COUNT(*) AS n FROM support_tickets", &[])
        .await
}

async fn keys(world: &World) -> i64 {
    world
        .count("SELECT COUNT(*) AS n FROM guard_idempotency", &[])
        .await
}

/// `result.ticket_id` and `already_processed` of a successful answer.
fn ticket(result: &CallToolResult) -> (i64, bool) {
    let body = body(result);
    (
        body["result"]["ticket_id"].as_i64().expect("ticket_id"),
        body["already_processed"]
            .as_bool()
            .expect("already_processed"),
    )
}

async fn audit(world: &World, outcome: Outcome) -> i64 {
    world
        .count(
            "SELECT COUNT(*) AS n FROM guard_audit_log WHERE tool = 'open_ticket' AND outcome = $1",
            &[outcome.as_str().into()],
        )
        .await
}

async fn repeat_and_reuse(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    let alice = world.alice().await;
    let first = open(&alice, "req-1", "parcel arrived damaged").await;
    assert_eq!(
        outcome(&first),
        Some(Outcome::Completed),
        "{}",
        text(&first)
    );
    let (id, again) = ticket(&first);
    assert!(!again);
    // The same request, with its object keys in another order and the subject spelled the
    // same: the stored ticket, nothing new.
    let repeat = call(
        &alice,
        "open_ticket",
        json!({"subject": "parcel arrived damaged", "order_no": "A10001", "request_id": "req-1"}),
    )
    .await;
    assert_eq!(outcome(&repeat), Some(Outcome::AlreadyProcessed));
    assert_eq!(ticket(&repeat), (id, true));
    assert_eq!(tickets(&world).await, 1);
    // The key with other arguments: refused, nothing filed.
    let reused = open(&alice, "req-1", "parcel never arrived").await;
    assert_refused(
        &reused,
        rmcp_guard::Code::IdempotencyKeyReused,
        Outcome::Refused(Code::IdempotencyKeyReused),
    );
    assert!(text(&reused).contains("Use a new request_id"));
    let other_order = call(
        &alice,
        "open_ticket",
        json!({"request_id": "req-1", "order_no": "A10002", "subject": "parcel arrived damaged"}),
    )
    .await;
    assert_refused(
        &other_order,
        rmcp_guard::Code::IdempotencyKeyReused,
        Outcome::Refused(Code::IdempotencyKeyReused),
    );
    assert_eq!(tickets(&world).await, 1);
    // A new key is a new ticket.
    let second = open(&alice, "req-2", "parcel never arrived").await;
    assert_ne!(ticket(&second).0, id);
    assert_eq!(tickets(&world).await, 2);
    // Every outcome is on the audit path.
    assert_eq!(audit(&world, Outcome::Completed).await, 2);
    assert_eq!(audit(&world, Outcome::AlreadyProcessed).await, 1);
    let reused = Outcome::Refused(Code::IdempotencyKeyReused);
    assert_eq!(audit(&world, reused).await, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_repeat_returns_the_stored_ticket_and_reuse_is_refused() {
    repeat_and_reuse(Engine::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_repeat_returns_the_stored_ticket_and_reuse_is_refused() {
    repeat_and_reuse(Engine::Postgres).await;
}

async fn identities(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    let alice = world.alice().await;
    let bob = connect(world.server("tenant_demo", "bob", &[SCOPE])).await;
    let other = connect(world.server("tenant_other", "alice", &[SCOPE])).await;
    let a = ticket(&open(&alice, "shared-key", "parcel arrived damaged").await);
    // ALICE of Tenant_Demo is alice: her key, her stored result.
    let shouting = connect(world.server("Tenant_Demo", "ALICE", &[SCOPE])).await;
    let again = ticket(&open(&shouting, "shared-key", "parcel arrived damaged").await);
    assert_eq!(
        again,
        (a.0, true),
        "one person under two spellings shares a key"
    );
    // bob's call with alice's key and alice's arguments is bob's own first call.
    let b = ticket(&open(&bob, "shared-key", "parcel arrived damaged").await);
    assert!(!b.1, "bob got alice's stored result");
    assert_ne!(a.0, b.0);
    // bob's key with other arguments is not a reuse of alice's.
    let b2 = open(&bob, "shared-key-2", "wrong size").await;
    assert!(!ticket(&b2).1);
    // A user of the same name in another tenant, with a key alice used: a new key there.
    let o = call(
        &other,
        "open_ticket",
        json!({"request_id": "shared-key", "order_no": "B20001", "subject": "parcel arrived damaged"}),
    )
    .await;
    assert!(!ticket(&o).1, "{}", text(&o));
    // alice's order is not visible to the other tenant, key or no key.
    let foreign = open(&other, "foreign-1", "parcel arrived damaged").await;
    assert_eq!(code(&foreign).as_deref(), Some("ORDER_NOT_FOUND"));
    assert_eq!(tickets(&world).await, 4);
    let opened_by: Vec<String> = world
        .query(
            "SELECT tenant || '/' || opened_by AS who FROM support_tickets ORDER BY ticket_id",
            &[],
        )
        .await
        .iter()
        .map(|r| r.text("who").unwrap().to_owned())
        .collect();
    assert_eq!(
        opened_by,
        [
            "tenant_demo/alice",
            "tenant_demo/bob",
            "tenant_demo/bob",
            "tenant_other/alice"
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_keys_never_cross_users_or_tenants() {
    identities(Engine::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_keys_never_cross_users_or_tenants() {
    identities(Engine::Postgres).await;
}

async fn expiry_and_refusals(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    let alice = world.alice().await;
    let first = ticket(&open(&alice, "req-old", "parcel arrived damaged").await);
    let unrelated = ticket(&open(&alice, "req-live", "parcel arrived damaged").await);
    assert_eq!(keys(&world).await, 2);
    // The key is past its expiry: the next call purges it and runs again.
    world
        .exec(
            "UPDATE guard_idempotency SET expires_at = $1 WHERE idem_key = 'req-old'",
            &[(rmcp_guard::ops::now_ms() - 1).into()],
        )
        .await;
    let after = ticket(&open(&alice, "req-old", "parcel arrived damaged").await);
    assert!(!after.1, "an expired key answered with its old result");
    assert_ne!(after.0, first.0);
    assert_eq!(tickets(&world).await, 3);
    // A live key is untouched by the purge.
    assert_eq!(
        ticket(&open(&alice, "req-live", "parcel arrived damaged").await),
        (unrelated.0, true)
    );
    // An expired key of another user is purged by anyone's call.
    world
        .exec(
            "UPDATE guard_idempotency SET expires_at = 1 WHERE idem_key = 'req-live'",
            &[],
        )
        .await;
    let bob = connect(world.server("tenant_demo", "bob", &[SCOPE])).await;
    ticket(&open(&bob, "bob-1", "parcel arrived damaged").await);
    assert_eq!(
        world
            .count(
                "SELECT COUNT(*) AS n FROM guard_idempotency WHERE idem_key = 'req-live'",
                &[]
            )
            .await,
        0
    );
    // A handler's refusal stores nothing: the key is free for the corrected call.
    let refused = call(
        &alice,
        "open_ticket",
        json!({"request_id": "req-fix", "order_no": "A99999", "subject": "parcel arrived damaged"}),
    )
    .await;
    assert_eq!(code(&refused).as_deref(), Some("ORDER_NOT_FOUND"));
    let fixed = ticket(&open(&alice, "req-fix", "parcel arrived damaged").await);
    assert!(!fixed.1);
    // Keys that two readers could see as one are refused before anything runs.
    for bad in ["", "req 1", "req-1\u{200b}", "ре q", &"k".repeat(129)] {
        let before = tickets(&world).await;
        let result = open(&alice, bad, "parcel arrived damaged").await;
        assert_refused(
            &result,
            rmcp_guard::Code::InvalidInput,
            Outcome::Refused(Code::InvalidInput),
        );
        assert_eq!(tickets(&world).await, before);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_expired_keys_are_purged_and_refusals_free_the_key() {
    expiry_and_refusals(Engine::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_expired_keys_are_purged_and_refusals_free_the_key() {
    expiry_and_refusals(Engine::Postgres).await;
}

/// A backlog of other users' expired keys goes at most 500 rows per call, each purge in a
/// transaction of its own, and never takes a live key.
async fn backlog(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    let alice = world.alice().await;
    let live = ticket(&open(&alice, "live", "parcel arrived damaged").await);
    // 1200 keys of another tenant's user: the odd ones live for an hour, the even ones
    // expired long ago.
    world
        .exec(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1200)
             INSERT INTO guard_idempotency
                (tenant, user_id, tool, idem_key, body_sha256, status, result, created_at,
                 completed_at, expires_at, trace_id)
             SELECT 'tenant_other', 'carol', 'open_ticket', 'old-' || CAST(i AS TEXT), 'x',
                    'COMPLETED', '{}', 1, 1, 1 + (i % 2) * CAST($1 AS BIGINT), 'fixture'
             FROM n",
            &[(rmcp_guard::ops::now_ms() + 3_600_000).into()],
        )
        .await;
    let expired = || async {
        world
            .count(
                "SELECT COUNT(*) AS n FROM guard_idempotency WHERE expires_at <= $1",
                &[rmcp_guard::ops::now_ms().into()],
            )
            .await
    };
    assert_eq!(expired().await, 600);
    ticket(&open(&alice, "new-1", "parcel arrived damaged").await);
    assert_eq!(expired().await, 100, "one call purged other than one batch");
    ticket(&open(&alice, "new-2", "parcel arrived damaged").await);
    assert_eq!(expired().await, 0);
    // The live keys all stayed.
    assert_eq!(keys(&world).await, 600 + 3);
    assert_eq!(
        ticket(&open(&alice, "live", "parcel arrived damaged").await),
        (live.0, true)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_expired_keys_go_in_batches_and_live_ones_stay() {
    backlog(Engine::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_expired_keys_go_in_batches_and_live_ones_stay() {
    backlog(Engine::Postgres).await;
}

async fn at_once(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    let mut calls = Vec::new();
    for _ in 0..8 {
        let client = world.alice().await;
        calls.push(async move { open(&client, "burst-1", "parcel arrived damaged").await });
    }
    let calls: Vec<_> = calls.into_iter().map(tokio::spawn).collect();
    let mut results = Vec::new();
    for call in calls {
        results.push(call.await.expect("call task"));
    }
    assert_eq!(
        tickets(&world).await,
        1,
        "one key filed more than one ticket"
    );
    let stored: i64 = world
        .query("SELECT ticket_id FROM support_tickets", &[])
        .await[0]
        .int("ticket_id")
        .unwrap();
    let mut completed = 0;
    for result in &results {
        if is_error(result) {
            // Only PostgreSQL answers a call that overlaps the first one this way.
            assert_eq!(engine, Engine::Postgres);
            assert_refused(
                result,
                rmcp_guard::Code::InProgress,
                Outcome::Refused(Code::InProgress),
            );
        } else {
            let (id, again) = ticket(result);
            assert_eq!(id, stored);
            completed += usize::from(!again);
        }
    }
    assert_eq!(completed, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_identical_calls_at_once_file_one_ticket() {
    at_once(Engine::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_identical_calls_at_once_file_one_ticket() {
    at_once(Engine::Postgres).await;
}

/// PostgreSQL: the first call is held inside its transaction (the order row it references
/// is locked by the owner); a second call with the key answers `IN_PROGRESS` at once; the
/// first one's client drops its connection; the retry files nothing new and, once the
/// first call is over, returns the one ticket there is.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_retry_after_a_dropped_connection_files_one_ticket() {
    let Some(world) = World::new(Engine::Postgres).await else {
        return;
    };
    let mut holder = world.owner.begin().await.expect("owner tx");
    holder
        .execute(
            "SELECT order_id FROM orders WHERE order_id = 1001 FOR UPDATE",
            &[],
        )
        .await
        .expect("lock the order");
    let first = world.alice().await;
    let in_flight = tokio::spawn(async move {
        let result = first
            .call_tool(support::params(
                "open_ticket",
                ticket_args("drop-1", "parcel arrived damaged"),
            ))
            .await;
        drop(first);
        result
    });
    world
        .wait_for_lock_wait("INSERT INTO support_tickets")
        .await;
    let retry = world.alice().await;
    let busy = open(&retry, "drop-1", "parcel arrived damaged").await;
    assert_refused(
        &busy,
        rmcp_guard::Code::InProgress,
        Outcome::Refused(Code::InProgress),
    );
    assert!(text(&busy).contains("still running"));
    // The client goes away mid-call.
    in_flight.abort();
    let _ = in_flight.await;
    holder.rollback().await.expect("release the order");
    // Retry until the first call is settled one way or the other.
    let mut answer = None;
    for _ in 0..600 {
        let result = open(&retry, "drop-1", "parcel arrived damaged").await;
        if code(&result).as_deref() != Some("IN_PROGRESS") {
            answer = Some(result);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let answer = answer.expect("the first call settled");
    let stored: Vec<i64> = world
        .query("SELECT ticket_id FROM support_tickets", &[])
        .await
        .iter()
        .map(|r| r.int("ticket_id").unwrap())
        .collect();
    assert_eq!(stored.len(), 1, "the retry filed a second ticket");
    assert_eq!(ticket(&answer).0, stored[0]);
    // And any later retry is the stored answer.
    assert_eq!(
        ticket(&open(&retry, "drop-1", "parcel arrived damaged").await),
        (stored[0], true)
    );
}

/// The tool's annotations: `idempotentHint: true`, and a key argument in its schema.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_ticket_is_listed_with_its_key() {
    let world = World::new(Engine::Sqlite).await.expect("SQLite");
    let alice = world.alice().await;
    let tools = alice.list_all_tools().await.expect("tools/list");
    let tool = tools
        .iter()
        .find(|t| t.name == "open_ticket")
        .expect("open_ticket listed");
    let hints = tool.annotations.as_ref().expect("annotations");
    assert_eq!(hints.idempotent_hint, Some(true));
    assert_eq!(hints.read_only_hint, Some(false));
    let properties = &tool.input_schema["properties"];
    assert!(properties.get("request_id").is_some(), "{properties}");
}

/// Where a call ended up while another was held.
enum Ran {
    /// It completed, with this answer.
    Done(CallToolResult),
    /// It waited on a lock that a held transaction holds.
    Waited,
}

/// PostgreSQL: an owner's transaction that has run `lock` (a `SELECT … FOR UPDATE`) and
/// holds what it locked until it ends, and its backend's pid.
async fn hold(world: &World, lock: &str) -> (rmcp_guard::ops::Tx, i64) {
    let mut tx = world.owner.begin().await.expect("owner tx");
    let pid = tx
        .query_opt("SELECT CAST(pg_backend_pid() AS BIGINT) AS pid", &[])
        .await
        .expect("pid")
        .expect("a row")
        .int("pid")
        .expect("pid");
    tx.execute(lock, &[]).await.expect("take the lock");
    (tx, pid)
}

/// PostgreSQL: how many backends other than `pids` wait on a lock one of `pids` holds.
async fn blocked_by(world: &World, pids: &[i64]) -> i64 {
    let pids = pids
        .iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(",");
    world
        .count(
            "SELECT COUNT(*) AS n FROM pg_stat_activity
             WHERE pid <> ALL(CAST(string_to_array($1, ',') AS INT[]))
               AND pg_blocking_pids(pid) && CAST(string_to_array($1, ',') AS INT[])",
            &[pids.into()],
        )
        .await
}

/// PostgreSQL: the pid of the backend that waits on `holder`'s lock, once one does.
async fn held_by(world: &World, holder: i64) -> i64 {
    for _ in 0..600 {
        let rows = world
            .query(
                "SELECT CAST(pid AS BIGINT) AS pid FROM pg_stat_activity
                 WHERE $1 = ANY(pg_blocking_pids(pid))",
                &[holder.into()],
            )
            .await;
        if let Some(row) = rows.first() {
            return row.int("pid").expect("pid");
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("no call ever waited on the held transaction");
}

/// Follows `call` until it completes or waits on a lock one of `held` holds, whichever
/// comes first: an order of events, not a time.
async fn run_beside(world: &World, call: JoinHandle<CallToolResult>, held: &[i64]) -> Ran {
    for _ in 0..1200 {
        if call.is_finished() {
            return Ran::Done(call.await.expect("call task"));
        }
        if blocked_by(world, held).await > 0 {
            // Leave the call to finish once the held transaction is released.
            tokio::spawn(call);
            return Ran::Waited;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the call neither completed nor waited on the held transaction");
}

async fn key_rows(world: &World, key: &str) -> Vec<(String, String, i64)> {
    world
        .query(
            "SELECT tenant, status, expires_at FROM guard_idempotency WHERE idem_key = $1",
            &[key.into()],
        )
        .await
        .iter()
        .map(|r| {
            (
                r.text("tenant").unwrap().to_owned(),
                r.text("status").unwrap().to_owned(),
                r.int("expires_at").unwrap(),
            )
        })
        .collect()
}

/// PostgreSQL, the attack run's case: tenant_demo's alice reuses her own expired key and
/// her call is held inside its transaction (the order its ticket references is locked by
/// the owner, so the ticket's insert waits); an expired key of tenant_other is in the table
/// from before she started. tenant_other's call with that expired key, and bob's call with a
/// new key, both complete while alice's call is still held; neither waits on a lock hers
/// holds. Then alice's completes, and every key is one live, completed row.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_no_tenant_waits_on_a_held_call_of_another() {
    let Some(world) = World::new(Engine::Postgres).await else {
        return;
    };
    let alice = world.alice().await;
    let carol = connect(world.server("tenant_other", "carol", &[SCOPE])).await;
    let bob = connect(world.server("tenant_demo", "bob", &[SCOPE])).await;
    let first_a = ticket(&open(&alice, "a-old", "parcel arrived damaged").await);
    let carol_args =
        json!({"request_id": "b-old", "order_no": "B20001", "subject": "parcel arrived damaged"});
    let first_b = ticket(&call(&carol, "open_ticket", carol_args.clone()).await);
    world
        .exec(
            "UPDATE guard_idempotency SET expires_at = $1 WHERE idem_key IN ('a-old', 'b-old')",
            &[(rmcp_guard::ops::now_ms() - 1).into()],
        )
        .await;

    let (holder, holder_pid) = hold(
        &world,
        "SELECT order_id FROM orders WHERE order_id = 1001 FOR UPDATE",
    )
    .await;
    let held = tokio::spawn(async move { open(&alice, "a-old", "parcel arrived damaged").await });
    let alice_pid = held_by(&world, holder_pid).await;

    let carol_call = tokio::spawn(async move { call(&carol, "open_ticket", carol_args).await });
    let carol_ran = run_beside(&world, carol_call, &[alice_pid, holder_pid]).await;
    let bob_call = tokio::spawn(async move {
        let args = json!({"request_id": "c-new", "order_no": "A10004", "subject": "wrong size"});
        call(&bob, "open_ticket", args).await
    });
    let bob_ran = run_beside(&world, bob_call, &[alice_pid, holder_pid]).await;
    // alice's call is still where it was: held inside its transaction.
    let still_held = held_by(&world, holder_pid).await == alice_pid && !held.is_finished();
    holder.rollback().await.expect("release the order");
    let alice_answer = held.await.expect("alice's call");

    let Ran::Done(carol_answer) = carol_ran else {
        panic!("tenant_other's call waited on a lock of tenant_demo's held call");
    };
    let Ran::Done(bob_answer) = bob_ran else {
        panic!("bob's call waited on a lock of alice's held call");
    };
    assert!(still_held, "alice's call was not held while the others ran");
    // The expired keys ran again; the new key ran once.
    let b = ticket(&carol_answer);
    assert!(!b.1 && b.0 != first_b.0, "{}", text(&carol_answer));
    let c = ticket(&bob_answer);
    assert!(!c.1, "{}", text(&bob_answer));
    let a = ticket(&alice_answer);
    assert!(!a.1 && a.0 != first_a.0, "{}", text(&alice_answer));
    assert_eq!(tickets(&world).await, 5);
    let now = rmcp_guard::ops::now_ms();
    for (key, tenant) in [
        ("a-old", "tenant_demo"),
        ("b-old", "tenant_other"),
        ("c-new", "tenant_demo"),
    ] {
        let rows = key_rows(&world, key).await;
        assert_eq!(rows.len(), 1, "{key}: {rows:?}");
        let (t, status, expires_at) = &rows[0];
        assert_eq!((t.as_str(), status.as_str()), (tenant, "COMPLETED"));
        assert!(*expires_at > now, "{key} is stored expired");
    }
}

/// PostgreSQL: an expired key whose row a transaction holds (as a running call holds its
/// own expired key while it replaces it) is passed over by the purge, which still removes
/// the other expired keys; another user's call completes without waiting on it, and once
/// it is released the next call purges it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_a_purge_passes_over_rows_a_call_holds() {
    let Some(world) = World::new(Engine::Postgres).await else {
        return;
    };
    let alice = world.alice().await;
    let bob = std::sync::Arc::new(connect(world.server("tenant_demo", "bob", &[SCOPE])).await);
    ticket(&open(&alice, "held-old", "parcel arrived damaged").await);
    ticket(&open(&alice, "free-old", "parcel arrived damaged").await);
    let live = ticket(&open(&alice, "live", "parcel arrived damaged").await);
    world
        .exec(
            "UPDATE guard_idempotency SET expires_at = 1 WHERE idem_key IN ('held-old', 'free-old')",
            &[],
        )
        .await;
    let (holder, holder_pid) = hold(
        &world,
        "SELECT idem_key FROM guard_idempotency WHERE idem_key = 'held-old' FOR UPDATE",
    )
    .await;
    let bob_call = {
        let bob = std::sync::Arc::clone(&bob);
        tokio::spawn(async move {
            let args = json!({"request_id": "c-1", "order_no": "A10004", "subject": "wrong size"});
            call(&bob, "open_ticket", args).await
        })
    };
    let ran = run_beside(&world, bob_call, &[holder_pid]).await;
    let held_row = key_rows(&world, "held-old").await.len();
    let free_row = key_rows(&world, "free-old").await.len();
    holder.rollback().await.expect("release the row");
    let Ran::Done(answer) = ran else {
        panic!("bob's call waited on a row another transaction holds");
    };
    assert!(!ticket(&answer).1, "{}", text(&answer));
    assert_eq!(
        (held_row, free_row),
        (1, 0),
        "the purge took the wrong rows"
    );
    let args = json!({"request_id": "c-2", "order_no": "A10004", "subject": "wrong size"});
    assert!(!ticket(&call(&bob, "open_ticket", args).await).1);
    assert!(key_rows(&world, "held-old").await.is_empty());
    // The live key was never touched.
    assert_eq!(
        ticket(&open(&alice, "live", "parcel arrived damaged").await),
        (live.0, true)
    );
}

/// PostgreSQL: guard's locks belong to the store's schema. Another store in the same
/// database (here: another schema's transaction holding its purge and audit locks, and the
/// bare ids older builds took) holds up nothing here: this store's call neither waits nor
/// skips its purge, which removes the expired key.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_another_schemas_locks_hold_up_nothing() {
    // Without schema-scoped locks the call waits on the other schema's transaction, which
    // this test holds until the call is done: bound the wait so that fails, not hangs.
    tokio::time::timeout(
        Duration::from_secs(60),
        another_schemas_locks_hold_up_nothing(),
    )
    .await
    .expect("a call waited on another schema's lock");
}

async fn another_schemas_locks_hold_up_nothing() {
    let Some(world) = World::new(Engine::Postgres).await else {
        return;
    };
    let Some(other) = World::new(Engine::Postgres).await else {
        return;
    };
    let alice = world.alice().await;
    ticket(&open(&alice, "old", "parcel arrived damaged").await);
    world
        .exec(
            "UPDATE guard_idempotency SET expires_at = 1 WHERE idem_key = 'old'",
            &[],
        )
        .await;
    let bob = connect(world.server("tenant_demo", "bob", &[SCOPE])).await;
    let (holder, holder_pid) = hold(
        &other,
        "SELECT pg_advisory_xact_lock(hashtextextended(current_schema(), 7237150515)),
                pg_advisory_xact_lock(hashtextextended(current_schema(), 7237150516)),
                pg_advisory_xact_lock(7237150515), pg_advisory_xact_lock(7237150516)",
    )
    .await;
    let bob_call = tokio::spawn(async move {
        let args = json!({"request_id": "b-1", "order_no": "A10004", "subject": "wrong size"});
        call(&bob, "open_ticket", args).await
    });
    let ran = run_beside(&world, bob_call, &[holder_pid]).await;
    let purged = key_rows(&world, "old").await.is_empty();
    holder.rollback().await.expect("release the locks");
    let Ran::Done(answer) = ran else {
        panic!("a call waited on another schema's lock");
    };
    assert!(!ticket(&answer).1, "{}", text(&answer));
    assert!(purged, "the purge skipped for another schema's lock");
}
