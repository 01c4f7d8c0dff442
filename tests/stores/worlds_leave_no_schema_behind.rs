//! The tests' own cleanup: a PostgreSQL world drops its schema even when a task of the
//! test's runtime still has a transaction open on it (the audit sequencer between its read
//! and its commit, say). Dropping blocks that runtime, so the transaction can never end by
//! itself: without ending its connection first, the drop waited forever and the whole binary
//! with it.

use crate::support::orders::{Engine, World};

#[tokio::test]
async fn a_schema_is_dropped_while_the_blocked_runtime_holds_a_transaction_on_it() {
    let Some(world) = World::new(Engine::Postgres).await else {
        return;
    };
    let schema = world.schema.clone().unwrap();
    let url = guard_tests::configured_pg_url().unwrap();
    let (held, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    held.batch_execute(&format!(
        "BEGIN; SELECT count(*) FROM {schema}.guard_audit_log"
    ))
    .await
    .unwrap();
    drop(world);

    let (check, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let left = check
        .query_one(
            "SELECT count(*) FROM pg_namespace WHERE nspname = $1",
            &[&schema],
        )
        .await
        .unwrap()
        .get::<_, i64>(0);
    assert_eq!(left, 0, "{schema} is gone");
}
