//! MRTR (2026-07-28) driven round by round: the `InputRequiredResult`, the sealed
//! `requestState`, and every way a retry can be wrong.

use std::{sync::Arc, time::Duration};

use crate::support::{deferred::Accounts, *};
use rmcp::{
    RoleClient,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ElicitRequestParams, InputRequest,
        InputResponses,
    },
    service::RunningService,
};
use rmcp_guard::outcome::Outcome;
use rmcp_guard::{
    EnvIdentity, Exposure, Guard, Identity,
    ops::{Operations, SqliteStore},
};
use rmcp_guard_test::testing::{INPUT_KEY, ScriptedHuman};
use serde_json::{Value, json};

type Client = RunningService<RoleClient, ScriptedHuman>;

async fn client_for(world: &World, guard: Guard) -> (Client, ScriptedHuman) {
    let human = ScriptedHuman::new(MRTR);
    let client = connect(world.server_with(guard), human.clone()).await;
    (client, human)
}

fn guard() -> Guard {
    Guard::ephemeral().expect("guard key")
}

/// The first round: asserts an `InputRequiredResult` with guard's single form question and
/// returns its sealed state and the question.
async fn first_round(client: &Client, tool: &str, args: Value) -> (String, ElicitRequestParams) {
    let response = call_once(client, params(tool, args)).await;
    let CallToolResponse::InputRequired(required) = response else {
        panic!("{tool}: expected InputRequired, got {response:?}");
    };
    let requests = required.input_requests.expect("input requests");
    assert_eq!(
        requests.keys().collect::<Vec<_>>(),
        [INPUT_KEY],
        "one request under guard_confirm"
    );
    assert_eq!(INPUT_KEY, "guard_confirm");
    let Some(InputRequest::Elicitation(request)) = requests.into_values().next() else {
        panic!("{tool}: the input request is not an elicitation");
    };
    assert!(
        matches!(
            request.params,
            ElicitRequestParams::FormElicitationParams { .. }
        ),
        "{tool}: a form elicitation"
    );
    let state = required.request_state.expect("requestState");
    assert!(!state.is_empty());
    (state, request.params)
}

fn answer(action: &str, content: Option<Value>) -> Value {
    match content {
        Some(content) => json!({"action": action, "content": content}),
        None => json!({"action": action}),
    }
}

fn retry(tool: &str, args: Value, state: &str, response: Option<Value>) -> CallToolRequestParams {
    let mut params = params(tool, args).with_request_state(state);
    if let Some(response) = response {
        params =
            params.with_input_responses(InputResponses::from([(INPUT_KEY.to_owned(), response)]));
    }
    params
}

async fn send(
    client: &Client,
    tool: &str,
    args: Value,
    state: &str,
    response: Option<Value>,
) -> CallToolResult {
    complete(call_once(client, retry(tool, args, state, response)).await)
}

fn accept_delete() -> Option<Value> {
    Some(answer("accept", Some(json!({"confirm": true}))))
}

// ── (a) the happy path ─────────────────────────────────────────────────────────────────

#[tokio::test]
async fn accepted_retry_runs_each_tool() {
    let world = World::new();
    let (client, human) = client_for(&world, guard()).await;

    let (state, question) = first_round(&client, "delete_file", json!({"path": "old.log"})).await;
    let ElicitRequestParams::FormElicitationParams { message, .. } = question else {
        unreachable!()
    };
    assert!(message.contains("Delete file"), "{message}");
    assert_eq!(
        world.file("old.log").as_deref(),
        Some(OLD_LOG),
        "asking changes nothing"
    );
    let result = send(
        &client,
        "delete_file",
        json!({"path": "old.log"}),
        &state,
        accept_delete(),
    )
    .await;
    assert_natural(&result, Outcome::Executed);
    assert_eq!(world.file("old.log"), None);

    let (state, _) = first_round(&client, "drop_table", json!({"table": "orders"})).await;
    assert_eq!(world.rows("orders"), Some(4));
    let result = send(
        &client,
        "drop_table",
        json!({"table": "orders"}),
        &state,
        Some(answer(
            "accept",
            Some(json!({"typed_name": "orders", "approver": "ada"})),
        )),
    )
    .await;
    assert_natural(&result, Outcome::Executed);
    assert_eq!(world.rows("orders"), None);

    let (state, _) = first_round(&client, "deploy", json!({"service": "billing"})).await;
    assert!(world.deployments().is_empty());
    let result = send(
        &client,
        "deploy",
        json!({"service": "billing"}),
        &state,
        Some(answer("accept", Some(json!({"rollback_plan": "revert"})))),
    )
    .await;
    assert_natural(&result, Outcome::Executed);
    assert_eq!(
        world.deployments(),
        [(
            "billing".to_owned(),
            "standard".to_owned(),
            "revert".to_owned()
        )]
    );

    assert!(
        human.shown().is_empty(),
        "manual rounds never reach the client handler"
    );
    let _ = client.cancel().await;
}

#[tokio::test]
async fn decline_and_cancel_rounds_change_nothing() {
    let world = World::new();
    let (client, _human) = client_for(&world, guard()).await;
    let endings = [
        ("decline", Outcome::Declined),
        ("cancel", Outcome::Cancelled),
    ];
    for (action, outcome) in endings {
        let (state, _) = first_round(&client, "delete_file", json!({"path": "old.log"})).await;
        let result = send(
            &client,
            "delete_file",
            json!({"path": "old.log"}),
            &state,
            Some(answer(action, None)),
        )
        .await;
        assert_natural(&result, outcome);
        assert_eq!(world.file("old.log").as_deref(), Some(OLD_LOG));
    }
    let _ = client.cancel().await;
}

// ── (b) tampered state ─────────────────────────────────────────────────────────────────

/// `state` with one character of segment `segment` (split on '.') changed to another
/// base64url character. The last character of a segment is never touched, since its low
/// bits may be padding.
fn flip(state: &str, segment: usize) -> String {
    let mut parts: Vec<String> = state.split('.').map(str::to_owned).collect();
    let part = &mut parts[segment];
    let chars: Vec<char> = part.chars().collect();
    assert!(chars.len() > 2, "segment {segment} of {state} is too short");
    let at = chars.len() / 2;
    let replacement = if chars[at] == 'A' { 'B' } else { 'A' };
    *part = chars
        .iter()
        .enumerate()
        .map(|(i, c)| if i == at { replacement } else { *c })
        .collect();
    parts.join(".")
}

#[tokio::test]
async fn tampered_state_is_rejected() {
    let world = World::new();
    let (client, _human) = client_for(&world, guard()).await;
    let args = json!({"path": "old.log"});
    let (state, _) = first_round(&client, "delete_file", args.clone()).await;
    let segments = state.split('.').count();
    assert!(
        segments >= 3,
        "sealed state has a version, body and tag: {state}"
    );
    for segment in 1..segments {
        let forged = flip(&state, segment);
        assert_ne!(forged, state);
        let result = send(
            &client,
            "delete_file",
            args.clone(),
            &forged,
            accept_delete(),
        )
        .await;
        assert_refused(&result, rmcp_guard::Code::InvalidState, Outcome::BadState);
        assert_eq!(world.file("old.log").as_deref(), Some(OLD_LOG));
    }
    for forged in [String::new(), "garbage".to_owned(), format!("{state}x")] {
        let result = send(
            &client,
            "delete_file",
            args.clone(),
            &forged,
            accept_delete(),
        )
        .await;
        assert_refused(&result, rmcp_guard::Code::InvalidState, Outcome::BadState);
        assert_eq!(world.file("old.log").as_deref(), Some(OLD_LOG));
    }
    // The genuine state was never redeemed by the forgeries, so it still works.
    let result = send(&client, "delete_file", args, &state, accept_delete()).await;
    assert_natural(&result, Outcome::Executed);
    assert_eq!(world.file("old.log"), None);
    let _ = client.cancel().await;
}

// ── (c) state bound to other arguments ────────────────────────────────────────────────

#[tokio::test]
async fn state_for_other_arguments_is_rejected() {
    let world = World::new();
    let (client, _human) = client_for(&world, guard()).await;

    let (state, _) = first_round(&client, "delete_file", json!({"path": "old.log"})).await;
    let result = send(
        &client,
        "delete_file",
        json!({"path": "report.csv"}),
        &state,
        accept_delete(),
    )
    .await;
    assert_refused(&result, rmcp_guard::Code::InvalidState, Outcome::BadState);
    assert_eq!(world.file("report.csv").as_deref(), Some(REPORT));
    assert_eq!(world.file("old.log").as_deref(), Some(OLD_LOG));

    let (state, _) = first_round(&client, "drop_table", json!({"table": "customers"})).await;
    let result = send(
        &client,
        "drop_table",
        json!({"table": "orders"}),
        &state,
        Some(answer(
            "accept",
            Some(json!({"typed_name": "orders", "approver": "ada"})),
        )),
    )
    .await;
    assert_refused(&result, rmcp_guard::Code::InvalidState, Outcome::BadState);
    assert_eq!(world.rows("orders"), Some(4));
    assert_eq!(world.rows("customers"), Some(3));

    // A delete_file state replayed on drop_table (another tool, another form).
    let (state, _) = first_round(&client, "delete_file", json!({"path": "old.log"})).await;
    let result = send(
        &client,
        "drop_table",
        json!({"table": "orders"}),
        &state,
        Some(answer(
            "accept",
            Some(json!({"typed_name": "orders", "approver": "ada"})),
        )),
    )
    .await;
    assert_refused(&result, rmcp_guard::Code::InvalidState, Outcome::BadState);
    assert_eq!(world.rows("orders"), Some(4));
    assert_eq!(world.file("old.log").as_deref(), Some(OLD_LOG));
    let _ = client.cancel().await;
}

// ── (d) replay ─────────────────────────────────────────────────────────────────────────

/// Recreates `orders` with the four seeded rows, so a drop preview matches the one the
/// human saw before the first drop exactly.
fn restore_orders(world: &World) {
    let conn = rusqlite::Connection::open(&world.db).expect("writable connection");
    conn.execute_batch(
        "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL, \
         total_cents INTEGER NOT NULL, status TEXT NOT NULL);
         INSERT INTO orders (customer_id, total_cents, status) VALUES \
         (1, 1, 'paid'), (2, 2, 'paid'), (3, 3, 'paid'), (1, 4, 'paid');",
    )
    .expect("restore orders");
}

fn accept_drop() -> Option<Value> {
    Some(answer(
        "accept",
        Some(json!({"typed_name": "orders", "approver": "ada"})),
    ))
}

#[tokio::test]
async fn replayed_accept_runs_once() {
    let world = World::new();
    let (client, _human) = client_for(&world, guard()).await;
    let args = json!({"table": "orders"});
    let (state, _) = first_round(&client, "drop_table", args.clone()).await;
    let result = send(&client, "drop_table", args.clone(), &state, accept_drop()).await;
    assert_natural(&result, Outcome::Executed);
    assert_eq!(world.rows("orders"), None);

    // The same table with the same number of rows again, so the preview matches the sealed
    // one exactly: only the single-use rule can stop the replay.
    restore_orders(&world);
    let result = send(&client, "drop_table", args, &state, accept_drop()).await;
    assert_refused(&result, rmcp_guard::Code::InvalidState, Outcome::Replayed);
    assert!(text(&result).contains("already used"), "{}", text(&result));
    assert_eq!(world.rows("orders"), Some(4), "the replay dropped nothing");
    let _ = client.cancel().await;
}

/// A deleted file put back with the same bytes and the same mtime is another file (another
/// inode, another change time): the replayed answer cannot delete it.
#[tokio::test]
async fn replayed_delete_of_a_restored_file_is_refused() {
    let world = World::new();
    let (client, _human) = client_for(&world, guard()).await;
    let args = json!({"path": "old.log"});
    let path = world.path("old.log");
    let modified = std::fs::metadata(&path)
        .and_then(|m| m.modified())
        .expect("mtime");
    let (state, _) = first_round(&client, "delete_file", args.clone()).await;
    let result = send(
        &client,
        "delete_file",
        args.clone(),
        &state,
        accept_delete(),
    )
    .await;
    assert_natural(&result, Outcome::Executed);
    assert_eq!(world.file("old.log"), None);

    std::fs::write(&path, OLD_LOG).expect("restore");
    std::fs::File::options()
        .write(true)
        .open(&path)
        .and_then(|f| f.set_modified(modified))
        .expect("restore mtime");
    let result = send(&client, "delete_file", args, &state, accept_delete()).await;
    assert_refused(
        &result,
        rmcp_guard::Code::StateChanged,
        Outcome::StateChanged,
    );
    assert_eq!(
        world.file("old.log").as_deref(),
        Some(OLD_LOG),
        "the replay deleted nothing"
    );
    let _ = client.cancel().await;
}

/// Guards of replicas sharing one SQLite operation store under `world`, each with a key.
fn sharing_a_store(world: &World) -> impl Fn(&[u8]) -> Guard {
    let store = Arc::new(SqliteStore::open(world.base.join("guard.db")).expect("store opens"));
    move |key| {
        let identity = EnvIdentity::new(Identity::new("t", "u", Vec::<String>::new()));
        Guard::with_key(key.to_vec())
            .expect("guard key")
            .with_operations(Operations::new(store.clone(), identity))
    }
}

/// Two replicas with one key and one operation store: a state answered on one is refused
/// on the other, because the used nonce is kept in the shared store.
#[tokio::test]
async fn replay_on_another_replica_sharing_the_store_is_refused() {
    let world = World::new();
    let with_store = sharing_a_store(&world);
    let replica = || with_store(&[7u8; 32]);
    let (first, _) = client_for(&world, replica()).await;
    let (second, _) = client_for(&world, replica()).await;
    let args = json!({"table": "orders"});
    let (state, _) = first_round(&first, "drop_table", args.clone()).await;
    let result = send(&first, "drop_table", args.clone(), &state, accept_drop()).await;
    assert_natural(&result, Outcome::Executed);

    // The same table and row count again, so only the single-use rule can stop the replay.
    restore_orders(&world);
    let result = send(&second, "drop_table", args, &state, accept_drop()).await;
    assert_refused(&result, rmcp_guard::Code::InvalidState, Outcome::Replayed);
    assert_eq!(world.rows("orders"), Some(4));
    let _ = first.cancel().await;
    let _ = second.cancel().await;
}

/// A guard without an operation store remembers used states in memory only, so a restart
/// (a new guard with the same key) must refuse every state sealed before it, used or not.
#[tokio::test]
async fn states_from_before_a_restart_are_refused_without_a_store() {
    let world = World::new();
    let key = [9u8; 32];
    let boot = || Guard::with_key(key.to_vec()).expect("guard key");
    let (before, _) = client_for(&world, boot()).await;
    let args = json!({"table": "orders"});
    let (accepted, _) = first_round(&before, "drop_table", args.clone()).await;
    let result = send(
        &before,
        "drop_table",
        args.clone(),
        &accepted,
        accept_drop(),
    )
    .await;
    assert_natural(&result, Outcome::Executed);
    let (declined, _) = first_round(&before, "delete_file", json!({"path": "old.log"})).await;
    let result = send(
        &before,
        "delete_file",
        json!({"path": "old.log"}),
        &declined,
        Some(answer("decline", None)),
    )
    .await;
    assert_natural(&result, Outcome::Declined);
    let (unanswered, _) = first_round(&before, "delete_file", json!({"path": "report.csv"})).await;
    let _ = before.cancel().await;

    restore_orders(&world);
    let (after, _) = client_for(&world, boot()).await;
    let result = send(&after, "drop_table", args, &accepted, accept_drop()).await;
    assert_refused(&result, rmcp_guard::Code::InvalidState, Outcome::Restarted);
    assert!(text(&result).contains("restarted"), "{}", text(&result));
    assert_eq!(world.rows("orders"), Some(4), "the replay dropped nothing");
    let result = send(
        &after,
        "delete_file",
        json!({"path": "old.log"}),
        &declined,
        accept_delete(),
    )
    .await;
    assert_refused(&result, rmcp_guard::Code::InvalidState, Outcome::Restarted);
    assert_eq!(world.file("old.log").as_deref(), Some(OLD_LOG));
    // Never answered before the restart: the new process cannot know that, so it asks again.
    let result = send(
        &after,
        "delete_file",
        json!({"path": "report.csv"}),
        &unanswered,
        accept_delete(),
    )
    .await;
    assert_refused(&result, rmcp_guard::Code::InvalidState, Outcome::Restarted);
    assert_eq!(world.file("report.csv").as_deref(), Some(REPORT));
    let _ = after.cancel().await;
}

/// With a shared operation store the used states live in the store, so a state asked on one
/// replica (or before a restart) is still answerable on another, exactly once.
#[tokio::test]
async fn replicas_sharing_a_store_answer_each_others_states_once() {
    let world = World::new();
    let with_store = sharing_a_store(&world);
    let replica = || with_store(&[8u8; 32]);
    let (first, _) = client_for(&world, replica()).await;
    let args = json!({"table": "orders"});
    let (state, _) = first_round(&first, "drop_table", args.clone()).await;
    let _ = first.cancel().await;

    let (second, _) = client_for(&world, replica()).await;
    let result = send(&second, "drop_table", args.clone(), &state, accept_drop()).await;
    assert_natural(&result, Outcome::Executed);
    assert_eq!(world.rows("orders"), None);
    restore_orders(&world);
    let (third, _) = client_for(&world, replica()).await;
    let result = send(&third, "drop_table", args, &state, accept_drop()).await;
    assert_refused(&result, rmcp_guard::Code::InvalidState, Outcome::Replayed);
    assert_eq!(world.rows("orders"), Some(4));
    let _ = second.cancel().await;
    let _ = third.cancel().await;
}

/// Two replicas on one PostgreSQL store answer one accepted state at the same moment: the
/// spend commits with the audit writer's group on each, and the store's key on the nonce
/// lets exactly one of them run the call. The other is told the state was used or, when
/// its re-check ran after the winner's effect and before its own spend, that the target
/// changed (step 8 comes before the spend): either way it ran nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_replicas_on_postgres_run_a_state_once() {
    let Some(url) = guard_tests::pg_url("the racing MRTR replicas test") else {
        return;
    };
    let (store, admin, schema) = approval::fresh_pg(&url, "guard_spend_race").await;
    let world = World::new();
    let replica = || {
        let identity = EnvIdentity::new(Identity::new("t", "u", Vec::<String>::new()));
        Guard::with_key(vec![6u8; 32])
            .expect("guard key")
            .with_operations(Operations::new(store.clone(), identity))
    };
    let (first, _) = client_for(&world, replica()).await;
    let (second, _) = client_for(&world, replica()).await;
    for round in 0..5 {
        if round > 0 {
            restore_orders(&world);
        }
        let args = json!({"table": "orders"});
        let (state, _) = first_round(&first, "drop_table", args.clone()).await;
        let (one, two) = tokio::join!(
            send(&first, "drop_table", args.clone(), &state, accept_drop()),
            send(&second, "drop_table", args, &state, accept_drop())
        );
        let mut outcomes = [outcome(&one), outcome(&two)];
        outcomes.sort_by_key(|o| format!("{o:?}"));
        assert!(
            outcomes == [Some(Outcome::Executed), Some(Outcome::Replayed)]
                || outcomes == [Some(Outcome::Executed), Some(Outcome::StateChanged)],
            "round {round}: one ran, and the other ran nothing, told the state was used or the target changed: {outcomes:?}: {} / {}",
            text(&one),
            text(&two)
        );
        assert_eq!(world.rows("orders"), None, "round {round}: the effect ran");
    }
    let _ = first.cancel().await;
    let _ = second.cancel().await;
    approval::drop_pg(admin, &schema).await;
}

/// A deferred tool with an operation store spends an accepted state in the commit that
/// confirms the call: a replay of the retry is refused, and one call is scheduled and runs.
#[tokio::test]
async fn a_replayed_deferred_retry_schedules_one_call() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("operations.db")).expect("store");
    let server = Accounts::new(store, "acme", "alice");
    let client = connect(server.clone(), ScriptedHuman::new(MRTR)).await;
    let args = json!({"account": "checking"});
    let reason = Some(answer("accept", Some(json!({"reason": "moving banks"}))));
    let (state, _) = first_round(&client, "close_account_soon", args.clone()).await;
    let first = send(
        &client,
        "close_account_soon",
        args.clone(),
        &state,
        reason.clone(),
    )
    .await;
    assert_natural(&first, Outcome::Scheduled);
    let replay = send(&client, "close_account_soon", args, &state, reason).await;
    assert_refused(&replay, rmcp_guard::Code::InvalidState, Outcome::Replayed);
    tokio::time::sleep(crate::support::deferred::SOON_DUE).await;
    assert_eq!(server.run_due().await, 1, "one call was scheduled");
    assert_eq!(server.closings().len(), 1);
    let _ = client.cancel().await;
}

#[tokio::test]
async fn replayed_deploy_records_one_row() {
    let world = World::new();
    let (client, _human) = client_for(&world, guard()).await;
    let args = json!({"service": "billing"});
    let response = Some(answer(
        "accept",
        Some(json!({"approval_level": "urgent", "rollback_plan": "redeploy v41 now"})),
    ));
    let (state, _) = first_round(&client, "deploy", args.clone()).await;
    let first = send(&client, "deploy", args.clone(), &state, response.clone()).await;
    assert_natural(&first, Outcome::Executed);
    let second = send(&client, "deploy", args, &state, response).await;
    assert!(is_error(&second), "{}", text(&second));
    assert_ne!(outcome(&second), Some(Outcome::Executed));
    assert_eq!(world.deployments().len(), 1, "the effect ran once");
    let _ = client.cancel().await;
}

/// Every answer spends its state, whatever it says and however the call then ends: in
/// memory, and with an operation store, where an accept's spend waits for its
/// confirmation's commit and every earlier ending spends the state before it answers.
#[tokio::test]
async fn state_is_spent_by_any_answer() {
    let world = World::new();
    state_is_spent_by_any_answer_on(&world, guard()).await;
    state_is_spent_by_any_answer_on(&world, sharing_a_store(&world)(&[5u8; 32])).await;
}

async fn state_is_spent_by_any_answer_on(world: &World, guard: Guard) {
    let (client, _human) = client_for(world, guard).await;
    let args = json!({"path": "old.log"});
    for spent_by in [
        answer("decline", None),
        answer("cancel", None),
        answer("accept", Some(json!({"confirm": false}))),
        answer("accept", Some(json!({"confirm": "true"}))),
        answer("accept", Some(json!({"confirm": true, "by": "nobody"}))),
        json!({"action": "accept", "content": 5}),
    ] {
        let (state, _) = first_round(&client, "delete_file", args.clone()).await;
        let first = send(
            &client,
            "delete_file",
            args.clone(),
            &state,
            Some(spent_by.clone()),
        )
        .await;
        assert_ne!(outcome(&first), Some(Outcome::Executed), "{spent_by}");
        let second = send(
            &client,
            "delete_file",
            args.clone(),
            &state,
            accept_delete(),
        )
        .await;
        assert_refused(&second, rmcp_guard::Code::InvalidState, Outcome::Replayed);
        assert_eq!(
            world.file("old.log").as_deref(),
            Some(OLD_LOG),
            "{spent_by}"
        );
    }
    let _ = client.cancel().await;
}

// ── (e) expiry ─────────────────────────────────────────────────────────────────────────

#[tokio::test]
async fn expired_state_is_rejected() {
    let world = World::new();
    let (client, _human) =
        client_for(&world, guard().answer_timeout(Duration::from_millis(1))).await;
    let args = json!({"path": "old.log"});
    let (state, _) = first_round(&client, "delete_file", args.clone()).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    let result = send(&client, "delete_file", args, &state, accept_delete()).await;
    assert_refused(
        &result,
        rmcp_guard::Code::ConfirmationExpired,
        Outcome::Expired,
    );
    assert_eq!(world.file("old.log").as_deref(), Some(OLD_LOG));
    let _ = client.cancel().await;
}

// ── (f) no answer in the retry ─────────────────────────────────────────────────────────

#[tokio::test]
async fn retry_without_an_answer_is_rejected() {
    let world = World::new();
    let (client, _human) = client_for(&world, guard()).await;
    let args = json!({"path": "old.log"});

    let (state, _) = first_round(&client, "delete_file", args.clone()).await;
    let result = send(&client, "delete_file", args.clone(), &state, None).await;
    assert_refused(
        &result,
        rmcp_guard::Code::InvalidConfirmation,
        Outcome::NoAnswer,
    );
    assert_eq!(world.file("old.log").as_deref(), Some(OLD_LOG));

    // An answer under another key, or one that is not an elicitation result.
    let (state, _) = first_round(&client, "delete_file", args.clone()).await;
    let wrong_key = retry("delete_file", args.clone(), &state, None).with_input_responses(
        InputResponses::from([(
            "other".to_owned(),
            answer("accept", Some(json!({"confirm": true}))),
        )]),
    );
    let result = complete(call_once(&client, wrong_key).await);
    assert_refused(
        &result,
        rmcp_guard::Code::InvalidConfirmation,
        Outcome::NoAnswer,
    );
    assert_eq!(world.file("old.log").as_deref(), Some(OLD_LOG));

    let (state, _) = first_round(&client, "delete_file", args.clone()).await;
    let result = send(
        &client,
        "delete_file",
        args,
        &state,
        Some(json!({"confirm": true})),
    )
    .await;
    assert_refused(
        &result,
        rmcp_guard::Code::InvalidConfirmation,
        Outcome::NoAnswer,
    );
    assert_eq!(world.file("old.log").as_deref(), Some(OLD_LOG));
    let _ = client.cancel().await;
}

// ── (g) another server's key ───────────────────────────────────────────────────────────

#[tokio::test]
async fn state_from_another_key_is_rejected() {
    let world = World::new();
    let key_a = vec![7u8; 32];
    let key_b = vec![9u8; 32];
    // Replicas open each other's states only with a shared store (without one, states are
    // bound to the process that sealed them).
    let with_store = sharing_a_store(&world);
    let (a, _) = client_for(&world, with_store(&key_a)).await;
    let (b, _) = client_for(&world, with_store(&key_b)).await;
    let args = json!({"path": "old.log"});

    let (state, _) = first_round(&a, "delete_file", args.clone()).await;
    let result = send(&b, "delete_file", args.clone(), &state, accept_delete()).await;
    assert_refused(&result, rmcp_guard::Code::InvalidState, Outcome::BadState);
    assert_eq!(world.file("old.log").as_deref(), Some(OLD_LOG));

    // A replica sharing key A opens it: the rejection above is about the key.
    let (a2, _) = client_for(&world, with_store(&key_a)).await;
    let result = send(&a2, "delete_file", args, &state, accept_delete()).await;
    assert_natural(&result, Outcome::Executed);
    assert_eq!(world.file("old.log"), None);
    for client in [a, b, a2] {
        let _ = client.cancel().await;
    }
}

// ── (h) arguments the state cannot be bound to ─────────────────────────────────────────

// ── (i) another store ──────────────────────────────────────────────────────────────────

/// A guard with `key` and an operation store of its own, the SQLite file `name` under the
/// world, publishing every tool.
fn with_own_store(world: &World, name: &str, key: &[u8]) -> Guard {
    let store = SqliteStore::open(world.base.join(name)).expect("store opens");
    let identity = EnvIdentity::new(Identity::new("t", "u", Vec::<String>::new()));
    Guard::with_key(key.to_vec())
        .expect("guard key")
        .with_exposure(Exposure::all_tools())
        .with_operations(Operations::new(store, identity))
}

/// `logs/{a,b}.log` in the world's sandbox.
fn two_logs(world: &World) {
    std::fs::create_dir_all(world.path("logs")).unwrap();
    for name in ["logs/a.log", "logs/b.log"] {
        std::fs::write(world.path(name), format!("{name}\n")).unwrap();
    }
}

fn pick(keys: &[&str]) -> Option<Value> {
    Some(answer("accept", Some(json!({"items": keys}))))
}

/// Asserts the refusal of a state issued for another store: nothing done, and what to do.
fn assert_other_store(result: &CallToolResult) {
    assert_refused(result, rmcp_guard::Code::InvalidState, Outcome::OtherStore);
    let said = text(result);
    assert!(
        said.contains("share one operation store") && said.contains("Call the tool again"),
        "{said}"
    );
}

/// Two replicas with one key and stores of their own: one batch question, answered at each
/// with different picks, deletes only what the replica that asked was told. The other
/// cannot know the state was spent, so it refuses it, and nothing it would delete goes.
#[tokio::test]
async fn a_state_answered_at_a_replica_with_its_own_store_is_refused_there() {
    let world = World::new();
    two_logs(&world);
    let key = [4u8; 32];
    let (asked, _) = client_for(&world, with_own_store(&world, "a.db", &key)).await;
    let (other, _) = client_for(&world, with_own_store(&world, "b.db", &key)).await;
    let args = json!({"pattern": "logs/*.log"});
    let (state, _) = first_round(&asked, "delete_files", args.clone()).await;

    // Answered elsewhere first: refused, and the state is still the asking store's to spend.
    let result = send(
        &other,
        "delete_files",
        args.clone(),
        &state,
        pick(&["logs/b.log"]),
    )
    .await;
    assert_other_store(&result);
    assert!(world.file("logs/b.log").is_some(), "nothing was deleted");

    let result = send(
        &asked,
        "delete_files",
        args.clone(),
        &state,
        pick(&["logs/a.log"]),
    )
    .await;
    assert_natural(&result, Outcome::Executed);
    assert_eq!(world.file("logs/a.log"), None);

    let result = send(&other, "delete_files", args, &state, pick(&["logs/b.log"])).await;
    assert_other_store(&result);
    assert_eq!(
        world.file("logs/b.log").as_deref(),
        Some("logs/b.log\n"),
        "the other replica deleted nothing"
    );
    let _ = asked.cancel().await;
    let _ = other.cancel().await;
}

/// A state never crosses between a guard that keeps used states in a store and one that
/// keeps them in memory, though both hold the key: neither could see the other's spend.
#[tokio::test]
async fn states_cross_neither_way_between_a_store_and_memory() {
    let world = World::new();
    let key = [3u8; 32];
    let (stored, _) = client_for(&world, with_own_store(&world, "a.db", &key)).await;
    let (in_memory, _) =
        client_for(&world, Guard::with_key(key.to_vec()).expect("guard key")).await;
    let args = json!({"path": "old.log"});
    for (asks, answers) in [(&stored, &in_memory), (&in_memory, &stored)] {
        let (state, _) = first_round(asks, "delete_file", args.clone()).await;
        let result = send(
            answers,
            "delete_file",
            args.clone(),
            &state,
            accept_delete(),
        )
        .await;
        assert_other_store(&result);
        assert_eq!(world.file("old.log").as_deref(), Some(OLD_LOG));
    }
    let _ = stored.cancel().await;
    let _ = in_memory.cancel().await;
}

/// On PostgreSQL a store is a schema: a state asked on one schema is refused by a server
/// on another with the same key, and answered once by a replica with its own connections
/// to the asking schema.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_state_is_answered_only_on_the_postgres_schema_that_issued_it() {
    let Some(url) = guard_tests::pg_url("the MRTR states across PostgreSQL schemas test") else {
        return;
    };
    let (asking, admin, schema) = approval::fresh_pg(&url, "guard_issuer_a").await;
    let (elsewhere, other_admin, other_schema) = approval::fresh_pg(&url, "guard_issuer_b").await;
    let replica_store = rmcp_guard::ops::PgStore::from_config(
        order_cancel::stores::pg_config(&url, &schema, None).unwrap(),
        2,
    )
    .unwrap();
    let world = World::new();
    let on = |store: Arc<dyn rmcp_guard::ops::OperationStore>| {
        let identity = EnvIdentity::new(Identity::new("t", "u", Vec::<String>::new()));
        Guard::with_key(vec![2u8; 32])
            .expect("guard key")
            .with_operations(Operations::new(store, identity))
    };
    let (first, _) = client_for(&world, on(asking)).await;
    let (other, _) = client_for(&world, on(elsewhere)).await;
    let (replica, _) = client_for(&world, on(Arc::new(replica_store))).await;
    let args = json!({"table": "orders"});
    let (state, _) = first_round(&first, "drop_table", args.clone()).await;

    let result = send(&other, "drop_table", args.clone(), &state, accept_drop()).await;
    assert_other_store(&result);
    assert_eq!(world.rows("orders"), Some(4), "nothing was dropped");

    let result = send(&replica, "drop_table", args.clone(), &state, accept_drop()).await;
    assert_natural(&result, Outcome::Executed);
    restore_orders(&world);
    let result = send(&first, "drop_table", args, &state, accept_drop()).await;
    assert_refused(&result, rmcp_guard::Code::InvalidState, Outcome::Replayed);
    assert_eq!(world.rows("orders"), Some(4));
    for client in [first, other, replica] {
        let _ = client.cancel().await;
    }
    approval::drop_pg(other_admin, &other_schema).await;
    approval::drop_pg(admin, &schema).await;
}

/// safe-ops as a child process on the world's sandbox with its own data directory `home`
/// (its own operation store), `GUARD_HMAC_KEY` set, spoken to in MRTR.
async fn safe_ops_with_own_store(world: &World, home: &str) -> Client {
    let home = world.base.join(home);
    std::fs::create_dir_all(&home).unwrap();
    let mut command = tokio::process::Command::new(stdio::safe_ops_bin());
    command
        .arg("--root")
        .arg(&world.root)
        .arg("--db")
        .arg(&world.db)
        .env_remove("GUARD_ALLOWLIST")
        .env_remove("GUARD_READ_ONLY")
        .env("XDG_CONFIG_HOME", &home)
        .env("XDG_DATA_HOME", &home)
        .env(
            "GUARD_HMAC_KEY",
            "one key both safe-ops processes were given",
        )
        .env("RUST_LOG", "warn");
    let (transport, _) = rmcp::transport::TokioChildProcess::builder(command)
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .expect("safe-ops starts");
    ScriptedHuman::new(MRTR)
        .connect(transport)
        .await
        .expect("MCP session with safe-ops")
}

/// Two safe-ops processes with one key and their own stores: the `delete_files` question
/// one asked, answered at each with different picks, deletes only the pick made where it
/// was asked.
#[tokio::test]
async fn two_safe_ops_processes_with_their_own_stores_delete_only_the_askers_pick() {
    let world = World::new();
    two_logs(&world);
    let asked = safe_ops_with_own_store(&world, "first").await;
    let other = safe_ops_with_own_store(&world, "second").await;
    let args = json!({"pattern": "logs/*.log"});
    let (state, _) = first_round(&asked, "delete_files", args.clone()).await;
    let result = send(
        &asked,
        "delete_files",
        args.clone(),
        &state,
        pick(&["logs/a.log"]),
    )
    .await;
    assert_natural(&result, Outcome::Executed);
    let result = send(&other, "delete_files", args, &state, pick(&["logs/b.log"])).await;
    assert_other_store(&result);
    assert_eq!(world.file("logs/a.log"), None);
    assert_eq!(world.file("logs/b.log").as_deref(), Some("logs/b.log\n"));
    let _ = asked.cancel().await;
    let _ = other.cancel().await;
}
