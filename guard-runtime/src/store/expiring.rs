//! The tables whose rows expire, each with the statement that deletes a batch of its
//! expired rows. Its own file because both the purge and the lock that keeps purges of a
//! table one at a time name the tables.

use super::sql::Dialect;

/// A table whose rows carry an `expires_at` and may go once it has passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Expiring {
    /// `guard_idempotency`: a key's own call may hold its expired row while it runs.
    IdempotencyKeys,
    /// `guard_redeemed_states`: rows are only inserted (live) and purged.
    RedeemedStates,
    /// `guard_approvals` (their links and decisions go with them): the caller passes a time
    /// well past the deadline, so a late visitor still sees how an approval ended.
    #[cfg(feature = "approval")]
    Approvals,
    /// `guard_budgets`: a period that ended is only ever replaced, so its row may go.
    Budgets,
}

impl Expiring {
    /// The statement that deletes up to `$2` rows of the table that expired at or before
    /// `$1`.
    pub(super) fn statement(self, dialect: Dialect) -> &'static str {
        match (self, dialect) {
            (Expiring::IdempotencyKeys, Dialect::Postgres) => {
                "DELETE FROM guard_idempotency WHERE ctid = ANY(ARRAY(
                     SELECT ctid FROM guard_idempotency WHERE expires_at <= $1
                     LIMIT $2 FOR UPDATE SKIP LOCKED))"
            }
            // Nobody holds these rows for longer than an insert, so no row lock is needed
            // (and the server's role may not take one: it has no UPDATE on the table).
            (Expiring::RedeemedStates, Dialect::Postgres) => {
                "DELETE FROM guard_redeemed_states WHERE ctid = ANY(ARRAY(
                     SELECT ctid FROM guard_redeemed_states WHERE expires_at <= $1 LIMIT $2))"
            }
            #[cfg(feature = "approval")]
            (Expiring::Approvals, Dialect::Postgres) => {
                "DELETE FROM guard_approvals WHERE ctid = ANY(ARRAY(
                     SELECT ctid FROM guard_approvals WHERE expires_at <= $1
                     LIMIT $2 FOR UPDATE SKIP LOCKED))"
            }
            #[cfg(feature = "approval")]
            (Expiring::Approvals, Dialect::Sqlite) => {
                "DELETE FROM guard_approvals WHERE rowid IN (
                     SELECT rowid FROM guard_approvals WHERE expires_at <= $1 LIMIT $2)"
            }
            (Expiring::Budgets, Dialect::Postgres) => {
                "DELETE FROM guard_budgets WHERE ctid = ANY(ARRAY(
                     SELECT ctid FROM guard_budgets WHERE expires_at <= $1
                     LIMIT $2 FOR UPDATE SKIP LOCKED))"
            }
            (Expiring::Budgets, Dialect::Sqlite) => {
                "DELETE FROM guard_budgets WHERE rowid IN (
                     SELECT rowid FROM guard_budgets WHERE expires_at <= $1 LIMIT $2)"
            }
            (Expiring::IdempotencyKeys, Dialect::Sqlite) => {
                "DELETE FROM guard_idempotency WHERE rowid IN (
                     SELECT rowid FROM guard_idempotency WHERE expires_at <= $1 LIMIT $2)"
            }
            (Expiring::RedeemedStates, Dialect::Sqlite) => {
                "DELETE FROM guard_redeemed_states WHERE rowid IN (
                     SELECT rowid FROM guard_redeemed_states WHERE expires_at <= $1 LIMIT $2)"
            }
        }
    }
}
