//! Opening the orders database on either engine.

use rmcp_guard::ops::{OperationStore, PgStore, SqliteStore, StoreError};
use tokio_postgres::NoTls;

use crate::schema::{self, APP_ROLE, SeedOrder};

/// The embedded store: guard's tables and the order tables in one SQLite file, seeded with
/// `orders` that are not there yet.
pub async fn open_sqlite(
    path: &std::path::Path,
    orders: &[SeedOrder<'_>],
) -> Result<SqliteStore, StoreError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| StoreError::Other(format!("cannot create {}: {e}", dir.display())))?;
    }
    let store = SqliteStore::open(path)?;
    let mut tx = store.begin().await?;
    schema::create_tables(&mut tx).await?;
    schema::seed(&mut tx, orders).await?;
    tx.commit().await?;
    Ok(store)
}

/// A session configuration for `url` with `search_path` set to `schema`, as `user` if given.
pub fn pg_config(
    url: &str,
    schema: &str,
    user: Option<&str>,
) -> Result<tokio_postgres::Config, StoreError> {
    if !schema
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
    {
        return Err(StoreError::Other(format!(
            "schema `{schema}` must be lowercase letters, digits and _"
        )));
    }
    let mut config: tokio_postgres::Config = url
        .parse()
        .map_err(|e| StoreError::Other(format!("the PostgreSQL URL is not valid: {e}")))?;
    config.options(format!("-c search_path={schema}"));
    if let Some(user) = user {
        config.user(user);
    }
    Ok(config)
}

/// Run as the schema owner (`admin_url`): creates `schema` with guard's tables and the order
/// tables, seeds `orders`, and grants the server's role what it needs and no more.
pub async fn setup_postgres(
    admin_url: &str,
    schema: &str,
    orders: &[SeedOrder<'_>],
) -> Result<(), StoreError> {
    let config = pg_config(admin_url, schema, None)?;
    let (admin, connection) = config
        .connect(NoTls)
        .await
        .map_err(|e| StoreError::Other(format!("cannot connect as the schema owner: {e}")))?;
    tokio::spawn(connection);
    admin
        .batch_execute(&format!("CREATE SCHEMA IF NOT EXISTS {schema}"))
        .await
        .map_err(|e| StoreError::Other(format!("cannot create schema {schema}: {e}")))?;
    let owner = PgStore::from_config(config, 1)?;
    owner.migrate().await?;
    let mut tx = owner.begin().await?;
    schema::create_tables(&mut tx).await?;
    schema::seed(&mut tx, orders).await?;
    tx.commit().await?;
    admin
        .batch_execute(&schema::postgres_grants(schema)?)
        .await
        .map_err(|e| {
            StoreError::Other(format!(
                "cannot grant {APP_ROLE} its rights: {}",
                db_message(&e)
            ))
        })?;
    Ok(())
}

/// Run as a superuser or the database's owner (`admin_url`): takes `TEMPORARY` on the
/// database away from `PUBLIC` and from the server's role, so the server's role cannot create
/// temporary tables or views at all. Roles that need them must then be granted `TEMPORARY`
/// by name.
pub async fn revoke_temp(admin_url: &str) -> Result<(), StoreError> {
    let config: tokio_postgres::Config = admin_url
        .parse()
        .map_err(|e| StoreError::Other(format!("the PostgreSQL URL is not valid: {e}")))?;
    let (admin, connection) = config
        .connect(NoTls)
        .await
        .map_err(|e| StoreError::Other(format!("cannot connect as the database owner: {e}")))?;
    tokio::spawn(connection);
    admin
        .batch_execute(&schema::revoke_temp_sql())
        .await
        .map_err(|e| {
            StoreError::Other(format!(
                "cannot revoke TEMPORARY on the database: {}; connect as a superuser or the database's owner",
                db_message(&e)
            ))
        })
}

/// The server's message of a database error (with its hint), or the error itself.
fn db_message(error: &tokio_postgres::Error) -> String {
    match error.as_db_error() {
        Some(db) => match db.hint() {
            Some(hint) => format!("{} ({hint})", db.message()),
            None => db.message().to_owned(),
        },
        None => error.to_string(),
    }
}

/// The server's store on PostgreSQL: `url`'s database as the server's role, in `schema`.
pub fn connect_postgres(url: &str, schema: &str, max: usize) -> Result<PgStore, StoreError> {
    PgStore::from_config(pg_config(url, schema, Some(APP_ROLE))?, max)
}
