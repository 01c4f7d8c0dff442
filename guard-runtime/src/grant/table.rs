//! `guard_grants`: one row per grant, and what the database enforces about it on both
//! engines: a grant opens unused and unrevoked, its use count only ever grows by one and
//! never past its calls, a revoked grant is never used again, it is revoked once, and it
//! never changes whose it is, which tool and scope it covers, the answer it reuses or
//! until when.

use crate::store::{BoxFuture, Dialect, StoreError, Tx};

/// The table, the same on both engines. `answer` is the canonical JSON of the form the
/// human accepted when they opened the grant.
const TABLE: &str = "CREATE TABLE IF NOT EXISTS guard_grants (
    grant_id    TEXT PRIMARY KEY,
    tenant      TEXT NOT NULL,
    user_id     TEXT NOT NULL,
    tool        TEXT NOT NULL,
    scope       TEXT NOT NULL CHECK (scope <> ''),
    answer      TEXT NOT NULL,
    calls       INTEGER NOT NULL CHECK (calls > 0),
    used        INTEGER NOT NULL CHECK (used >= 0 AND used <= calls),
    created_at  BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL CHECK (expires_at > created_at),
    revoked_at  BIGINT,
    revoked_by  TEXT,
    trace_id    TEXT NOT NULL,
    CHECK ((revoked_at IS NULL) = (revoked_by IS NULL))
);
CREATE INDEX IF NOT EXISTS guard_grants_holder ON guard_grants (tenant, user_id, tool, scope);";

/// SQLite: the same rules as [`POSTGRES`], as triggers that abort the statement.
const SQLITE: &str = "CREATE TRIGGER IF NOT EXISTS guard_grants_open_unused
    BEFORE INSERT ON guard_grants
    WHEN NEW.used IS NOT 0 OR NEW.revoked_at IS NOT NULL OR NEW.revoked_by IS NOT NULL
BEGIN
    SELECT RAISE(ABORT, 'guard: a new grant must be unused and unrevoked');
END;
CREATE TRIGGER IF NOT EXISTS guard_grants_change_little
    BEFORE UPDATE ON guard_grants
    WHEN NEW.grant_id IS NOT OLD.grant_id OR NEW.tenant IS NOT OLD.tenant
        OR NEW.user_id IS NOT OLD.user_id OR NEW.tool IS NOT OLD.tool
        OR NEW.scope IS NOT OLD.scope OR NEW.answer IS NOT OLD.answer
        OR NEW.calls IS NOT OLD.calls OR NEW.created_at IS NOT OLD.created_at
        OR NEW.expires_at IS NOT OLD.expires_at OR NEW.trace_id IS NOT OLD.trace_id
        OR (OLD.revoked_at IS NOT NULL AND (NEW.revoked_at IS NOT OLD.revoked_at
            OR NEW.revoked_by IS NOT OLD.revoked_by OR NEW.used IS NOT OLD.used))
        OR (NEW.used IS NOT OLD.used AND (NEW.used IS NOT OLD.used + 1
            OR NEW.revoked_at IS NOT NULL))
BEGIN
    SELECT RAISE(ABORT, 'guard: a grant only counts one use at a time while unrevoked, or is revoked once');
END;
CREATE TRIGGER IF NOT EXISTS guard_grants_kept
    BEFORE DELETE ON guard_grants
BEGIN
    SELECT RAISE(ABORT, 'guard: grants are history and are never deleted');
END;";

/// PostgreSQL: one trigger for every role (the owner included), its `search_path` pinned as
/// guard's other triggers'.
const POSTGRES: &str = r#"
CREATE OR REPLACE FUNCTION guard_grants_change_little() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $guard$
BEGIN
    IF TG_OP = 'DELETE' THEN
        RAISE EXCEPTION 'guard: grant % is history and is never deleted', OLD.grant_id
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF TG_OP = 'INSERT' THEN
        IF NEW.used IS DISTINCT FROM 0 OR NEW.revoked_at IS NOT NULL
                OR NEW.revoked_by IS NOT NULL THEN
            RAISE EXCEPTION 'guard: a new grant % must be unused and unrevoked', NEW.grant_id
                USING ERRCODE = 'insufficient_privilege';
        END IF;
        RETURN NEW;
    END IF;
    IF NEW.grant_id IS DISTINCT FROM OLD.grant_id
            OR NEW.tenant IS DISTINCT FROM OLD.tenant
            OR NEW.user_id IS DISTINCT FROM OLD.user_id
            OR NEW.tool IS DISTINCT FROM OLD.tool
            OR NEW.scope IS DISTINCT FROM OLD.scope
            OR NEW.answer IS DISTINCT FROM OLD.answer
            OR NEW.calls IS DISTINCT FROM OLD.calls
            OR NEW.created_at IS DISTINCT FROM OLD.created_at
            OR NEW.expires_at IS DISTINCT FROM OLD.expires_at
            OR NEW.trace_id IS DISTINCT FROM OLD.trace_id THEN
        RAISE EXCEPTION 'guard: the holder, tool, scope, answer, calls and expiry of grant % are immutable', OLD.grant_id
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF OLD.revoked_at IS NOT NULL AND (NEW.revoked_at IS DISTINCT FROM OLD.revoked_at
            OR NEW.revoked_by IS DISTINCT FROM OLD.revoked_by
            OR NEW.used IS DISTINCT FROM OLD.used) THEN
        RAISE EXCEPTION 'guard: grant % is revoked and may not change', OLD.grant_id
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'A revoked grant never covers a call again.';
    END IF;
    IF NEW.used IS DISTINCT FROM OLD.used AND (NEW.used IS DISTINCT FROM OLD.used + 1
            OR NEW.revoked_at IS NOT NULL) THEN
        RAISE EXCEPTION 'guard: grant % counts one use at a time, and none once revoked', OLD.grant_id
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END
$guard$;
DO $guard$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_trigger
                   WHERE tgrelid = 'guard_grants'::pg_catalog.regclass
                     AND tgname = 'guard_grants_change_little') THEN
        CREATE TRIGGER guard_grants_change_little
            BEFORE INSERT OR UPDATE OR DELETE ON guard_grants
            FOR EACH ROW EXECUTE FUNCTION guard_grants_change_little();
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
