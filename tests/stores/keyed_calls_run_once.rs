//! Idempotency keys on order-cancel's `open_ticket`, on SQLite and PostgreSQL: a repeat
//! returns the stored ticket, a reused key with other arguments is refused, a second call
//! while the first runs never runs twice, keys never cross users or tenants, an expired key
//! is purged and runs again, and a retry after the client's connection dropped files one
//! ticket.

use crate::support;

use std::time::Duration;

use crate::support::{
    assert_refused, call, code, is_error,
    orders::{Client, Engine, SCOPE, World, body, connect},
    outcome, text,
};
use rmcp::model::CallToolResult;
use rmcp_guard::{codes, outcome::Outcome};
use serde_json::{Value, json};

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
        "IDEMPOTENCY_KEY_REUSED",
        Outcome::Refused(codes::IDEMPOTENCY_KEY_REUSED),
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
        "IDEMPOTENCY_KEY_REUSED",
        Outcome::Refused(codes::IDEMPOTENCY_KEY_REUSED),
    );
    assert_eq!(tickets(&world).await, 1);
    // A new key is a new ticket.
    let second = open(&alice, "req-2", "parcel never arrived").await;
    assert_ne!(ticket(&second).0, id);
    assert_eq!(tickets(&world).await, 2);
    // Every outcome is on the audit path.
    assert_eq!(audit(&world, Outcome::Completed).await, 2);
    assert_eq!(audit(&world, Outcome::AlreadyProcessed).await, 1);
    let reused = Outcome::Refused(codes::IDEMPOTENCY_KEY_REUSED);
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
            "INVALID_INPUT",
            Outcome::Refused(codes::INVALID_INPUT),
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
            assert_refused(result, "IN_PROGRESS", Outcome::Refused(codes::IN_PROGRESS));
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
    assert_refused(&busy, "IN_PROGRESS", Outcome::Refused(codes::IN_PROGRESS));
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
