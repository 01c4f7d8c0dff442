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
//! - `guard_audit`: the default [`AuditSink`](super::AuditSink)'s table.

macro_rules! schema {
    ($audit_id:literal) => {
        concat!(
            "CREATE TABLE IF NOT EXISTS guard_operations (
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
            CREATE TABLE IF NOT EXISTS guard_audit (
                audit_id     ",
            $audit_id,
            ",
                trace_id     TEXT NOT NULL,
                tenant       TEXT,
                user_id      TEXT,
                tool         TEXT NOT NULL,
                op           TEXT,
                operation_id TEXT,
                target       TEXT,
                summary      TEXT,
                outcome      TEXT NOT NULL,
                at           BIGINT NOT NULL
            );
            CREATE INDEX IF NOT EXISTS guard_audit_trace ON guard_audit (trace_id);
            CREATE INDEX IF NOT EXISTS guard_audit_operation ON guard_audit (operation_id);"
        )
    };
}

#[cfg(feature = "sqlite")]
pub(crate) const SQLITE_SCHEMA: &str = schema!("INTEGER PRIMARY KEY AUTOINCREMENT");

#[cfg(feature = "postgres")]
pub(crate) const POSTGRES_SCHEMA: &str = schema!("BIGSERIAL PRIMARY KEY");
