//! The take-over step: the effect the approvers were shown (`guard_approvals.fingerprint`,
//! fixed) and `guard_approval_uses`, so an approved approval lets its effect run once.

use super::engines::{Engines, step};
use crate::store::{BoxFuture, StoreError, Tx};

/// What the take-over step adds, the same on both engines (with the index an approver's
/// inbox reads their links by).
const TAKE_OVER: &str = "ALTER TABLE guard_approvals ADD COLUMN fingerprint TEXT;
    CREATE INDEX IF NOT EXISTS guard_approvals_requester
        ON guard_approvals (tenant, user_id, bound_sha256, status);
    CREATE INDEX IF NOT EXISTS guard_approval_links_person
        ON guard_approval_links (tenant, user_id, role);
    CREATE TABLE IF NOT EXISTS guard_approval_uses (
        approval_id TEXT PRIMARY KEY REFERENCES guard_approvals (approval_id) ON DELETE CASCADE,
        trace_id    TEXT NOT NULL,
        at          BIGINT NOT NULL
    )";

/// SQLite's triggers of the take-over step.
#[cfg(feature = "sqlite")]
const SQLITE_TAKE_OVER: &str = "
    CREATE TRIGGER IF NOT EXISTS guard_approvals_fingerprint_fixed
        BEFORE UPDATE OF fingerprint ON guard_approvals
        WHEN NEW.fingerprint IS NOT OLD.fingerprint
    BEGIN
        SELECT RAISE(ABORT, 'guard: what an approval asks, of whom and until when never changes');
    END;
    CREATE TRIGGER IF NOT EXISTS guard_approval_uses_approved
        BEFORE INSERT ON guard_approval_uses
        WHEN NOT EXISTS (
            SELECT 1 FROM guard_approvals a
            WHERE a.approval_id = NEW.approval_id AND a.status = 'APPROVED')
    BEGIN
        SELECT RAISE(ABORT, 'guard: only an approved approval lets its effect run');
    END;
    CREATE TRIGGER IF NOT EXISTS guard_approval_uses_fixed
        BEFORE UPDATE ON guard_approval_uses
    BEGIN
        SELECT RAISE(ABORT, 'guard: an approval that let its effect run stays used');
    END";

/// PostgreSQL's triggers of the take-over step, raised as SQLSTATE class 23 like the
/// approvals' others.
#[cfg(feature = "postgres")]
const POSTGRES_TAKE_OVER: &str = r#"
CREATE OR REPLACE FUNCTION guard_approvals_fingerprint_check() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $guard$
BEGIN
    IF NEW.fingerprint IS DISTINCT FROM OLD.fingerprint THEN
        RAISE EXCEPTION 'guard: what approval % asks, of whom and until when never changes', OLD.approval_id
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END
$guard$;
CREATE OR REPLACE FUNCTION guard_approval_uses_check() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $guard$
DECLARE
    found_status text;
BEGIN
    IF TG_OP = 'UPDATE' THEN
        RAISE EXCEPTION 'guard: approval % let its effect run and stays used', OLD.approval_id
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    EXECUTE pg_catalog.format(
        'SELECT status FROM %I.guard_approvals WHERE approval_id = $1 FOR UPDATE',
        TG_TABLE_SCHEMA)
        INTO found_status USING NEW.approval_id;
    IF found_status IS DISTINCT FROM 'APPROVED' THEN
        RAISE EXCEPTION 'guard: approval % is not approved, so it lets no effect run', NEW.approval_id
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END
$guard$;
CREATE TRIGGER guard_approvals_fingerprint_check
    BEFORE UPDATE OF fingerprint ON guard_approvals
    FOR EACH ROW EXECUTE FUNCTION guard_approvals_fingerprint_check();
CREATE TRIGGER guard_approval_uses_check
    BEFORE INSERT OR UPDATE ON guard_approval_uses
    FOR EACH ROW EXECUTE FUNCTION guard_approval_uses_check();
"#;

/// The take-over step: the fingerprint the approvers saw, and the uses of approvals.
pub(crate) fn take_over(tx: &mut Tx) -> BoxFuture<'_, Result<(), StoreError>> {
    Box::pin(step(
        tx,
        TAKE_OVER,
        Engines {
            #[cfg(feature = "sqlite")]
            sqlite: SQLITE_TAKE_OVER,
            #[cfg(feature = "postgres")]
            postgres: POSTGRES_TAKE_OVER,
        },
    ))
}
