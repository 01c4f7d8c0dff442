//! A PostgreSQL read handle the server enforces: the session defaults to read-only
//! transactions, every call runs in its own `READ ONLY` transaction that is rolled back, and
//! the extended protocol allows one statement per call, so a tool cannot first switch the
//! transaction to read-write and then write.

use tokio::sync::Mutex;
use tokio_postgres::{NoTls, Row, types::ToSql};

use crate::{
    error::{Code, ToolError},
    read_handle::{ReadHandle, Sealed},
    store::Kind,
};

/// A read-only PostgreSQL connection for read tools.
pub struct PgReadDb {
    client: Mutex<tokio_postgres::Client>,
}

impl PgReadDb {
    /// Connects to `url` with `default_transaction_read_only=on` for the session.
    pub async fn connect(url: &str) -> Result<Self, ToolError> {
        let mut config: tokio_postgres::Config = url.parse().map_err(|e| {
            tracing::warn!(error = %e, "bad PostgreSQL URL");
            ToolError::new(
                Code::Unavailable,
                "The database URL is not valid; nothing was read. Ask the operator to check the server's database URL.",
            )
        })?;
        let options = match config.get_options() {
            Some(existing) => format!("{existing} -c default_transaction_read_only=on"),
            None => "-c default_transaction_read_only=on".into(),
        };
        config.options(&options);
        let (client, connection) = config.connect(NoTls).await.map_err(|e| {
            tracing::warn!(error = %e, "PostgreSQL connection failed");
            ToolError::new(
                Code::Unavailable,
                "The database is unavailable; nothing was read. Try again later.",
            )
        })?;
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::warn!(%error, "PostgreSQL connection closed");
            }
        });
        Ok(Self {
            client: Mutex::new(client),
        })
    }

    /// Runs one statement in a fresh `READ ONLY` transaction and rolls it back.
    pub async fn query(
        &self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, ToolError> {
        let mut client = self.client.lock().await;
        let tx = client
            .build_transaction()
            .read_only(true)
            .start()
            .await
            .map_err(refusal)?;
        let rows = tx.query(sql, params).await.map_err(refusal)?;
        tx.rollback().await.map_err(refusal)?;
        Ok(rows)
    }
}

/// The server's refusal to write gets the stable `READ_ONLY` code; several statements in
/// one call are refused as bad input; anything else is internal.
fn refusal(error: tokio_postgres::Error) -> ToolError {
    match crate::store::pg::kind(&error) {
        Kind::ReadOnly => {
            tracing::warn!(%error, "write refused by a read-only PostgreSQL transaction");
            ToolError::new(
                Code::ReadOnly,
                "The database refused to write: this tool's connection is read-only, so nothing was changed.",
            )
        }
        Kind::MultipleStatements => ToolError::invalid_input(
            "A read handle runs one statement per call; send the statements separately.",
        ),
        _ => ToolError::internal(error),
    }
}

impl Sealed for PgReadDb {}
impl ReadHandle for PgReadDb {}
