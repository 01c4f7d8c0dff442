//! `guard_store_identity`: one row naming the store, a random id made with its schema and
//! never changed. Replicas of one store (one SQLite file, one PostgreSQL schema) read the
//! same id, before and after any restart; another store has another. A request state names
//! the store that will spend it, so a state spent in one store is never answered again in
//! another that cannot know it was spent.

use super::{BoxFuture, Dialect, OperationStore, StoreError, Tx};

/// The table, the same on both engines.
const TABLE: &str = "CREATE TABLE IF NOT EXISTS guard_store_identity (
    id       INTEGER PRIMARY KEY CHECK (id = 1),
    identity TEXT NOT NULL
)";

/// SQLite: the row is never changed, removed or replaced (`INSERT OR REPLACE` deletes
/// without firing delete triggers, so a second row is refused as it is inserted).
const SQLITE: &str = "CREATE TRIGGER IF NOT EXISTS guard_store_identity_once
    BEFORE INSERT ON guard_store_identity
    WHEN EXISTS (SELECT 1 FROM guard_store_identity)
BEGIN
    SELECT RAISE(ABORT, 'guard: the store identity is fixed when the store is created');
END;
CREATE TRIGGER IF NOT EXISTS guard_store_identity_fixed
    BEFORE UPDATE ON guard_store_identity
BEGIN
    SELECT RAISE(ABORT, 'guard: the store identity is fixed when the store is created');
END;
CREATE TRIGGER IF NOT EXISTS guard_store_identity_kept
    BEFORE DELETE ON guard_store_identity
BEGIN
    SELECT RAISE(ABORT, 'guard: the store identity is fixed when the store is created');
END;";

/// PostgreSQL: the same rule for every role, the owner included (the server's role may
/// only read the row), its `search_path` pinned as guard's other triggers'.
const POSTGRES: &str = r#"
CREATE OR REPLACE FUNCTION guard_store_identity_fixed() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $guard$
BEGIN
    RAISE EXCEPTION 'guard: the store identity is fixed when the store is created'
        USING ERRCODE = 'insufficient_privilege',
              HINT = 'Request states name the store by it; a new id would be another store.';
END
$guard$;
DO $guard$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_trigger
                   WHERE tgrelid = 'guard_store_identity'::pg_catalog.regclass
                     AND tgname = 'guard_store_identity_fixed') THEN
        CREATE TRIGGER guard_store_identity_fixed
            BEFORE UPDATE OR DELETE ON guard_store_identity
            FOR EACH ROW EXECUTE FUNCTION guard_store_identity_fixed();
    END IF;
END
$guard$;
"#;

/// The schema step that adds the table, its rule and the store's id (registered in
/// `crate::schema`).
pub(crate) fn create(tx: &mut Tx) -> BoxFuture<'_, Result<(), StoreError>> {
    Box::pin(async move {
        tx.batch(TABLE).await?;
        match tx.dialect() {
            Dialect::Sqlite => tx.batch(SQLITE).await?,
            Dialect::Postgres => tx.batch(POSTGRES).await?,
        }
        let id = uuid::Uuid::new_v4().simple().to_string();
        tx.execute(
            "INSERT INTO guard_store_identity (id, identity) VALUES (1, $1)",
            &[id.into()],
        )
        .await
        .map(drop)
    })
}

/// The store's id, read outside any writer's turn (the row never changes).
pub(crate) async fn read(store: &dyn OperationStore) -> Result<String, StoreError> {
    let rows = store
        .peek(
            "SELECT identity FROM guard_store_identity WHERE id = 1",
            &[],
        )
        .await?;
    match rows.first() {
        Some(row) => Ok(row.text("identity")?.to_owned()),
        None => Err(StoreError::Other(
            "the operation store has no identity row (guard_store_identity is empty); open \
             it with this guard release's opener (SqliteStore::open or PgStore::migrate), \
             which adds it"
                .into(),
        )),
    }
}

#[cfg(all(test, feature = "sqlite"))]
mod tests {
    use super::*;
    use crate::store::SqliteStore;

    #[tokio::test]
    async fn a_store_keeps_its_identity_and_another_store_has_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("one.db");
        let first = read(&SqliteStore::open(&path).unwrap()).await.unwrap();
        assert_eq!(first.len(), 32, "{first}");
        // Opened again, as a restart or a replica opens it: the same id.
        let store = SqliteStore::open(&path).unwrap();
        assert_eq!(read(&store).await.unwrap(), first);
        let other = read(&SqliteStore::open(dir.path().join("two.db")).unwrap())
            .await
            .unwrap();
        assert_ne!(other, first);

        for sql in [
            "UPDATE guard_store_identity SET identity = 'forged'",
            "DELETE FROM guard_store_identity",
            "INSERT OR REPLACE INTO guard_store_identity (id, identity) VALUES (1, 'forged')",
        ] {
            let mut tx = store.begin().await.unwrap();
            let refused = tx.execute(sql, &[]).await;
            assert!(refused.is_err(), "{sql} was allowed");
            tx.rollback().await.unwrap();
        }
        assert_eq!(read(&store).await.unwrap(), first, "never changed");
    }
}
