//! The lab's shop database: `customers` and `orders`, seeded, in a real SQLite file.

use std::path::Path;

use rusqlite::{Connection, OpenFlags, OptionalExtension};

const SCHEMA_AND_ROWS: &str = "
CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL, email TEXT NOT NULL);
CREATE TABLE orders (
    id INTEGER PRIMARY KEY,
    customer_id INTEGER NOT NULL REFERENCES customers (id),
    status TEXT NOT NULL,
    amount_cents INTEGER NOT NULL
);
INSERT INTO customers (id, name, email) VALUES
    (1, 'Ada', 'ada@example.com'),
    (2, 'Grace', 'grace@example.com'),
    (3, 'Linus', 'linus@example.com');
INSERT INTO orders (id, customer_id, status, amount_cents) VALUES
    (1001, 1, 'paid', 1999),
    (1002, 2, 'shipped', 4550),
    (1003, 3, 'test', 100),
    (1004, 1, 'test', 100),
    (1005, 3, 'pending', 8900);
";

/// Rows the seed puts in `orders`.
pub const SEEDED_ORDERS: usize = 5;
/// Rows the seed puts in `customers`.
pub const SEEDED_CUSTOMERS: usize = 3;

/// One row of `orders`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Order {
    pub id: i64,
    pub customer: String,
    pub status: String,
    pub amount_cents: i64,
}

impl Order {
    /// `order #1003 (test, $1.00, customer Linus)`.
    pub fn describe(&self) -> String {
        format!(
            "order #{} ({}, {}, customer {})",
            self.id,
            self.status,
            dollars(self.amount_cents),
            self.customer
        )
    }
}

/// `$45.50`.
pub fn dollars(cents: i64) -> String {
    format!("${}.{:02}", cents / 100, cents % 100)
}

/// Creates a fresh seeded database at `path` (an existing file is replaced).
pub fn create(path: &Path) -> rusqlite::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))?;
    }
    if path.exists() {
        std::fs::remove_file(path)
            .map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))?;
    }
    Connection::open(path)?.execute_batch(SCHEMA_AND_ROWS)
}

/// What an observer outside the servers sees in the file.
pub struct Snapshot {
    conn: Connection,
}

impl Snapshot {
    /// Opens `path` read-only (the observer never changes what it looks at).
    pub fn open(path: &Path) -> rusqlite::Result<Self> {
        let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
        Ok(Self { conn })
    }

    /// `sqlite_master`: every table's name, sorted; tables in the drop trash are not among
    /// them.
    pub fn tables(&self) -> rusqlite::Result<Vec<String>> {
        Ok(self
            .all_tables()?
            .into_iter()
            .filter(|name| !rmcp_guard::db::trash::is_trashed(name))
            .collect())
    }

    /// `sqlite_master`: every table's name, sorted, trashed ones included.
    pub fn all_tables(&self) -> rusqlite::Result<Vec<String>> {
        let mut stmt = self.conn.prepare(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
        )?;
        stmt.query_map([], |r| r.get(0))?.collect()
    }

    /// Every order, by id; `None` when the `orders` table is gone.
    pub fn orders(&self) -> rusqlite::Result<Option<Vec<Order>>> {
        if !self.tables()?.iter().any(|t| t == "orders") {
            return Ok(None);
        }
        let mut stmt = self
            .conn
            .prepare(&format!("{SELECT_ORDERS} ORDER BY o.id"))?;
        let rows = stmt.query_map([], order_row)?;
        rows.collect::<Result<_, _>>().map(Some)
    }

    /// Number of rows in `customers`, `None` when the table is gone.
    pub fn customers(&self) -> rusqlite::Result<Option<i64>> {
        if !self.tables()?.iter().any(|t| t == "customers") {
            return Ok(None);
        }
        self.conn
            .query_row("SELECT count(*) FROM customers", [], |r| r.get(0))
            .map(Some)
    }
}

/// The rows of `table`, `None` when there is no such table (trashed tables included).
pub fn rows(conn: &Connection, table: &str) -> rusqlite::Result<Option<i64>> {
    let exists = conn
        .query_row(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1",
            [table],
            |_| Ok(()),
        )
        .optional()?;
    match exists {
        None => Ok(None),
        Some(()) => conn
            .query_row(
                &format!("SELECT count(*) FROM \"{}\"", table.replace('"', "\"\"")),
                [],
                |r| r.get(0),
            )
            .map(Some),
    }
}

/// One order read through `conn`, `None` if there is no such order.
pub fn order(conn: &Connection, id: i64) -> rusqlite::Result<Option<Order>> {
    conn.query_row(&format!("{SELECT_ORDERS} WHERE o.id = ?1"), [id], order_row)
        .optional()
}

const SELECT_ORDERS: &str = "SELECT o.id, coalesce(c.name, '?'), o.status, o.amount_cents \
     FROM orders o LEFT JOIN customers c ON c.id = o.customer_id";

fn order_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Order> {
    Ok(Order {
        id: r.get(0)?,
        customer: r.get(1)?,
        status: r.get(2)?,
        amount_cents: r.get(3)?,
    })
}
