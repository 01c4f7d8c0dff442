//! The seals step: the approvers an approval lists (fixed), the seals of links and
//! decisions, and the rules that a link or a decision is only for the requester or a listed
//! approver; approvals pending when it runs are withdrawn.

use super::engines::{Engines, step};
use crate::store::{BoxFuture, StoreError, Tx};

/// What the seals step adds, the same on both engines: the approvers each approval lists,
/// and the seals of links and decisions ([`crate::approval`] counts only decisions whose
/// seals verify under the guard's key, which the database never holds).
const SEALS: &str = "ALTER TABLE guard_approvals ADD COLUMN approvers TEXT;
    ALTER TABLE guard_approval_links ADD COLUMN seal TEXT;
    ALTER TABLE guard_approval_decisions ADD COLUMN link_sha256 TEXT;
    ALTER TABLE guard_approval_decisions ADD COLUMN seal TEXT";

/// SQLite's rules of the seals step. Approvals pending when the step runs were opened
/// without a list of approvers and their links without seals: they are withdrawn, so the
/// requester's next call opens a new one (their decisions, unsealed, would never count).
/// A SQLite file's owner can drop these triggers: what holds against it is that guard
/// counts only sealed decisions, whatever the file says.
#[cfg(feature = "sqlite")]
const SQLITE_SEALS: &str = "
    UPDATE guard_approvals
        SET status = 'WITHDRAWN',
            ended_at = CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)
        WHERE status = 'PENDING';
    CREATE TRIGGER IF NOT EXISTS guard_approvals_open_pending
        BEFORE INSERT ON guard_approvals
        WHEN NEW.status <> 'PENDING' OR NEW.ended_at IS NOT NULL OR NEW.ended_by IS NOT NULL
          OR NEW.typed IS NOT NULL
          OR CASE WHEN json_valid(NEW.approvers) AND json_type(NEW.approvers) = 'array' THEN
                 EXISTS (SELECT 1 FROM json_each(NEW.approvers) e
                         WHERE e.type <> 'text' OR e.value = NEW.user_id)
                 OR (NEW.required > 1 AND json_array_length(NEW.approvers) < NEW.required)
             ELSE 1 END
    BEGIN
        SELECT RAISE(ABORT, 'guard: an approval opens pending, listing enough approvers and never its requester');
    END;
    CREATE TRIGGER IF NOT EXISTS guard_approvals_approvers_fixed
        BEFORE UPDATE OF approvers ON guard_approvals
        WHEN NEW.approvers IS NOT OLD.approvers
    BEGIN
        SELECT RAISE(ABORT, 'guard: what an approval asks, of whom and until when never changes');
    END;
    CREATE TRIGGER IF NOT EXISTS guard_approvals_approved_by_sealed
        BEFORE UPDATE OF status ON guard_approvals
        WHEN NEW.status = 'APPROVED' AND (
            SELECT count(*) FROM guard_approval_decisions d
            WHERE d.approval_id = NEW.approval_id AND d.decision = 'APPROVE'
              AND d.seal IS NOT NULL AND d.link_sha256 IS NOT NULL) < NEW.required
    BEGIN
        SELECT RAISE(ABORT, 'guard: an approval is APPROVED only with its required approvals, each through its link');
    END;
    CREATE TRIGGER IF NOT EXISTS guard_approval_links_issued
        BEFORE INSERT ON guard_approval_links
        WHEN NEW.seal IS NULL OR NOT EXISTS (
            SELECT 1 FROM guard_approvals a
            WHERE a.approval_id = NEW.approval_id AND a.status = 'PENDING'
              AND a.tenant = NEW.tenant
              AND CASE NEW.role
                  WHEN 'REQUESTER' THEN a.user_id = NEW.user_id
                  ELSE a.required > 1 AND a.user_id <> NEW.user_id
                      AND EXISTS (SELECT 1 FROM json_each(a.approvers) e WHERE e.value = NEW.user_id)
                  END)
    BEGIN
        SELECT RAISE(ABORT, 'guard: a pending approval issues links to its requester and to the approvers it lists only');
    END;
    CREATE TRIGGER IF NOT EXISTS guard_approval_links_seal_fixed
        BEFORE UPDATE OF seal ON guard_approval_links
        WHEN NEW.seal IS NOT OLD.seal
    BEGIN
        SELECT RAISE(ABORT, 'guard: a link speaks for one person and decides once');
    END;
    CREATE TRIGGER IF NOT EXISTS guard_approval_decisions_through_a_link
        BEFORE INSERT ON guard_approval_decisions
        WHEN NEW.seal IS NULL OR NOT EXISTS (
            SELECT 1 FROM guard_approval_links l
                JOIN guard_approvals a ON a.approval_id = l.approval_id
            WHERE l.token_sha256 = NEW.link_sha256 AND l.approval_id = NEW.approval_id
              AND l.tenant = NEW.tenant AND l.user_id = NEW.user_id AND l.used_at IS NULL
              AND a.tenant = NEW.tenant
              AND CASE l.role
                  WHEN 'REQUESTER' THEN a.user_id = NEW.user_id
                      AND (a.required = 1 OR NEW.decision = 'REJECT')
                  ELSE a.required > 1 AND a.user_id <> NEW.user_id
                      AND EXISTS (SELECT 1 FROM json_each(a.approvers) e WHERE e.value = NEW.user_id)
                  END)
    BEGIN
        SELECT RAISE(ABORT, 'guard: a decision comes through its own unused link, from an approver the approval lists (the requester approves only what needs no one else)');
    END";

/// PostgreSQL's rules of the seals step, raised as SQLSTATE class 23 like the approvals'
/// others; pending approvals are withdrawn as on SQLite. They hold for every role, the
/// tables' owner included, and the server's role holds no grant to change an approval's
/// list or a seal.
#[cfg(feature = "postgres")]
const POSTGRES_SEALS: &str = r#"
UPDATE guard_approvals
    SET status = 'WITHDRAWN',
        ended_at = (extract(epoch FROM clock_timestamp()) * 1000)::bigint
    WHERE status = 'PENDING';
CREATE OR REPLACE FUNCTION guard_approvals_sealed_check() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $guard$
DECLARE
    listed jsonb;
    sealed bigint;
BEGIN
    IF TG_OP = 'UPDATE' THEN
        IF NEW.approvers IS DISTINCT FROM OLD.approvers THEN
            RAISE EXCEPTION 'guard: whom approval % asks never changes', OLD.approval_id
                USING ERRCODE = 'integrity_constraint_violation';
        END IF;
        IF NEW.status = 'APPROVED' AND OLD.status IS DISTINCT FROM 'APPROVED' THEN
            EXECUTE pg_catalog.format(
                'SELECT count(*) FROM %I.guard_approval_decisions
                 WHERE approval_id = $1 AND decision = ''APPROVE''
                   AND seal IS NOT NULL AND link_sha256 IS NOT NULL', TG_TABLE_SCHEMA)
                INTO sealed USING NEW.approval_id;
            IF sealed < NEW.required THEN
                RAISE EXCEPTION 'guard: approval % has % of % approvals through their links and is not APPROVED', NEW.approval_id, sealed, NEW.required
                    USING ERRCODE = 'integrity_constraint_violation';
            END IF;
        END IF;
        RETURN NEW;
    END IF;
    BEGIN
        listed := NEW.approvers::jsonb;
    EXCEPTION WHEN others THEN
        listed := NULL;
    END;
    IF NEW.status IS DISTINCT FROM 'PENDING' OR NEW.ended_at IS NOT NULL
            OR NEW.ended_by IS NOT NULL OR NEW.typed IS NOT NULL
            OR listed IS NULL OR pg_catalog.jsonb_typeof(listed) IS DISTINCT FROM 'array'
            OR EXISTS (SELECT 1 FROM pg_catalog.jsonb_array_elements(listed) AS e(v)
                       WHERE pg_catalog.jsonb_typeof(e.v) <> 'string' OR e.v #>> '{}' = NEW.user_id)
            OR (NEW.required > 1 AND pg_catalog.jsonb_array_length(listed) < NEW.required) THEN
        RAISE EXCEPTION 'guard: approval % opens pending, listing enough approvers and never its requester', NEW.approval_id
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END
$guard$;
CREATE OR REPLACE FUNCTION guard_approval_links_issued_check() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $guard$
DECLARE
    found_status text;
    found_tenant text;
    found_user text;
    found_required bigint;
    found_listed text;
BEGIN
    IF TG_OP = 'UPDATE' THEN
        IF NEW.seal IS DISTINCT FROM OLD.seal THEN
            RAISE EXCEPTION 'guard: a link of approval % speaks for one person and decides once', OLD.approval_id
                USING ERRCODE = 'integrity_constraint_violation';
        END IF;
        RETURN NEW;
    END IF;
    EXECUTE pg_catalog.format(
        'SELECT status, tenant, user_id, required, approvers FROM %I.guard_approvals
         WHERE approval_id = $1', TG_TABLE_SCHEMA)
        INTO found_status, found_tenant, found_user, found_required, found_listed
        USING NEW.approval_id;
    IF NEW.seal IS NULL OR found_status IS DISTINCT FROM 'PENDING'
            OR found_tenant IS DISTINCT FROM NEW.tenant
            OR (NEW.role = 'REQUESTER' AND found_user IS DISTINCT FROM NEW.user_id)
            OR (NEW.role = 'APPROVER' AND (found_required <= 1 OR found_user = NEW.user_id
                OR NOT EXISTS (SELECT 1 FROM pg_catalog.jsonb_array_elements_text(found_listed::jsonb) AS e(v)
                               WHERE e.v = NEW.user_id))) THEN
        RAISE EXCEPTION 'guard: pending approval % issues links to its requester and to the approvers it lists only', NEW.approval_id
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END
$guard$;
CREATE OR REPLACE FUNCTION guard_approval_decisions_sealed_check() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $guard$
DECLARE
    link_role text;
    found_tenant text;
    found_user text;
    found_required bigint;
    found_listed text;
BEGIN
    EXECUTE pg_catalog.format(
        'SELECT l.role, a.tenant, a.user_id, a.required, a.approvers
         FROM %I.guard_approval_links l JOIN %I.guard_approvals a ON a.approval_id = l.approval_id
         WHERE l.token_sha256 = $1 AND l.approval_id = $2 AND l.tenant = $3 AND l.user_id = $4
           AND l.used_at IS NULL', TG_TABLE_SCHEMA, TG_TABLE_SCHEMA)
        INTO link_role, found_tenant, found_user, found_required, found_listed
        USING NEW.link_sha256, NEW.approval_id, NEW.tenant, NEW.user_id;
    IF NEW.seal IS NULL OR link_role IS NULL OR found_tenant IS DISTINCT FROM NEW.tenant
            OR (link_role = 'REQUESTER' AND (found_user IS DISTINCT FROM NEW.user_id
                OR (found_required > 1 AND NEW.decision = 'APPROVE')))
            OR (link_role = 'APPROVER' AND (found_required <= 1 OR found_user = NEW.user_id
                OR NOT EXISTS (SELECT 1 FROM pg_catalog.jsonb_array_elements_text(found_listed::jsonb) AS e(v)
                               WHERE e.v = NEW.user_id))) THEN
        RAISE EXCEPTION 'guard: a decision on approval % comes through its own unused link, from an approver the approval lists (the requester approves only what needs no one else)', NEW.approval_id
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END
$guard$;
CREATE TRIGGER guard_approvals_sealed_check
    BEFORE INSERT OR UPDATE ON guard_approvals
    FOR EACH ROW EXECUTE FUNCTION guard_approvals_sealed_check();
CREATE TRIGGER guard_approval_links_issued_check
    BEFORE INSERT OR UPDATE ON guard_approval_links
    FOR EACH ROW EXECUTE FUNCTION guard_approval_links_issued_check();
CREATE TRIGGER guard_approval_decisions_sealed_check
    BEFORE INSERT ON guard_approval_decisions
    FOR EACH ROW EXECUTE FUNCTION guard_approval_decisions_sealed_check();
"#;

/// The seals step: approvals list their approvers, links and decisions carry their seals,
/// and the database refuses a link or a decision for anyone else.
pub(crate) fn seals(tx: &mut Tx) -> BoxFuture<'_, Result<(), StoreError>> {
    Box::pin(step(
        tx,
        SEALS,
        Engines {
            #[cfg(feature = "sqlite")]
            sqlite: SQLITE_SEALS,
            #[cfg(feature = "postgres")]
            postgres: POSTGRES_SEALS,
        },
    ))
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
