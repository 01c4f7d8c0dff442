//! The tasks step: `guard_approval_tasks`, approvals answered as MCP Tasks, with the call
//! they run and how each ended (once).

use super::engines::{Engines, step};
use crate::store::{BoxFuture, StoreError, Tx};

/// The tasks step's table, the same on both engines.
const TASKS: &str = "CREATE TABLE IF NOT EXISTS guard_approval_tasks (
        approval_id TEXT PRIMARY KEY REFERENCES guard_approvals (approval_id) ON DELETE CASCADE,
        arguments   TEXT NOT NULL,
        runner      TEXT,
        run_at      BIGINT,
        ended       TEXT CHECK (ended IN ('completed', 'failed', 'cancelled')),
        result      TEXT,
        CHECK ((ended IS NULL) = (result IS NULL))
    )";

/// SQLite's trigger of the tasks step.
#[cfg(feature = "sqlite")]
const SQLITE_TASKS: &str = "
    CREATE TRIGGER IF NOT EXISTS guard_approval_tasks_fixed
        BEFORE UPDATE ON guard_approval_tasks
        WHEN NEW.approval_id IS NOT OLD.approval_id OR NEW.arguments IS NOT OLD.arguments
          OR OLD.result IS NOT NULL
    BEGIN
        SELECT RAISE(ABORT, 'guard: a task runs the call it was opened for, and ends once');
    END";

/// PostgreSQL's trigger of the tasks step, raised as SQLSTATE class 23 like the others.
#[cfg(feature = "postgres")]
const POSTGRES_TASKS: &str = r#"
CREATE OR REPLACE FUNCTION guard_approval_tasks_check() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $guard$
BEGIN
    IF NEW.approval_id IS DISTINCT FROM OLD.approval_id
            OR NEW.arguments IS DISTINCT FROM OLD.arguments OR OLD.result IS NOT NULL THEN
        RAISE EXCEPTION 'guard: task % runs the call it was opened for, and ends once', OLD.approval_id
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END
$guard$;
CREATE TRIGGER guard_approval_tasks_check
    BEFORE UPDATE ON guard_approval_tasks
    FOR EACH ROW EXECUTE FUNCTION guard_approval_tasks_check();
"#;

/// The tasks step: approvals answered as MCP Tasks, and how each ended.
pub(crate) fn tasks(tx: &mut Tx) -> BoxFuture<'_, Result<(), StoreError>> {
    Box::pin(step(
        tx,
        TASKS,
        Engines {
            #[cfg(feature = "sqlite")]
            sqlite: SQLITE_TASKS,
            #[cfg(feature = "postgres")]
            postgres: POSTGRES_TASKS,
        },
    ))
}
