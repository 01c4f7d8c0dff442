//! The three layers that stop the same attack.
//!
//! - [`ReadOnlySql`]: the very same `run_sql`, but its connection is opened read-only
//!   (`mode=ro` + `query_only`), so the engine refuses every write whatever the SQL says.
//! - [`Shop`] published through an allowlist that does not list `run_sql`: the tool is still
//!   in the code, yet for clients it does not exist.
//! - [`Shop`]'s `delete_order(id)`: a narrow tool that cannot express a table drop and
//!   deletes nothing until the human confirms.
//!
//! And where a drop is the job: [`Shop`]'s `drop_table(table)` asks the human to type the
//! name, then keeps the table in a trash for ten minutes, so `undo` brings it back without
//! the backup.

use std::{
    path::{Path, PathBuf},
    sync::Arc,
};

use rmcp::{
    ServerHandler,
    handler::server::wrapper::Parameters,
    model::{ServerCapabilities, ServerConfig},
    tool, tool_handler,
};
use rmcp_guard::tool_router;
use rmcp_guard::{
    Confirmed, EnvIdentity, Exposure, Guard, Guarded, Identity, Preview, ToolArgs, ToolError,
    db::{ReadDb, WriteDb, trash::TrashedTable},
    destructive, exposed,
    forms::{Checkbox, TypeToConfirm},
    ops::Operations,
    read_only,
    undo::{Reversible, Window},
};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::{
    Lab,
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
pub const ENABLED: &[&str] = &[
    "count_orders",
    "list_customers",
    "delete_order",
    "drop_table",
    "undo",
];

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

#[derive(Debug, Deserialize, JsonSchema, ToolArgs)]
pub struct DropTableArgs {
    /// The table: `orders` or `customers`.
    pub table: String,
}

/// The shop's tables: the only names `drop_table` takes.
const TABLES: [&str; 2] = ["customers", "orders"];

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
    /// The shop on the lab's database, enabling only the tools the lab's allowlist lists
    /// (a missing or broken file enables none). Undo windows and the audit log are kept in
    /// the lab's operation store, for the lab's operator.
    pub fn open(lab: &Lab) -> Result<Self, String> {
        let (db_path, allowlist, store) = (&lab.db, &lab.allowlist, lab.store.clone());
        let operator = Identity::new("lab", "operator", Vec::<String>::new());
        let guard = Guard::ephemeral()
            .map_err(|e| e.to_string())?
            .with_exposure(Exposure::allowlist(allowlist))
            .with_operations(Operations::new(store, EnvIdentity::new(operator)))
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

    /// What `drop_table` would drop: the table and its rows.
    async fn preview_drop(&self, args: &DropTableArgs) -> Result<Preview, ToolError> {
        if !TABLES.contains(&args.table.as_str()) {
            return Err(ToolError::invalid_input(format!(
                "table {:?} is not one of the shop's tables ({}); nothing was dropped",
                args.table,
                TABLES.join(", ")
            )));
        }
        let db = ReadDb::open(&self.db_path()?)?;
        let rows: Option<i64> = shop::rows(&db, &args.table)?;
        Ok(match rows {
            None => Preview::nothing(format!(
                "Table `{}` does not exist; nothing to drop.",
                args.table
            )),
            Some(rows) => Preview::effect(
                args.table.clone(),
                format!("Drop table `{}` with its {rows} rows.", args.table),
            )
            .with_state(rows.to_string()),
        })
    }

    /// Undoes a `drop_table`: the table comes back from the trash with its rows, never over
    /// a new table of that name.
    async fn undo_drop(&self, window: Window) -> Result<serde_json::Value, ToolError> {
        let dropped: TrashedTable = window.data()?;
        let db = WriteDb::open(&self.guard)?;
        let rows = dropped.restore(&db)?;
        Ok(serde_json::json!({"restored": dropped.table(), "rows": rows}))
    }

    /// After the window, the trashed table is dropped for good.
    async fn purge_drop(&self, window: Window) -> Result<(), String> {
        let dropped: TrashedTable = window.data().map_err(|e| e.message().to_owned())?;
        let db = WriteDb::open(&self.guard).map_err(|e| e.message().to_owned())?;
        dropped.purge(&db).map_err(|e| e.message().to_owned())
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
                rmcp_guard::Code::StateChanged,
                format!("order #{} disappeared before deletion", args.id),
            )),
        }
    }

    /// Drop one of the shop's tables. The user types the table name to confirm; the drop
    /// can be undone with `undo` for 10 minutes.
    #[destructive(
        confirm = "type_to_confirm",
        target = table,
        preview = Self::preview_drop,
        undo = Self::undo_drop,
        undo_within = "10m",
        purge = Self::purge_drop,
        on_decline = "The user declined; no table was dropped.",
        on_cancel = "The confirmation was cancelled; no table was dropped."
    )]
    #[tool]
    async fn drop_table(
        &self,
        Parameters(args): Parameters<DropTableArgs>,
        db: WriteDb,
        _confirmed: Confirmed<TypeToConfirm>,
    ) -> Result<Reversible<String, TrashedTable>, ToolError> {
        // Into the trash, rows and all: nothing is deleted while the window is open.
        let dropped = TrashedTable::take(&db, &args.table)?;
        Ok(Reversible::new(
            format!(
                "Dropped table {} ({} rows).",
                dropped.table(),
                dropped.rows()
            ),
            dropped,
        ))
    }
}

/// rmcp routes only to the tools the allowlist enables; any other name, `run_sql` included,
/// is answered exactly like a tool that never existed.
#[tool_handler(router = exposed(self, Self::tool_router))]
impl ServerHandler for Shop {
    fn get_info(&self) -> ServerConfig {
        server_info("shop", true)
    }
}
