//! Guard's schema: the versioned steps of its tables, each registered here by the module
//! whose tables it changes, and the public openers that apply them. A later change to
//! guard's tables is a new step at the end, never an edit of an earlier one.
//!
//! The storage layer (`store`) applies steps without knowing their owners, so the audit log's
//! own step (moving a pre-log audit table into the log) is named here, above both.

#[cfg(feature = "postgres")]
use crate::store::PgStore;
#[cfg(feature = "sqlite")]
use crate::store::{SqliteStore, sqlite::Access};
use crate::{
    store::ledger::{Ledger, Retired},
    store::{
        BoxFuture, StoreError, Tx,
        migrate::{self, Step},
    },
};

/// Every step, in order: step `i` brings a store to version `i + 1`.
pub(crate) const STEPS: [Step; 18] = [
    // Version 1: the tables as guard created them before it versioned them.
    Step {
        name: "tables",
        apply: migrate::tables,
    },
    // Version 2: stored payloads as RFC 8785 canonical JSON, with their digests.
    Step {
        name: "canonical payloads",
        apply: migrate::canonical_payloads,
    },
    // Version 3: the rows of the audit table from before the audit log (`guard_audit`), if
    // the store has one, appended to the log in their order; the old table dropped.
    Step {
        name: "legacy audit",
        apply: legacy_audit,
    },
    // Version 4: an index on `guard_redeemed_states (expires_at)`.
    Step {
        name: "redeemed expiry",
        apply: migrate::redeemed_expiry,
    },
    // Version 5: `guard_audit_cosignatures`, the witnesses' cosignatures of stored
    // checkpoints.
    Step {
        name: "audit cosignatures",
        apply: audit_cosignatures,
    },
    // Version 6: `guard_undo`, the undo windows of effects that can be reversed for a
    // while, with the rules that a window closes once and never changes owner or deadline.
    Step {
        name: "undo windows",
        apply: crate::undo::table::create,
    },
    // Version 7: `guard_approvals`, `guard_approval_links` and `guard_approval_decisions`,
    // the approval page's approvals, with the triggers that keep them honest.
    Step {
        name: "approvals",
        apply: crate::store::approvals::create,
    },
    // Version 8: `guard_audit_queue`, entries committed with their call and sequenced after
    // (`guard_audit_log.queue_id` names the queued entry each one was).
    Step {
        name: "audit queue",
        apply: audit_queue,
    },
    // Version 9: `guard_approvals.fingerprint` (the effect the approvers saw, fixed) and
    // `guard_approval_uses` (an approval lets its effect run once), so the requester's next
    // call takes up an approval instead of opening another.
    Step {
        name: "approval take-over",
        apply: crate::store::approvals::take_over,
    },
    // Version 10: `guard_approval_tasks`, approvals answered as MCP Tasks on 2026-07-28:
    // the call's arguments, who runs it once approved, and how the task ended.
    Step {
        name: "approval tasks",
        apply: crate::store::approvals::tasks,
    },
    // Version 11: `guard_deferred`, confirmed calls that run later, with the rules that a
    // call ends once and never changes owner, what it runs or when.
    Step {
        name: "deferred calls",
        apply: crate::defer::table::create,
    },
    // Version 12: `guard_grants`, the bounded grants humans open, with the rules that a
    // grant counts one use at a time, is revoked once, and never changes what it covers.
    Step {
        name: "grants",
        apply: crate::grant::table::create,
    },
    // Version 13: `guard_approvals.approvers` (whom an approval asks, fixed), the seals of
    // approval links and decisions, and the rules that a link or a decision is only for the
    // requester or a listed approver; approvals pending at this step are withdrawn.
    Step {
        name: "approval seals",
        apply: crate::store::approvals::seals,
    },
    // Version 14: `guard_store_identity`, the store's random id, made once and never
    // changed: a request state names the store that spends it.
    Step {
        name: "store identity",
        apply: crate::store::identity::create,
    },
    // Version 15: `guard_budgets`, what each disclosing tool showed each person in their
    // budget period, with the rules that a budget only grows within its period and is kept
    // until it ended.
    Step {
        name: "budgets",
        apply: crate::budget::table::create,
    },
    // Version 16: the rules of undo windows, deferred calls, grants and budgets as their
    // ledger declarations generate them, in place of the ones written by hand before.
    Step {
        name: "ledger rules",
        apply: ledger_rules,
    },
    // Version 17: the rules of approvals (their links, decisions, uses and tasks) and of
    // spent request states declared on the ledger too, in place of the approval steps'
    // hand-written triggers; every ledger table's rules generated anew, so each store holds
    // the same ones whichever version it came from.
    Step {
        name: "approval and request state rules",
        apply: every_ledger_rule,
    },
    // Version 18: `guard_undo` windows may end `LOST`, with the reason their undo can never
    // succeed (what it would restore changed or went away), instead of staying open; and a
    // window is purged only once its deadline passed by the database's clock, whoever writes
    // the row.
    Step {
        name: "lost undo windows, purged when due",
        apply: crate::undo::table::lost,
    },
];

/// The ledger tables of step 16, in the order their steps add them.
const LEDGERS: [&Ledger; 4] = [
    &crate::undo::table::LEDGER,
    &crate::defer::table::LEDGER,
    &crate::grant::table::LEDGER,
    &crate::budget::table::LEDGER,
];

/// Every ledger table: step 16's, the spent request states, and the approvals' (parents
/// first).
pub(crate) const EVERY_LEDGER: [&Ledger; 10] = [
    LEDGERS[0],
    LEDGERS[1],
    LEDGERS[2],
    LEDGERS[3],
    &crate::store::spent::LEDGER,
    APPROVALS[0],
    APPROVALS[1],
    APPROVALS[2],
    APPROVALS[3],
    APPROVALS[4],
];

const APPROVALS: [&Ledger; 5] = crate::store::approvals::rules::LEDGERS;

/// The triggers the approval steps wrote by hand: SQLite's, then PostgreSQL's (one
/// function each, named as its trigger). Dropping a name the engine never had does nothing.
const APPROVALS_HAND_WRITTEN: [Retired; 28] = [
    retired(
        "guard_approval_decisions",
        "guard_approval_decisions_in_time",
    ),
    retired("guard_approval_decisions", "guard_approval_decisions_fixed"),
    retired("guard_approvals", "guard_approvals_final"),
    retired("guard_approvals", "guard_approvals_immutable"),
    retired("guard_approvals", "guard_approvals_decided"),
    retired("guard_approvals", "guard_approvals_approved_by_enough"),
    retired("guard_approvals", "guard_approvals_rejected_by_someone"),
    retired("guard_approvals", "guard_approvals_kept_while_pending"),
    retired("guard_approval_links", "guard_approval_links_once"),
    retired("guard_approvals", "guard_approvals_fingerprint_fixed"),
    retired("guard_approval_uses", "guard_approval_uses_approved"),
    retired("guard_approval_uses", "guard_approval_uses_fixed"),
    retired("guard_approval_tasks", "guard_approval_tasks_fixed"),
    retired("guard_approvals", "guard_approvals_open_pending"),
    retired("guard_approvals", "guard_approvals_approvers_fixed"),
    retired("guard_approvals", "guard_approvals_approved_by_sealed"),
    retired("guard_approval_links", "guard_approval_links_issued"),
    retired("guard_approval_links", "guard_approval_links_seal_fixed"),
    retired(
        "guard_approval_decisions",
        "guard_approval_decisions_through_a_link",
    ),
    retired("guard_approval_decisions", "guard_approval_decisions_check"),
    retired("guard_approvals", "guard_approvals_check"),
    retired("guard_approval_links", "guard_approval_links_check"),
    retired("guard_approvals", "guard_approvals_fingerprint_check"),
    retired("guard_approval_uses", "guard_approval_uses_check"),
    retired("guard_approval_tasks", "guard_approval_tasks_check"),
    retired("guard_approvals", "guard_approvals_sealed_check"),
    retired("guard_approval_links", "guard_approval_links_issued_check"),
    retired(
        "guard_approval_decisions",
        "guard_approval_decisions_sealed_check",
    ),
];

/// The triggers the ledger tables' rules had while they were written by hand (on
/// PostgreSQL one function and trigger per table, on SQLite several triggers).
const HAND_WRITTEN: [Retired; 11] = [
    retired("guard_undo", "guard_undo_opens_open"),
    retired("guard_undo", "guard_undo_closes_once"),
    retired("guard_undo", "guard_undo_kept"),
    retired("guard_deferred", "guard_deferred_starts_scheduled"),
    retired("guard_deferred", "guard_deferred_ends_once"),
    retired("guard_deferred", "guard_deferred_kept"),
    retired("guard_grants", "guard_grants_open_unused"),
    retired("guard_grants", "guard_grants_change_little"),
    retired("guard_grants", "guard_grants_kept"),
    retired("guard_budgets", "guard_budgets_only_grow"),
    retired("guard_budgets", "guard_budgets_kept_while_open"),
];

const fn retired(table: &'static str, trigger: &'static str) -> Retired {
    Retired { table, trigger }
}

fn ledger_rules(tx: &mut Tx) -> BoxFuture<'_, Result<(), StoreError>> {
    Box::pin(crate::store::ledger::renew(tx, &LEDGERS, &HAND_WRITTEN))
}

fn every_ledger_rule(tx: &mut Tx) -> BoxFuture<'_, Result<(), StoreError>> {
    Box::pin(crate::store::ledger::renew(
        tx,
        &EVERY_LEDGER,
        &APPROVALS_HAND_WRITTEN,
    ))
}

/// Tables a step folds into guard's own and drops: a store at the current version that
/// holds one again had it created outside guard, and a reader refuses it.
pub(crate) const RETIRED: [&str; 1] = [crate::audit::LEGACY_TABLE];

fn legacy_audit(tx: &mut Tx) -> BoxFuture<'_, Result<(), StoreError>> {
    Box::pin(crate::audit::migrate_legacy(tx))
}

fn audit_cosignatures(tx: &mut Tx) -> BoxFuture<'_, Result<(), StoreError>> {
    Box::pin(tx.batch(crate::audit::COSIGNATURES_TABLE))
}

fn audit_queue(tx: &mut Tx) -> BoxFuture<'_, Result<(), StoreError>> {
    Box::pin(crate::audit::create_queue(tx))
}

#[cfg(feature = "sqlite")]
impl SqliteStore {
    /// Opens (or creates) the store at `path`, in WAL mode, with guard's tables at the
    /// current schema version (an older store is migrated; a newer one is refused).
    pub fn open(path: impl AsRef<std::path::Path>) -> Result<Self, StoreError> {
        Self::open_with(path.as_ref(), &STEPS)
    }
}

#[cfg(feature = "sqlite")]
impl SqliteStore {
    /// Opens the existing store at `path` read-only, for a verifier: `immutable=1` when no
    /// write-ahead log is beside the file (nothing is locked or created), `mode=ro` when a
    /// server may have it open. It never creates or migrates anything, and refuses (leaving
    /// the file as it was) a database without guard's log, one at another schema version
    /// than this build's, and one holding a table a migration would fold in.
    pub fn open_read_only(path: impl AsRef<std::path::Path>) -> Result<Self, StoreError> {
        Self::open_existing_with(path.as_ref(), Access::Read, &STEPS, &RETIRED)
    }

    /// Opens the existing store at `path` to write (for a tool that adds to it, such as
    /// `guard-audit checkpoint`), with the refusals of
    /// [`open_read_only`](Self::open_read_only): it never creates or migrates anything.
    pub fn open_existing(path: impl AsRef<std::path::Path>) -> Result<Self, StoreError> {
        Self::open_existing_with(path.as_ref(), Access::Write, &STEPS, &RETIRED)
    }
}

#[cfg(feature = "postgres")]
impl PgStore {
    /// Connections to `url` in which every transaction is `READ ONLY`
    /// (`default_transaction_read_only`), for a verifier. Call
    /// [`check_schema`](Self::check_schema) before reading.
    pub fn connect_read_only(url: &str) -> Result<Self, StoreError> {
        let mut config: tokio_postgres::Config = url
            .parse()
            .map_err(|e| StoreError::Other(format!("the PostgreSQL URL is not valid: {e}")))?;
        let options = match config.get_options() {
            Some(given) => format!("{given} -c default_transaction_read_only=on"),
            None => "-c default_transaction_read_only=on".to_owned(),
        };
        config.options(&options);
        Self::from_config(config, 1)
    }

    /// Refuses, without changing anything, a database whose current schema holds no guard
    /// log, is at another schema version than this build's, or holds a table a migration
    /// would fold in. It never migrates: [`migrate`](Self::migrate) does that.
    pub async fn check_schema(&self) -> Result<(), StoreError> {
        use crate::store::OperationStore;
        let mut tx = self.begin().await?;
        migrate::check(&mut tx, &STEPS, &RETIRED).await?;
        tx.rollback().await
    }

    /// Creates guard's tables and their triggers if they are missing, in the first schema of
    /// the connection's `search_path`. Safe to run from several processes at once: an
    /// advisory lock makes them take turns.
    ///
    /// Run it as the role that will own the tables, never as the server's role: the triggers
    /// it adds (an intent's identity, payload and expiry are immutable; `SUBMITTED` needs its
    /// effect row) hold for every role except the owner. Then grant the server's role
    /// [`operation_grants_sql`](crate::ops::pg::operation_grants_sql).
    ///
    /// The tables carry a schema version: an older store is brought to this build's version
    /// (see `guard_schema_version`), a store written by a newer guard is refused.
    pub async fn migrate(&self) -> Result<(), StoreError> {
        self.migrate_with(&STEPS).await
    }
}

#[cfg(test)]
mod migrated;

#[cfg(test)]
mod tests {
    use super::STEPS;
    use crate::store::migrate::{pending, version};

    #[test]
    fn a_store_takes_only_the_steps_it_lacks() {
        assert_eq!(pending(0, &STEPS).unwrap(), STEPS);
        let names: Vec<&str> = pending(1, &STEPS).unwrap().iter().map(|s| s.name).collect();
        assert_eq!(
            names,
            [
                "canonical payloads",
                "legacy audit",
                "redeemed expiry",
                "audit cosignatures",
                "undo windows",
                "approvals",
                "audit queue",
                "approval take-over",
                "approval tasks",
                "deferred calls",
                "grants",
                "approval seals",
                "store identity",
                "budgets",
                "ledger rules",
                "approval and request state rules",
                "lost undo windows, purged when due"
            ]
        );
        assert!(pending(version(&STEPS), &STEPS).unwrap().is_empty());
        assert_eq!(version(&STEPS), 18);
    }

    #[test]
    fn a_newer_store_is_refused() {
        for found in [version(&STEPS) + 1, -1] {
            let error = pending(found, &STEPS).unwrap_err().to_string();
            assert!(error.contains("newer than this build"), "{error}");
        }
    }
}
