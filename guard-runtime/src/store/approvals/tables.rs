//! The approvals step: `guard_approvals`, `guard_approval_links` and
//! `guard_approval_decisions`, with the triggers that keep a decision in time, an ended
//! approval final, what it asks fixed, and a link speaking for one person once.

use super::engines::{Engines, step};
use crate::store::{BoxFuture, StoreError, Tx};

/// The tables, the same on both engines.
const TABLES: &str = "CREATE TABLE IF NOT EXISTS guard_approvals (
        approval_id  TEXT PRIMARY KEY,
        tool         TEXT NOT NULL,
        message      TEXT,
        target       TEXT NOT NULL,
        summary      TEXT NOT NULL,
        tenant       TEXT NOT NULL,
        user_id      TEXT NOT NULL,
        trace_id     TEXT NOT NULL,
        bound_sha256 TEXT NOT NULL,
        expected     TEXT,
        secret_label TEXT,
        required     INTEGER NOT NULL CHECK (required BETWEEN 1 AND 255),
        created_at   BIGINT NOT NULL,
        expires_at   BIGINT NOT NULL,
        status       TEXT NOT NULL
            CHECK (status IN ('PENDING', 'APPROVED', 'REJECTED', 'EXPIRED', 'WITHDRAWN')),
        ended_by     TEXT,
        ended_at     BIGINT,
        typed        TEXT,
        CHECK (expires_at > created_at),
        CHECK ((status = 'PENDING') = (ended_at IS NULL)),
        CHECK ((status = 'REJECTED') = (ended_by IS NOT NULL))
    );
    CREATE INDEX IF NOT EXISTS guard_approvals_expiry ON guard_approvals (expires_at);
    CREATE INDEX IF NOT EXISTS guard_approvals_tenant ON guard_approvals (tenant, status);
    CREATE TABLE IF NOT EXISTS guard_approval_links (
        token_sha256 TEXT PRIMARY KEY,
        approval_id  TEXT NOT NULL REFERENCES guard_approvals (approval_id) ON DELETE CASCADE,
        role         TEXT NOT NULL CHECK (role IN ('REQUESTER', 'APPROVER')),
        tenant       TEXT NOT NULL,
        user_id      TEXT NOT NULL,
        csrf         TEXT NOT NULL,
        viewed_at    BIGINT,
        used_at      BIGINT,
        refusals     INTEGER NOT NULL DEFAULT 0 CHECK (refusals >= 0),
        UNIQUE (approval_id, tenant, user_id)
    );
    CREATE TABLE IF NOT EXISTS guard_approval_decisions (
        approval_id TEXT NOT NULL REFERENCES guard_approvals (approval_id) ON DELETE CASCADE,
        tenant      TEXT NOT NULL,
        user_id     TEXT NOT NULL,
        skeleton    TEXT NOT NULL,
        decision    TEXT NOT NULL CHECK (decision IN ('APPROVE', 'REJECT')),
        at          BIGINT NOT NULL,
        PRIMARY KEY (approval_id, tenant, user_id),
        UNIQUE (approval_id, tenant, skeleton)
    )";

/// SQLite's triggers. `RAISE(ABORT, …)` is a constraint failure (`SQLITE_CONSTRAINT_TRIGGER`),
/// so the store reports it as [`StoreError::Constraint`]. The clock is the database's:
/// `julianday('now')` in milliseconds.
#[cfg(feature = "sqlite")]
const SQLITE_GUARDS: &str = "
    CREATE TRIGGER IF NOT EXISTS guard_approval_decisions_in_time
        BEFORE INSERT ON guard_approval_decisions
        WHEN NOT EXISTS (
            SELECT 1 FROM guard_approvals a
            WHERE a.approval_id = NEW.approval_id AND a.status = 'PENDING'
              AND a.expires_at > CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER))
    BEGIN
        SELECT RAISE(ABORT, 'guard: a decision on an approval that is not pending or whose deadline passed; ask for the action again');
    END;
    CREATE TRIGGER IF NOT EXISTS guard_approval_decisions_fixed
        BEFORE UPDATE ON guard_approval_decisions
    BEGIN
        SELECT RAISE(ABORT, 'guard: a decision on an approval is history and never changes');
    END;
    CREATE TRIGGER IF NOT EXISTS guard_approvals_final
        BEFORE UPDATE ON guard_approvals
        WHEN OLD.status <> 'PENDING'
    BEGIN
        SELECT RAISE(ABORT, 'guard: an ended approval never changes; ask for the action again');
    END;
    CREATE TRIGGER IF NOT EXISTS guard_approvals_immutable
        BEFORE UPDATE ON guard_approvals
        WHEN NEW.approval_id IS NOT OLD.approval_id OR NEW.tool IS NOT OLD.tool
          OR NEW.message IS NOT OLD.message OR NEW.target IS NOT OLD.target
          OR NEW.summary IS NOT OLD.summary OR NEW.tenant IS NOT OLD.tenant
          OR NEW.user_id IS NOT OLD.user_id OR NEW.trace_id IS NOT OLD.trace_id
          OR NEW.bound_sha256 IS NOT OLD.bound_sha256 OR NEW.expected IS NOT OLD.expected
          OR NEW.secret_label IS NOT OLD.secret_label OR NEW.required IS NOT OLD.required
          OR NEW.created_at IS NOT OLD.created_at OR NEW.expires_at IS NOT OLD.expires_at
    BEGIN
        SELECT RAISE(ABORT, 'guard: what an approval asks, of whom and until when never changes');
    END;
    CREATE TRIGGER IF NOT EXISTS guard_approvals_decided
        BEFORE UPDATE OF status ON guard_approvals
        WHEN NEW.status IN ('APPROVED', 'REJECTED')
          AND OLD.expires_at <= CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)
    BEGIN
        SELECT RAISE(ABORT, 'guard: an approval past its deadline is not decided; ask for the action again');
    END;
    CREATE TRIGGER IF NOT EXISTS guard_approvals_approved_by_enough
        BEFORE UPDATE OF status ON guard_approvals
        WHEN NEW.status = 'APPROVED' AND (
            SELECT count(*) FROM guard_approval_decisions d
            WHERE d.approval_id = NEW.approval_id AND d.decision = 'APPROVE') < NEW.required
    BEGIN
        SELECT RAISE(ABORT, 'guard: an approval is APPROVED only with its required approvals recorded');
    END;
    CREATE TRIGGER IF NOT EXISTS guard_approvals_rejected_by_someone
        BEFORE UPDATE OF status ON guard_approvals
        WHEN NEW.status = 'REJECTED' AND NOT EXISTS (
            SELECT 1 FROM guard_approval_decisions d
            WHERE d.approval_id = NEW.approval_id AND d.decision = 'REJECT')
    BEGIN
        SELECT RAISE(ABORT, 'guard: an approval is REJECTED only with a rejection recorded');
    END;
    CREATE TRIGGER IF NOT EXISTS guard_approvals_kept_while_pending
        BEFORE DELETE ON guard_approvals
        WHEN OLD.status = 'PENDING'
          AND OLD.expires_at > CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)
    BEGIN
        SELECT RAISE(ABORT, 'guard: a pending approval is not deleted before its deadline');
    END;
    CREATE TRIGGER IF NOT EXISTS guard_approval_links_once
        BEFORE UPDATE ON guard_approval_links
        WHEN NEW.token_sha256 IS NOT OLD.token_sha256 OR NEW.approval_id IS NOT OLD.approval_id
          OR NEW.role IS NOT OLD.role OR NEW.tenant IS NOT OLD.tenant
          OR NEW.user_id IS NOT OLD.user_id OR NEW.csrf IS NOT OLD.csrf
          OR (OLD.used_at IS NOT NULL AND NEW.used_at IS NOT OLD.used_at)
    BEGIN
        SELECT RAISE(ABORT, 'guard: a link speaks for one person and decides once');
    END";

/// PostgreSQL's triggers: the same rules as SQLite's, raised as SQLSTATE class 23
/// (`integrity_constraint_violation`), so the store reports them as
/// [`StoreError::Constraint`]. The clock is the database server's (`clock_timestamp()`).
/// Like guard's other functions they pin `search_path` and name the tables through the
/// trigger's own schema.
#[cfg(feature = "postgres")]
const POSTGRES_GUARDS: &str = r#"
CREATE OR REPLACE FUNCTION guard_approval_decisions_check() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $guard$
DECLARE
    found_status text;
    found_expiry bigint;
BEGIN
    IF TG_OP = 'UPDATE' THEN
        RAISE EXCEPTION 'guard: a decision on approval % is history and never changes', OLD.approval_id
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    -- Locked, so a decision and a change of the approval's status take turns.
    EXECUTE pg_catalog.format(
        'SELECT status, expires_at FROM %I.guard_approvals WHERE approval_id = $1 FOR UPDATE',
        TG_TABLE_SCHEMA)
        INTO found_status, found_expiry USING NEW.approval_id;
    IF found_status IS DISTINCT FROM 'PENDING' OR found_expiry
            <= (pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()) * 1000)::bigint THEN
        RAISE EXCEPTION 'guard: approval % is not pending or its deadline passed, so no decision is taken', NEW.approval_id
            USING ERRCODE = 'integrity_constraint_violation',
                  HINT = 'Ask for the action again.';
    END IF;
    RETURN NEW;
END
$guard$;
CREATE OR REPLACE FUNCTION guard_approvals_check() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $guard$
DECLARE
    now_ms bigint := (pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()) * 1000)::bigint;
    approvals bigint;
    rejections bigint;
BEGIN
    IF TG_OP = 'DELETE' THEN
        IF OLD.status = 'PENDING' AND OLD.expires_at > now_ms THEN
            RAISE EXCEPTION 'guard: approval % is pending and is not deleted before its deadline', OLD.approval_id
                USING ERRCODE = 'integrity_constraint_violation';
        END IF;
        RETURN OLD;
    END IF;
    IF OLD.status IS DISTINCT FROM 'PENDING' THEN
        RAISE EXCEPTION 'guard: approval % is % and never changes', OLD.approval_id, OLD.status
            USING ERRCODE = 'integrity_constraint_violation',
                  HINT = 'Ask for the action again.';
    END IF;
    IF NEW.approval_id IS DISTINCT FROM OLD.approval_id OR NEW.tool IS DISTINCT FROM OLD.tool
            OR NEW.message IS DISTINCT FROM OLD.message OR NEW.target IS DISTINCT FROM OLD.target
            OR NEW.summary IS DISTINCT FROM OLD.summary OR NEW.tenant IS DISTINCT FROM OLD.tenant
            OR NEW.user_id IS DISTINCT FROM OLD.user_id OR NEW.trace_id IS DISTINCT FROM OLD.trace_id
            OR NEW.bound_sha256 IS DISTINCT FROM OLD.bound_sha256
            OR NEW.expected IS DISTINCT FROM OLD.expected
            OR NEW.secret_label IS DISTINCT FROM OLD.secret_label
            OR NEW.required IS DISTINCT FROM OLD.required
            OR NEW.created_at IS DISTINCT FROM OLD.created_at
            OR NEW.expires_at IS DISTINCT FROM OLD.expires_at THEN
        RAISE EXCEPTION 'guard: what approval % asks, of whom and until when never changes', OLD.approval_id
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    IF NEW.status IN ('APPROVED', 'REJECTED') THEN
        IF OLD.expires_at <= now_ms THEN
            RAISE EXCEPTION 'guard: approval % is past its deadline and is not decided', OLD.approval_id
                USING ERRCODE = 'integrity_constraint_violation',
                      HINT = 'Ask for the action again.';
        END IF;
        EXECUTE pg_catalog.format(
            'SELECT count(*) FILTER (WHERE decision = ''APPROVE''),
                    count(*) FILTER (WHERE decision = ''REJECT'')
             FROM %I.guard_approval_decisions WHERE approval_id = $1', TG_TABLE_SCHEMA)
            INTO approvals, rejections USING NEW.approval_id;
        IF NEW.status = 'APPROVED' AND approvals < NEW.required THEN
            RAISE EXCEPTION 'guard: approval % has % of % approvals and is not APPROVED', NEW.approval_id, approvals, NEW.required
                USING ERRCODE = 'integrity_constraint_violation';
        END IF;
        IF NEW.status = 'REJECTED' AND rejections = 0 THEN
            RAISE EXCEPTION 'guard: approval % has no rejection and is not REJECTED', NEW.approval_id
                USING ERRCODE = 'integrity_constraint_violation';
        END IF;
    END IF;
    RETURN NEW;
END
$guard$;
CREATE OR REPLACE FUNCTION guard_approval_links_check() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $guard$
BEGIN
    IF NEW.token_sha256 IS DISTINCT FROM OLD.token_sha256
            OR NEW.approval_id IS DISTINCT FROM OLD.approval_id
            OR NEW.role IS DISTINCT FROM OLD.role OR NEW.tenant IS DISTINCT FROM OLD.tenant
            OR NEW.user_id IS DISTINCT FROM OLD.user_id OR NEW.csrf IS DISTINCT FROM OLD.csrf
            OR (OLD.used_at IS NOT NULL AND NEW.used_at IS DISTINCT FROM OLD.used_at) THEN
        RAISE EXCEPTION 'guard: a link of approval % speaks for one person and decides once', OLD.approval_id
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END
$guard$;
CREATE TRIGGER guard_approval_decisions_check
    BEFORE INSERT OR UPDATE ON guard_approval_decisions
    FOR EACH ROW EXECUTE FUNCTION guard_approval_decisions_check();
CREATE TRIGGER guard_approvals_check
    BEFORE UPDATE OR DELETE ON guard_approvals
    FOR EACH ROW EXECUTE FUNCTION guard_approvals_check();
CREATE TRIGGER guard_approval_links_check
    BEFORE UPDATE ON guard_approval_links
    FOR EACH ROW EXECUTE FUNCTION guard_approval_links_check();
"#;

/// The schema step: the tables and the engine's triggers.
pub(crate) fn create(tx: &mut Tx) -> BoxFuture<'_, Result<(), StoreError>> {
    Box::pin(step(
        tx,
        TABLES,
        Engines {
            #[cfg(feature = "sqlite")]
            sqlite: SQLITE_GUARDS,
            #[cfg(feature = "postgres")]
            postgres: POSTGRES_GUARDS,
        },
    ))
}
