//! A store brought from an earlier schema version to this one holds exactly the rules a new
//! store holds: on every ledger table the triggers its declaration generates and no other
//! (none the approval steps wrote by hand is left, and the undo windows' purge rule is
//! there), on both engines.
//!
//! Version 16's approval steps wrote their triggers by hand; today's steps up to it add only
//! tables and columns, so a store of version 16 is made of today's first steps plus those
//! triggers, kept verbatim beside this file. Version 17 generated the undo windows' rules
//! without the rule that a window is purged only once its deadline passed.

use std::collections::BTreeSet;

use super::{EVERY_LEDGER, STEPS};
use crate::store::{Dialect, OperationStore, ledger};

/// The steps of version 16, the last whose approval steps wrote their triggers by hand.
fn previous() -> &'static [crate::store::migrate::Step] {
    &STEPS[..16]
}

/// Version 17's steps.
fn version_17() -> &'static [crate::store::migrate::Step] {
    &STEPS[..17]
}

/// The undo windows' rules as version 17 generated them.
const UNDO_17: ledger::Ledger = ledger::Ledger {
    rules: &[],
    ..crate::undo::table::LEDGER
};

/// The trigger that holds the purge rule on SQLite, which version 17 did not have.
const PURGE_RULE: ledger::Retired = ledger::Retired {
    table: "guard_undo",
    trigger: "guard_undo_purged_when_due",
};

/// Makes `store`, at version 17, hold the undo windows' rules of version 17.
async fn as_generated_then(store: &dyn OperationStore) {
    let mut tx = store.begin().await.unwrap();
    ledger::renew(&mut tx, &[&UNDO_17], &[PURGE_RULE])
        .await
        .unwrap();
    tx.commit().await.unwrap();
}

/// The triggers the approval steps of version 16 wrote on each engine.
const HAND_WRITTEN_SQLITE: &str = include_str!("approval_triggers_v16_sqlite.sql");
const HAND_WRITTEN_POSTGRES: &str = include_str!("approval_triggers_v16_postgres.sql");

/// Makes `store`, at the previous version, hold the previous version's triggers.
async fn as_written_then(store: &dyn OperationStore, triggers: &str) {
    let mut tx = store.begin().await.unwrap();
    tx.batch(triggers).await.unwrap();
    tx.commit().await.unwrap();
}

/// `(table, trigger)` of every trigger on a ledger table, as `sql` lists them.
async fn ledger_triggers(store: &dyn OperationStore, sql: &str) -> BTreeSet<(String, String)> {
    let tables: Vec<&str> = EVERY_LEDGER.iter().map(|l| l.table).collect();
    let mut tx = store.begin().await.unwrap();
    let rows = tx.query(sql, &[]).await.unwrap();
    tx.rollback().await.unwrap();
    rows.iter()
        .map(|r| {
            let text = |c| r.text(c).unwrap().to_owned();
            (text("tbl"), text("name"))
        })
        .filter(|(table, _)| tables.contains(&table.as_str()))
        .collect()
}

/// What the declarations generate on `dialect`.
fn declared(dialect: Dialect) -> BTreeSet<(String, String)> {
    EVERY_LEDGER
        .iter()
        .flat_map(|l| {
            ledger::triggers(l, dialect)
                .into_iter()
                .map(|t| (l.table.to_owned(), t))
        })
        .collect()
}

/// A trigger the approval steps wrote by hand on `dialect`.
fn hand_written(dialect: Dialect) -> (String, String) {
    let (table, trigger) = match dialect {
        Dialect::Sqlite => ("guard_approvals", "guard_approvals_approved_by_sealed"),
        Dialect::Postgres => ("guard_approval_decisions", "guard_approval_decisions_check"),
    };
    (table.to_owned(), trigger.to_owned())
}

#[cfg(feature = "sqlite")]
#[tokio::test]
async fn a_sqlite_store_of_the_previous_version_ends_with_a_new_stores_rules() {
    use crate::store::SqliteStore;
    const TRIGGERS: &str = "SELECT tbl_name AS tbl, name FROM sqlite_master WHERE type = 'trigger'";
    let dir = tempfile::tempdir().unwrap();
    let old = dir.path().join("old.db");
    let before = SqliteStore::open_with(&old, previous()).unwrap();
    as_written_then(&before, HAND_WRITTEN_SQLITE).await;
    let had = ledger_triggers(&before, TRIGGERS).await;
    assert!(
        had.contains(&hand_written(Dialect::Sqlite)),
        "the previous version wrote the approvals' triggers by hand: {had:?}"
    );
    drop(before);

    let migrated = ledger_triggers(&SqliteStore::open(&old).unwrap(), TRIGGERS).await;
    let fresh = SqliteStore::open(dir.path().join("new.db")).unwrap();
    assert_eq!(migrated, ledger_triggers(&fresh, TRIGGERS).await);
    assert_eq!(migrated, declared(Dialect::Sqlite));

    let purge_rule = (PURGE_RULE.table.to_owned(), PURGE_RULE.trigger.to_owned());
    assert!(migrated.contains(&purge_rule), "{migrated:?}");
    let v17 = dir.path().join("v17.db");
    let before = SqliteStore::open_with(&v17, version_17()).unwrap();
    as_generated_then(&before).await;
    assert!(
        !ledger_triggers(&before, TRIGGERS)
            .await
            .contains(&purge_rule)
    );
    drop(before);
    let migrated = ledger_triggers(&SqliteStore::open(&v17).unwrap(), TRIGGERS).await;
    assert_eq!(migrated, declared(Dialect::Sqlite));
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_store_of_the_previous_version_ends_with_a_new_stores_rules() {
    use crate::store::PgStore;
    let Ok(url) = std::env::var("GUARD_TEST_PG_URL") else {
        assert!(
            std::env::var("CI").is_err(),
            "CI is set but GUARD_TEST_PG_URL is not: set it so the PostgreSQL migration test runs"
        );
        eprintln!(
            "SKIPPED: GUARD_TEST_PG_URL is not set; the PostgreSQL migration test did not run"
        );
        return;
    };
    let (admin, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let schemas = [
        format!("guard_migrated_old_{}", std::process::id()),
        format!("guard_migrated_new_{}", std::process::id()),
        format!("guard_migrated_v17_{}", std::process::id()),
    ];
    let store = |schema: &str| {
        let mut config: tokio_postgres::Config = url.parse().unwrap();
        config.options(format!("-c search_path={schema}"));
        PgStore::from_config(config, 1).unwrap()
    };
    for schema in &schemas {
        admin
            .batch_execute(&format!("CREATE SCHEMA {schema}"))
            .await
            .unwrap();
    }
    // The triggers and the source of the functions they run, in the store's schema.
    const TRIGGERS: &str = "SELECT c.relname AS tbl, t.tgname AS name
        FROM pg_catalog.pg_trigger t
        JOIN pg_catalog.pg_class c ON c.oid = t.tgrelid
        WHERE c.relnamespace = pg_catalog.current_schema()::text::pg_catalog.regnamespace
          AND NOT t.tgisinternal";
    const FUNCTIONS: &str = "SELECT proname AS tbl, prosrc AS name FROM pg_catalog.pg_proc
        WHERE pronamespace = pg_catalog.current_schema()::text::pg_catalog.regnamespace";
    let functions = |store: PgStore| async move {
        let mut tx = store.begin().await.unwrap();
        let rows = tx.query(FUNCTIONS, &[]).await.unwrap();
        tx.rollback().await.unwrap();
        rows.iter()
            .map(|r| {
                (
                    r.text("tbl").unwrap().to_owned(),
                    r.text("name").unwrap().to_owned(),
                )
            })
            .collect::<BTreeSet<_>>()
    };

    let old = store(&schemas[0]);
    old.migrate_with(previous()).await.unwrap();
    as_written_then(&old, HAND_WRITTEN_POSTGRES).await;
    let had = ledger_triggers(&old, TRIGGERS).await;
    assert!(
        had.contains(&hand_written(Dialect::Postgres)),
        "the previous version wrote the approvals' triggers by hand: {had:?}"
    );
    old.migrate().await.unwrap();
    let new = store(&schemas[1]);
    new.migrate().await.unwrap();

    let migrated = ledger_triggers(&old, TRIGGERS).await;
    assert_eq!(migrated, ledger_triggers(&new, TRIGGERS).await);
    assert_eq!(migrated, declared(Dialect::Postgres));
    let fresh = functions(new).await;
    assert_eq!(
        functions(old).await,
        fresh,
        "the same functions, with the same source, and none left over"
    );

    let v17 = store(&schemas[2]);
    v17.migrate_with(version_17()).await.unwrap();
    as_generated_then(&v17).await;
    assert_ne!(
        functions(v17.clone()).await,
        fresh,
        "version 17's undo rules lack the purge rule"
    );
    v17.migrate().await.unwrap();
    assert_eq!(
        ledger_triggers(&v17, TRIGGERS).await,
        declared(Dialect::Postgres)
    );
    assert_eq!(functions(v17).await, fresh, "the undo rules of today");
    for schema in &schemas {
        admin
            .batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
            .await
            .unwrap();
    }
}
