//! `guard_undo`: one row per undo window, and what the database enforces about it on both
//! engines: a window is opened `OPEN`, closes once (`UNDONE` with its result, or `PURGED`),
//! never opens again, and never changes whose it is, what it undoes or until when.

use crate::store::{BoxFuture, Dialect, StoreError, Tx};

/// The table, the same on both engines. `data` is the canonical JSON of what undoing needs.
const TABLE: &str = "CREATE TABLE IF NOT EXISTS guard_undo (
    operation_id TEXT PRIMARY KEY,
    tenant       TEXT NOT NULL,
    user_id      TEXT NOT NULL,
    tool         TEXT NOT NULL,
    target       TEXT NOT NULL,
    data         TEXT NOT NULL,
    data_sha256  TEXT NOT NULL,
    status       TEXT NOT NULL CHECK (status IN ('OPEN', 'UNDONE', 'PURGED')),
    created_at   BIGINT NOT NULL,
    expires_at   BIGINT NOT NULL CHECK (expires_at > created_at),
    closed_at    BIGINT,
    result       TEXT,
    trace_id     TEXT NOT NULL,
    CHECK ((status = 'OPEN') = (closed_at IS NULL)),
    CHECK ((status = 'UNDONE') = (result IS NOT NULL))
);
CREATE INDEX IF NOT EXISTS guard_undo_due ON guard_undo (status, expires_at);";

/// SQLite: the same rules as [`POSTGRES`], as triggers that abort the statement.
const SQLITE: &str = "CREATE TRIGGER IF NOT EXISTS guard_undo_opens_open
    BEFORE INSERT ON guard_undo
    WHEN NEW.status IS NOT 'OPEN' OR NEW.result IS NOT NULL OR NEW.closed_at IS NOT NULL
BEGIN
    SELECT RAISE(ABORT, 'guard: a new undo window must be OPEN with no result');
END;
CREATE TRIGGER IF NOT EXISTS guard_undo_closes_once
    BEFORE UPDATE ON guard_undo
    WHEN OLD.status IS NOT 'OPEN'
        OR NEW.operation_id IS NOT OLD.operation_id OR NEW.tenant IS NOT OLD.tenant
        OR NEW.user_id IS NOT OLD.user_id OR NEW.tool IS NOT OLD.tool
        OR NEW.target IS NOT OLD.target OR NEW.data IS NOT OLD.data
        OR NEW.data_sha256 IS NOT OLD.data_sha256 OR NEW.created_at IS NOT OLD.created_at
        OR NEW.expires_at IS NOT OLD.expires_at OR NEW.trace_id IS NOT OLD.trace_id
BEGIN
    SELECT RAISE(ABORT, 'guard: an undo window closes once, and only its status, result and closing time change');
END;
CREATE TRIGGER IF NOT EXISTS guard_undo_kept
    BEFORE DELETE ON guard_undo
BEGIN
    SELECT RAISE(ABORT, 'guard: undo windows are history and are never deleted');
END;";

/// PostgreSQL: one trigger for every role (the owner included: a window's history is not
/// the operator's to rewrite either), its `search_path` pinned as guard's other triggers'.
const POSTGRES: &str = r#"
CREATE OR REPLACE FUNCTION guard_undo_closes_once() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $guard$
BEGIN
    IF TG_OP = 'DELETE' THEN
        RAISE EXCEPTION 'guard: undo window % is history and is never deleted', OLD.operation_id
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF TG_OP = 'INSERT' THEN
        IF NEW.status IS DISTINCT FROM 'OPEN' OR NEW.result IS NOT NULL
                OR NEW.closed_at IS NOT NULL THEN
            RAISE EXCEPTION 'guard: a new undo window % must be OPEN with no result', NEW.operation_id
                USING ERRCODE = 'insufficient_privilege';
        END IF;
        RETURN NEW;
    END IF;
    IF OLD.status IS DISTINCT FROM 'OPEN' THEN
        RAISE EXCEPTION 'guard: undo window % is % and may not change', OLD.operation_id, OLD.status
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'A closed undo window never opens again.';
    END IF;
    IF NEW.operation_id IS DISTINCT FROM OLD.operation_id
            OR NEW.tenant IS DISTINCT FROM OLD.tenant
            OR NEW.user_id IS DISTINCT FROM OLD.user_id
            OR NEW.tool IS DISTINCT FROM OLD.tool
            OR NEW.target IS DISTINCT FROM OLD.target
            OR NEW.data IS DISTINCT FROM OLD.data
            OR NEW.data_sha256 IS DISTINCT FROM OLD.data_sha256
            OR NEW.created_at IS DISTINCT FROM OLD.created_at
            OR NEW.expires_at IS DISTINCT FROM OLD.expires_at
            OR NEW.trace_id IS DISTINCT FROM OLD.trace_id THEN
        RAISE EXCEPTION 'guard: the owner, data and deadline of undo window % are immutable', OLD.operation_id
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END
$guard$;
DO $guard$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_trigger
                   WHERE tgrelid = 'guard_undo'::pg_catalog.regclass
                     AND tgname = 'guard_undo_closes_once') THEN
        CREATE TRIGGER guard_undo_closes_once
            BEFORE INSERT OR UPDATE OR DELETE ON guard_undo
            FOR EACH ROW EXECUTE FUNCTION guard_undo_closes_once();
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
