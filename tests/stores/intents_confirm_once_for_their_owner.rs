//! Two-phase operations on order-cancel, the same suite on SQLite and on PostgreSQL: the
//! seed's eight cases (duplicate and concurrent confirms, cross-tenant and cross-user
//! confirms, expiry, a target that changed, the database role, a failure after the insert)
//! and the rest of the contract (preview without effect, codes, rate limit, one pending
//! intent per target, get_operation_result, audit).

use crate::support;

use std::sync::Arc;

use crate::support::{
    call,
    orders::{
        self, Engine, SCOPE, World, body, confirm, connect, error_text, prepare, prepare_refused,
    },
};
use rmcp_guard::ops::{BoxFuture, Rate, StoreError, Tx};
use rmcp_guard::{Code, outcome::Outcome};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

both_stores!(
    prepare_freezes_an_intent_and_changes_nothing,
    duplicate_confirm_returns_the_same_request,
    ten_concurrent_confirms_file_one_request,
    cross_tenant_confirm_is_not_found,
    cross_user_confirm_is_not_found,
    one_owner_under_any_spelling_and_an_intent_stored_before_canonical_names,
    expired_intent_is_refused_and_marked_expired,
    order_shipped_after_prepare_is_refused,
    failure_after_the_insert_leaves_nothing_half_written,
    missing_scope_is_denied_and_audited,
    rate_limit_holds_in_the_store,
    a_deployment_sets_its_own_rate,
    concurrent_prepares_of_one_user_stop_at_the_limit,
    one_pending_intent_per_order,
    get_operation_result_tells_what_happened,
    bad_and_unknown_operation_ids,
    an_operation_id_counts_only_as_it_was_returned,
    business_refusals_prepare_nothing,
    tampered_payload_is_refused,
    store_failure_mid_confirm_is_result_unknown,
    a_constraint_in_the_effect_is_state_changed_and_closes_the_intent,
    racing_prepares_and_confirms_never_strand_an_intent,
    store_errors_tell_a_constraint_from_a_lost_connection,
    store_failure_before_the_effect_is_unavailable_and_audited,
    every_confirm_answer_is_audited,
    a_changed_target_that_cannot_be_recorded_is_unavailable,
    a_constraint_refusal_that_cannot_be_recorded_says_so,
);

const ORDER: &str = "A10001";
const ORDER_ID: i64 = 1001;

async fn prepare_freezes_an_intent_and_changes_nothing(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    let alice = world.alice().await;
    let result = call(
        &alice,
        "prepare_order_cancel",
        json!({"order_no": ORDER, "reason": "  customer changed their mind "}),
    )
    .await;
    let body = body(&result).clone();
    assert_eq!(body["status"], "PREPARED");
    assert_eq!(body["requires_user_confirmation"], true);
    assert_eq!(body["preview"]["order_no"], ORDER);
    assert_eq!(body["preview"]["total"], "129.00");
    assert_eq!(body["preview"]["reason"], "customer changed their mind");
    assert!(
        body["next"]
            .as_str()
            .unwrap()
            .contains("confirm_order_cancel")
    );
    let id = body["operation_id"].as_str().unwrap();
    assert_eq!(
        uuid_version(id),
        Some(4),
        "a server-generated UUID v4: {id}"
    );

    assert_eq!(world.requests(ORDER_ID).await, 0, "a prepare files nothing");
    let row = &world
        .query(
            "SELECT tenant, user_id, op, target, payload, payload_sha256, status, expires_at, created_at
             FROM guard_operations WHERE operation_id = $1",
            &[id.into()],
        )
        .await[0];
    assert_eq!(row.text("tenant").unwrap(), "tenant_demo");
    assert_eq!(row.text("user_id").unwrap(), "alice");
    assert_eq!(row.text("op").unwrap(), "order_cancel");
    assert_eq!(row.text("target").unwrap(), "1001");
    assert_eq!(row.text("status").unwrap(), "PREPARED");
    let payload = row.text("payload").unwrap();
    assert_eq!(
        payload, r#"{"order_id":1001,"order_no":"A10001","reason":"customer changed their mind"}"#,
        "canonical: sorted keys, compact"
    );
    let hash: String = Sha256::digest(payload.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(row.text("payload_sha256").unwrap(), hash);
    let ttl = row.int("expires_at").unwrap() - row.int("created_at").unwrap();
    assert_eq!(ttl, 10 * 60 * 1000, "ttl = \"10m\"");
    assert_eq!(world.audit_outcomes(id).await, [Outcome::Prepared]);
}

async fn duplicate_confirm_returns_the_same_request(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    let alice = world.alice().await;
    let id = prepare(&alice, ORDER).await;
    let first = body(&confirm(&alice, &id).await).clone();
    assert_eq!(first["status"], "SUBMITTED");
    assert_eq!(first["already_processed"], false);
    let request_id = first["result"]["request_id"].as_i64().expect("request_id");

    let second = body(&confirm(&alice, &id).await).clone();
    assert_eq!(second["already_processed"], true);
    assert_eq!(second["result"]["request_id"].as_i64(), Some(request_id));
    assert_eq!(
        second["result"], first["result"],
        "the stored result, unchanged"
    );

    assert_eq!(world.requests(ORDER_ID).await, 1);
    assert_eq!(world.status(&id).await, "SUBMITTED");
    assert_eq!(
        world.audit_outcomes(&id).await,
        [
            Outcome::Prepared,
            Outcome::Submitted,
            Outcome::AlreadyProcessed
        ]
    );
    let order = &world
        .query(
            "SELECT status FROM orders WHERE order_id = $1",
            &[ORDER_ID.into()],
        )
        .await[0];
    assert_eq!(
        order.text("status").unwrap(),
        "PAID",
        "the order itself is untouched"
    );
}

async fn ten_concurrent_confirms_file_one_request(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    let alice = Arc::new(world.alice().await);
    let id = prepare(&alice, ORDER).await;
    let calls = (0..10).map(|_| {
        let alice = alice.clone();
        let id = id.clone();
        tokio::spawn(async move { confirm(&alice, &id).await })
    });
    let mut request_ids = Vec::new();
    let mut fresh = 0;
    for call in calls {
        let result = call.await.expect("task");
        let body = body(&result);
        request_ids.push(body["result"]["request_id"].as_i64().unwrap());
        if body["already_processed"] == false {
            fresh += 1;
        }
    }
    assert_eq!(fresh, 1, "exactly one confirm did the work");
    request_ids.dedup();
    assert_eq!(
        request_ids.len(),
        1,
        "every confirm reports the same request"
    );
    assert_eq!(world.requests(ORDER_ID).await, 1);
    assert_eq!(world.effects(&id).await, 1);
}

async fn cross_tenant_confirm_is_not_found(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    let alice = world.alice().await;
    let id = prepare(&alice, ORDER).await;
    let mallory = connect(world.server("tenant_other", "alice", &[SCOPE])).await;
    let refused = error_text(&confirm(&mallory, &id).await);
    assert_not_found_like_unknown(&mallory, &id, &refused).await;
    let lookup = call(
        &mallory,
        "get_operation_result",
        json!({"operation_id": id}),
    )
    .await;
    assert!(error_text(&lookup).starts_with("[OPERATION_NOT_FOUND]"));
    assert_eq!(world.requests(ORDER_ID).await, 0);
    assert_eq!(
        world.status(&id).await,
        "PREPARED",
        "the owner can still confirm"
    );
    assert!(body(&confirm(&alice, &id).await)["result"]["request_id"].is_i64());
}

async fn cross_user_confirm_is_not_found(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    let alice = world.alice().await;
    let id = prepare(&alice, ORDER).await;
    let bob = connect(world.server("tenant_demo", "bob", &[SCOPE])).await;
    let refused = error_text(&confirm(&bob, &id).await);
    assert_not_found_like_unknown(&bob, &id, &refused).await;
    assert_eq!(world.requests(ORDER_ID).await, 0);
    assert_eq!(world.status(&id).await, "PREPARED");
}

/// An owner is a person: `ALICE` of `Tenant_Demo` prepares, `alice` confirms. An intent
/// stored before owners were canonical (as `Alice`) is still alice's, and a look-alike with
/// a Cyrillic `а` is someone else.
async fn one_owner_under_any_spelling_and_an_intent_stored_before_canonical_names(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    let shouting = connect(world.server("Tenant_Demo", "ALICE", &[SCOPE])).await;
    let id = prepare(&shouting, ORDER).await;
    let owner: Vec<String> = world
        .query(
            "SELECT tenant || '/' || user_id AS who FROM guard_operations WHERE operation_id = $1",
            &[id.clone().into()],
        )
        .await
        .iter()
        .map(|r| r.text("who").unwrap().to_owned())
        .collect();
    assert_eq!(
        owner,
        ["tenant_demo/alice"],
        "stored under the canonical name"
    );
    let alice = world.alice().await;
    assert!(body(&confirm(&alice, &id).await)["result"]["request_id"].is_i64());

    let legacy = world.stored_intent(1004, "A10004", "Alice").await;
    let lookalike = connect(world.server("tenant_demo", "\u{430}lice", &[SCOPE])).await;
    let refused = error_text(&confirm(&lookalike, &legacy).await);
    assert_not_found_like_unknown(&lookalike, &legacy, &refused).await;
    assert!(body(&confirm(&alice, &legacy).await)["result"]["request_id"].is_i64());
}

/// The refusal reads exactly like the one for an id that never existed (no existence leak).
async fn assert_not_found_like_unknown(client: &orders::Client, id: &str, refused: &str) {
    assert!(refused.starts_with("[OPERATION_NOT_FOUND]"), "{refused}");
    let unknown = uuid::Uuid::new_v4().to_string();
    let other = error_text(&confirm(client, &unknown).await);
    assert_eq!(refused.replace(id, "ID"), other.replace(&unknown, "ID"));
}

async fn expired_intent_is_refused_and_marked_expired(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    let alice = world.alice().await;
    let id = prepare(&alice, ORDER).await;
    world
        .exec(
            "UPDATE guard_operations SET expires_at = expires_at - 3600000 WHERE operation_id = $1",
            &[id.as_str().into()],
        )
        .await;
    let lookup = lookup(&alice, &id).await;
    assert_eq!(
        lookup["status"], "EXPIRED",
        "a reader sees it expired before any confirm"
    );
    let refused = error_text(&confirm(&alice, &id).await);
    assert!(refused.starts_with("[CONFIRMATION_EXPIRED]"), "{refused}");
    assert!(
        refused.contains("prepare_order_cancel"),
        "says what to do next: {refused}"
    );
    assert_eq!(world.status(&id).await, "EXPIRED");
    assert_eq!(world.requests(ORDER_ID).await, 0);
    // Expired, it no longer blocks a new prepare of the same order.
    let again = prepare(&alice, ORDER).await;
    assert_ne!(again, id);
}

async fn order_shipped_after_prepare_is_refused(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    let alice = world.alice().await;
    let id = prepare(&alice, ORDER).await;
    world
        .exec(
            "UPDATE orders SET status = 'SHIPPED' WHERE order_id = $1",
            &[ORDER_ID.into()],
        )
        .await;
    let refused = error_text(&confirm(&alice, &id).await);
    assert!(refused.starts_with("[STATE_CHANGED]"), "{refused}");
    assert!(refused.contains("A10001 is now SHIPPED"), "{refused}");
    assert_eq!(world.status(&id).await, "REJECTED");
    assert_eq!(world.requests(ORDER_ID).await, 0);
    let again = error_text(&confirm(&alice, &id).await);
    assert!(again.starts_with("[INVALID_STATE]"), "{again}");
    assert_eq!(
        world.audit_outcomes(&id).await,
        [
            Outcome::Prepared,
            Outcome::Refused(Code::StateChanged),
            Outcome::Refused(Code::InvalidState)
        ]
    );
}

/// Makes the store refuse the SUBMITTED audit record, which is written after the effect's
/// insert inside the same transaction (a full volume, a revoked grant).
async fn refuse_submitted_records(world: &World) {
    match world.engine {
        Engine::Sqlite => {
            world
                .exec(
                    "CREATE TRIGGER audit_volume_full BEFORE INSERT ON guard_audit_log
                     WHEN NEW.outcome = 'SUBMITTED'
                     BEGIN SELECT RAISE(ABORT, 'audit log volume is full'); END",
                    &[],
                )
                .await;
        }
        Engine::Postgres => {
            world
                .exec(
                    "CREATE FUNCTION audit_volume_full() RETURNS trigger LANGUAGE plpgsql AS $f$
                     BEGIN
                         IF NEW.outcome = 'SUBMITTED' THEN
                             RAISE EXCEPTION 'audit log volume is full';
                         END IF;
                         RETURN NEW;
                     END $f$",
                    &[],
                )
                .await;
            world
                .exec(
                    // The confirm's transaction queues its entry (the sequencer places it
                    // after the commit), so the queue is where the write is refused.
                    "CREATE TRIGGER audit_volume_full BEFORE INSERT ON guard_audit_queue
                     FOR EACH ROW EXECUTE FUNCTION audit_volume_full()",
                    &[],
                )
                .await;
        }
    }
}

async fn failure_after_the_insert_leaves_nothing_half_written(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    refuse_submitted_records(&world).await;
    let broken = connect(world.server("tenant_demo", "alice", &[SCOPE])).await;
    let id = prepare(&broken, ORDER).await;
    let failed = error_text(&confirm(&broken, &id).await);
    assert!(failed.starts_with("[RESULT_UNKNOWN]"), "{failed}");
    assert!(
        failed.contains("Call get_operation_result(operation_id) before retrying"),
        "{failed}"
    );
    assert!(
        !failed.contains("volume is full"),
        "internal detail stays in the log: {failed}"
    );
    assert_eq!(
        world.requests(ORDER_ID).await,
        0,
        "the filed request rolled back"
    );
    assert_eq!(
        world.status(&id).await,
        "PREPARED",
        "the status rolled back"
    );
    assert_eq!(world.effects(&id).await, 0);
    assert_eq!(
        world.audit_outcomes(&id).await,
        [Outcome::Prepared, Outcome::Refused(Code::ResultUnknown)],
        "no SUBMITTED record, and the unknown answer is audited on its own"
    );

    // get_operation_result tells the truth, and a retry with a working log succeeds once.
    let drop_trigger = match world.engine {
        Engine::Sqlite => "DROP TRIGGER audit_volume_full",
        Engine::Postgres => "DROP TRIGGER audit_volume_full ON guard_audit_queue",
    };
    world.exec(drop_trigger, &[]).await;
    let alice = world.alice().await;
    let lookup = lookup(&alice, &id).await;
    assert_eq!(lookup["status"], "PREPARED");
    assert_eq!(
        body(&confirm(&alice, &id).await)["already_processed"],
        false
    );
    assert_eq!(world.requests(ORDER_ID).await, 1);
}

async fn missing_scope_is_denied_and_audited(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    let alice = world.alice().await;
    let id = prepare(&alice, ORDER).await;
    let reader = connect(world.server("tenant_demo", "alice", &["order.read"])).await;
    let denied = error_text(&confirm(&reader, &id).await);
    assert!(denied.starts_with("[PERMISSION_DENIED]"), "{denied}");
    assert!(denied.contains("order.cancel.request"), "{denied}");
    let denied = prepare_refused(&reader, "A10004", "dup").await;
    assert!(denied.starts_with("[PERMISSION_DENIED]"), "{denied}");
    assert_eq!(
        world
            .count(
                "SELECT COUNT(*) AS n FROM guard_audit_log WHERE outcome = 'PERMISSION_DENIED' AND user_id = 'alice'",
                &[]
            )
            .await,
        2
    );
    assert_eq!(world.status(&id).await, "PREPARED");
}

async fn rate_limit_holds_in_the_store(engine: Engine) {
    let orders = orders::paid_orders(5000, 7);
    let seed = orders::seed_rows(&orders);
    let Some(world) = World::with_orders(engine, &seed).await else {
        return;
    };
    // Two server processes' worth of guards on one store: the limit is the store's.
    let first = world.alice().await;
    let second = world.alice().await;
    for (i, (_, no)) in orders.iter().take(5).enumerate() {
        let client = if i % 2 == 0 { &first } else { &second };
        prepare(client, no).await;
    }
    let limited = prepare_refused(&second, &orders[5].1, "too many").await;
    assert!(limited.starts_with("[RATE_LIMITED]"), "{limited}");
    assert!(limited.contains("5 per minute"), "{limited}");
    assert!(limited.contains("Try again in"), "{limited}");
    // Another user has a limit of their own.
    let bob = connect(world.server("tenant_demo", "bob", &[SCOPE])).await;
    prepare(&bob, &orders[6].1).await;
    assert_eq!(
        world
            .count(
                "SELECT COUNT(*) AS n FROM guard_audit_log WHERE outcome = 'RATE_LIMITED'",
                &[]
            )
            .await,
        1
    );
}

async fn a_deployment_sets_its_own_rate(engine: Engine) {
    let orders = orders::paid_orders(6000, 3);
    let seed = orders::seed_rows(&orders);
    let Some(world) = World::with_orders(engine, &seed).await else {
        return;
    };
    let two_an_hour = Rate {
        limit: 2,
        per: std::time::Duration::from_secs(3600),
    };
    let alice = connect(
        world.server_configured("tenant_demo", "alice", &[SCOPE], |ops| {
            ops.rate_limit("prepare_order_cancel", two_an_hour)
        }),
    )
    .await;
    prepare(&alice, &orders[0].1).await;
    prepare(&alice, &orders[1].1).await;
    let limited = prepare_refused(&alice, &orders[2].1, "third").await;
    assert!(limited.starts_with("[RATE_LIMITED]"), "{limited}");
    assert!(limited.contains("2 per hour"), "{limited}");
}

/// The whole rate check is one trip to the store; the bucket lock inside it must still make
/// one user's concurrent prepares (from four server instances) count one after the other.
async fn concurrent_prepares_of_one_user_stop_at_the_limit(engine: Engine) {
    let orders = orders::paid_orders(7000, 12);
    let seed = orders::seed_rows(&orders);
    let Some(world) = World::with_orders(engine, &seed).await else {
        return;
    };
    let three_an_hour = Rate {
        limit: 3,
        per: std::time::Duration::from_secs(3600),
    };
    let mut clients = Vec::new();
    for _ in 0..4 {
        let server = world.server_configured("tenant_demo", "alice", &[SCOPE], |ops| {
            ops.rate_limit("prepare_order_cancel", three_an_hour)
        });
        clients.push(Arc::new(connect(server).await));
    }
    let mut calls = tokio::task::JoinSet::new();
    for (i, (_, no)) in orders.iter().enumerate() {
        let client = clients[i % clients.len()].clone();
        let no = no.clone();
        calls.spawn(async move {
            call(
                &client,
                "prepare_order_cancel",
                json!({"order_no": no, "reason": "at once"}),
            )
            .await
        });
    }
    let (mut prepared, mut limited) = (0, 0);
    while let Some(result) = calls.join_next().await {
        let result = result.expect("a prepare task panicked");
        if result.is_error == Some(true) {
            let text = error_text(&result);
            assert!(text.starts_with("[RATE_LIMITED]"), "{text}");
            limited += 1;
        } else {
            assert_eq!(body(&result)["status"], "PREPARED");
            prepared += 1;
        }
    }
    assert_eq!((prepared, limited), (3, 9));
    let count = |sql: &'static str| world.count(sql, &[]);
    assert_eq!(
        count("SELECT COUNT(*) AS n FROM guard_operations WHERE status = 'PREPARED'").await,
        3
    );
    assert_eq!(
        count("SELECT COUNT(*) AS n FROM guard_rate_events WHERE user_id = 'alice'").await,
        3
    );
}

async fn one_pending_intent_per_order(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    let alice = world.alice().await;
    let id = prepare(&alice, ORDER).await;
    let again = prepare_refused(&alice, ORDER, "again").await;
    assert!(again.starts_with("[INVALID_STATE]"), "{again}");
    assert!(
        again.contains(&id),
        "alice is told which of hers is pending: {again}"
    );
    let bob = connect(world.server("tenant_demo", "bob", &[SCOPE])).await;
    let other = prepare_refused(&bob, ORDER, "mine").await;
    assert!(other.starts_with("[INVALID_STATE]"), "{other}");
    assert!(
        !other.contains(&id),
        "bob is not given alice's operation_id: {other}"
    );
    // Once submitted, the order has a pending request, which the business refuses to double.
    confirm(&alice, &id).await;
    let after = prepare_refused(&alice, ORDER, "again").await;
    assert!(
        after.contains("already has a pending cancellation request"),
        "{after}"
    );
    assert_eq!(
        world
            .count(
                "SELECT COUNT(*) AS n FROM guard_operations WHERE target = '1001'",
                &[]
            )
            .await,
        1
    );
}

async fn get_operation_result_tells_what_happened(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    let alice = world.alice().await;
    let id = prepare(&alice, ORDER).await;
    let before = lookup(&alice, &id).await;
    assert_eq!(before["status"], "PREPARED");
    assert_eq!(before["result"], Value::Null);
    assert_eq!(before["preview"]["order_no"], ORDER);
    let submitted = body(&confirm(&alice, &id).await).clone();
    let after = lookup(&alice, &id).await;
    assert_eq!(after["status"], "SUBMITTED");
    assert_eq!(after["result"], submitted["result"]);
    assert!(
        after["next"]
            .as_str()
            .unwrap()
            .contains("do not confirm it again")
    );
    // Reading changes no operation; each lookup leaves an audit record.
    assert_eq!(world.status(&id).await, "SUBMITTED");
    assert_eq!(
        world.audit_outcomes(&id).await,
        [
            Outcome::Prepared,
            Outcome::LookedUp,
            Outcome::Submitted,
            Outcome::LookedUp
        ]
    );
}

async fn bad_and_unknown_operation_ids(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    let alice = world.alice().await;
    let bad = error_text(&confirm(&alice, "'; DROP TABLE orders; --").await);
    assert!(bad.starts_with("[INVALID_INPUT]"), "{bad}");
    assert!(bad.contains("prepare_order_cancel"), "{bad}");
    let unknown = error_text(&confirm(&alice, &uuid::Uuid::new_v4().to_string()).await);
    assert!(unknown.starts_with("[OPERATION_NOT_FOUND]"), "{unknown}");
    let bad = error_text(
        &call(
            &alice,
            "get_operation_result",
            json!({"operation_id": "42"}),
        )
        .await,
    );
    assert!(bad.starts_with("[INVALID_INPUT]"), "{bad}");
    let unknown = error_text(
        &call(
            &alice,
            "get_operation_result",
            json!({"operation_id": uuid::Uuid::new_v4().to_string()}),
        )
        .await,
    );
    assert!(
        unknown.contains("the operation_id that prepare_order_cancel returned"),
        "names the prepare tool: {unknown}"
    );
    // A confirm takes nothing but operation_id.
    let extra = alice
        .call_tool(
            rmcp::model::CallToolRequestParams::new("confirm_order_cancel").with_arguments(
                json!({"operation_id": uuid::Uuid::new_v4().to_string(), "order_no": ORDER})
                    .as_object()
                    .unwrap()
                    .clone(),
            ),
        )
        .await;
    let extra = error_text(&extra.expect("an isError result"));
    assert!(extra.contains("unknown field `order_no`"), "{extra}");
    assert_eq!(world.requests(ORDER_ID).await, 0);
}

/// Identifiers are compared as written, operation ids as idempotency keys: another
/// spelling of a prepared operation's UUID (capitals, spaces, braces, a URN) is bad input
/// that confirms and reveals nothing, and the id as returned still confirms.
async fn an_operation_id_counts_only_as_it_was_returned(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    let alice = world.alice().await;
    let id = prepare(&alice, ORDER).await;
    let spellings = [
        id.to_uppercase(),
        format!(" {id}"),
        format!("{id}\n"),
        format!("{{{id}}}"),
        format!("urn:uuid:{id}"),
        id.replace('-', ""),
    ];
    for other in &spellings {
        let refused = error_text(&confirm(&alice, other).await);
        assert!(
            refused.starts_with("[INVALID_INPUT]"),
            "{other:?}: {refused}"
        );
        assert!(refused.contains("exactly as it was returned"), "{refused}");
        let looked = error_text(
            &call(
                &alice,
                "get_operation_result",
                json!({"operation_id": other}),
            )
            .await,
        );
        assert!(looked.starts_with("[INVALID_INPUT]"), "{other:?}: {looked}");
    }
    assert_eq!(world.status(&id).await, "PREPARED");
    assert_eq!(world.requests(ORDER_ID).await, 0);
    confirm(&alice, &id).await;
    assert_eq!(world.requests(ORDER_ID).await, 1);
}

async fn business_refusals_prepare_nothing(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    let alice = world.alice().await;
    for (order_no, reason, code) in [
        ("A10003", "changed mind", "[INVALID_STATE]"),
        ("B20001", "changed mind", "[ORDER_NOT_FOUND]"),
        ("ZZ9999", "changed mind", "[ORDER_NOT_FOUND]"),
        ("A1", "changed mind", "[INVALID_INPUT]"),
        ("A10001", "x", "[INVALID_INPUT]"),
    ] {
        let text = prepare_refused(&alice, order_no, reason).await;
        assert!(text.starts_with(code), "{order_no}: {text}");
        assert!(text.contains("nothing was prepared"), "{text}");
    }
    assert_eq!(
        world
            .count("SELECT COUNT(*) AS n FROM guard_operations", &[])
            .await,
        0
    );
}

async fn lookup(client: &orders::Client, id: &str) -> Value {
    body(&call(client, "get_operation_result", json!({"operation_id": id})).await).clone()
}

async fn tampered_payload_is_refused(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    let alice = world.alice().await;
    let id = prepare(&alice, ORDER).await;
    // Someone with database access swaps the order the user confirmed for another one.
    world
        .exec(
            "UPDATE guard_operations SET payload = replace(payload, '1001', '1004') WHERE operation_id = $1",
            &[id.as_str().into()],
        )
        .await;
    let refused = error_text(&confirm(&alice, &id).await);
    assert!(refused.starts_with("[INVALID_STATE]"), "{refused}");
    assert!(
        refused.contains("no longer matches what the user confirmed"),
        "{refused}"
    );
    assert_eq!(world.status(&id).await, "REJECTED");
    assert_eq!(
        world.requests(ORDER_ID).await + world.requests(1004).await,
        0
    );
}

async fn store_failure_mid_confirm_is_result_unknown(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    let alice = world.alice().await;
    let id = prepare(&alice, ORDER).await;
    // The effect's INSERT fails inside the confirm: the server loses its right to file
    // requests (PostgreSQL), or the table is renamed away under it (SQLite).
    let mend_it = world.take_away("INSERT", "order_cancel_requests").await;
    let failed = error_text(&confirm(&alice, &id).await);
    assert!(
        failed.starts_with("[RESULT_UNKNOWN] Result unknown:"),
        "{failed}"
    );
    assert!(
        failed.contains(&id) && failed.contains("trace_id"),
        "{failed}"
    );
    for leak in [
        "permission",
        "order_cancel_requests",
        "INSERT",
        "no such table",
        "SQL",
    ] {
        assert!(
            !failed.contains(leak),
            "the model sees no database detail ({leak}): {failed}"
        );
    }
    world.exec(&mend_it, &[]).await;
    assert_eq!(
        world.audit_outcomes(&id).await,
        [Outcome::Prepared, Outcome::Refused(Code::ResultUnknown)],
        "the unknown answer has its audit record"
    );
    assert_eq!(
        lookup(&alice, &id).await["status"],
        "PREPARED",
        "nothing half-written"
    );
    assert_eq!(world.requests(ORDER_ID).await, 0);
    assert_eq!(
        body(&confirm(&alice, &id).await)["already_processed"],
        false
    );
    assert_eq!(world.requests(ORDER_ID).await, 1);
}

/// The version nibble of a UUID.
fn uuid_version(id: &str) -> Option<usize> {
    uuid::Uuid::parse_str(id).ok().map(|u| u.get_version_num())
}

#[tokio::test]
async fn postgres_role_cannot_update_orders_but_confirm_works() {
    let Some(world) = World::new(Engine::Postgres).await else {
        return;
    };
    let url = guard_tests::pg_url("the database role test").expect("checked");
    let schema = world.schema.clone().unwrap();
    let config =
        order_cancel::stores::pg_config(&url, &schema, Some(order_cancel::schema::APP_ROLE))
            .unwrap();
    let (app, connection) = config
        .connect(tokio_postgres::NoTls)
        .await
        .expect("connect as app role");
    tokio::spawn(connection);
    for sql in [
        "UPDATE orders SET status = 'CLOSED' WHERE order_id = 1001",
        "DELETE FROM orders WHERE order_id = 1001",
        "INSERT INTO orders (order_id, tenant, order_no, status, total_cents) VALUES (9, 't', 'X00009', 'PAID', 1)",
        "UPDATE order_cancel_requests SET status = 'DONE'",
        "SELECT status FROM orders WHERE order_id = 1001 FOR UPDATE",
    ] {
        let error = app.batch_execute(sql).await.expect_err(sql);
        assert_eq!(
            error.code(),
            Some(&tokio_postgres::error::SqlState::INSUFFICIENT_PRIVILEGE),
            "{sql}: {error:?}"
        );
    }
    let alice = world.alice().await;
    let id = prepare(&alice, ORDER).await;
    assert_eq!(body(&confirm(&alice, &id).await)["status"], "SUBMITTED");
    assert_eq!(world.requests(ORDER_ID).await, 1);
}

#[tokio::test]
async fn tools_are_listed_with_honest_annotations_and_one_argument() {
    let Some(world) = World::new(Engine::Sqlite).await else {
        return;
    };
    let alice = world.alice().await;
    let tools = alice.list_all_tools().await.expect("tools/list");
    let find = |name: &str| {
        tools
            .iter()
            .find(|t| t.name == name)
            .unwrap_or_else(|| panic!("{name} listed"))
    };
    let confirm = find("confirm_order_cancel");
    let properties: Vec<&String> = confirm.input_schema["properties"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(properties, ["operation_id"]);
    let hints = |name: &str| {
        let a = find(name).annotations.clone().expect("annotations");
        (a.read_only_hint, a.destructive_hint, a.idempotent_hint)
    };
    assert_eq!(
        hints("prepare_order_cancel"),
        (Some(false), Some(false), Some(false))
    );
    assert_eq!(
        hints("confirm_order_cancel"),
        (Some(false), Some(true), Some(true))
    );
    assert_eq!(hints("get_operation_result").0, Some(true));
    let prepare = find("prepare_order_cancel");
    let args: Vec<&String> = prepare.input_schema["properties"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(
        args,
        ["order_no", "reason"],
        "no identity field in any schema"
    );
}

/// A constraint the effect runs into (a request for the order was filed behind the
/// server's back) is a definite refusal: STATE_CHANGED, the intent closed as REJECTED and
/// audited, and every later call says so, instead of RESULT_UNKNOWN on every retry.
async fn a_constraint_in_the_effect_is_state_changed_and_closes_the_intent(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    let alice = world.alice().await;
    let id = prepare(&alice, ORDER).await;
    world
        .exec(
            "INSERT INTO order_cancel_requests
                (tenant, order_id, requested_by, reason, status, source_operation_id, created_at)
             VALUES ('tenant_demo', $1, 'back-office', 'phoned in', 'PENDING', 'elsewhere', 0)",
            &[ORDER_ID.into()],
        )
        .await;
    let refused = error_text(&confirm(&alice, &id).await);
    assert!(refused.starts_with("[STATE_CHANGED]"), "{refused}");
    assert!(
        refused.contains("nothing was done") && refused.contains("prepare_order_cancel"),
        "says what happened and what to do next: {refused}"
    );
    for leak in [
        "order_cancel_requests",
        "unique",
        "UNIQUE",
        "constraint failed",
        "SQL",
    ] {
        assert!(
            !refused.contains(leak),
            "no database detail ({leak}): {refused}"
        );
    }
    assert_eq!(world.status(&id).await, "REJECTED");
    assert_eq!(
        world.requests(ORDER_ID).await,
        1,
        "only the one filed elsewhere"
    );
    assert_eq!(world.effects(&id).await, 0);
    assert_eq!(
        world.audit_outcomes(&id).await,
        [Outcome::Prepared, Outcome::Refused(Code::StateChanged)]
    );
    assert_eq!(lookup(&alice, &id).await["status"], "REJECTED");
    let again = error_text(&confirm(&alice, &id).await);
    assert!(again.starts_with("[INVALID_STATE]"), "{again}");
}

/// Many prepares racing confirms of the same orders: each pair's confirm files the request
/// and its prepare is refused (never a second intent the business then refuses), no
/// intent is left PREPARED beside a filed request, no confirm answers RESULT_UNKNOWN, and
/// every confirm answer has an audit record under its trace id.
async fn racing_prepares_and_confirms_never_strand_an_intent(engine: Engine) {
    const PAIRS: i64 = 32;
    let orders = orders::paid_orders(7000, PAIRS);
    let seed = orders::seed_rows(&orders);
    let Some(world) = World::with_orders(engine, &seed).await else {
        return;
    };
    // Each pair has its own confirming user and its own racing user, so nothing but the
    // order they share makes them take turns.
    let mut first = Vec::new();
    let mut pairs = Vec::new();
    for (i, (_, no)) in orders.iter().enumerate() {
        let owner = connect(world.server("tenant_demo", &format!("owner{i}"), &[SCOPE])).await;
        let racer = connect(world.server("tenant_demo", &format!("racer{i}"), &[SCOPE])).await;
        first.push(prepare(&owner, no).await);
        pairs.push((Arc::new(owner), Arc::new(racer)));
    }
    let start = Arc::new(tokio::sync::Barrier::new(2 * orders.len()));
    let mut confirms = Vec::new();
    let mut prepares = Vec::new();
    for (((_, no), id), (owner, racer)) in orders.iter().zip(&first).zip(&pairs) {
        let (client, gate, id) = (owner.clone(), start.clone(), id.clone());
        confirms.push(tokio::spawn(async move {
            gate.wait().await;
            confirm(&client, &id).await
        }));
        let (client, gate, no) = (racer.clone(), start.clone(), no.clone());
        prepares.push(tokio::spawn(async move {
            gate.wait().await;
            let args = json!({"order_no": no, "reason": "racing the confirm"});
            call(&client, "prepare_order_cancel", args).await
        }));
    }
    let mut answers = Vec::new();
    for confirm in confirms {
        answers.push(confirm.await.expect("confirm task"));
    }
    let mut second = Vec::new();
    for (prepare, (_, racer)) in prepares.into_iter().zip(&pairs) {
        let result = prepare.await.expect("prepare task");
        if !support::is_error(&result) {
            let id = body(&result)["operation_id"].as_str().unwrap().to_owned();
            // An intent prepared anyway must still be answered definitely.
            answers.push(confirm(racer, &id).await);
            second.push(id);
        }
    }
    for answer in &answers {
        let code = support::code(answer);
        assert_ne!(code.as_deref(), Some("RESULT_UNKNOWN"), "{answer:?}");
        let trace = support::trace_id(answer).expect("every answer has a trace id");
        assert_eq!(
            world
                .count(
                    "SELECT COUNT(*) AS n FROM guard_audit_log
                     WHERE trace_id = $1 AND tool = 'confirm_order_cancel'",
                    &[trace.clone().into()],
                )
                .await,
            1,
            "the confirm answer {code:?} (trace {trace}) has one audit record"
        );
    }
    assert!(
        second.is_empty(),
        "a prepare that raced a confirm of its order was refused, not stored: {second:?}"
    );
    assert_eq!(
        world
            .count(
                "SELECT COUNT(*) AS n FROM guard_operations o
                 WHERE o.status = 'PREPARED' AND EXISTS (
                     SELECT 1 FROM order_cancel_requests r
                     WHERE r.order_id = CAST(o.target AS BIGINT) AND r.status = 'PENDING')",
                &[]
            )
            .await,
        0,
        "no intent stranded beside a filed request"
    );
    assert_eq!(
        world
            .count(
                "SELECT COUNT(*) AS n FROM order_cancel_requests WHERE order_id >= 7000",
                &[]
            )
            .await,
        PAIRS,
        "each order got exactly one request"
    );
}

/// Another owner's operation id answers OPERATION_NOT_FOUND while the owner's transaction
/// still holds the intent's row: it is never waited on, so it answers like an unknown id.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn another_owners_id_is_not_waited_on_while_its_row_is_locked() {
    let Some(world) = World::new(Engine::Postgres).await else {
        return;
    };
    let alice = world.alice().await;
    let id = prepare(&alice, ORDER).await;
    let url = guard_tests::configured_pg_url().expect("a PostgreSQL world has its URL");
    let schema = world.schema.clone().expect("schema");
    let config = order_cancel::stores::pg_config(&url, &schema, None).expect("config");
    let (holder, connection) = config
        .connect(tokio_postgres::NoTls)
        .await
        .expect("owner connects");
    tokio::spawn(connection);
    holder.batch_execute("BEGIN").await.expect("begin");
    let held = holder
        .query(
            "SELECT status FROM guard_operations WHERE operation_id = $1 FOR UPDATE",
            &[&id],
        )
        .await
        .expect("row locked");
    assert_eq!(held.len(), 1);

    let bound = std::time::Duration::from_secs(60);
    let others = [
        connect(world.server("tenant_other", "mallory", &[SCOPE])).await,
        connect(world.server("tenant_demo", "bob", &[SCOPE])).await,
    ];
    for other in &others {
        let confirmed = tokio::time::timeout(bound, confirm(other, &id))
            .await
            .expect("answered while the owner's transaction still holds the row");
        let text = error_text(&confirmed);
        assert!(text.starts_with("[OPERATION_NOT_FOUND]"), "{text}");
        let looked = tokio::time::timeout(
            bound,
            call(other, "get_operation_result", json!({"operation_id": id})),
        )
        .await
        .expect("answered while the owner's transaction still holds the row");
        assert!(
            error_text(&looked).starts_with("[OPERATION_NOT_FOUND]"),
            "{looked:?}"
        );
    }
    // The owner's transaction was open all along; releasing it lets the owner confirm.
    holder
        .batch_execute("SELECT 1; ROLLBACK")
        .await
        .expect("the holder's transaction was still open");
    assert_eq!(
        body(&confirm(&alice, &id).await)["already_processed"],
        false
    );
}

/// A store that cannot begin a transaction: the database is gone.
struct Unreachable;

impl rmcp_guard::ops::OperationStore for Unreachable {
    fn begin(&self) -> BoxFuture<'_, Result<Tx, StoreError>> {
        Box::pin(async { Err(StoreError::Other("connection refused".into())) })
    }
}

/// `(level, message, trace_id)` of each event on this thread.
struct Events(tokio::sync::mpsc::UnboundedSender<(tracing::Level, String, String)>);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Events {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        #[derive(Default)]
        struct Fields(String, String);
        impl tracing::field::Visit for Fields {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                match field.name() {
                    "message" => self.0 = format!("{value:?}"),
                    "trace_id" => self.1 = format!("{value:?}"),
                    _ => {}
                }
            }
        }
        let mut fields = Fields::default();
        event.record(&mut fields);
        let _ = self.0.send((*event.metadata().level(), fields.0, fields.1));
    }
}

/// When the store is gone, the confirm answers UNAVAILABLE (nothing was done), and since its
/// audit record cannot be written either, an ERROR line says so under the answer's trace id.
#[tokio::test]
async fn an_audit_record_that_cannot_be_written_is_an_error_line_with_the_trace_id() {
    let (tx, mut events) = tokio::sync::mpsc::unbounded_channel();
    let _capture = support::events::capture(Events(tx));
    let identity =
        rmcp_guard::EnvIdentity::new(rmcp_guard::Identity::new("tenant_demo", "alice", [SCOPE]));
    let server = order_cancel::OrderCancel::new(
        rmcp_guard::Guard::ephemeral()
            .expect("guard key")
            .with_operations(rmcp_guard::ops::Operations::new(Unreachable, identity)),
    );
    let client = connect(server).await;
    let id = uuid::Uuid::new_v4().to_string();
    let answer = confirm(&client, &id).await;
    let text = error_text(&answer);
    assert!(text.starts_with("[UNAVAILABLE]"), "{text}");
    assert!(text.contains("nothing was done"), "{text}");
    let trace = support::trace_id(&answer).expect("trace id");
    let mut lines = Vec::new();
    while let Ok(event) = events.try_recv() {
        lines.push(event);
    }
    assert!(
        lines
            .iter()
            .any(|(level, message, trace_id)| *level == tracing::Level::ERROR
                && message.contains("could not write the audit record")
                && trace_id == &trace),
        "an ERROR line names the lost audit record and trace {trace}: {lines:?}"
    );
}

/// The store's errors say whether the data refused a statement (a definite answer) or the
/// store may not have answered at all; a tool's error follows: STATE_CHANGED or UNAVAILABLE.
async fn store_errors_tell_a_constraint_from_a_lost_connection(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    let refused = |sql: &'static str| {
        let store = world.owner.clone();
        async move {
            let mut tx = store.begin().await.expect("tx");
            let error = tx.execute(sql, &[]).await.expect_err(sql);
            drop(tx);
            error
        }
    };
    let unique = refused(
        "INSERT INTO orders (order_id, tenant, order_no, status, total_cents)
         VALUES (1001, 'tenant_demo', 'Z1', 'PAID', 1)",
    )
    .await;
    assert!(unique.is_unique() && unique.is_constraint(), "{unique:?}");
    for sql in [
        // CHECK
        "INSERT INTO orders (order_id, tenant, order_no, status, total_cents)
         VALUES (9001, 'tenant_demo', 'Z2', 'LOST', 1)",
        // NOT NULL
        "INSERT INTO orders (order_id, tenant, order_no, status, total_cents)
         VALUES (9002, 'tenant_demo', NULL, 'PAID', 1)",
    ] {
        let error = refused(sql).await;
        assert!(error.is_constraint() && !error.is_unique(), "{error:?}");
        let tool_error = rmcp_guard::ToolError::from(error);
        assert_eq!(
            tool_error.code(),
            rmcp_guard::Code::StateChanged,
            "{tool_error}"
        );
    }
    if engine == Engine::Postgres {
        // The server ends the session in the middle of a transaction.
        let mut tx = world.owner.begin().await.expect("tx");
        let pid = tx
            .query("SELECT pg_backend_pid() AS pid", &[])
            .await
            .expect("pid")[0]
            .int("pid")
            .expect("pid");
        world
            .query(
                "SELECT pg_terminate_backend(CAST($1 AS INTEGER)) AS done",
                &[pid.into()],
            )
            .await;
        let lost = tx
            .execute("SELECT 1", &[])
            .await
            .expect_err("the session is gone");
        assert!(!lost.is_constraint(), "{lost:?}");
        assert_eq!(
            rmcp_guard::ToolError::from(lost).code(),
            rmcp_guard::Code::Unavailable
        );
    }
}

/// The store fails while the confirm reads the intent, before any effect: the answer is
/// definite (UNAVAILABLE, nothing was done, retry), audited, and a retry once the store is
/// back carries the operation out.
async fn store_failure_before_the_effect_is_unavailable_and_audited(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    let alice = world.alice().await;
    let id = prepare(&alice, ORDER).await;
    let mend_it = world.take_away("SELECT", "guard_operations").await;
    let failed = error_text(&confirm(&alice, &id).await);
    world.exec(&mend_it, &[]).await;
    assert!(failed.starts_with("[UNAVAILABLE]"), "{failed}");
    assert!(
        failed.contains("nothing was done")
            && failed.contains("confirm_order_cancel again with the same operation_id")
            && failed.contains("trace_id"),
        "{failed}"
    );
    for leak in ["permission", "guard_operations", "no such table", "SQL"] {
        assert!(
            !failed.contains(leak),
            "no database detail ({leak}): {failed}"
        );
    }
    assert_eq!(
        world.audit_outcomes(&id).await,
        [Outcome::Prepared, Outcome::Refused(Code::Unavailable)]
    );
    assert_eq!(world.requests(ORDER_ID).await, 0);
    assert_eq!(
        body(&confirm(&alice, &id).await)["already_processed"],
        false
    );
    assert_eq!(world.requests(ORDER_ID).await, 1);
}

/// Each kind of confirm answer leaves one audit record of the confirm under its trace id:
/// submitted, already processed, unknown id, expired, and a stored payload that no longer
/// reads as the payload type (INTERNAL, before any effect).
async fn every_confirm_answer_is_audited(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    let alice = world.alice().await;
    let submitted = prepare(&alice, ORDER).await;
    let expired = world.stored_intent(1004, "A10004", "alice").await;
    world
        .exec(
            "UPDATE guard_operations SET expires_at = 0 WHERE operation_id = $1",
            &[expired.clone().into()],
        )
        .await;
    let misshapen = uuid::Uuid::new_v4().to_string();
    let payload = r#"{"order":"A10002"}"#;
    let hash: String = Sha256::digest(payload.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    world
        .exec(
            "INSERT INTO guard_operations
                (operation_id, tenant, user_id, op, target, payload, payload_sha256, preview,
                 status, expires_at, created_at, trace_id)
             VALUES ($1, 'tenant_demo', 'alice', 'order_cancel', '1002', $2, $3, '{}',
                     'PREPARED', $4, 0, 'fixture')",
            &[
                misshapen.clone().into(),
                payload.into(),
                hash.into(),
                (rmcp_guard::ops::now_ms() + 600_000).into(),
            ],
        )
        .await;
    let unknown = uuid::Uuid::new_v4().to_string();
    let cases = [
        (&submitted, None),
        (&submitted, None),
        (&unknown, Some("[OPERATION_NOT_FOUND]")),
        (&expired, Some("[CONFIRMATION_EXPIRED]")),
        (&misshapen, Some("[INTERNAL]")),
    ];
    for (id, refusal) in cases {
        let answer = confirm(&alice, id).await;
        if let Some(code) = refusal {
            let text = error_text(&answer);
            assert!(text.starts_with(code), "{text}");
        }
        let trace = support::trace_id(&answer).expect("trace id");
        let outcome = support::outcome(&answer).expect("outcome");
        let rows = world
            .query(
                "SELECT outcome FROM guard_audit_log
                 WHERE trace_id = $1 AND tool = 'confirm_order_cancel'",
                &[trace.into()],
            )
            .await;
        let audited: Vec<&str> = rows.iter().map(|r| r.text("outcome").unwrap()).collect();
        assert_eq!(audited, [outcome.as_str()], "{id}: {answer:?}");
    }
}

/// A two-phase server that serves its tools with rmcp's plain router, bypassing guard's
/// exposure: every tool would be published implicitly.
mod bypass {
    use std::sync::Arc;

    use rmcp::{
        ServerHandler,
        handler::server::wrapper::Parameters,
        model::{ServerCapabilities, ServerConfig},
        tool, tool_handler,
    };
    use rmcp_guard::tool_router;
    use rmcp_guard::{
        Guard, Guarded, ToolArgs, ToolError, operations,
        ops::{Approved, Intent, Locked, Prepare, Recheck},
    };
    use schemars::JsonSchema;
    use serde::Deserialize;

    #[derive(Clone)]
    pub struct Bypass {
        pub guard: Arc<Guard>,
    }

    impl Guarded for Bypass {
        fn guard(&self) -> &Guard {
            &self.guard
        }
    }

    #[derive(Deserialize, JsonSchema, ToolArgs)]
    pub struct NoteArgs {
        pub note: String,
    }

    impl Bypass {
        async fn unchanged(&self, locked: &mut Locked<String>) -> Result<Recheck, ToolError> {
            let _ = locked.payload();
            Ok(Recheck::Unchanged)
        }
    }

    #[operations]
    #[tool_router]
    impl Bypass {
        #[prepare(op = "note", ttl = "1m")]
        #[tool(description = "Prepare a note.")]
        async fn prepare_note(
            &self,
            prepare: &mut Prepare,
            Parameters(args): Parameters<NoteArgs>,
        ) -> Result<Intent<String>, ToolError> {
            let _ = prepare.caller();
            Ok(Intent::new("notes", args.note))
        }

        #[confirm(op = "note", recheck = Self::unchanged)]
        #[tool(description = "Write the note prepare_note prepared.")]
        async fn confirm_note(&self, approved: &mut Approved<String>) -> Result<String, ToolError> {
            Ok(approved.payload().clone())
        }
    }

    #[tool_handler]
    impl ServerHandler for Bypass {
        fn get_info(&self) -> ServerConfig {
            ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
        }
    }
}

/// Two-phase tools of a server that does not publish through guard's exposure refuse to
/// run, even with an exposure configured: nothing is stored, and the answer says so.
#[tokio::test]
async fn two_phase_tools_served_around_the_exposure_refuse_to_run() {
    let Some(world) = World::new(Engine::Sqlite).await else {
        return;
    };
    for exposure in [None, Some(rmcp_guard::Exposure::all_tools())] {
        let identity = rmcp_guard::EnvIdentity::new(rmcp_guard::Identity::new(
            "tenant_demo",
            "alice",
            [SCOPE],
        ));
        let mut guard = rmcp_guard::Guard::ephemeral()
            .expect("guard key")
            .with_operations(rmcp_guard::ops::Operations::new(
                world.store.clone(),
                identity,
            ));
        if let Some(exposure) = exposure {
            guard = guard.with_exposure(exposure);
        }
        let server = bypass::Bypass {
            guard: Arc::new(guard),
        };
        let (server_io, client_io) = tokio::io::duplex(64 * 1024);
        tokio::spawn(async move {
            if let Ok(running) = rmcp::ServiceExt::serve(server, server_io).await {
                let _ = running.waiting().await;
            }
        });
        let client = rmcp::ServiceExt::serve((), client_io)
            .await
            .expect("client connects");
        let refused = error_text(&call(&client, "prepare_note", json!({"note": "hi"})).await);
        assert!(refused.starts_with("[UNAVAILABLE]"), "{refused}");
        assert!(
            refused.contains("does not state which tools it publishes")
                && refused.contains("nothing was done"),
            "{refused}"
        );
    }
    assert_eq!(
        world
            .count(
                "SELECT COUNT(*) AS n FROM guard_operations WHERE op = 'note'",
                &[]
            )
            .await,
        0
    );
}

/// The order shipped, and the store refuses to record the intent as REJECTED: the answer is
/// UNAVAILABLE (nothing was done), audited, the intent stays as it was, and the next confirm
/// once the store records again closes it.
async fn a_changed_target_that_cannot_be_recorded_is_unavailable(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    let alice = world.alice().await;
    let id = prepare(&alice, ORDER).await;
    world
        .exec(
            "UPDATE orders SET status = 'SHIPPED' WHERE order_id = $1",
            &[ORDER_ID.into()],
        )
        .await;
    let (install, remove) = refuse_rejected(engine);
    for sql in install {
        world.exec(sql, &[]).await;
    }
    let failed = error_text(&confirm(&alice, &id).await);
    for sql in remove {
        world.exec(sql, &[]).await;
    }
    assert!(failed.starts_with("[UNAVAILABLE]"), "{failed}");
    assert!(failed.contains("nothing was done"), "{failed}");
    assert!(
        !failed.contains("read-only"),
        "no database detail: {failed}"
    );
    assert_eq!(world.status(&id).await, "PREPARED");
    assert_eq!(
        world.audit_outcomes(&id).await,
        [Outcome::Prepared, Outcome::Refused(Code::Unavailable)]
    );
    let refused = error_text(&confirm(&alice, &id).await);
    assert!(refused.starts_with("[STATE_CHANGED]"), "{refused}");
    assert_eq!(world.status(&id).await, "REJECTED");
    assert_eq!(world.requests(ORDER_ID).await, 0);
}

/// A trigger that makes the store refuse to record an intent as REJECTED: SQL to install
/// it and to remove it.
fn refuse_rejected(engine: Engine) -> (&'static [&'static str], &'static [&'static str]) {
    match engine {
        Engine::Sqlite => (
            &[
                "CREATE TRIGGER refuse_rejected BEFORE UPDATE ON guard_operations
               WHEN NEW.status = 'REJECTED'
               BEGIN SELECT RAISE(ABORT, 'status volume is read-only'); END",
            ],
            &["DROP TRIGGER refuse_rejected"],
        ),
        Engine::Postgres => (
            &[
                "CREATE FUNCTION refuse_rejected() RETURNS trigger LANGUAGE plpgsql AS
                 $f$ BEGIN RAISE EXCEPTION 'status volume is read-only'; END $f$",
                "CREATE TRIGGER refuse_rejected BEFORE UPDATE ON guard_operations
                 FOR EACH ROW WHEN (NEW.status = 'REJECTED') EXECUTE FUNCTION refuse_rejected()",
            ],
            &[
                "DROP TRIGGER refuse_rejected ON guard_operations",
                "DROP FUNCTION refuse_rejected()",
            ],
        ),
    }
}

/// The effect ran into a constraint and the store then refuses to close the intent: the
/// answer is still definite (STATE_CHANGED, nothing was done) and says the intent is not
/// closed yet; the next confirm closes it.
async fn a_constraint_refusal_that_cannot_be_recorded_says_so(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    let alice = world.alice().await;
    let id = prepare(&alice, ORDER).await;
    world
        .exec(
            "INSERT INTO order_cancel_requests
                (tenant, order_id, requested_by, reason, status, source_operation_id, created_at)
             VALUES ('tenant_demo', $1, 'back-office', 'phoned in', 'PENDING', 'elsewhere', 0)",
            &[ORDER_ID.into()],
        )
        .await;
    let (install, remove) = refuse_rejected(engine);
    for sql in install {
        world.exec(sql, &[]).await;
    }
    let refused = error_text(&confirm(&alice, &id).await);
    for sql in remove {
        world.exec(sql, &[]).await;
    }
    assert!(refused.starts_with("[STATE_CHANGED]"), "{refused}");
    assert!(
        refused.contains("Nothing was done, and confirming operation")
            && refused.contains("will be refused the same way"),
        "{refused}"
    );
    assert_eq!(world.status(&id).await, "PREPARED");
    assert_eq!(
        world.audit_outcomes(&id).await,
        [Outcome::Prepared, Outcome::Refused(Code::StateChanged)]
    );
    let closed = error_text(&confirm(&alice, &id).await);
    assert!(
        closed.contains("is closed and nothing was done"),
        "{closed}"
    );
    assert_eq!(world.status(&id).await, "REJECTED");
}
