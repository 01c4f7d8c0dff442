//! A ledger's rules on PostgreSQL: one trigger function per table, for every role (the
//! tables' owner included: a row's history is not the operator's to rewrite either), its
//! `search_path` pinned as guard's other functions'. A refusal is raised as
//! `insufficient_privilege` and names the row by its key.

use super::{
    clock::now_sql,
    declare::{Check, Event, Ledger},
};
use crate::store::Dialect;

/// The function, and its trigger where missing.
pub(super) fn create(ledger: &Ledger) -> String {
    let table = ledger.table;
    format!(
        "{function}DO $guard$\nBEGIN\n    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_trigger\n    \
         WHERE tgrelid = '{table}'::pg_catalog.regclass AND tgname = '{table}_rules') THEN\n        \
         {trigger}\n    END IF;\nEND\n$guard$;\n",
        function = function(ledger),
        trigger = trigger(ledger),
    )
}

/// The function replaced, and its trigger created again.
pub(super) fn renew(ledger: &Ledger) -> String {
    format!(
        "{function}DROP TRIGGER IF EXISTS {table}_rules ON {table};\n{trigger}\n",
        function = function(ledger),
        table = ledger.table,
        trigger = trigger(ledger),
    )
}

fn trigger(ledger: &Ledger) -> String {
    format!(
        "CREATE TRIGGER {table}_rules BEFORE INSERT OR UPDATE OR DELETE ON {table} \
         FOR EACH ROW EXECUTE FUNCTION {table}_rules();",
        table = ledger.table
    )
}

fn function(ledger: &Ledger) -> String {
    let checks = ledger.checks();
    let on = |event| -> String {
        checks
            .iter()
            .filter(|c| c.event == event)
            .map(|c| raise(ledger, c))
            .collect()
    };
    format!(
        "CREATE OR REPLACE FUNCTION {table}_rules() RETURNS trigger\n    \
         LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $guard$\nBEGIN\n    \
         IF TG_OP = 'DELETE' THEN\n{delete}        RETURN OLD;\n    END IF;\n    \
         IF TG_OP = 'INSERT' THEN\n{insert}        RETURN NEW;\n    END IF;\n{update}    \
         RETURN NEW;\nEND\n$guard$;\n",
        table = ledger.table,
        delete = on(Event::Delete),
        insert = on(Event::Insert),
        update = on(Event::Update),
    )
}

/// `check` as an `IF … THEN RAISE … END IF` (or a bare `RAISE` when it refuses always).
fn raise(ledger: &Ledger, check: &Check) -> String {
    let row = if check.event == Event::Insert {
        "NEW"
    } else {
        "OLD"
    };
    let marks = vec!["%"; ledger.key.len()].join("/");
    let message = check
        .message
        .replace("{row}", &format!("{} {marks}", ledger.row));
    let keys: String = ledger.key.iter().map(|k| format!(", {row}.{k}")).collect();
    let hint = check
        .hint
        .map(|hint| format!(",\n                HINT = '{hint}'"))
        .unwrap_or_default();
    let raise = format!(
        "RAISE EXCEPTION 'guard: {message}'{keys}\n                \
         USING ERRCODE = 'insufficient_privilege'{hint};\n"
    );
    match &check.when {
        Some(when) => format!(
            "        IF {} THEN\n            {raise}        END IF;\n",
            condition(when)
        ),
        None => format!("        {raise}"),
    }
}

/// `when` in PostgreSQL's words.
fn condition(when: &str) -> String {
    when.replace("{ne}", "IS DISTINCT FROM")
        .replace("{now}", now_sql(Dialect::Postgres))
}
