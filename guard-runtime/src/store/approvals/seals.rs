//! The seals step: the approvers an approval lists and the seals of links and decisions
//! (the ledger's rules keep a link or a decision only for the requester or a listed
//! approver). Approvals pending when it runs were opened without a list of approvers and
//! their links without seals: they are withdrawn, so the requester's next call opens a new
//! one (their decisions, unsealed, would never count).

use crate::store::{BoxFuture, StoreError, Tx, ledger::clock::now_sql};

/// What the seals step adds, the same on both engines: the approvers each approval lists,
/// and the seals of links and decisions ([`crate::approval`] counts only decisions whose
/// seals verify under the guard's key, which the database never holds).
const SEALS: &str = "ALTER TABLE guard_approvals ADD COLUMN approvers TEXT;
    ALTER TABLE guard_approval_links ADD COLUMN seal TEXT;
    ALTER TABLE guard_approval_decisions ADD COLUMN link_sha256 TEXT;
    ALTER TABLE guard_approval_decisions ADD COLUMN seal TEXT";

/// The seals step: approvals list their approvers, links and decisions carry their seals,
/// and pending approvals are withdrawn.
pub(crate) fn seals(tx: &mut Tx) -> BoxFuture<'_, Result<(), StoreError>> {
    Box::pin(async move {
        tx.batch(SEALS).await?;
        let withdraw = format!(
            "UPDATE guard_approvals SET status = 'WITHDRAWN', ended_at = {}
             WHERE status = 'PENDING'",
            now_sql(tx.dialect())
        );
        tx.batch(&withdraw).await
    })
}

#[cfg(all(test, feature = "sqlite"))]
mod tests {
    use crate::store::{OperationStore, SqliteStore};

    async fn statuses(store: &SqliteStore) -> Vec<(String, String)> {
        let mut tx = store.begin().await.unwrap();
        let rows = tx
            .query(
                "SELECT approval_id, status FROM guard_approvals ORDER BY approval_id",
                &[],
            )
            .await
            .unwrap();
        tx.rollback().await.unwrap();
        rows.iter()
            .map(|r| {
                let text = |c| r.text(c).unwrap().to_owned();
                (text("approval_id"), text("status"))
            })
            .collect()
    }

    #[tokio::test]
    async fn the_seals_step_withdraws_approvals_still_pending_and_leaves_ended_ones() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("guard.db");
        let steps = &crate::schema::STEPS;
        let seals = steps
            .iter()
            .position(|step| step.name == "approval seals")
            .unwrap();
        let before = SqliteStore::open_with(&path, &steps[..seals]).unwrap();
        let now = crate::store::now_ms();
        let mut tx = before.begin().await.unwrap();
        for (id, required) in [("pending", 1_i64), ("approved", 1)] {
            tx.execute(
                "INSERT INTO guard_approvals (approval_id, tool, target, summary, tenant, user_id,
                     trace_id, bound_sha256, required, created_at, expires_at, status)
                 VALUES ($1, 'deploy', 'production', 'Deploy', 'acme', 'alice', 't', 'b', $2,
                     $3, $4, 'PENDING')",
                &[
                    id.into(),
                    required.into(),
                    now.into(),
                    (now + 60_000).into(),
                ],
            )
            .await
            .unwrap();
        }
        tx.execute(
            "INSERT INTO guard_approval_decisions (approval_id, tenant, user_id, skeleton,
                 decision, at) VALUES ('approved', 'acme', 'alice', 'alice', 'APPROVE', $1)",
            &[now.into()],
        )
        .await
        .unwrap();
        tx.execute(
            "UPDATE guard_approvals SET status = 'APPROVED', ended_at = $1
             WHERE approval_id = 'approved'",
            &[now.into()],
        )
        .await
        .unwrap();
        tx.commit().await.unwrap();
        drop(before);

        let after = SqliteStore::open(&path).unwrap();
        assert_eq!(
            statuses(&after).await,
            [
                ("approved".to_owned(), "APPROVED".to_owned()),
                ("pending".to_owned(), "WITHDRAWN".to_owned())
            ]
        );
    }
}
