//! The embedded SQLite database: created and seeded on first start. In read-only mode it
//! is only ever opened read-only, and never created.

use std::path::Path;

use rusqlite::{Connection, OpenFlags, OptionalExtension};

const SEED: &str = "
CREATE TABLE IF NOT EXISTS customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL, email TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS orders (id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL, total_cents INTEGER NOT NULL, status TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS deployments (id INTEGER PRIMARY KEY, service TEXT NOT NULL, approval_level TEXT NOT NULL, rollback_plan TEXT NOT NULL, deployed_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')));
";

const ROWS: &str = "
INSERT INTO customers (id, name, email) VALUES (1, 'Ada', 'ada@example.com'), (2, 'Grace', 'grace@example.com'), (3, 'Linus', 'linus@example.com');
INSERT INTO orders (id, customer_id, total_cents, status) VALUES (1, 1, 1999, 'paid'), (2, 2, 4550, 'shipped'), (3, 1, 120, 'paid'), (4, 3, 8900, 'pending');
";

/// Opens `path`. On first start (no file yet) it creates and seeds the tables, in a file
/// and folder of this user's alone (0600 in 0700, as the stores and keys are); later starts
/// leave the contents alone, so a dropped table stays dropped.
pub fn open(path: &Path) -> rusqlite::Result<Connection> {
    let io = |e: std::io::Error| rusqlite::Error::ToSqlConversionFailure(Box::new(e));
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        crate::private_dir(dir).map_err(io)?;
    }
    let fresh = !path.exists();
    if fresh {
        let mut file = std::fs::OpenOptions::new();
        file.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut file, 0o600);
        file.open(path).map_err(io)?;
    }
    let conn = Connection::open(path)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    if fresh {
        conn.execute_batch(SEED)?;
        conn.execute_batch(ROWS)?;
    }
    Ok(conn)
}

/// Opens an existing `path` for reading only, for read-only mode. The engine opens the file
/// read-only and the connection is `query_only`, so nothing is created, seeded, converted to
/// WAL or otherwise written: the file's bytes stay as they were. A missing file is an error
/// that says how to create it.
pub fn open_read_only(path: &Path) -> Result<Connection, String> {
    let opened = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .and_then(|conn| {
        conn.pragma_update(None, "query_only", true)?;
        // Fail now, not on the first call, if the file is not a database.
        conn.query_row("SELECT count(*) FROM sqlite_master", [], |_| Ok(()))?;
        Ok(conn)
    });
    opened.map_err(|e| {
        let hot_journal = matches!(
            &e,
            rusqlite::Error::SqliteFailure(f, _)
                if f.extended_code == rusqlite::ffi::SQLITE_READONLY_ROLLBACK
        );
        if hot_journal {
            format!(
                "read-only mode: the database {} has a write that was cut off mid-transaction (its rollback journal is still next to it), and undoing it would write to the file, which read-only mode never does. Start safe-ops once without --read-only (and without GUARD_READ_ONLY=1) to roll it back, then restart in read-only mode",
                path.display()
            )
        } else if path.exists() {
            format!(
                "read-only mode: cannot read the database {}: {e}; check that it is an SQLite database this user may read",
                path.display()
            )
        } else {
            format!(
                "read-only mode: the database {} does not exist, and read-only mode never creates one. Start safe-ops once without --read-only (and without GUARD_READ_ONLY=1) to create and seed it, or pass --db with the path of an existing database",
                path.display()
            )
        }
    })
}

/// Row count of `table`, or `None` if there is no such table.
pub fn table_rows(conn: &Connection, table: &str) -> rusqlite::Result<Option<i64>> {
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
                &format!("SELECT count(*) FROM {}", quote_ident(table)),
                [],
                |r| r.get(0),
            )
            .map(Some),
    }
}

/// The user tables, sorted; tables in `drop_table`'s trash are not among them.
pub fn tables(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let mut stmt = conn.prepare(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
    )?;
    let names = stmt.query_map([], |r| r.get::<_, String>(0))?;
    names
        .filter(|name| {
            !name
                .as_ref()
                .is_ok_and(|n| rmcp_guard::db::trash::is_trashed(n))
        })
        .collect()
}

/// A double-quoted SQL identifier.
pub fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}
