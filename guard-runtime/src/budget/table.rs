//! `guard_budgets`: one row per person and disclosing tool, holding what that tool showed the
//! person in their current budget period, and what the database enforces about it on both
//! engines: within a period the counts only grow and the period's bounds never move; a new
//! period starts only once the last one ended; a row goes only once its period ended.

use crate::{
    store::ledger::{self, Event, Kept, Ledger, Refusal, Rule, Status, When},
    store::{BoxFuture, StoreError, Tx},
};

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

/// The rules of `guard_budgets`: a row is a person's budget for one tool, renewed in place
/// period after period, and purged once its period ended.
pub(crate) const LEDGER: Ledger = Ledger {
    table: "guard_budgets",
    row: "budget",
    key: &["tenant", "user_id", "tool"],
    owner: &["tenant", "user_id"],
    status: Status::Renewed,
    opens: None,
    fixed: &[],
    fixed_words: "person and tool",
    rules: &[Rule {
        name: "only_grow",
        on: Event::Update,
        when: When::Both(
            "(NEW.opened_at = OLD.opened_at AND (NEW.expires_at {ne} OLD.expires_at \
               OR NEW.items < OLD.items OR NEW.bytes < OLD.bytes)) \
               OR (NEW.opened_at {ne} OLD.opened_at AND NEW.opened_at < OLD.expires_at)",
        ),
        words: "the {row} only grows within its period, and starts again only once it ended",
    }],
    kept: Kept::UntilExpired {
        column: "expires_at",
        words: "its period ended",
    },
    refusal: Refusal::Privilege,
};

/// The schema step that adds the table and its rules (registered in `crate::schema`).
pub(crate) fn create(tx: &mut Tx) -> BoxFuture<'_, Result<(), StoreError>> {
    Box::pin(ledger::create(tx, TABLE, &LEDGER))
}
