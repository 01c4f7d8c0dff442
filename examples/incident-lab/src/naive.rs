//! The server the incident starts from: one all-powerful `run_sql(sql)` tool on a
//! read-write connection. Convenient, great in a demo, and nothing stands between the model
//! and `DROP TABLE orders`.

use std::path::PathBuf;

use rmcp::{
    ServerHandler,
    handler::server::wrapper::Parameters,
    model::{ServerCapabilities, ServerConfig},
    tool, tool_handler, tool_router,
};
use rmcp_guard::ToolError;
use rusqlite::fallible_iterator::FallibleIterator;
use rusqlite::{Batch, Connection, types::ValueRef};
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Debug, Deserialize, JsonSchema)]
pub struct RunSqlArgs {
    /// Any SQL: one statement or several separated by `;`.
    pub sql: String,
}

/// The naive server: whatever SQL the model writes runs against the database file.
#[derive(Clone)]
pub struct NaiveServer {
    db_path: PathBuf,
}

impl NaiveServer {
    pub fn new(db_path: impl Into<PathBuf>) -> Self {
        Self {
            db_path: db_path.into(),
        }
    }
}

#[tool_router]
impl NaiveServer {
    /// Run SQL against the shop database and return the rows.
    #[tool]
    async fn run_sql(&self, Parameters(args): Parameters<RunSqlArgs>) -> Result<String, ToolError> {
        let conn =
            Connection::open(&self.db_path).map_err(|e| ToolError::invalid_input(e.to_string()))?;
        // The naive server shows the model the raw engine error, as such servers do.
        execute(&conn, &args.sql).map_err(|e| ToolError::invalid_input(e.to_string()))
    }
}

#[tool_handler]
impl ServerHandler for NaiveServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build()).with_server_info(
            rmcp::model::Implementation::new("naive-shop", env!("CARGO_PKG_VERSION")),
        )
    }
}

/// Runs every statement of `sql` on `conn`, in order, and returns the rows of those that
/// return rows (one line per row, values separated by ` | `; `ok` for the others). Stops at the first error.
pub fn execute(conn: &Connection, sql: &str) -> rusqlite::Result<String> {
    let mut out = Vec::new();
    let mut batch = Batch::new(conn, sql);
    while let Some(mut stmt) = batch.next()? {
        if stmt.column_count() == 0 {
            stmt.execute([])?;
            out.push("ok".to_owned());
            continue;
        }
        let columns = stmt.column_count();
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            let mut values = Vec::with_capacity(columns);
            for i in 0..columns {
                values.push(match row.get_ref(i)? {
                    ValueRef::Null => "NULL".to_owned(),
                    ValueRef::Integer(n) => n.to_string(),
                    ValueRef::Real(x) => x.to_string(),
                    ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned(),
                    ValueRef::Blob(b) => format!("<{} bytes>", b.len()),
                });
            }
            out.push(values.join(" | "));
        }
    }
    Ok(out.join("\n"))
}
