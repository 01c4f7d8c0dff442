//! The ledger of promises: undo windows, deferred calls, grants, page approvals (with
//! their links, decisions, uses and tasks), spent request states and session budgets are
//! one kind of row (someone's, about one thing, until a time, whose status only moves
//! forward), so their rules are declared once ([`Ledger`]) and the database enforces them
//! on both engines from that declaration: SQLite triggers that abort the statement, and one
//! PostgreSQL trigger function for every role, the tables' owner included. This is the one
//! place that creates ([`create`]) and renews ([`renew`]) those triggers. Each feature
//! keeps its table's columns and the words its messages use; a rule only one feature has
//! (a decision names a listed approver other than the requester and the link it came
//! through) is that feature's text, declared as a [`Rule`] and created here like the rest.
//!
//! It also holds what every such row's readers share: the database's clock ([`clock`]),
//! never a caller's, which decides what is due or expired (a row's deadline is read from
//! the row), and the owner a row belongs to ([`Owner`]). It sits in the storage layer
//! because the store's own tables (spent request states, approvals) are ledger rows too.

pub(crate) mod clock;
mod declare;
mod owner;
mod postgres;
mod sqlite;

pub(crate) use declare::{Event, Kept, Ledger, Opens, Refusal, Rule, Status, When};
pub(crate) use owner::Owner;

use crate::store::{Dialect, StoreError, Tx};

/// Creates `table` (its `CREATE TABLE IF NOT EXISTS` and indexes) and the rules `ledger`
/// declares, where they are missing: a feature's schema step.
pub(crate) async fn create(tx: &mut Tx, table: &str, ledger: &Ledger) -> Result<(), StoreError> {
    tx.batch(table).await?;
    let rules = match tx.dialect() {
        Dialect::Sqlite => sqlite::create(ledger),
        Dialect::Postgres => postgres::create(ledger),
    };
    tx.batch(&rules).await
}

/// Replaces the rules of each of `ledgers` with the ones generated now, first dropping the
/// triggers (and, on PostgreSQL, their functions) named in `retired`, which rules written
/// before the ledger held: so a store created by earlier steps ends with the same rules as
/// a new one.
pub(crate) async fn renew(
    tx: &mut Tx,
    ledgers: &[&Ledger],
    retired: &[Retired],
) -> Result<(), StoreError> {
    let dialect = tx.dialect();
    for old in retired {
        let drop = match dialect {
            Dialect::Sqlite => format!("DROP TRIGGER IF EXISTS {};", old.trigger),
            Dialect::Postgres => format!(
                "DROP TRIGGER IF EXISTS {trigger} ON {table}; DROP FUNCTION IF EXISTS {trigger}();",
                trigger = old.trigger,
                table = old.table
            ),
        };
        tx.batch(&drop).await?;
    }
    for ledger in ledgers {
        let rules = match dialect {
            Dialect::Sqlite => sqlite::renew(ledger),
            Dialect::Postgres => postgres::renew(ledger),
        };
        tx.batch(&rules).await?;
    }
    Ok(())
}

/// The triggers that hold `ledger`'s rules on `dialect`, for tests that compare a store's
/// catalog with its declarations.
#[cfg(test)]
pub(crate) fn triggers(ledger: &Ledger, dialect: Dialect) -> Vec<String> {
    match dialect {
        Dialect::Sqlite => sqlite::names(ledger),
        Dialect::Postgres => vec![format!("{}_rules", ledger.table)],
    }
}

/// A trigger a table's rules had before the ledger declared them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Retired {
    /// The table it is on.
    pub table: &'static str,
    /// The trigger's name (on PostgreSQL also its function's).
    pub trigger: &'static str,
}
