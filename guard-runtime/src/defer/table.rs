//! `guard_deferred`: one row per deferred call, and what the database enforces about it on
//! both engines: a call is stored `SCHEDULED`, ends once (`WITHDRAWN`, `RAN`,
//! `STATE_CHANGED` or `FAILED`), is never deleted, and never changes whose it is, what it
//! runs (tool, target, arguments, form, the fingerprint the human saw) or when.

use crate::{
    store::ledger::{self, Kept, Ledger, Opens, Refusal, Status},
    store::{BoxFuture, StoreError, Tx},
};

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

/// The rules of `guard_deferred`.
pub(crate) const LEDGER: Ledger = Ledger {
    table: "guard_deferred",
    row: "deferred call",
    key: &["operation_id"],
    owner: &["tenant", "user_id"],
    status: Status::Column {
        column: "status",
        initial: "SCHEDULED",
        ends: &["WITHDRAWN", "RAN", "STATE_CHANGED", "FAILED"],
        ended: "over",
        hint: "A deferred call ends once.",
    },
    opens: Some(Opens {
        values: &[],
        empty: &["result", "closed_at"],
        words: "SCHEDULED with no result",
    }),
    fixed: &[
        "tool",
        "target",
        "arguments",
        "arguments_sha256",
        "form",
        "fingerprint",
        "created_at",
        "due_at",
        "trace_id",
    ],
    fixed_words: "owner, call and due time",
    rules: &[],
    kept: Kept::History,
    refusal: Refusal::Privilege,
};

/// The schema step that adds the table and its rules (registered in `crate::schema`).
pub(crate) fn create(tx: &mut Tx) -> BoxFuture<'_, Result<(), StoreError>> {
    Box::pin(ledger::create(tx, TABLE, &LEDGER))
}
