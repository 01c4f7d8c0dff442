//! `guard_deferred`: one row per deferred call, and what the database enforces about it on
//! both engines: a call is stored `SCHEDULED`, ends once (`WITHDRAWN`, `RAN`,
//! `STATE_CHANGED` or `FAILED`), is never deleted, and never changes whose it is, what it
//! runs (tool, target, arguments, form, the fingerprint the human saw) or when.

use crate::store::{BoxFuture, Dialect, StoreError, Tx};

/// The table, the same on both engines. `arguments` and `form` are canonical JSON.
const TABLE: &str = "CREATE TABLE IF NOT EXISTS guard_deferred (
    operation_id     TEXT PRIMARY KEY,
    tenant           TEXT NOT NULL,
    user_id          TEXT NOT NULL,
    tool             TEXT NOT NULL,
    target           TEXT NOT NULL,
    arguments        TEXT NOT NULL,
    arguments_sha256 TEXT NOT NULL,
    form             TEXT NOT NULL,
    fingerprint      TEXT NOT NULL,
    status           TEXT NOT NULL
        CHECK (status IN ('SCHEDULED', 'WITHDRAWN', 'RAN', 'STATE_CHANGED', 'FAILED')),
    created_at       BIGINT NOT NULL,
    due_at           BIGINT NOT NULL CHECK (due_at > created_at),
    closed_at        BIGINT,
    result           TEXT,
    trace_id         TEXT NOT NULL,
    CHECK ((status = 'SCHEDULED') = (closed_at IS NULL)),
    CHECK ((status IN ('SCHEDULED', 'WITHDRAWN')) = (result IS NULL))
);
CREATE INDEX IF NOT EXISTS guard_deferred_due ON guard_deferred (status, due_at);";

/// SQLite: the same rules as [`POSTGRES`], as triggers that abort the statement.
const SQLITE: &str = "CREATE TRIGGER IF NOT EXISTS guard_deferred_starts_scheduled
    BEFORE INSERT ON guard_deferred
    WHEN NEW.status IS NOT 'SCHEDULED' OR NEW.result IS NOT NULL OR NEW.closed_at IS NOT NULL
BEGIN
    SELECT RAISE(ABORT, 'guard: a new deferred call must be SCHEDULED with no result');
END;
CREATE TRIGGER IF NOT EXISTS guard_deferred_ends_once
    BEFORE UPDATE ON guard_deferred
    WHEN OLD.status IS NOT 'SCHEDULED'
        OR NEW.operation_id IS NOT OLD.operation_id OR NEW.tenant IS NOT OLD.tenant
        OR NEW.user_id IS NOT OLD.user_id OR NEW.tool IS NOT OLD.tool
        OR NEW.target IS NOT OLD.target OR NEW.arguments IS NOT OLD.arguments
        OR NEW.arguments_sha256 IS NOT OLD.arguments_sha256 OR NEW.form IS NOT OLD.form
        OR NEW.fingerprint IS NOT OLD.fingerprint OR NEW.created_at IS NOT OLD.created_at
        OR NEW.due_at IS NOT OLD.due_at OR NEW.trace_id IS NOT OLD.trace_id
BEGIN
    SELECT RAISE(ABORT, 'guard: a deferred call ends once, and only its status, result and closing time change');
END;
CREATE TRIGGER IF NOT EXISTS guard_deferred_kept
    BEFORE DELETE ON guard_deferred
BEGIN
    SELECT RAISE(ABORT, 'guard: deferred calls are history and are never deleted');
END;";

/// PostgreSQL: one trigger for every role (the owner included), its `search_path` pinned as
/// guard's other triggers'.
const POSTGRES: &str = r#"
CREATE OR REPLACE FUNCTION guard_deferred_ends_once() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $guard$
BEGIN
    IF TG_OP = 'DELETE' THEN
        RAISE EXCEPTION 'guard: deferred call % is history and is never deleted', OLD.operation_id
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF TG_OP = 'INSERT' THEN
        IF NEW.status IS DISTINCT FROM 'SCHEDULED' OR NEW.result IS NOT NULL
                OR NEW.closed_at IS NOT NULL THEN
            RAISE EXCEPTION 'guard: a new deferred call % must be SCHEDULED with no result', NEW.operation_id
                USING ERRCODE = 'insufficient_privilege';
        END IF;
        RETURN NEW;
    END IF;
    IF OLD.status IS DISTINCT FROM 'SCHEDULED' THEN
        RAISE EXCEPTION 'guard: deferred call % is % and may not change', OLD.operation_id, OLD.status
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'A deferred call ends once.';
    END IF;
    IF NEW.operation_id IS DISTINCT FROM OLD.operation_id
            OR NEW.tenant IS DISTINCT FROM OLD.tenant
            OR NEW.user_id IS DISTINCT FROM OLD.user_id
            OR NEW.tool IS DISTINCT FROM OLD.tool
            OR NEW.target IS DISTINCT FROM OLD.target
            OR NEW.arguments IS DISTINCT FROM OLD.arguments
            OR NEW.arguments_sha256 IS DISTINCT FROM OLD.arguments_sha256
            OR NEW.form IS DISTINCT FROM OLD.form
            OR NEW.fingerprint IS DISTINCT FROM OLD.fingerprint
            OR NEW.created_at IS DISTINCT FROM OLD.created_at
            OR NEW.due_at IS DISTINCT FROM OLD.due_at
            OR NEW.trace_id IS DISTINCT FROM OLD.trace_id THEN
        RAISE EXCEPTION 'guard: the owner, call and due time of deferred call % are immutable', OLD.operation_id
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END
$guard$;
DO $guard$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_trigger
                   WHERE tgrelid = 'guard_deferred'::pg_catalog.regclass
                     AND tgname = 'guard_deferred_ends_once') THEN
        CREATE TRIGGER guard_deferred_ends_once
            BEFORE INSERT OR UPDATE OR DELETE ON guard_deferred
            FOR EACH ROW EXECUTE FUNCTION guard_deferred_ends_once();
    END IF;
END
$guard$;
"#;

/// The schema step that adds the table and its rules (registered in `crate::schema`).
pub(crate) fn create(tx: &mut Tx) -> BoxFuture<'_, Result<(), StoreError>> {
    Box::pin(async move {
        tx.batch(TABLE).await?;
        match tx.dialect() {
            Dialect::Sqlite => tx.batch(SQLITE).await,
            Dialect::Postgres => tx.batch(POSTGRES).await,
        }
    })
}
