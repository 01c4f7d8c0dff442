//! `guard_budgets`: one row per person and disclosing tool, holding what that tool showed the
//! person in their current budget period, and what the database enforces about it on both
//! engines: within a period the counts only grow and the period's bounds never move; a new
//! period starts only once the last one ended; a row goes only once its period ended.

use crate::store::{BoxFuture, Dialect, StoreError, Tx};

/// The table, the same on both engines.
const TABLE: &str = "CREATE TABLE IF NOT EXISTS guard_budgets (
    tenant      TEXT NOT NULL,
    user_id     TEXT NOT NULL,
    tool        TEXT NOT NULL,
    opened_at   BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL CHECK (expires_at > opened_at),
    items       BIGINT NOT NULL CHECK (items >= 0),
    bytes       BIGINT NOT NULL CHECK (bytes >= 0),
    PRIMARY KEY (tenant, user_id, tool)
);
CREATE INDEX IF NOT EXISTS guard_budgets_expiry ON guard_budgets (expires_at);";

/// SQLite: the same rules as [`POSTGRES`], as triggers that abort the statement.
const SQLITE: &str = "CREATE TRIGGER IF NOT EXISTS guard_budgets_only_grow
    BEFORE UPDATE ON guard_budgets
    WHEN NEW.tenant IS NOT OLD.tenant OR NEW.user_id IS NOT OLD.user_id
        OR NEW.tool IS NOT OLD.tool
        OR (NEW.opened_at = OLD.opened_at AND (NEW.expires_at IS NOT OLD.expires_at
            OR NEW.items < OLD.items OR NEW.bytes < OLD.bytes))
        OR (NEW.opened_at IS NOT OLD.opened_at AND NEW.opened_at < OLD.expires_at)
BEGIN
    SELECT RAISE(ABORT, 'guard: a budget only grows within its period, and starts again only once it ended');
END;
CREATE TRIGGER IF NOT EXISTS guard_budgets_kept_while_open
    BEFORE DELETE ON guard_budgets
    WHEN OLD.expires_at > CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)
BEGIN
    SELECT RAISE(ABORT, 'guard: a budget is kept until its period ended');
END;";

/// PostgreSQL: one trigger for every role (the owner included), on the database's clock,
/// its `search_path` pinned as guard's other triggers'.
const POSTGRES: &str = r#"
CREATE OR REPLACE FUNCTION guard_budgets_only_grow() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $guard$
BEGIN
    IF TG_OP = 'DELETE' THEN
        IF OLD.expires_at > (date_part('epoch', clock_timestamp()) * 1000)::bigint THEN
            RAISE EXCEPTION 'guard: the budget of % for % is kept until its period ended', OLD.user_id, OLD.tool
                USING ERRCODE = 'insufficient_privilege';
        END IF;
        RETURN OLD;
    END IF;
    IF NEW.tenant IS DISTINCT FROM OLD.tenant OR NEW.user_id IS DISTINCT FROM OLD.user_id
            OR NEW.tool IS DISTINCT FROM OLD.tool
            OR (NEW.opened_at = OLD.opened_at AND (NEW.expires_at IS DISTINCT FROM OLD.expires_at
                OR NEW.items < OLD.items OR NEW.bytes < OLD.bytes))
            OR (NEW.opened_at IS DISTINCT FROM OLD.opened_at AND NEW.opened_at < OLD.expires_at) THEN
        RAISE EXCEPTION 'guard: the budget of % for % only grows within its period, and starts again only once it ended', OLD.user_id, OLD.tool
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END
$guard$;
DO $guard$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_trigger
                   WHERE tgrelid = 'guard_budgets'::pg_catalog.regclass
                     AND tgname = 'guard_budgets_only_grow') THEN
        CREATE TRIGGER guard_budgets_only_grow
            BEFORE UPDATE OR DELETE ON guard_budgets
            FOR EACH ROW EXECUTE FUNCTION guard_budgets_only_grow();
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
