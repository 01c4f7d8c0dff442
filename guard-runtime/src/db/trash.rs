//! A trash for SQLite tables, for tools that declare an undo on a drop: the table is
//! renamed, in one statement, to a name in the trash, with its rows, indexes and triggers,
//! so nothing is deleted until the undo window closes. The trash name holds `.` characters
//! (a tool that accepts only plain names can never name it); [`TrashedTable::restore`]
//! renames it back, never over a table that took the name since, and
//! [`TrashedTable::purge`] drops it for good.

use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior};
use serde::{Deserialize, Serialize};

use crate::error::{Code, ToolError};

/// The prefix of every trashed table's name.
pub const TABLE_TRASH: &str = "guard-trash.";

/// Whether `name` is a trashed table's (listings should leave these out).
pub fn is_trashed(name: &str) -> bool {
    name.starts_with(TABLE_TRASH)
}

/// A dropped table waiting in the trash: what its undo and its purge need. Keep it as the
/// undo data of the tool's window (`Reversible::new(result, trashed)`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrashedTable {
    table: String,
    trash: String,
    rows: i64,
}

impl TrashedTable {
    /// Moves `table` into the trash, rows and all, in one transaction. A table that is
    /// gone since the re-check is `STATE_CHANGED`, and nothing changes.
    pub fn take(conn: &Connection, table: &str) -> Result<Self, ToolError> {
        let tx = immediate(conn)?;
        let Some(rows) = rows(&tx, table)? else {
            return Err(ToolError::new(
                Code::StateChanged,
                format!("Table `{table}` no longer exists; nothing was dropped."),
            ));
        };
        let suffix: String = tx
            .query_row("SELECT lower(hex(randomblob(8)))", [], |r| r.get(0))
            .map_err(ToolError::internal)?;
        let trash = format!("{TABLE_TRASH}{table}.{suffix}");
        rename(&tx, table, &trash)?;
        tx.commit().map_err(ToolError::internal)?;
        Ok(Self {
            table: table.to_owned(),
            trash,
            rows,
        })
    }

    /// The name the table had, and gets back on restore.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// Its rows when it was dropped.
    pub fn rows(&self) -> i64 {
        self.rows
    }

    /// Puts the table back under its name, never over a table that took the name since
    /// (`STATE_CHANGED`, nothing changes, the table stays in the trash). Returns its rows.
    pub fn restore(&self, conn: &Connection) -> Result<i64, ToolError> {
        let tx = immediate(conn)?;
        if rows(&tx, &self.trash)?.is_none() {
            return Err(ToolError::new(
                Code::StateChanged,
                format!(
                    "Nothing was restored: the dropped table `{}` is no longer in the trash.",
                    self.table
                ),
            ));
        }
        if let Some(kind) = taken(&tx, &self.table)? {
            return Err(ToolError::new(
                Code::StateChanged,
                format!(
                    "Nothing was restored: a new {kind} named `{}` exists now, and undo never replaces it. Drop or rename that {kind}, then call undo again before the window closes.",
                    self.table
                ),
            ));
        }
        rename(&tx, &self.trash, &self.table)?;
        let restored = rows(&tx, &self.table)?.unwrap_or(0);
        tx.commit().map_err(ToolError::internal)?;
        Ok(restored)
    }

    /// Drops the trashed table for good; one already gone is purged.
    pub fn purge(&self, conn: &Connection) -> Result<(), ToolError> {
        conn.execute_batch(&format!("DROP TABLE IF EXISTS {}", quoted(&self.trash)))
            .map_err(ToolError::internal)
    }
}

/// A write transaction taken at once, so nothing changes between its check and its rename.
fn immediate(conn: &Connection) -> Result<Transaction<'_>, ToolError> {
    // `unchecked`: tools hold shared references to their connections; SQLite itself
    // refuses a BEGIN inside a transaction.
    Transaction::new_unchecked(conn, TransactionBehavior::Immediate).map_err(ToolError::internal)
}

/// The rows of `table`, or `None` if there is no such table.
fn rows(conn: &Connection, table: &str) -> Result<Option<i64>, ToolError> {
    let exists = conn
        .query_row(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1",
            [table],
            |_| Ok(()),
        )
        .optional()
        .map_err(ToolError::internal)?;
    match exists {
        None => Ok(None),
        Some(()) => conn
            .query_row(
                &format!("SELECT count(*) FROM {}", quoted(table)),
                [],
                |r| r.get(0),
            )
            .map(Some)
            .map_err(ToolError::internal),
    }
}

/// What holds `name` now, if anything: SQLite refuses a table under a name any table, index
/// or view holds, in any ASCII case.
fn taken(conn: &Connection, name: &str) -> Result<Option<String>, ToolError> {
    conn.query_row(
        "SELECT type FROM sqlite_master WHERE name = ?1 COLLATE NOCASE",
        [name],
        |r| r.get(0),
    )
    .optional()
    .map_err(ToolError::internal)
}

fn rename(conn: &Connection, from: &str, to: &str) -> Result<(), ToolError> {
    conn.execute_batch(&format!(
        "ALTER TABLE {} RENAME TO {}",
        quoted(from),
        quoted(to)
    ))
    .map_err(ToolError::internal)
}

/// A double-quoted SQL identifier.
fn quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seeded() -> Connection {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE orders (id INTEGER PRIMARY KEY, total INTEGER);
             CREATE INDEX orders_total ON orders (total);
             INSERT INTO orders (total) VALUES (1), (2), (3);",
        )
        .unwrap();
        conn
    }

    #[test]
    fn a_trashed_table_comes_back_with_its_rows_and_index() {
        let conn = seeded();
        let dropped = TrashedTable::take(&conn, "orders").unwrap();
        assert_eq!(dropped.rows(), 3);
        assert!(is_trashed(&dropped.trash));
        assert_eq!(rows(&conn, "orders").unwrap(), None);
        assert_eq!(dropped.restore(&conn).unwrap(), 3);
        let index: String = conn
            .query_row(
                "SELECT tbl_name FROM sqlite_master WHERE name = 'orders_total'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(index, "orders");
    }

    #[test]
    fn a_new_table_under_the_name_is_never_replaced() {
        let conn = seeded();
        let dropped = TrashedTable::take(&conn, "orders").unwrap();
        conn.execute_batch("CREATE TABLE orders (x); INSERT INTO orders VALUES (9);")
            .unwrap();
        let refused = dropped.restore(&conn).unwrap_err();
        assert_eq!(refused.code(), Code::StateChanged);
        assert!(refused.message().contains("call undo again"), "{refused:?}");
        assert_eq!(rows(&conn, "orders").unwrap(), Some(1), "the new one");
        let trashed: i64 = conn
            .query_row(
                &format!("SELECT count(*) FROM {}", quoted(&dropped.trash)),
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(trashed, 3, "still waiting in the trash");
    }

    #[test]
    fn a_name_taken_in_another_case_or_by_another_kind_is_never_replaced() {
        for taker in [
            "CREATE TABLE ORDERS (x)",
            "CREATE TABLE Orders (x)",
            "CREATE VIEW orders AS SELECT 1",
            "CREATE TABLE t (x); CREATE INDEX orders ON t (x)",
        ] {
            let conn = seeded();
            let dropped = TrashedTable::take(&conn, "orders").unwrap();
            conn.execute_batch(taker).unwrap();
            let refused = dropped.restore(&conn).unwrap_err();
            assert_eq!(refused.code(), Code::StateChanged, "{taker}: {refused:?}");
            let trashed: i64 = conn
                .query_row(
                    &format!("SELECT count(*) FROM {}", quoted(&dropped.trash)),
                    [],
                    |r| r.get(0),
                )
                .unwrap();
            assert_eq!(trashed, 3, "{taker}: still waiting in the trash");
        }
    }

    #[test]
    fn a_purged_table_is_gone_and_undo_says_so() {
        let conn = seeded();
        let dropped = TrashedTable::take(&conn, "orders").unwrap();
        dropped.purge(&conn).unwrap();
        dropped.purge(&conn).unwrap();
        let refused = dropped.restore(&conn).unwrap_err();
        assert_eq!(refused.code(), Code::StateChanged);
        assert_eq!(rows(&conn, "orders").unwrap(), None);
    }

    #[test]
    fn any_name_is_quoted_and_comes_back_whole() {
        let conn = seeded();
        conn.execute_batch(
            r#"CREATE TABLE "we""ird; x" (a); INSERT INTO "we""ird; x" VALUES (1);"#,
        )
        .unwrap();
        let dropped = TrashedTable::take(&conn, "we\"ird; x").unwrap();
        assert_eq!(dropped.table(), "we\"ird; x");
        assert_eq!(
            rows(&conn, "orders").unwrap(),
            Some(3),
            "nothing else moved"
        );
        assert_eq!(dropped.restore(&conn).unwrap(), 1);
    }

    #[test]
    fn a_table_gone_before_the_drop_is_state_changed() {
        let conn = seeded();
        conn.execute_batch("DROP TABLE orders").unwrap();
        assert_eq!(
            TrashedTable::take(&conn, "orders").unwrap_err().code(),
            Code::StateChanged
        );
    }
}
