//! `guard_undo`: one row per undo window, and what the database enforces about it on both
//! engines: a window is opened `OPEN`, closes once (`UNDONE` with its result, or `PURGED`),
//! never opens again, never changes whose it is, what it undoes or until when, and is
//! purged only once its deadline passed by the database's clock.

use crate::{
    store::ledger::{self, Event, Kept, Ledger, Opens, Refusal, Rule, Status, When},
    store::{BoxFuture, StoreError, Tx},
};

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

/// The rules of `guard_undo`.
pub(crate) const LEDGER: Ledger = Ledger {
    table: "guard_undo",
    row: "undo window",
    key: &["operation_id"],
    owner: &["tenant", "user_id"],
    status: Status::Column {
        column: "status",
        initial: "OPEN",
        ends: &["UNDONE", "PURGED"],
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
