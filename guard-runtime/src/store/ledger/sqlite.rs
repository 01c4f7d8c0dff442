//! A ledger's rules on SQLite: one trigger per check, `BEFORE` the statement it guards,
//! that aborts it (`RAISE(ABORT, …)` is a constraint failure, which the store reports as
//! [`StoreError::Constraint`](crate::store::StoreError::Constraint)).

use super::{
    clock::now_sql,
    declare::{Check, Condition, Event, Ledger, tables},
};
use crate::store::Dialect;

/// The triggers, created where missing.
pub(super) fn create(ledger: &Ledger) -> String {
    triggers(ledger, "CREATE TRIGGER IF NOT EXISTS")
}

/// The triggers, each dropped and created again.
pub(super) fn renew(ledger: &Ledger) -> String {
    let drops: String = ledger
        .checks()
        .iter()
        .map(|check| format!("DROP TRIGGER IF EXISTS {};\n", name(ledger, check)))
        .collect();
    drops + &triggers(ledger, "CREATE TRIGGER")
}

fn triggers(ledger: &Ledger, create: &str) -> String {
    ledger
        .checks()
        .iter()
        .map(|check| trigger(ledger, check, create))
        .collect()
}

fn trigger(ledger: &Ledger, check: &Check, create: &str) -> String {
    let event = match check.event {
        Event::Insert => "INSERT",
        Event::Update => "UPDATE",
        Event::Delete => "DELETE",
    };
    let when = check
        .when
        .as_ref()
        .map(|when| format!("\n    WHEN {}", condition(when)))
        .unwrap_or_default();
    let message = check.message.replace("{row}", ledger.row);
    format!(
        "{create} {name}\n    BEFORE {event} ON {table}{when}\nBEGIN\n    \
         SELECT RAISE(ABORT, 'guard: {message}');\nEND;\n",
        name = name(ledger, check),
        table = ledger.table,
    )
}

/// The triggers that hold `ledger`'s checks.
#[cfg(test)]
pub(super) fn names(ledger: &Ledger) -> Vec<String> {
    ledger.checks().iter().map(|c| name(ledger, c)).collect()
}

/// The trigger that holds `check`.
fn name(ledger: &Ledger, check: &Check) -> String {
    format!("{}_{}", ledger.table, check.name)
}

/// `when` in SQLite's words: other tables by their names, no row locks (a SQLite store has
/// one writer at a time), a JSON array's texts from `json_each`.
fn condition(when: &Condition) -> String {
    let text = match when {
        Condition::Row(text) => text,
        Condition::Reads { sqlite, .. } => sqlite,
    };
    let text = text
        .replace("{ne}", "IS NOT")
        .replace("{now}", now_sql(Dialect::Sqlite))
        .replace("{lock}", "")
        .replace("{json_texts}", "json_each")
        .replace("{as_json}", "");
    tables(&text, str::to_owned)
}
