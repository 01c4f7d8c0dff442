//! Grants on both engines, as replicas share them: racing calls from separate servers take a
//! grant's uses exactly its count (never one more), a grant opened on one server covers calls
//! on another and a revocation on one holds on every other, and the database itself refuses
//! a use past the count, a use of a revoked grant, a wider scope and a deleted grant, even to
//! its owner. On PostgreSQL the server runs as the restricted role.

use std::sync::Arc;

use rmcp_guard::{
    grant::{Revoked, Revoker},
    ops::{OperationStore, SqlValue},
    outcome::Outcome,
    person::Person,
};
use rmcp_guard_test::testing::{Answer, ScriptedHuman};
use serde_json::json;

use crate::support::{
    orders::{Engine, World},
    shelf::shelf,
    *,
};

both_stores!(
    a_call_without_a_grant_is_asked_beside_an_open_writer,
    racing_replicas_take_a_grant_exactly_its_count,
    a_revocation_on_one_replica_holds_on_every_other,
    the_database_refuses_what_guard_never_does,
);

/// Calls `tool` on `title` as alice through a fresh server on `store` (a replica), the human
/// answering with `answer`; the outcome and whether the human was asked.
async fn shelve(
    store: &Arc<dyn OperationStore>,
    tool: &str,
    title: &str,
    answer: Answer,
) -> (Option<Outcome>, bool) {
    let human = ScriptedHuman::new(PUSH);
    human.will(answer);
    let client = connect(shelf(store.clone(), "alice"), human.clone()).await;
    let result = call(&client, tool, json!({"title": title})).await;
    let _ = client.cancel().await;
    (outcome(&result), !human.shown().is_empty())
}

/// Opens alice's grant over the shelf (2 more calls) on one replica.
async fn open(store: &Arc<dyn OperationStore>) {
    let grant = Answer::Accept(json!({"confirm": true, "guard_grant": "grant"}));
    let (outcome, asked) = shelve(store, "remove_book", "a", grant).await;
    assert_eq!(outcome, Some(Outcome::Executed));
    assert!(asked);
}

/// Looking for a grant takes no writer's turn: with another writer's transaction open on
/// the store (on SQLite, the store's one write lock), a call that holds no grant is still
/// asked, and answered, instead of waiting for that writer to end.
async fn a_call_without_a_grant_is_asked_beside_an_open_writer(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    let mut held = world.store.begin().await.unwrap();
    held.execute(
        "INSERT INTO guard_redeemed_states (nonce, expires_at) VALUES ($1, 0)",
        &[SqlValue::from("held by another writer")],
    )
    .await
    .unwrap();
    let call = shelve(&world.store, "remove_book", "a", Answer::Decline);
    let ended = tokio::time::timeout(std::time::Duration::from_secs(60), call).await;
    assert_eq!(
        ended.expect("the call waited for another writer's transaction"),
        (Some(Outcome::Declined), true)
    );
    held.rollback().await.unwrap();
}

async fn racing_replicas_take_a_grant_exactly_its_count(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    open(&world.store).await;
    let calls: Vec<_> = (0..8)
        .map(|i| {
            let store = world.store.clone();
            tokio::spawn(async move {
                shelve(&store, "remove_book", &format!("b{i}"), Answer::Decline).await
            })
        })
        .collect();
    let mut covered = 0;
    for call in calls {
        match call.await.unwrap() {
            (Some(Outcome::Executed), false) => covered += 1,
            (Some(Outcome::Declined), true) => {}
            other => panic!("a call ended as {other:?}"),
        }
    }
    assert_eq!(covered, 2, "the grant covered exactly its 2 calls");
    let used = world.count("SELECT used AS n FROM guard_grants", &[]).await;
    assert_eq!(used, 2);
}

async fn a_revocation_on_one_replica_holds_on_every_other(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    open(&world.store).await;
    let (outcome, asked) = shelve(&world.store, "remove_book", "b", Answer::Decline).await;
    assert_eq!(
        (outcome, asked),
        (Some(Outcome::Executed), false),
        "covered on a replica"
    );
    let grants = rmcp_guard::Guarded::guard(&shelf(world.store.clone(), "alice"))
        .grants()
        .expect("the shelf keeps grants");
    let alice = Person::new("local", "alice").unwrap();
    let held = grants
        .held_by(&alice, rmcp_guard::ops::now_ms(), 10)
        .await
        .unwrap();
    let [grant] = &held[..] else {
        panic!("one grant: {held:?}");
    };
    assert!(matches!(
        grants
            .revoke(
                &grant.grant_id,
                Revoker::Holder(&alice),
                rmcp_guard::ops::now_ms(),
                "t"
            )
            .await
            .unwrap(),
        Revoked::Now(_)
    ));
    let (outcome, asked) = shelve(&world.store, "remove_book", "c", Answer::Decline).await;
    assert_eq!(
        (outcome, asked),
        (Some(Outcome::Declined), true),
        "asked again"
    );
}

async fn the_database_refuses_what_guard_never_does(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    open(&world.store).await;
    let refused = |sql: &'static str| {
        let owner = world.owner.clone();
        async move {
            let mut tx = owner.begin().await.unwrap();
            let done = tx.execute(sql, &[] as &[SqlValue]).await;
            let _ = tx.rollback().await;
            done.is_err()
        }
    };
    for (sql, why) in [
        (
            "UPDATE guard_grants SET used = used + 2",
            "two uses at once",
        ),
        ("UPDATE guard_grants SET used = 3", "past the count"),
        (
            "UPDATE guard_grants SET scope = 'everything'",
            "a wider scope",
        ),
        (
            "UPDATE guard_grants SET expires_at = expires_at + 1",
            "a later end",
        ),
        (
            "UPDATE guard_grants SET user_id = 'mallory'",
            "another holder",
        ),
        ("DELETE FROM guard_grants", "history erased"),
        (
            "INSERT INTO guard_grants (grant_id, tenant, user_id, tool, scope, answer, calls, used,
                 created_at, expires_at, trace_id)
             VALUES ('g-forged', 'local', 'alice', 'remove_book', 'books on the shelf', '{}', 5, 4,
                 1, 2, 't')",
            "a grant opened half used",
        ),
    ] {
        assert!(refused(sql).await, "the owner could: {why}");
    }
}
