//! Spent request states and the rows an approval owns are ledger rows: the database refuses
//! the server's own role (on SQLite whoever writes the file, on PostgreSQL the application
//! role and the tables' owner alike) what guard never does. A spent state's nonce and
//! expiry never change and it stays until it expires by the database's clock; an approval's
//! links, decisions, use and task go only with the approval, and a decision never changes.
//! What guard does still goes through.

use std::sync::Arc;

use rmcp_guard::ops::{OperationStore, SqlValue, StoreError, now_ms};

use crate::support::orders::{Engine, World};

both_stores!(
    a_spent_state_stays_spent_until_it_expires,
    an_approvals_rows_go_only_with_it,
);

/// Runs `sql` in a transaction of its own, committed if it went through.
async fn run(store: &Arc<dyn OperationStore>, sql: &str) -> Result<u64, StoreError> {
    let mut tx = store.begin().await?;
    match tx.execute(sql, &[] as &[SqlValue]).await {
        Ok(n) => tx.commit().await.map(|()| n),
        Err(error) => {
            tx.rollback().await?;
            Err(error)
        }
    }
}

/// `sql` is refused: by a rule of the database, or (the server's PostgreSQL role) by the
/// grants it lacks.
async fn refused(store: &Arc<dyn OperationStore>, sql: &str, what: &str) {
    let error = run(store, sql)
        .await
        .expect_err(&format!("the database allowed {what}"));
    let text = error.to_string();
    assert!(
        text.contains("guard: ") || text.contains("permission denied") || error.is_constraint(),
        "{what}: refused for another reason: {text}"
    );
}

/// The roles that write guard's tables: the server's, and on PostgreSQL the tables' owner.
fn writers(world: &World) -> Vec<Arc<dyn OperationStore>> {
    match world.engine {
        Engine::Sqlite => vec![world.store.clone()],
        Engine::Postgres => vec![world.store.clone(), world.owner.clone()],
    }
}

async fn expiry(world: &World, nonce: &str) -> i64 {
    world
        .count(
            "SELECT expires_at AS n FROM guard_redeemed_states WHERE nonce = $1",
            &[nonce.into()],
        )
        .await
}

async fn a_spent_state_stays_spent_until_it_expires(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    let now = now_ms();
    let (live, gone) = (now + 3_600_000, now - 1);
    for (n, store) in writers(&world).iter().enumerate() {
        let spend = |nonce: &str, until: i64| {
            format!(
                "INSERT INTO guard_redeemed_states (nonce, expires_at) \
                 VALUES ('{nonce}-{n}', {until}) ON CONFLICT DO NOTHING"
            )
        };
        assert_eq!(run(store, &spend("live", live)).await.unwrap(), 1);
        assert_eq!(run(store, &spend("gone", gone)).await.unwrap(), 1);
        // Spent again, with another expiry: nothing changes.
        assert_eq!(run(store, &spend("live", now - 1)).await.unwrap(), 0);
        assert_eq!(expiry(&world, &format!("live-{n}")).await, live);
        for (sql, what) in [
            (
                format!(
                    "INSERT INTO guard_redeemed_states (nonce, expires_at) VALUES ('live-{n}', 1)"
                ),
                "a spent nonce inserted again with another expiry",
            ),
            (
                format!(
                    "INSERT INTO guard_redeemed_states (nonce, expires_at) VALUES ('live-{n}', 1) \
                     ON CONFLICT (nonce) DO UPDATE SET expires_at = excluded.expires_at"
                ),
                "a spent nonce's expiry moved by an upsert",
            ),
            (
                format!("UPDATE guard_redeemed_states SET expires_at = 1 WHERE nonce = 'live-{n}'"),
                "a spent state's expiry moved",
            ),
            (
                format!(
                    "UPDATE guard_redeemed_states SET nonce = 'other-{n}' WHERE nonce = 'live-{n}'"
                ),
                "a spent state's nonce changed",
            ),
            (
                format!("DELETE FROM guard_redeemed_states WHERE nonce = 'live-{n}'"),
                "a spent state deleted before it expired",
            ),
        ] {
            refused(store, &sql, what).await;
        }
        assert_eq!(expiry(&world, &format!("live-{n}")).await, live);
        // Once it expired by the database's clock, it goes (as the purge does).
        assert_eq!(
            run(
                store,
                &format!("DELETE FROM guard_redeemed_states WHERE nonce = 'gone-{n}'")
            )
            .await
            .unwrap(),
            1
        );
    }
}

async fn an_approvals_rows_go_only_with_it(engine: Engine) {
    let Some(world) = World::new(engine).await else {
        return;
    };
    let now = now_ms();
    for (n, store) in writers(&world).iter().enumerate() {
        let id = format!("a{n}");
        for sql in [
            format!(
                "INSERT INTO guard_approvals (approval_id, tool, target, summary, tenant, user_id,
                     trace_id, bound_sha256, required, created_at, expires_at, status, approvers)
                 VALUES ('{id}', 'deploy', 'production', 'Deploy', 'acme', 'alice', 't', 'b', 1,
                     {now}, {}, 'PENDING', '[]')",
                now + 60_000
            ),
            format!(
                "INSERT INTO guard_approval_links
                     (token_sha256, approval_id, role, tenant, user_id, csrf, seal)
                 VALUES ('{id}-alice', '{id}', 'REQUESTER', 'acme', 'alice', 'c', 's')"
            ),
            format!(
                "INSERT INTO guard_approval_decisions
                     (approval_id, tenant, user_id, skeleton, decision, at, link_sha256, seal)
                 VALUES ('{id}', 'acme', 'alice', 'alice', 'APPROVE', {now}, '{id}-alice', 's')"
            ),
            format!(
                "UPDATE guard_approval_links SET used_at = {now} WHERE token_sha256 = '{id}-alice'"
            ),
            format!(
                "UPDATE guard_approvals SET status = 'APPROVED', ended_at = {now}
                 WHERE approval_id = '{id}'"
            ),
            format!(
                "INSERT INTO guard_approval_uses (approval_id, trace_id, at)
                 VALUES ('{id}', 't', {now})"
            ),
            format!(
                "INSERT INTO guard_approval_tasks (approval_id, arguments) VALUES ('{id}', '{{}}')"
            ),
        ] {
            run(store, &sql).await.expect(&sql);
        }
        for (sql, what) in [
            (
                format!("DELETE FROM guard_approval_links WHERE approval_id = '{id}'"),
                "a link deleted while its approval stands",
            ),
            (
                format!("DELETE FROM guard_approval_decisions WHERE approval_id = '{id}'"),
                "a decision deleted while its approval stands",
            ),
            (
                format!("DELETE FROM guard_approval_uses WHERE approval_id = '{id}'"),
                "a use deleted, so the effect could run again",
            ),
            (
                format!("DELETE FROM guard_approval_tasks WHERE approval_id = '{id}'"),
                "a task deleted while its approval stands",
            ),
            (
                format!(
                    "UPDATE guard_approval_decisions SET at = at + 1 WHERE approval_id = '{id}'"
                ),
                "a decision rewritten",
            ),
        ] {
            refused(store, &sql, what).await;
        }
        // An ended approval is purged with everything it owns.
        run(
            store,
            &format!("DELETE FROM guard_approvals WHERE approval_id = '{id}'"),
        )
        .await
        .expect("an ended approval is purged with its rows");
        for table in [
            "guard_approval_links",
            "guard_approval_decisions",
            "guard_approval_uses",
            "guard_approval_tasks",
        ] {
            let left = world
                .count(
                    &format!("SELECT count(*) AS n FROM {table} WHERE approval_id = $1"),
                    &[id.as_str().into()],
                )
                .await;
            assert_eq!(left, 0, "{table} went with approval {id}");
        }
    }
}
