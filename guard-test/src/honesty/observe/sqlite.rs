//! Observing an SQLite file: its tables' rows and schema, and the header fields a tool can
//! set without touching a table.

use std::path::PathBuf;

use sha2::{Digest, Sha256};

use super::{Observe, Snapshot, plural, short};

/// Every table of an SQLite database (including `sqlite_sequence`, which betrays an insert
/// even when the row was deleted again), every index, view and trigger, and the header's
/// `user_version` and `application_id`.
/// A table's description is its row count and a sha256 over its schema SQL and all its rows
/// in rowid order (tables without rowid: rows sorted by their encoding).
pub struct SqliteObserver {
    path: PathBuf,
    name: Option<String>,
    ignored: Vec<(String, String)>,
}

impl SqliteObserver {
    /// Reports label the database `sqlite <file name>`.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            name: None,
            ignored: Vec::new(),
        }
    }

    /// Leaves `table.column` out of the digest: a value the fixture cannot hold still (a
    /// `DEFAULT CURRENT_TIMESTAMP`), so that states of fresh fixtures compare by what
    /// matters. The column still counts for the row count; the description says it is
    /// ignored, so nobody reads the digest as covering it.
    pub fn ignore_column(mut self, table: impl Into<String>, column: impl Into<String>) -> Self {
        self.ignored.push((table.into(), column.into()));
        self
    }

    /// Labels the database `sqlite <name>` instead. Labels must be the same on every
    /// fresh fixture: the kit compares states across fixtures.
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    fn read(&self) -> rusqlite::Result<Snapshot> {
        use rusqlite::{Connection, OpenFlags};
        let conn = Connection::open_with_flags(
            &self.path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        let mut snap = Snapshot::default();
        // The header fields a tool can set without touching a table.
        for pragma in ["user_version", "application_id"] {
            let value: i64 = conn.query_row(&format!("PRAGMA {pragma}"), [], |r| r.get(0))?;
            snap.insert(format!("pragma {pragma}"), value.to_string());
        }
        let objects: Vec<(String, String, Option<String>)> = conn
            .prepare("SELECT type, name, sql FROM sqlite_master ORDER BY type, name")?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect::<Result<_, _>>()?;
        for (kind, name, sql) in objects {
            let sql = sql.unwrap_or_default();
            if kind == "table" {
                let ignored: Vec<&str> = self
                    .ignored
                    .iter()
                    .filter(|(t, _)| *t == name)
                    .map(|(_, c)| c.as_str())
                    .collect();
                let (rows, digest) = table_digest(&conn, &name, &sql, &ignored)?;
                let note = if ignored.is_empty() {
                    String::new()
                } else {
                    format!(" (ignoring {})", ignored.join(", "))
                };
                snap.insert(
                    format!("table {name}"),
                    format!(
                        "{}, sha256 {}{note}",
                        plural(rows, "row", "rows"),
                        short(&digest)
                    ),
                );
            } else {
                snap.insert(
                    format!("{kind} {name}"),
                    format!("sql sha256 {}", short(&Sha256::digest(sql.as_bytes()))),
                );
            }
        }
        Ok(snap)
    }
}

impl Observe for SqliteObserver {
    fn label(&self) -> String {
        let name = self.name.clone().unwrap_or_else(|| {
            self.path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| self.path.display().to_string())
        });
        format!("sqlite {name}")
    }

    fn snapshot(&self) -> Result<Snapshot, String> {
        if !self.path.exists() {
            let mut snap = Snapshot::default();
            snap.insert("file", "missing");
            return Ok(snap);
        }
        self.read().map_err(|e| e.to_string())
    }

    /// Every schema object by name and every row by table and rowid (rows of a `WITHOUT
    /// ROWID` table by their content), without the ignored columns. `sqlite_sequence` is left
    /// out: its counters only grow, and an insert is not an overwrite.
    fn items(&self) -> Result<Snapshot, String> {
        if !self.path.exists() {
            let mut snap = Snapshot::default();
            snap.insert("file", "missing");
            return Ok(snap);
        }
        self.read_items().map_err(|e| e.to_string())
    }
}

impl SqliteObserver {
    fn read_items(&self) -> rusqlite::Result<Snapshot> {
        use rusqlite::{Connection, OpenFlags};
        let conn = Connection::open_with_flags(
            &self.path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        let mut snap = Snapshot::default();
        let objects: Vec<(String, String, Option<String>)> = conn
            .prepare("SELECT type, name, sql FROM sqlite_master ORDER BY type, name")?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect::<Result<_, _>>()?;
        for (kind, name, sql) in objects {
            let sql = sql.unwrap_or_default();
            snap.insert(
                format!("{kind} {name}"),
                format!("sql sha256 {}", short(&Sha256::digest(sql.as_bytes()))),
            );
            if kind != "table" || name == "sqlite_sequence" {
                continue;
            }
            let ignored: Vec<&str> = self
                .ignored
                .iter()
                .filter(|(t, _)| *t == name)
                .map(|(_, c)| c.as_str())
                .collect();
            let quoted = format!("\"{}\"", name.replace('"', "\"\""));
            let without_rowid = sql.to_ascii_uppercase().contains("WITHOUT ROWID");
            let query = if without_rowid {
                format!("SELECT NULL, * FROM {quoted}")
            } else {
                format!("SELECT rowid, * FROM {quoted}")
            };
            let mut stmt = conn.prepare(&query)?;
            let columns: Vec<usize> = stmt
                .column_names()
                .enumerate()
                .skip(1)
                .filter(|(_, n)| !ignored.contains(n))
                .map(|(i, _)| i)
                .collect();
            let mut cursor = stmt.query([])?;
            while let Some(row) = cursor.next()? {
                let mut encoded = Vec::new();
                for &i in &columns {
                    encode_value(&mut encoded, row.get_ref(i)?);
                }
                let digest = short(&Sha256::digest(&encoded));
                if without_rowid {
                    snap.insert(format!("table {name} row {digest}"), "present");
                } else {
                    let rowid: i64 = row.get(0)?;
                    snap.insert(
                        format!("table {name} rowid {rowid}"),
                        format!("sha256 {digest}"),
                    );
                }
            }
        }
        Ok(snap)
    }
}

fn table_digest(
    conn: &rusqlite::Connection,
    name: &str,
    sql: &str,
    ignored: &[&str],
) -> rusqlite::Result<(usize, [u8; 32])> {
    let quoted = format!("\"{}\"", name.replace('"', "\"\""));
    let without_rowid = sql.to_ascii_uppercase().contains("WITHOUT ROWID");
    let query = if without_rowid {
        format!("SELECT * FROM {quoted}")
    } else {
        format!("SELECT * FROM {quoted} ORDER BY rowid")
    };
    let mut stmt = conn.prepare(&query)?;
    let columns: Vec<usize> = stmt
        .column_names()
        .enumerate()
        .filter(|(_, n)| !ignored.contains(n))
        .map(|(i, _)| i)
        .collect();
    let mut rows: Vec<Vec<u8>> = Vec::new();
    let mut cursor = stmt.query([])?;
    while let Some(row) = cursor.next()? {
        let mut encoded = Vec::new();
        for &i in &columns {
            encode_value(&mut encoded, row.get_ref(i)?);
        }
        rows.push(encoded);
    }
    if without_rowid {
        rows.sort();
    }
    let mut hasher = Sha256::new();
    hasher.update((sql.len() as u64).to_le_bytes());
    hasher.update(sql.as_bytes());
    for row in &rows {
        hasher.update((row.len() as u64).to_le_bytes());
        hasher.update(row);
    }
    Ok((rows.len(), hasher.finalize().into()))
}

/// A type tag and a length prefix per value, so `('ab','c')` and `('a','bc')` differ.
fn encode_value(out: &mut Vec<u8>, value: rusqlite::types::ValueRef<'_>) {
    use rusqlite::types::ValueRef;
    match value {
        ValueRef::Null => out.push(b'N'),
        ValueRef::Integer(i) => {
            out.push(b'I');
            out.extend_from_slice(&i.to_le_bytes());
        }
        ValueRef::Real(f) => {
            out.push(b'R');
            out.extend_from_slice(&f.to_bits().to_le_bytes());
        }
        ValueRef::Text(bytes) | ValueRef::Blob(bytes) => {
            out.push(if matches!(value, ValueRef::Text(_)) {
                b'T'
            } else {
                b'B'
            });
            out.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
            out.extend_from_slice(bytes);
        }
    }
}
