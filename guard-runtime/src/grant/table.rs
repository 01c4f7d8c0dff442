//! `guard_grants`: one row per grant, and what the database enforces about it on both
//! engines: a grant opens unused and unrevoked, its use count only ever grows by one and
//! never past its calls, a revoked grant is never used again, it is revoked once, and it
//! never changes whose it is, which tool and scope it covers, the answer it reuses or
//! until when.

use crate::{
    store::ledger::{self, Event, Kept, Ledger, Opens, Refusal, Rule, Status, When},
    store::{BoxFuture, StoreError, Tx},
};

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

/// The rules of `guard_grants`: a grant is live until revoked, and a use is one more.
pub(crate) const LEDGER: Ledger = Ledger {
    table: "guard_grants",
    row: "grant",
    key: &["grant_id"],
    owner: &["tenant", "user_id"],
    status: Status::Until {
        column: "revoked_at",
        ended: "revoked",
        hint: "A revoked grant never covers a call again.",
    },
    opens: Some(Opens {
        values: &[("used", "0")],
        empty: &["revoked_at", "revoked_by"],
        words: "unused and unrevoked",
    }),
    fixed: &[
        "tool",
        "scope",
        "answer",
        "calls",
        "created_at",
        "expires_at",
        "trace_id",
    ],
    fixed_words: "holder, tool, scope, answer, calls and expiry",
    rules: &[Rule {
        name: "counts_one_use",
        on: Event::Update,
        when: When::Both(
            "NEW.used {ne} OLD.used AND (NEW.used {ne} OLD.used + 1 OR NEW.revoked_at IS NOT NULL)",
        ),
        words: "the {row} counts one use at a time, and none once revoked",
    }],
    kept: Kept::History,
    refusal: Refusal::Privilege,
};

/// The schema step that adds the table and its rules (registered in `crate::schema`).
pub(crate) fn create(tx: &mut Tx) -> BoxFuture<'_, Result<(), StoreError>> {
    Box::pin(ledger::create(tx, TABLE, &LEDGER))
}
