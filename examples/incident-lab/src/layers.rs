//! The three layers that stop the same attack.
//!
//! - [`ReadOnlySql`]: the very same `run_sql`, but its connection is opened read-only
//!   (`mode=ro` + `query_only`), so the engine refuses every write whatever the SQL says.
//! - [`Shop`] published through an allowlist that does not list `run_sql`: the tool is still
//!   in the code, yet for clients it does not exist.
//! - [`Shop`]'s `delete_order(id)`: a narrow tool that cannot express a table drop and
//!   deletes nothing until the human confirms.

use std::{
    path::{Path, PathBuf},
    sync::Arc,
};

use rmcp::{
    ServerHandler,
    handler::server::wrapper::Parameters,
    model::{ServerCapabilities, ServerConfig},
    tool, tool_handler, tool_router,
};
use rmcp_guard::{
    Confirmed, Exposure, Guard, Guarded, Preview, ToolArgs, ToolError,
    db::{ReadDb, WriteDb},
    destructive, exposed,
    forms::Checkbox,
    read_only,
};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::{
    naive::{RunSqlArgs, execute},
    shop,
};

fn server_info(name: &str, list_changed: bool) -> ServerConfig {
    let capabilities = if list_changed {
        ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .build()
    } else {
        ServerCapabilities::builder().enable_tools().build()
    };
    ServerConfig::new(capabilities).with_server_info(rmcp::model::Implementation::new(
        name,
        env!("CARGO_PKG_VERSION"),
    ))
}

// ── Layer 1: a read-only connection ──────────────────────────────────────────────────────

/// `run_sql` exactly as before, except that the connection is a [`ReadDb`].
#[derive(Clone)]
pub struct ReadOnlySql {
    guard: Arc<Guard>,
}

impl ReadOnlySql {
    pub fn new(db_path: &Path) -> Result<Self, String> {
        let guard = Guard::ephemeral().map_err(|e| e.to_string())?;
        Ok(Self {
            guard: Arc::new(guard.with_sqlite(db_path)),
        })
    }
}

impl Guarded for ReadOnlySql {
    fn guard(&self) -> &Guard {
        &self.guard
    }
}

#[tool_router]
impl ReadOnlySql {
    /// Run SQL against the shop database and return the rows. The connection is read-only.
    #[read_only]
    #[tool]
    async fn run_sql(
        &self,
        db: ReadDb,
        Parameters(args): Parameters<RunSqlArgs>,
    ) -> Result<String, ToolError> {
        // A refused write becomes `[READ_ONLY] ...` through `From<rusqlite::Error>`.
        Ok(execute(&db, &args.sql)?)
    }
}

#[tool_handler]
impl ServerHandler for ReadOnlySql {
    fn get_info(&self) -> ServerConfig {
        server_info("read-only-shop", false)
    }
}

// ── Layers 2 and 3: narrow tools behind an allowlist ─────────────────────────────────────

/// The tools the lab's allowlist enables. `run_sql` is defined but not listed.
pub const ENABLED: &[&str] = &["count_orders", "list_customers", "delete_order"];

/// Writes the allowlist file (`tools = [...]`, TOML) that enables [`ENABLED`].
pub fn write_allowlist(path: &Path) -> std::io::Result<()> {
    let names: Vec<String> = ENABLED.iter().map(|n| format!("{n:?}")).collect();
    std::fs::write(path, format!("tools = [{}]\n", names.join(", ")))
}

#[derive(Debug, Deserialize, JsonSchema, ToolArgs)]
pub struct DeleteOrderArgs {
    /// The order number.
    pub id: i64,
}

/// The shop after the incident: narrow tools, published through an allowlist.
#[derive(Clone)]
pub struct Shop {
    guard: Arc<Guard>,
}

impl Guarded for Shop {
    fn guard(&self) -> &Guard {
        &self.guard
    }
}

impl Shop {
    /// The shop on `db_path`, enabling only the tools the allowlist at `allowlist` lists
    /// (a missing or broken file enables none).
    pub fn open(db_path: &Path, allowlist: &Path) -> Result<Self, String> {
        let guard = Guard::ephemeral()
            .map_err(|e| e.to_string())?
            .with_exposure(Exposure::allowlist(allowlist))
            .with_sqlite(db_path);
        Ok(Self {
            guard: Arc::new(guard),
        })
    }

    /// Every tool the code defines, enabled or not.
    pub fn defined_tools() -> Vec<String> {
        let mut names: Vec<String> = Self::tool_router()
            .list_all()
            .into_iter()
            .map(|t| t.name.into_owned())
            .collect();
        names.sort();
        names
    }

    fn db_path(&self) -> Result<PathBuf, ToolError> {
        self.guard
            .sqlite()
            .map(|db| db.path().to_path_buf())
            .ok_or_else(|| ToolError::internal("the shop has no database configured"))
    }

    /// What `delete_order` would remove: the order number, status and amount.
    async fn preview_delete_order(&self, args: &DeleteOrderArgs) -> Result<Preview, ToolError> {
        let db = ReadDb::open(&self.db_path()?)?;
        Ok(match shop::order(&db, args.id)? {
            None => Preview::nothing(format!(
                "There is no order #{}; nothing to delete.",
                args.id
            )),
            Some(order) => Preview::effect(
                format!("order #{}", order.id),
                format!(
                    "Delete {}. The order disappears for good.",
                    order.describe()
                ),
            )
            .with_state(format!("{order:?}")),
        })
    }
}

#[tool_router]
impl Shop {
    /// Run SQL against the shop database. Still in the code; the allowlist does not list it.
    #[tool]
    async fn run_sql(
        &self,
        db: WriteDb,
        Parameters(args): Parameters<RunSqlArgs>,
    ) -> Result<String, ToolError> {
        Ok(execute(&db, &args.sql)?)
    }

    /// Count the orders, by status.
    #[read_only]
    #[tool]
    async fn count_orders(&self, db: ReadDb) -> Result<String, ToolError> {
        let mut stmt =
            db.prepare("SELECT status, count(*) FROM orders GROUP BY status ORDER BY status")?;
        let counts = stmt
            .query_map([], |r| {
                Ok(format!(
                    "{}: {}",
                    r.get::<_, String>(0)?,
                    r.get::<_, i64>(1)?
                ))
            })?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(counts.join("\n"))
    }

    /// List the customers.
    #[read_only]
    #[tool]
    async fn list_customers(&self, db: ReadDb) -> Result<String, ToolError> {
        let mut stmt = db.prepare("SELECT id, name, email FROM customers ORDER BY id")?;
        let customers = stmt
            .query_map([], |r| {
                Ok(format!(
                    "{} {} <{}>",
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?
                ))
            })?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(customers.join("\n"))
    }

    /// Delete one order by its number. The user confirms in a form first.
    #[destructive(
        confirm = "checkbox",
        preview = Self::preview_delete_order,
        on_decline = "The user declined; no order was deleted.",
        on_cancel = "The confirmation was cancelled; no order was deleted."
    )]
    #[tool]
    async fn delete_order(
        &self,
        Parameters(args): Parameters<DeleteOrderArgs>,
        db: WriteDb,
        _confirmed: Confirmed<Checkbox>,
    ) -> Result<String, ToolError> {
        match db.execute("DELETE FROM orders WHERE id = ?1", [args.id])? {
            1 => Ok(format!("Deleted order #{}.", args.id)),
            _ => Err(ToolError::new(
                rmcp_guard::codes::STATE_CHANGED,
                format!("order #{} disappeared before deletion", args.id),
            )),
        }
    }
}

/// rmcp routes only to the tools the allowlist enables; any other name, `run_sql` included,
/// is answered exactly like a tool that never existed.
#[tool_handler(router = exposed(self, Self::tool_router()))]
impl ServerHandler for Shop {
    fn get_info(&self) -> ServerConfig {
        server_info("shop", true)
    }
}
