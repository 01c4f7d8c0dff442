//! The tables of approvals on the approval page, so that an approval outlives the process
//! that opened it: a restart, or another replica on the same store, finds the request, its
//! links and its decisions.
//!
//! - `guard_approvals`: one row per approval: what was asked (tool, target, summary), by
//!   whom (the requester's canonical tenant and user), the call's trace id, the SHA-256 of
//!   what the call is bound to, how many approvals it needs, its deadline and its status.
//! - `guard_approval_links`: one row per one-time link, keyed by the SHA-256 of its token
//!   (the token itself is never stored), with the person it speaks for and its CSRF token.
//! - `guard_approval_decisions`: one row per decision, with the canonical approver, the
//!   confusable skeleton of their name, and when.
//!
//! What must never happen is refused by the database, on both engines and for every role,
//! the tables' owner included:
//!
//! - two decisions by one person on one approval: the primary key (canonical approver) and
//!   a unique skeleton (a look-alike of that approver);
//! - a decision on an approval that is not pending, or after its deadline by the database's
//!   own clock (so a replica whose clock runs late cannot decide late): a trigger;
//! - an approval leaving a final status, changing what it asked for, becoming `APPROVED`
//!   without its required approvals or `REJECTED` without a rejection, or being decided
//!   after its deadline: a trigger;
//! - a link changing whom it speaks for, or being used twice: a trigger;
//! - a pending approval deleted before its deadline: a trigger.
//!
//! A later step ([`take_over`]) adds what lets the requester's next call take up an
//! approval instead of opening another: `guard_approvals.fingerprint`, the effect the
//! approvers were shown (it never changes: a trigger), and `guard_approval_uses`, one row
//! per approval whose effect was let run, its primary key the rule that an approval runs
//! its effect once whoever asks, and a trigger that lets only an `APPROVED` approval in.
//!
//! A third ([`tasks`]) adds `guard_approval_tasks`: the approvals answered as an MCP Task on
//! protocol 2026-07-28, with the call's canonical arguments (so any replica can run it once
//! approved), which `tasks/get` claims the run (`runner`, `run_at`), and how the task ended
//! (`ended`, `result`: completed, failed or cancelled). What a task asks never changes, and
//! it ends once: a trigger.
//!
//! A fourth ([`seals`]) adds `guard_approvals.approvers` (the canonical users an approval
//! asks, fixed), the seals of links and decisions (`guard_approval_links.seal`,
//! `guard_approval_decisions.link_sha256` and `.seal`; guard counts only decisions whose
//! seals verify, see `approval::decisions`), and triggers refusing an approval opened
//! decided, unlisted or listing its requester, a link or a decision for anyone it does not
//! list, `APPROVED` without enough sealed approvals, and a change of the list or a seal.
//!
//! Times are milliseconds since the Unix epoch, like every time guard stores.

use super::sql::{BoxFuture, Dialect, StoreError, Tx};

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

/// A step's triggers on each engine this build has.
struct Engines {
    #[cfg(feature = "sqlite")]
    sqlite: &'static str,
    #[cfg(feature = "postgres")]
    postgres: &'static str,
}

/// Runs `tables`, then the triggers of the transaction's engine.
async fn step(tx: &mut Tx, tables: &str, triggers: Engines) -> Result<(), StoreError> {
    tx.batch(tables).await?;
    match tx.dialect() {
        #[cfg(feature = "sqlite")]
        Dialect::Sqlite => tx.batch(triggers.sqlite).await,
        #[cfg(feature = "postgres")]
        Dialect::Postgres => tx.batch(triggers.postgres).await,
        #[allow(unreachable_patterns)]
        other => {
            let _ = triggers;
            Err(StoreError::Other(format!(
                "guard cannot add the approval tables' triggers on {other:?}: build it with that engine's feature"
            )))
        }
    }
}

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
