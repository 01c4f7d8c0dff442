//! `guard_undo`: one row per undo window, and what the database enforces about it on both
//! engines: a window is opened `OPEN`, closes once (`UNDONE` with its result, `LOST` with
//! the reason its undo can never succeed, or `PURGED`), never opens again, never changes
//! whose it is, what it undoes or until when, and is purged only once its deadline passed by
//! the database's clock.

use crate::{
    store::ledger::{self, Event, Kept, Ledger, Opens, Refusal, Rule, Status, When},
    store::{BoxFuture, Dialect, StoreError, Tx},
};

/// The table as the undo windows' step created it, the same on both engines. `data` is the
/// canonical JSON of what undoing needs. [`lost`] lets it hold `LOST` windows.
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

/// The rules of `guard_undo`.
pub(crate) const LEDGER: Ledger = Ledger {
    table: "guard_undo",
    row: "undo window",
    key: &["operation_id"],
    owner: &["tenant", "user_id"],
    status: Status::Column {
        column: "status",
        initial: "OPEN",
        ends: &["UNDONE", "LOST", "PURGED"],
        ended: "closed",
        hint: "A closed undo window never opens again.",
    },
    opens: Some(Opens {
        values: &[],
        empty: &["result", "closed_at"],
        words: "OPEN with no result",
    }),
    fixed: &[
        "tool",
        "target",
        "data",
        "data_sha256",
        "created_at",
        "expires_at",
        "trace_id",
    ],
    fixed_words: "owner, data and deadline",
    rules: &[PURGED_WHEN_DUE],
    kept: Kept::History,
    refusal: Refusal::Privilege,
};

/// A window is made final no earlier than the human was told: whoever writes the row,
/// guard's purge included, the database's clock decides that its deadline passed.
pub(crate) const PURGED_WHEN_DUE: Rule = Rule {
    name: "purged_when_due",
    on: Event::Update,
    when: When::Both("NEW.status = 'PURGED' AND OLD.expires_at > {now}"),
    words: "the {row} is open until its deadline and is purged only after it",
};

/// The schema step that adds the table and its rules (registered in `crate::schema`).
pub(crate) fn create(tx: &mut Tx) -> BoxFuture<'_, Result<(), StoreError>> {
    Box::pin(ledger::create(tx, TABLE, &LEDGER))
}

/// The table with `LOST` among its statuses, a `LOST` window keeping its reason in
/// `result` like an `UNDONE` one its result: SQLite cannot change a table's checks, so its
/// rows move to a table made anew.
const WITH_LOST_SQLITE: &str = "CREATE TABLE guard_undo_with_lost (
    operation_id TEXT PRIMARY KEY,
    tenant       TEXT NOT NULL,
    user_id      TEXT NOT NULL,
    tool         TEXT NOT NULL,
    target       TEXT NOT NULL,
    data         TEXT NOT NULL,
    data_sha256  TEXT NOT NULL,
    status       TEXT NOT NULL CHECK (status IN ('OPEN', 'UNDONE', 'LOST', 'PURGED')),
    created_at   BIGINT NOT NULL,
    expires_at   BIGINT NOT NULL CHECK (expires_at > created_at),
    closed_at    BIGINT,
    result       TEXT,
    trace_id     TEXT NOT NULL,
    CHECK ((status = 'OPEN') = (closed_at IS NULL)),
    CHECK ((status IN ('UNDONE', 'LOST')) = (result IS NOT NULL))
);
INSERT INTO guard_undo_with_lost (operation_id, tenant, user_id, tool, target, data,
    data_sha256, status, created_at, expires_at, closed_at, result, trace_id)
SELECT operation_id, tenant, user_id, tool, target, data, data_sha256, status, created_at,
    expires_at, closed_at, result, trace_id FROM guard_undo;
DROP TABLE guard_undo;
ALTER TABLE guard_undo_with_lost RENAME TO guard_undo;
CREATE INDEX guard_undo_due ON guard_undo (status, expires_at);";

/// The same checks on PostgreSQL, in place of the ones on `status`.
const WITH_LOST_POSTGRES: &str = "DO $guard$
DECLARE c record;
BEGIN
    FOR c IN SELECT conname FROM pg_catalog.pg_constraint
        WHERE conrelid = 'guard_undo'::pg_catalog.regclass AND contype = 'c'
          AND pg_catalog.pg_get_constraintdef(oid) LIKE '%status%'
    LOOP
        EXECUTE format('ALTER TABLE guard_undo DROP CONSTRAINT %I', c.conname);
    END LOOP;
END
$guard$;
ALTER TABLE guard_undo
    ADD CONSTRAINT guard_undo_status CHECK (status IN ('OPEN', 'UNDONE', 'LOST', 'PURGED')),
    ADD CONSTRAINT guard_undo_closed CHECK ((status = 'OPEN') = (closed_at IS NULL)),
    ADD CONSTRAINT guard_undo_result CHECK ((status IN ('UNDONE', 'LOST')) = (result IS NOT NULL));";

/// The schema step that lets a window end `LOST` (registered in `crate::schema`): the
/// table's checks, then its rules, which now allow that end.
pub(crate) fn lost(tx: &mut Tx) -> BoxFuture<'_, Result<(), StoreError>> {
    Box::pin(async move {
        let checks = match tx.dialect() {
            Dialect::Sqlite => WITH_LOST_SQLITE,
            Dialect::Postgres => WITH_LOST_POSTGRES,
        };
        tx.batch(checks).await?;
        ledger::renew(tx, &[&LEDGER], &[]).await
    })
}
