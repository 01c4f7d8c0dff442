//! Guard's tables, per engine. Times are milliseconds since the Unix epoch, taken from the
//! server's clock, so the same statements compare them on both engines.
//!
//! - `guard_operations`: one row per intent. The partial unique index allows one `PREPARED`
//!   intent per tenant, op and target.
//! - `guard_operation_effects`: one row per operation whose effect committed; its primary key
//!   is the last line of defence against a second effect.
//! - `guard_rate_buckets` / `guard_rate_events`: the per-user, per-tool rate limit. Locking the
//!   bucket row makes concurrent calls of one user take turns.
//! - `guard_redeemed_states`: MRTR request states already answered, so a replica sharing
//!   the store refuses a replay that another replica accepted.
//! - `guard_idempotency`: one row per idempotency key, its primary key (tenant, user, tool,
//!   key) the unique constraint that lets one call with a key run. A row is inserted
//!   `RUNNING` inside the call's own transaction and commits only as `COMPLETED`, with the
//!   result, in the same commit as the effect.
//! - `guard_audit_log` and `guard_audit_checkpoints`: the audit log and its signed
//!   checkpoints (see [`crate::audit`]); `guard_audit_cosignatures`, added by a later schema
//!   step, the witnesses' cosignatures of those checkpoints. The log's `seq` is its primary key, so two
//!   entries never share a place.
//!
//! On PostgreSQL the database itself also holds an intent to what guard does with it, so a
//! server role that is compromised (or a deployment that granted it too much) cannot rewrite
//! history behind guard's back; see [`POSTGRES_GUARDS`].

/// The tables, the same on both engines.
pub(crate) const TABLES: &str = "CREATE TABLE IF NOT EXISTS guard_operations (
                operation_id   TEXT PRIMARY KEY,
                tenant         TEXT NOT NULL,
                user_id        TEXT NOT NULL,
                op             TEXT NOT NULL,
                target         TEXT NOT NULL,
                payload        TEXT NOT NULL,
                payload_sha256 TEXT NOT NULL,
                preview        TEXT NOT NULL,
                status         TEXT NOT NULL
                    CHECK (status IN ('PREPARED', 'SUBMITTED', 'EXPIRED', 'REJECTED')),
                expires_at     BIGINT NOT NULL,
                result         TEXT,
                created_at     BIGINT NOT NULL,
                confirmed_at   BIGINT,
                trace_id       TEXT NOT NULL
            );
            CREATE UNIQUE INDEX IF NOT EXISTS guard_operations_one_pending
                ON guard_operations (tenant, op, target) WHERE status = 'PREPARED';
            CREATE INDEX IF NOT EXISTS guard_operations_owner
                ON guard_operations (tenant, user_id, status, expires_at);
            CREATE TABLE IF NOT EXISTS guard_operation_effects (
                operation_id TEXT PRIMARY KEY REFERENCES guard_operations (operation_id),
                committed_at BIGINT NOT NULL
            );
            CREATE TABLE IF NOT EXISTS guard_rate_buckets (
                tenant  TEXT NOT NULL,
                user_id TEXT NOT NULL,
                tool    TEXT NOT NULL,
                PRIMARY KEY (tenant, user_id, tool)
            );
            CREATE TABLE IF NOT EXISTS guard_rate_events (
                tenant  TEXT NOT NULL,
                user_id TEXT NOT NULL,
                tool    TEXT NOT NULL,
                at      BIGINT NOT NULL
            );
            CREATE INDEX IF NOT EXISTS guard_rate_events_window
                ON guard_rate_events (tenant, user_id, tool, at);
            CREATE TABLE IF NOT EXISTS guard_redeemed_states (
                nonce      TEXT PRIMARY KEY,
                expires_at BIGINT NOT NULL
            );
            CREATE TABLE IF NOT EXISTS guard_idempotency (
                tenant       TEXT NOT NULL,
                user_id      TEXT NOT NULL,
                tool         TEXT NOT NULL,
                idem_key     TEXT NOT NULL,
                body_sha256  TEXT NOT NULL,
                status       TEXT NOT NULL CHECK (status IN ('RUNNING', 'COMPLETED')),
                result       TEXT,
                created_at   BIGINT NOT NULL,
                completed_at BIGINT,
                expires_at   BIGINT NOT NULL,
                trace_id     TEXT NOT NULL,
                PRIMARY KEY (tenant, user_id, tool, idem_key),
                CHECK ((status = 'COMPLETED') = (result IS NOT NULL AND completed_at IS NOT NULL))
            );
            CREATE INDEX IF NOT EXISTS guard_idempotency_expiry ON guard_idempotency (expires_at);
            CREATE TABLE IF NOT EXISTS guard_audit_log (
                seq          BIGINT PRIMARY KEY CHECK (seq >= 0),
                hash         TEXT NOT NULL,
                entry        TEXT NOT NULL,
                trace_id     TEXT NOT NULL,
                tool         TEXT NOT NULL,
                outcome      TEXT NOT NULL,
                tenant       TEXT,
                user_id      TEXT,
                operation_id TEXT,
                at           BIGINT NOT NULL
            );
            CREATE INDEX IF NOT EXISTS guard_audit_log_trace ON guard_audit_log (trace_id);
            CREATE INDEX IF NOT EXISTS guard_audit_log_operation ON guard_audit_log (operation_id);
            CREATE TABLE IF NOT EXISTS guard_audit_checkpoints (
                size BIGINT PRIMARY KEY,
                note TEXT NOT NULL,
                at   BIGINT NOT NULL
            );";

/// PostgreSQL only, created with the tables by `PgStore::migrate`: two triggers on
/// `guard_operations` that hold for every role except the table's owner (and superusers),
/// who could drop them anyway.
///
/// - `guard_operations_immutable` (BEFORE INSERT OR UPDATE): a new intent is `PREPARED` with
///   no result and no confirmation time; an update may change only `status`, `result` and
///   `confirmed_at`, and only of a `PREPARED` intent (a closed intent never changes again);
///   a result and a confirmation time exist only on a `SUBMITTED` intent.
///   The identity (`operation_id`, `tenant`, `user_id`), what was asked (`op`, `target`,
///   `payload`, `payload_sha256`, `preview`), `expires_at`, `created_at` and `trace_id` are
///   immutable. Column grants should already keep the server's role away from those columns;
///   this trigger holds where a role still has table-wide `UPDATE`.
/// - `guard_operations_submitted_has_effect` (a constraint trigger, `DEFERRABLE INITIALLY
///   DEFERRED`): at commit, an intent that became `SUBMITTED` has its row in
///   `guard_operation_effects`. Deferred, so guard's own order of writes inside the confirm's
///   transaction (effect row, then status) is checked only once both are in.
///
/// Both functions pin `search_path` to `pg_catalog, pg_temp` and name guard's tables through
/// the trigger's own schema, so neither a caller's `search_path` nor a temporary table of the
/// same name changes what they check. Statements are guarded by an existence test, so a
/// second migrate takes no lock on the table.
#[cfg(feature = "postgres")]
pub(crate) const POSTGRES_GUARDS: &str = r#"
CREATE OR REPLACE FUNCTION guard_operations_immutable() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $guard$
BEGIN
    IF pg_catalog.pg_has_role(current_user,
            (SELECT c.relowner FROM pg_catalog.pg_class c WHERE c.oid = TG_RELID), 'USAGE') THEN
        RETURN NEW;
    END IF;
    IF TG_OP = 'INSERT' THEN
        IF NEW.status IS DISTINCT FROM 'PREPARED' OR NEW.result IS NOT NULL
                OR NEW.confirmed_at IS NOT NULL THEN
            RAISE EXCEPTION 'guard: a new operation % must be PREPARED with no result', NEW.operation_id
                USING ERRCODE = 'insufficient_privilege',
                      HINT = 'Only guard''s confirm moves an operation on, after its effect.';
        END IF;
        RETURN NEW;
    END IF;
    IF OLD.status IS DISTINCT FROM 'PREPARED' THEN
        RAISE EXCEPTION 'guard: operation % is % and may not change', OLD.operation_id, OLD.status
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'A closed operation is history; prepare a new one instead.';
    END IF;
    IF NEW.operation_id IS DISTINCT FROM OLD.operation_id
            OR NEW.tenant IS DISTINCT FROM OLD.tenant
            OR NEW.user_id IS DISTINCT FROM OLD.user_id
            OR NEW.op IS DISTINCT FROM OLD.op
            OR NEW.target IS DISTINCT FROM OLD.target
            OR NEW.payload IS DISTINCT FROM OLD.payload
            OR NEW.payload_sha256 IS DISTINCT FROM OLD.payload_sha256
            OR NEW.preview IS DISTINCT FROM OLD.preview
            OR NEW.expires_at IS DISTINCT FROM OLD.expires_at
            OR NEW.created_at IS DISTINCT FROM OLD.created_at
            OR NEW.trace_id IS DISTINCT FROM OLD.trace_id THEN
        RAISE EXCEPTION 'guard: the identity, payload and expiry of operation % are immutable', OLD.operation_id
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'Guard updates only status, result and confirmed_at; prepare a new operation to ask for something else.';
    END IF;
    IF NEW.status IS DISTINCT FROM 'SUBMITTED'
            AND (NEW.result IS NOT NULL OR NEW.confirmed_at IS NOT NULL) THEN
        RAISE EXCEPTION 'guard: operation % has a result only once it is SUBMITTED', OLD.operation_id
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'Only guard''s confirm stores a result, with the effect that produced it.';
    END IF;
    RETURN NEW;
END
$guard$;
CREATE OR REPLACE FUNCTION guard_operations_submitted_has_effect() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $guard$
DECLARE
    present boolean;
BEGIN
    IF NEW.status = 'SUBMITTED' THEN
        EXECUTE pg_catalog.format(
            'SELECT EXISTS (SELECT 1 FROM %I.guard_operation_effects WHERE operation_id = $1)',
            TG_TABLE_SCHEMA)
            INTO present USING NEW.operation_id;
        IF NOT present THEN
            RAISE EXCEPTION 'guard: operation % is SUBMITTED without its effect row', NEW.operation_id
                USING ERRCODE = 'integrity_constraint_violation',
                      HINT = 'Only guard''s confirm submits an operation, in the transaction that runs its effect.';
        END IF;
    END IF;
    RETURN NULL;
END
$guard$;
DO $guard$
DECLARE
    operations pg_catalog.regclass := 'guard_operations'::pg_catalog.regclass;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_trigger
                   WHERE tgrelid = operations AND tgname = 'guard_operations_immutable') THEN
        CREATE TRIGGER guard_operations_immutable
            BEFORE INSERT OR UPDATE ON guard_operations
            FOR EACH ROW EXECUTE FUNCTION guard_operations_immutable();
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_trigger
                   WHERE tgrelid = operations AND tgname = 'guard_operations_submitted_has_effect') THEN
        CREATE CONSTRAINT TRIGGER guard_operations_submitted_has_effect
            AFTER INSERT OR UPDATE ON guard_operations
            DEFERRABLE INITIALLY DEFERRED
            FOR EACH ROW EXECUTE FUNCTION guard_operations_submitted_has_effect();
    END IF;
END
$guard$;
"#;
