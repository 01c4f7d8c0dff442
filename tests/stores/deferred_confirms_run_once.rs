//! A deferred two-phase confirm (order-cancel with `Operations::defer_confirm`, as
//! `--defer-confirm 2m` sets it; three seconds here): the confirm checks everything a
//! confirm checks, then stores the operation and answers when it runs and how to withdraw
//! it; a runner files the request once when due by the database's clock, never before,
//! after re-checking the order; a withdrawal before then is recorded
//! and nothing is filed; someone else's withdrawal finds nothing; across restarts and two
//! runners on one store the request is filed once; and the database refuses a rewritten or
//! forged deferred confirm. On SQLite and PostgreSQL.

use std::{sync::Arc, time::Duration};

use order_cancel::{OrderCancel, stores};
use rmcp::model::CallToolResult;
use rmcp_guard::{
    Code,
    ops::{OperationStore, SqlValue, now_ms},
    outcome::Outcome,
};
use rmcp_guard_test::testing::run_due_deferred;
use serde_json::json;

use crate::support::{
    assert_natural, assert_refused, call, code,
    orders::{
        Client, Engine, SCOPE, World, body, confirm, connect, paid_orders, prepare, seed_rows,
    },
    outcome, text,
};

both_stores!(
    a_deferred_confirm_answers_its_schedule_and_files_nothing_yet,
    it_runs_once_when_due_with_what_was_confirmed,
    withdrawn_before_due_never_runs_and_twice_answers_alike,
    another_person_or_tenant_gets_not_found,
    withdraw_after_the_run_says_it_ran,
    an_order_changed_before_due_is_state_changed_and_nothing_is_filed,
    a_restart_between_confirm_and_run_files_it_once,
    two_runners_on_one_store_file_each_due_confirm_once,
    a_withdrawal_racing_the_runner_has_one_winner,
    a_background_runner_files_a_due_confirm_once,
    the_database_refuses_rewritten_or_forged_deferred_confirms,
);

/// How long the confirms of these tests wait.
const WAIT: Duration = Duration::from_secs(3);

/// Returns once every confirm deferred before it is due by the database's clock.
async fn until_due() {
    tokio::time::sleep(WAIT + Duration::from_millis(200)).await;
}

/// order-cancel as `user` of `tenant` with its confirms deferred by `wait`.
fn deferring(world: &World, tenant: &str, user: &str, wait: Duration) -> OrderCancel {
    world.server_configured(tenant, user, &[SCOPE], |operations| {
        operations.defer_confirm(OrderCancel::CONFIRM_TOOL, wait)
    })
}

/// alice's deferring server and a client of it.
async fn alice(world: &World) -> (OrderCancel, Client) {
    let server = deferring(world, "tenant_demo", "alice", WAIT);
    let client = connect(server.clone()).await;
    (server, client)
}

async fn withdraw(client: &Client, id: &str) -> CallToolResult {
    call(client, "withdraw", json!({"operation_id": id})).await
}

async fn lookup(client: &Client, id: &str) -> CallToolResult {
    call(client, "get_operation_result", json!({"operation_id": id})).await
}

/// One runner pass of `server`: how many confirms due by the store's clock it ended.
async fn run(server: &OrderCancel) -> u64 {
    run_due_deferred(server, OrderCancel::routes)
        .await
        .expect("a runner pass")
}

/// One runner pass of `server` once every confirm deferred before is due.
async fn run_when_due(server: &OrderCancel) -> u64 {
    until_due().await;
    run(server).await
}

/// The stored status of the deferred confirm `id`.
async fn deferred_status(world: &World, id: &str) -> String {
    world
        .query(
            "SELECT status FROM guard_deferred WHERE operation_id = $1",
            &[id.into()],
        )
        .await[0]
        .text("status")
        .expect("status")
        .to_owned()
}

/// Another handle on the world's store: what a restarted server process opens.
async fn reopened(world: &World) -> Arc<dyn OperationStore> {
    match world.engine {
        Engine::Sqlite => {
            let path = world.sqlite_path().expect("a SQLite world has a file");
            let store = stores::open_sqlite(&path, &[]).await.expect("reopened");
            Arc::new(store)
        }
        Engine::Postgres => {
            let url = guard_tests::configured_pg_url().expect("a PostgreSQL world has a URL");
            let schema = world.schema.as_deref().expect("schema");
            Arc::new(stores::connect_postgres(&url, schema, 4).expect("another pool"))
        }
    }
}

/// order-cancel on `store`, as alice, deferring its confirms by `wait` if given.
fn alice_on(store: Arc<dyn OperationStore>, wait: Option<Duration>) -> OrderCancel {
    use rmcp_guard::{EnvIdentity, Guard, Identity, ops::Operations};
    let identity = EnvIdentity::new(Identity::new("tenant_demo", "alice", [SCOPE]));
    let mut operations = Operations::new(store, identity);
    if let Some(wait) = wait {
        operations = operations.defer_confirm(OrderCancel::CONFIRM_TOOL, wait);
    }
    OrderCancel::new(
        Guard::ephemeral()
            .expect("guard key")
            .with_operations(operations),
    )
}

/// The due time the answer names (RFC 3339).
fn due_at(result: &CallToolResult) -> String {
    body(result)["due_at"].as_str().expect("due_at").to_owned()
}

async fn a_deferred_confirm_answers_its_schedule_and_files_nothing_yet(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    let (server, client) = alice(&world).await;
    let id = prepare(&client, "A10001").await;
    let scheduled = confirm(&client, &id).await;
    assert_natural(&scheduled, Outcome::Scheduled);
    let answer = body(&scheduled);
    assert_eq!(answer["status"], "SCHEDULED", "{answer}");
    assert_eq!(answer["operation_id"], id.as_str());
    assert_eq!(answer["already_scheduled"], false);
    let said = text(&scheduled);
    assert!(
        said.starts_with("Scheduled for ")
            && said.contains(" UTC: confirm_order_cancel on 1001 runs then, not now."),
        "{said}"
    );
    assert!(
        said.contains(&format!(
            "call withdraw with operation_id {id} before {}",
            due_at(&scheduled)
        )),
        "{said}"
    );
    let meta = serde_json::to_value(&scheduled.meta).expect("meta");
    assert_eq!(meta["guard"]["operationId"], id.as_str());
    assert_eq!(meta["guard"]["dueAt"], due_at(&scheduled).as_str());
    assert_eq!(
        world.requests(1001).await,
        0,
        "nothing is filed before it is due"
    );
    assert_eq!(world.effects(&id).await, 0);

    // A retried confirm answers the same schedule and stores nothing more.
    let again = confirm(&client, &id).await;
    assert_natural(&again, Outcome::Scheduled);
    assert_eq!(body(&again)["already_scheduled"], true);
    assert_eq!(due_at(&again), due_at(&scheduled));
    assert_eq!(
        world
            .count(
                "SELECT COUNT(*) AS n FROM guard_deferred WHERE operation_id = $1",
                &[id.as_str().into()]
            )
            .await,
        1
    );

    let looked = lookup(&client, &id).await;
    assert_natural(&looked, Outcome::Scheduled);
    assert_eq!(body(&looked)["status"], "SCHEDULED");
    assert_eq!(
        body(&looked)["deferred"]["due_at"],
        due_at(&scheduled).as_str()
    );
    assert!(
        body(&looked)["next"]
            .as_str()
            .unwrap()
            .contains("withdraw(operation_id)"),
        "{}",
        body(&looked)
    );

    // Not yet due: a runner passes it over.
    assert_eq!(run(&server).await, 0);
    assert_eq!(world.requests(1001).await, 0);
    // The intent's own expiry does not close a confirmed, waiting operation: a prepare of
    // the same order after it still finds it pending.
    world
        .exec(
            "UPDATE guard_operations SET expires_at = $2 WHERE operation_id = $1",
            &[id.as_str().into(), (now_ms() - 1).into()],
        )
        .await;
    let refused = call(
        &client,
        "prepare_order_cancel",
        json!({"order_no": "A10001", "reason": "again"}),
    )
    .await;
    assert_eq!(
        code(&refused).as_deref(),
        Some(Code::InvalidState.as_str()),
        "{}",
        text(&refused)
    );
    assert_eq!(world.status(&id).await, "PREPARED");
    assert_eq!(run_when_due(&server).await, 1);
    assert_eq!(
        world.requests(1001).await,
        1,
        "it ran although the intent's ttl passed"
    );
}

async fn it_runs_once_when_due_with_what_was_confirmed(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    let (server, client) = alice(&world).await;
    let id = call(
        &client,
        "prepare_order_cancel",
        json!({"order_no": "A10002", "reason": "ordered twice by mistake"}),
    )
    .await;
    let id = body(&id)["operation_id"].as_str().unwrap().to_owned();
    assert_natural(&confirm(&client, &id).await, Outcome::Scheduled);
    assert_eq!(run_when_due(&server).await, 1);
    assert_eq!(run(&server).await, 0, "a call runs once");
    assert_eq!(world.requests(1002).await, 1);
    assert_eq!(world.effects(&id).await, 1);
    assert_eq!(world.status(&id).await, "SUBMITTED");
    assert_eq!(deferred_status(&world, &id).await, "RAN");
    let filed = world
        .query(
            "SELECT reason, requested_by, source_operation_id FROM order_cancel_requests WHERE order_id = 1002",
            &[],
        )
        .await;
    assert_eq!(filed[0].text("reason").unwrap(), "ordered twice by mistake");
    assert_eq!(filed[0].text("requested_by").unwrap(), "alice");
    assert_eq!(filed[0].text("source_operation_id").unwrap(), id);

    // A confirm and a lookup after the run answer the stored result.
    let again = confirm(&client, &id).await;
    assert_natural(&again, Outcome::AlreadyProcessed);
    assert_eq!(body(&again)["already_processed"], true);
    let looked = lookup(&client, &id).await;
    assert_eq!(body(&looked)["status"], "SUBMITTED");
    assert_eq!(body(&looked)["result"]["order_no"], "A10002");
    let outcomes = world.audit_outcomes(&id).await;
    assert!(outcomes.contains(&Outcome::Scheduled), "{outcomes:?}");
    assert_eq!(
        outcomes
            .iter()
            .filter(|o| **o == Outcome::Submitted)
            .count(),
        1,
        "{outcomes:?}"
    );
}

async fn withdrawn_before_due_never_runs_and_twice_answers_alike(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    let (server, client) = alice(&world).await;
    let id = prepare(&client, "A10001").await;
    assert_natural(&confirm(&client, &id).await, Outcome::Scheduled);
    let first = withdraw(&client, &id).await;
    assert_natural(&first, Outcome::Withdrawn);
    assert_eq!(body(&first)["status"], "WITHDRAWN");
    let second = withdraw(&client, &id).await;
    assert_natural(&second, Outcome::AlreadyWithdrawn);
    assert_eq!(body(&second)["already_withdrawn"], true);
    assert_eq!(body(&second)["tool"], body(&first)["tool"]);
    assert_eq!(body(&second)["target"], body(&first)["target"]);

    assert_eq!(run_when_due(&server).await, 0);
    assert_eq!(
        world.requests(1001).await,
        0,
        "a withdrawn confirm never runs"
    );
    assert_eq!(world.effects(&id).await, 0);
    assert_eq!(deferred_status(&world, &id).await, "WITHDRAWN");
    assert_eq!(
        world.status(&id).await,
        "REJECTED",
        "the intent closes with it"
    );

    let confirmed = confirm(&client, &id).await;
    assert_refused(
        &confirmed,
        Code::InvalidState,
        Outcome::Refused(Code::InvalidState),
    );
    assert!(
        text(&confirmed).contains("was withdrawn"),
        "{}",
        text(&confirmed)
    );
    let looked = lookup(&client, &id).await;
    assert_eq!(body(&looked)["status"], "WITHDRAWN");
    assert_eq!(outcome(&looked), Some(Outcome::Withdrawn));
    // The order is free to be prepared again.
    let fresh = prepare(&client, "A10001").await;
    assert_ne!(fresh, id);
    let outcomes = world.audit_outcomes(&id).await;
    assert!(outcomes.contains(&Outcome::Withdrawn), "{outcomes:?}");
    assert!(
        outcomes.contains(&Outcome::AlreadyWithdrawn),
        "{outcomes:?}"
    );
}

async fn another_person_or_tenant_gets_not_found(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    let (server, client) = alice(&world).await;
    let id = prepare(&client, "A10001").await;
    assert_natural(&confirm(&client, &id).await, Outcome::Scheduled);
    let unknown = uuid::Uuid::new_v4().to_string();
    for (tenant, user) in [("tenant_demo", "bob"), ("tenant_other", "alice")] {
        let other = connect(deferring(&world, tenant, user, WAIT)).await;
        let theirs = withdraw(&other, &id).await;
        let never = withdraw(&other, &unknown).await;
        assert_refused(
            &theirs,
            Code::OperationNotFound,
            Outcome::Refused(Code::OperationNotFound),
        );
        assert_eq!(
            text(&theirs).replace(&id, "ID"),
            text(&never).replace(&unknown, "ID"),
            "another's id answers exactly like one never issued"
        );
        assert_eq!(theirs.structured_content, never.structured_content);
        let looked = lookup(&other, &id).await;
        assert_eq!(
            code(&looked).as_deref(),
            Some(Code::OperationNotFound.as_str())
        );
        let confirmed = confirm(&other, &id).await;
        assert_eq!(
            code(&confirmed).as_deref(),
            Some(Code::OperationNotFound.as_str())
        );
    }
    assert_eq!(run_when_due(&server).await, 1, "it still runs for alice");
    assert_eq!(world.requests(1001).await, 1);
}

async fn withdraw_after_the_run_says_it_ran(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    let (server, client) = alice(&world).await;
    let id = prepare(&client, "A10001").await;
    assert_natural(&confirm(&client, &id).await, Outcome::Scheduled);
    assert_eq!(run_when_due(&server).await, 1);
    let late = withdraw(&client, &id).await;
    assert_refused(&late, Code::AlreadyRan, Outcome::Refused(Code::AlreadyRan));
    let said = late.structured_content.clone().expect("the outcome");
    assert_eq!(said["status"], "RAN");
    assert_eq!(said["result"]["status"], "SUBMITTED");
    assert_eq!(said["result"]["result"]["order_no"], "A10001");
    assert_eq!(world.requests(1001).await, 1);
    assert_eq!(world.status(&id).await, "SUBMITTED");
}

async fn an_order_changed_before_due_is_state_changed_and_nothing_is_filed(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    let (server, client) = alice(&world).await;
    let id = prepare(&client, "A10001").await;
    assert_natural(&confirm(&client, &id).await, Outcome::Scheduled);
    world
        .exec(
            "UPDATE orders SET status = 'SHIPPED' WHERE order_id = 1001",
            &[],
        )
        .await;
    assert_eq!(run_when_due(&server).await, 1, "the call ends");
    assert_eq!(world.requests(1001).await, 0, "nothing is filed");
    assert_eq!(world.effects(&id).await, 0);
    assert_eq!(world.status(&id).await, "REJECTED");
    assert_eq!(deferred_status(&world, &id).await, "STATE_CHANGED");
    let late = withdraw(&client, &id).await;
    assert_refused(&late, Code::AlreadyRan, Outcome::Refused(Code::AlreadyRan));
    assert!(text(&late).contains("did not run"), "{}", text(&late));
    let said = late.structured_content.clone().expect("the outcome");
    assert_eq!(said["status"], "STATE_CHANGED");
    assert!(
        said["result"]
            .as_str()
            .unwrap()
            .contains("Order A10001 is now SHIPPED"),
        "{said}"
    );
    let looked = lookup(&client, &id).await;
    assert_eq!(body(&looked)["status"], "REJECTED");
    let outcomes = world.audit_outcomes(&id).await;
    assert!(outcomes.contains(&Outcome::StateChanged), "{outcomes:?}");
    assert!(!outcomes.contains(&Outcome::Submitted), "{outcomes:?}");
}

async fn a_restart_between_confirm_and_run_files_it_once(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    let id = {
        let (server, client) = alice(&world).await;
        let id = prepare(&client, "A10001").await;
        assert_natural(&confirm(&client, &id).await, Outcome::Scheduled);
        let _ = client.cancel().await;
        drop(server);
        id
    };
    // A new process on the same store, which does not defer confirms itself: what was
    // deferred before still runs, once.
    let store = reopened(&world).await;
    let restarted = alice_on(store, None);
    let client = connect(restarted.clone()).await;
    let looked = lookup(&client, &id).await;
    assert_eq!(body(&looked)["status"], "SCHEDULED");
    let confirmed = confirm(&client, &id).await;
    assert_natural(&confirmed, Outcome::Scheduled);
    assert_eq!(
        world.requests(1001).await,
        0,
        "a confirm does not run a deferred one early"
    );
    assert_eq!(run_when_due(&restarted).await, 1);
    assert_eq!(run(&restarted).await, 0);
    assert_eq!(world.requests(1001).await, 1);
    assert_eq!(world.effects(&id).await, 1);
}

/// `count` fresh PAID orders, each prepared and confirmed (deferred) by alice: the orders
/// and the operation ids.
async fn confirmed_orders(engine: Engine, count: i64) -> Option<(World, Vec<(i64, String)>)> {
    let orders = paid_orders(7000, count);
    let world = World::with_orders(engine, &seed_rows(&orders)).await?;
    crate::support::events::install();
    let (_server, client) = alice(&world).await;
    let mut confirmed = Vec::new();
    for (order_id, order_no) in &orders {
        let id = prepare(&client, order_no).await;
        assert_natural(&confirm(&client, &id).await, Outcome::Scheduled);
        confirmed.push((*order_id, id));
    }
    Some((world, confirmed))
}

async fn two_runners_on_one_store_file_each_due_confirm_once(engine: Engine) {
    let Some((world, confirmed)) = confirmed_orders(engine, 4).await else {
        return;
    };
    let one = alice_on(reopened(&world).await, Some(WAIT));
    let two = alice_on(reopened(&world).await, Some(WAIT));
    until_due().await;
    let (a, b) = tokio::join!(run(&one), run(&two));
    assert_eq!(a + b, 4, "each due confirm ended once: {a} + {b}");
    for (order_id, id) in &confirmed {
        assert_eq!(world.requests(*order_id).await, 1, "order {order_id}");
        assert_eq!(world.effects(id).await, 1);
        assert_eq!(deferred_status(&world, id).await, "RAN");
    }
}

async fn a_withdrawal_racing_the_runner_has_one_winner(engine: Engine) {
    let Some((world, confirmed)) = confirmed_orders(engine, 3).await else {
        return;
    };
    let runner = alice_on(reopened(&world).await, Some(WAIT));
    let withdrawer = connect(alice_on(reopened(&world).await, Some(WAIT))).await;
    until_due().await;
    let withdrawals = async {
        let mut answers = Vec::new();
        for (_, id) in &confirmed {
            answers.push(withdraw(&withdrawer, id).await);
        }
        answers
    };
    let (ran, answers) = tokio::join!(run(&runner), withdrawals);
    let mut withdrawn = 0;
    for ((order_id, id), answer) in confirmed.iter().zip(&answers) {
        let filed = world.requests(*order_id).await;
        match outcome(answer) {
            Some(Outcome::Withdrawn) => {
                withdrawn += 1;
                assert_eq!(filed, 0, "withdrawn, so nothing filed for {order_id}");
                assert_eq!(deferred_status(&world, id).await, "WITHDRAWN");
            }
            Some(Outcome::Refused(Code::AlreadyRan)) => {
                assert_eq!(filed, 1, "it ran, once, for {order_id}");
                assert_eq!(answer.structured_content.as_ref().unwrap()["status"], "RAN");
            }
            other => panic!("a withdrawal answered {other:?}: {}", text(answer)),
        }
    }
    assert_eq!(
        ran + withdrawn,
        3,
        "every call ended once: {ran} ran, {withdrawn} withdrawn"
    );
}

async fn a_background_runner_files_a_due_confirm_once(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    let server = deferring(&world, "tenant_demo", "alice", Duration::from_secs(1));
    let client = connect(server.clone()).await;
    let id = prepare(&client, "A10001").await;
    assert_natural(&confirm(&client, &id).await, Outcome::Scheduled);
    let first = server
        .run_deferred(Duration::from_millis(100))
        .expect("a runner: the guard has a store");
    let second = alice_on(reopened(&world).await, Some(Duration::from_secs(1)))
        .run_deferred(Duration::from_millis(100))
        .expect("a second runner");
    let mut filed = 0;
    for _ in 0..600 {
        if deferred_status(&world, &id).await != "SCHEDULED" {
            filed = world.requests(1001).await;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    drop((first, second));
    assert_eq!(filed, 1, "the background runners filed it once");
    assert_eq!(world.effects(&id).await, 1);
}

async fn the_database_refuses_rewritten_or_forged_deferred_confirms(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    let (server, client) = alice(&world).await;
    let id = prepare(&client, "A10001").await;
    assert_natural(&confirm(&client, &id).await, Outcome::Scheduled);
    let refused = |sql: &'static str, params: Vec<SqlValue>| {
        let store = world.store.clone();
        async move {
            let mut tx = store.begin().await.expect("tx");
            let result = tx.execute(sql, &params).await;
            drop(tx);
            assert!(result.is_err(), "the server's store let `{sql}` through");
        }
    };
    // Due earlier, another owner, another target: refused while it waits.
    refused(
        "UPDATE guard_deferred SET due_at = created_at + 1 WHERE operation_id = $1",
        vec![id.as_str().into()],
    )
    .await;
    refused(
        "UPDATE guard_deferred SET user_id = 'mallory' WHERE operation_id = $1",
        vec![id.as_str().into()],
    )
    .await;
    refused(
        "UPDATE guard_deferred SET fingerprint = 'forged' WHERE operation_id = $1",
        vec![id.as_str().into()],
    )
    .await;
    refused(
        "DELETE FROM guard_deferred WHERE operation_id = $1",
        vec![id.as_str().into()],
    )
    .await;
    // A forged row that claims to have run already.
    refused(
        "INSERT INTO guard_deferred (operation_id, tenant, user_id, tool, target, arguments,
             arguments_sha256, form, fingerprint, status, created_at, due_at, closed_at, result, trace_id)
         SELECT $1, tenant, user_id, tool, target, arguments, arguments_sha256, form, fingerprint,
                'RAN', created_at, due_at, due_at, '{}', trace_id
         FROM guard_deferred WHERE operation_id = $2",
        vec![uuid::Uuid::new_v4().to_string().into(), id.as_str().into()],
    )
    .await;
    assert_eq!(run_when_due(&server).await, 1);
    // Once it ran, it never waits again.
    refused(
        "UPDATE guard_deferred SET status = 'SCHEDULED', closed_at = NULL, result = NULL WHERE operation_id = $1",
        vec![id.as_str().into()],
    )
    .await;
    assert_eq!(world.requests(1001).await, 1);
    assert_eq!(deferred_status(&world, &id).await, "RAN");
}
