//! A PostgreSQL read handle cannot write: the server refuses a drop, a multi-statement
//! write, and a switch to read-write, and the model gets the stable `READ_ONLY` code.

use rmcp_guard::{Code, db::PgReadDb};
use tokio_postgres::NoTls;

/// The test database URL, or `None` after saying loudly that the test is skipped.
fn url() -> Option<String> {
    guard_tests::pg_url("the PostgreSQL read-only tests")
}

/// A fresh schema with an `orders` table of three rows, through an ordinary connection.
async fn seed(url: &str, schema: &str) -> tokio_postgres::Client {
    let (admin, connection) = tokio_postgres::connect(url, NoTls).await.expect("connect");
    tokio::spawn(connection);
    admin
        .batch_execute(&format!(
            "DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema};
             CREATE TABLE {schema}.orders (id int PRIMARY KEY, total int NOT NULL);
             INSERT INTO {schema}.orders VALUES (1, 10), (2, 20), (3, 30);"
        ))
        .await
        .expect("seed");
    admin
}

async fn rows(admin: &tokio_postgres::Client, schema: &str) -> i64 {
    admin
        .query_one(&format!("SELECT count(*) FROM {schema}.orders"), &[])
        .await
        .expect("orders still exists")
        .get(0)
}

#[tokio::test]
async fn read_handle_refuses_every_write() {
    let Some(url) = url() else { return };
    let schema = "guard_ro_test";
    let admin = seed(&url, schema).await;
    let db = PgReadDb::connect(&url).await.expect("read handle");

    let read = db
        .query(
            &format!("SELECT total FROM {schema}.orders ORDER BY id"),
            &[],
        )
        .await
        .expect("reads work");
    assert_eq!(read.len(), 3);

    let drop = db
        .query(&format!("DROP TABLE {schema}.orders"), &[])
        .await
        .unwrap_err();
    assert_eq!(drop.code(), Code::ReadOnly, "{drop}");

    let delete = db
        .query(&format!("DELETE FROM {schema}.orders"), &[])
        .await
        .unwrap_err();
    assert_eq!(delete.code(), Code::ReadOnly, "{delete}");

    let several = db
        .query(&format!("SELECT 1; DELETE FROM {schema}.orders"), &[])
        .await
        .unwrap_err();
    assert_eq!(several.code(), Code::InvalidInput, "{several}");

    // Switching the session or the transaction to read-write does not open a way to write:
    // every call starts its own READ ONLY transaction.
    db.query("SET default_transaction_read_only = off", &[])
        .await
        .expect("the setting itself is allowed");
    let after_switch = db
        .query(&format!("DELETE FROM {schema}.orders"), &[])
        .await
        .unwrap_err();
    assert_eq!(after_switch.code(), Code::ReadOnly, "{after_switch}");
    let _ = db.query("SET TRANSACTION READ WRITE", &[]).await;
    let after_tx_switch = db
        .query(&format!("INSERT INTO {schema}.orders VALUES (4, 40)"), &[])
        .await
        .unwrap_err();
    assert_eq!(after_tx_switch.code(), Code::ReadOnly, "{after_tx_switch}");

    assert_eq!(rows(&admin, schema).await, 3, "no write got through");
    admin
        .batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
        .await
        .expect("clean up");
}

#[tokio::test]
async fn unreachable_database_is_a_clear_error() {
    if url().is_none() {
        return;
    }
    let error = PgReadDb::connect("postgres://postgres@127.0.0.1:1/none")
        .await
        .err()
        .expect("nothing listens on port 1");
    assert_eq!(error.code(), Code::Unavailable);
    assert!(error.message().contains("unavailable"), "{error}");
}
