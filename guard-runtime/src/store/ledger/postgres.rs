//! A ledger's rules on PostgreSQL: one trigger function per table, for every role (the
//! tables' owner included: a row's history is not the operator's to rewrite either), its
//! `search_path` pinned as guard's other functions'. A refusal is raised as the ledger's
//! [`Refusal`] says and names the row by its key.
//!
//! A condition over the row alone is an `IF` of the function. One that reads other tables
//! (or parses a value) runs as a query of its own, with the row passed in (`$1` the new,
//! `$2` the old), naming those tables in the trigger's own schema, so neither a caller's
//! `search_path` nor a temporary table of the same name changes what it reads; a row whose
//! values it cannot read (say, a list that is not JSON) is refused.

use super::{
    clock::now_sql,
    declare::{Check, Condition, Event, Ledger, Refusal, tables},
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
         LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $guard$\n\
         DECLARE\n    refused boolean;\nBEGIN\n    \
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
    let code = match ledger.refusal {
        Refusal::Privilege => "insufficient_privilege",
        Refusal::Constraint => "integrity_constraint_violation",
    };
    let raise = format!(
        "RAISE EXCEPTION 'guard: {message}'{keys}\n                \
         USING ERRCODE = '{code}'{hint};\n"
    );
    match &check.when {
        Some(Condition::Row(when)) => format!(
            "        IF {} THEN\n            {raise}        END IF;\n",
            condition(when)
        ),
        Some(Condition::Reads { postgres, .. }) => format!(
            "        BEGIN\n            EXECUTE pg_catalog.format($rule$SELECT coalesce(({}), false)$rule$,\n                \
             TG_TABLE_SCHEMA) INTO refused USING NEW, OLD;\n        \
             EXCEPTION WHEN data_exception THEN\n            refused := true;\n        END;\n        \
             IF refused THEN\n            {raise}        END IF;\n",
            query(postgres)
        ),
        None => format!("        {raise}"),
    }
}

/// `when` in PostgreSQL's words.
fn condition(when: &str) -> String {
    when.replace("{ne}", "IS DISTINCT FROM")
        .replace("{now}", now_sql(Dialect::Postgres))
}

/// `when` as the text of a query `format` fills with the trigger's schema: its tables in
/// that schema, the rows it reads locked, the row in `$1` (new) and `$2` (old).
fn query(when: &str) -> String {
    let text = condition(&when.replace('%', "%%"))
        .replace("{lock}", " FOR UPDATE")
        .replace("{json_texts}", "pg_catalog.jsonb_array_elements_text")
        .replace("{as_json}", "::pg_catalog.jsonb");
    let text = rows(&rows(&text, "NEW", "($1)"), "OLD", "($2)");
    tables(&text, |table| format!("%1$I.{table}"))
}

/// `text` with each `row.` (a whole word) written `with.`.
fn rows(text: &str, row: &str, with: &str) -> String {
    let word = format!("{row}.");
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(&word) {
        let before = match at {
            0 => out.chars().last(),
            _ => rest[..at].chars().last(),
        };
        let starts = before.is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
        out.push_str(&rest[..at]);
        out.push_str(if starts { with } else { row });
        out.push('.');
        rest = &rest[at + word.len()..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_names_its_tables_in_the_triggers_schema_and_takes_the_row_in() {
        assert_eq!(
            query(
                "NEW.a {ne} OLD.a OR RENEW.b = 1 OR EXISTS (SELECT 1 FROM {table:t} x \
                 WHERE x.id = NEW.id AND x.p LIKE '5%'{lock})"
            ),
            "($1).a IS DISTINCT FROM ($2).a OR RENEW.b = 1 OR EXISTS (SELECT 1 FROM %1$I.t x \
             WHERE x.id = ($1).id AND x.p LIKE '5%%' FOR UPDATE)"
        );
    }
}
