//! Deferred calls on SQLite and PostgreSQL: two runners on one store (two openers of one
//! SQLite file; two pools of the server's role on one PostgreSQL schema) run each due call
//! exactly once, none before its due time by the database's clock, and the database keeps
//! a call as guard stored it: it is born `SCHEDULED`, ends once, and is never deleted or
//! rewritten, for the server's role and the tables' owner alike.

use std::sync::Arc;

use crate::support::{
    connect,
    deferred::{Accounts, SOON_DUE},
    orders::{Engine, World},
};
use crate::undo_windows_hold::statement;
use rmcp_guard::{ops::OperationStore, outcome::Outcome};
use rmcp_guard_test::testing::{Answer, ScriptedHuman};
use serde_json::json;

both_stores!(
    two_runners_run_each_due_call_once,
    a_call_ends_once_and_is_never_rewritten,
    every_step_is_an_audit_record,
    a_runner_racing_a_withdrawal_has_one_winner,
    background_runners_run_each_due_call_once,
    no_runner_runs_a_call_before_its_due_time,
);

/// The tool these tests run: due two seconds after it is scheduled.
const SOON: &str = "close_account_soon";

/// Schedules `close_account_soon` of `account` on `server` (push era); the call's id.
async fn schedule(server: &Accounts, account: &str) -> String {
    schedule_with(server, SOON, account).await
}

/// Schedules `tool` of `account` on `server` (push era); the call's id.
async fn schedule_with(server: &Accounts, tool: &str, account: &str) -> String {
    let human = ScriptedHuman::new(crate::support::PUSH);
    human.will(Answer::Accept(json!({"reason": "test"})));
    let client = connect(server.clone(), human).await;
    let result = crate::support::call(&client, tool, json!({"account": account})).await;
    let _ = client.cancel().await;
    assert_eq!(
        crate::support::outcome(&result),
        Some(Outcome::Scheduled),
        "{}",
        crate::support::text(&result)
    );
    let meta = serde_json::to_value(&result.meta).expect("meta");
    meta["guard"]["operationId"]
        .as_str()
        .expect("operation id")
        .to_owned()
}

/// `withdraw` of `id` on `server`; the outcome its tag names.
async fn withdraw(server: &Accounts, id: &str) -> Option<Outcome> {
    let client = connect(server.clone(), ScriptedHuman::new(crate::support::PUSH)).await;
    let result = crate::support::call(&client, "withdraw", json!({"operation_id": id})).await;
    let _ = client.cancel().await;
    crate::support::outcome(&result)
}

/// How many records of the log name `outcome` for `tool`.
async fn records(world: &World, tool: &str, outcome: Outcome) -> i64 {
    world
        .count(
            "SELECT COUNT(*) AS n FROM guard_audit_log WHERE tool = $1 AND outcome = $2",
            &[tool.into(), outcome.as_str().into()],
        )
        .await
}

/// A second store of `world`: another opener of the SQLite file, or another pool of the
/// server's role on PostgreSQL (another process's store).
fn second_store(world: &World) -> Arc<dyn OperationStore> {
    match (world.engine, world.sqlite_path()) {
        (Engine::Sqlite, Some(path)) => {
            Arc::new(rmcp_guard::ops::SqliteStore::open(path).expect("second opener"))
        }
        _ => Arc::new(crate::undo_windows_hold::second_pg_store(world)),
    }
}

/// Returns once every call of [`SOON`] scheduled before it is due by the stores' clock.
async fn until_due() {
    tokio::time::sleep(SOON_DUE).await;
}

async fn status(world: &World, id: &str) -> String {
    world
        .query(
            "SELECT status FROM guard_deferred WHERE operation_id = $1",
            &[id.into()],
        )
        .await[0]
        .text("status")
        .unwrap()
        .to_owned()
}

async fn two_runners_run_each_due_call_once(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    let first = Accounts::new(world.store.clone(), "acme", "alice");
    let accounts: Vec<String> = (0..8).map(|i| format!("a{i}")).collect();
    for account in &accounts {
        first.balances.lock().unwrap().insert(account.clone(), 1);
    }
    let mut ids = Vec::new();
    for account in &accounts {
        ids.push(schedule(&first, account).await);
    }
    let second = first.as_person(second_store(&world), "acme", "alice");
    until_due().await;
    let (a, b) = tokio::join!(first.run_due(), second.run_due());
    assert_eq!(a + b, 8, "each call ended by one of them ({a} + {b})");
    let mut closed: Vec<String> = first.closings().into_iter().map(|(a, _)| a).collect();
    closed.sort();
    assert_eq!(closed, accounts, "each account closed once");
    for id in &ids {
        assert_eq!(status(&world, id).await, "RAN");
    }
    let (a, b) = tokio::join!(first.run_due(), second.run_due());
    assert_eq!(a + b, 0, "nothing runs twice");
    let scheduled = world
        .count(
            "SELECT COUNT(*) AS n FROM guard_audit_log WHERE outcome = $1",
            &[Outcome::Scheduled.as_str().into()],
        )
        .await;
    let ran = world
        .count(
            "SELECT COUNT(*) AS n FROM guard_audit_log WHERE outcome = $1 AND tool = 'close_account_soon'",
            &[Outcome::Executed.as_str().into()],
        )
        .await;
    assert_eq!(
        (scheduled, ran),
        (8, 8),
        "each scheduling and each run is recorded"
    );
}

async fn a_call_ends_once_and_is_never_rewritten(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    let server = Accounts::new(world.store.clone(), "acme", "alice");
    let id = schedule(&server, "checking").await;
    for store in [&world.store, &world.owner] {
        for sql in [
            "UPDATE guard_deferred SET due_at = due_at - 1 WHERE operation_id = $1",
            "UPDATE guard_deferred SET due_at = due_at + 1 WHERE operation_id = $1",
            "UPDATE guard_deferred SET form = '{\"reason\":\"forged\"}' WHERE operation_id = $1",
            "UPDATE guard_deferred SET user_id = 'mallory' WHERE operation_id = $1",
            "DELETE FROM guard_deferred WHERE operation_id = $1",
        ] {
            assert!(statement(store, sql, &id).await.is_err(), "{sql}");
        }
    }
    until_due().await;
    assert_eq!(server.run_due().await, 1);
    assert_eq!(status(&world, &id).await, "RAN");
    for store in [&world.store, &world.owner] {
        let reopen = "UPDATE guard_deferred SET status = 'SCHEDULED', closed_at = NULL, result = NULL WHERE operation_id = $1";
        assert!(
            statement(store, reopen, &id).await.is_err(),
            "a call ends once"
        );
        let rewrite =
            "UPDATE guard_deferred SET status = 'WITHDRAWN', result = NULL WHERE operation_id = $1";
        assert!(
            statement(store, rewrite, &id).await.is_err(),
            "and stays as it ended"
        );
        let forged = "INSERT INTO guard_deferred (operation_id, tenant, user_id, tool, target, arguments,
                 arguments_sha256, form, fingerprint, status, created_at, due_at, closed_at, result, trace_id)
             VALUES ($1 || '-forged', 'acme', 'alice', 'close_account', 'savings', '{}', 'x', '{}', 'x',
                 'RAN', 1, 2, 3, '{}', 't')";
        assert!(
            statement(store, forged, &id).await.is_err(),
            "born SCHEDULED"
        );
    }
    assert_eq!(status(&world, &id).await, "RAN");
}

/// Scheduling, withdrawing (and again), running, and a changed target at run time are each
/// recorded, under the tool whose call it is (or `withdraw`).
async fn every_step_is_an_audit_record(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    let server = Accounts::new(world.store.clone(), "acme", "alice");
    server
        .balances
        .lock()
        .unwrap()
        .insert("brokerage".into(), 7);
    let withdrawn = schedule(&server, "checking").await;
    let _changed = schedule(&server, "savings").await;
    let _ran = schedule(&server, "brokerage").await;
    assert_eq!(
        withdraw(&server, &withdrawn).await,
        Some(Outcome::Withdrawn)
    );
    assert_eq!(
        withdraw(&server, &withdrawn).await,
        Some(Outcome::AlreadyWithdrawn)
    );
    server.balances.lock().unwrap().insert("savings".into(), 1);
    until_due().await;
    assert_eq!(server.run_due().await, 2);
    assert_eq!(server.balance("checking"), Some(100));
    assert_eq!(server.balance("savings"), Some(1));
    assert_eq!(server.balance("brokerage"), None);
    let tool = SOON;
    assert_eq!(records(&world, tool, Outcome::Scheduled).await, 3);
    assert_eq!(records(&world, tool, Outcome::Executed).await, 1);
    assert_eq!(records(&world, tool, Outcome::StateChanged).await, 1);
    assert_eq!(records(&world, "withdraw", Outcome::Withdrawn).await, 1);
    assert_eq!(
        records(&world, "withdraw", Outcome::AlreadyWithdrawn).await,
        1
    );
}

/// A runner of another process and the owner's withdrawal, at once, several times: each
/// time exactly one of them wins, and the withdrawal's answer says which.
async fn a_runner_racing_a_withdrawal_has_one_winner(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    let server = Accounts::new(world.store.clone(), "acme", "alice");
    let runner = server.as_person(second_store(&world), "acme", "alice");
    for round in 0..6 {
        let account = format!("r{round}");
        server.balances.lock().unwrap().insert(account.clone(), 1);
        let id = schedule(&server, &account).await;
        until_due().await;
        let (ran, withdrawn) = tokio::join!(runner.run_due(), withdraw(&server, &id));
        match withdrawn {
            Some(Outcome::Withdrawn) => {
                assert_eq!(ran, 0, "withdrawn first: nothing ran");
                assert_eq!(server.balance(&account), Some(1));
                assert_eq!(status(&world, &id).await, "WITHDRAWN");
            }
            Some(Outcome::Refused(rmcp_guard::Code::AlreadyRan)) => {
                assert_eq!(ran, 1, "ran first: the withdrawal says so");
                assert_eq!(server.balance(&account), None);
                assert_eq!(status(&world, &id).await, "RAN");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(runner.run_due().await, 0);
    }
    let closed = server.closings().len();
    let open = (0..6)
        .filter(|i| server.balance(&format!("r{i}")).is_some())
        .count();
    assert_eq!(closed + open, 6, "each call ran once or not at all");
}

/// Two servers on one store each run `run_deferred` in the background: every call due in
/// two seconds runs once, one due in two minutes is left scheduled, and the runners stop
/// with their handles.
async fn background_runners_run_each_due_call_once(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    let first = Accounts::new(world.store.clone(), "acme", "alice");
    let second = first.as_person(second_store(&world), "acme", "alice");
    let soon: Vec<String> = (0..4).map(|i| format!("s{i}")).collect();
    for account in &soon {
        first.balances.lock().unwrap().insert(account.clone(), 1);
    }
    let mut ids = Vec::new();
    for account in &soon {
        ids.push(schedule(&first, account).await);
    }
    let later_id = schedule_with(&first, "close_account", "checking").await;
    let every = std::time::Duration::from_millis(50);
    let runners = [&first, &second].map(|server| server.run_in_background(every));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while first.closings().len() < soon.len() && std::time::Instant::now() < deadline {
        tokio::time::sleep(every).await;
    }
    // A few more passes of both, to catch a second run of any call.
    tokio::time::sleep(every * 6).await;
    drop(runners);
    let mut closed: Vec<String> = first.closings().into_iter().map(|(a, _)| a).collect();
    closed.sort();
    assert_eq!(closed, soon, "each due call ran once");
    for id in &ids {
        assert_eq!(status(&world, id).await, "RAN");
    }
    assert_eq!(status(&world, &later_id).await, "SCHEDULED", "not due yet");
    assert_eq!(first.balance("checking"), Some(100));
}

/// A call due in two minutes is run by no runner before then, however it is driven: passes
/// of two processes' runners on one store and their background runners passing every few
/// milliseconds all find nothing due, since the database's clock decides (PostgreSQL's, not
/// the runner's) and no caller passes a time. It is still scheduled afterwards.
async fn no_runner_runs_a_call_before_its_due_time(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    let first = Accounts::new(world.store.clone(), "acme", "alice");
    let id = schedule_with(&first, "close_account", "checking").await;
    let second = first.as_person(second_store(&world), "acme", "alice");
    for _ in 0..3 {
        let (a, b) = tokio::join!(first.run_due(), second.run_due());
        assert_eq!((a, b), (0, 0), "a pass of either runner: not due");
    }
    let every = std::time::Duration::from_millis(5);
    let runners = [&first, &second].map(|server| server.run_in_background(every));
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    drop(runners);
    assert_eq!(status(&world, &id).await, "SCHEDULED", "not due yet");
    assert_eq!(first.balance("checking"), Some(100), "nothing ran");
    assert!(first.closings().is_empty());
    assert_eq!(records(&world, "close_account", Outcome::Executed).await, 0);
}
