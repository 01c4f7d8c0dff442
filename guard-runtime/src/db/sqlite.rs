//! SQLite handles that guard gives to tools. A read handle is read-only in the engine
//! itself (`mode=ro` plus `PRAGMA query_only`), so even a buggy read tool cannot write:
//! there is no SQL string to inspect, the engine refuses.

use std::{
    ops::Deref,
    path::{Path, PathBuf},
};

use rusqlite::{Connection, OpenFlags};

use rmcp::handler::server::common::Extension;

use crate::{
    error::{Code, ToolError},
    read_handle::{ReadHandle, Sealed},
    store::Kind,
};

/// A connection the engine opened read-only. Take it in `#[read_only]` tools.
#[derive(Debug)]
pub struct ReadDb {
    conn: Connection,
}

/// A read-write connection to the guard's database. `#[read_only]` tools cannot take it
/// (compile error: it is no [`crate::read_handle::ReadHandle`]), and in read-only mode it is never
/// opened, neither as a parameter nor by [`WriteDb::open`].
#[derive(Debug)]
pub struct WriteDb {
    conn: Connection,
}

impl ReadDb {
    /// Opens `path` with `mode=ro` and `query_only`; a missing file is an error, never created.
    pub fn open(path: &Path) -> Result<Self, ToolError> {
        let uri = format!("file:{}?mode=ro", uri_path(path));
        let conn = Connection::open_with_flags(
            uri,
            OpenFlags::SQLITE_OPEN_READ_ONLY
                | OpenFlags::SQLITE_OPEN_URI
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| unavailable(path, e))?;
        conn.pragma_update(None, "query_only", true)
            .map_err(|e| unavailable(path, e))?;
        // No ATTACH, and so no `VACUUM INTO` either: a read handle never creates a file.
        conn.set_limit(rusqlite::limits::Limit::SQLITE_LIMIT_ATTACHED, 0)
            .map_err(|e| unavailable(path, e))?;
        Ok(Self { conn })
    }
}

impl WriteDb {
    /// Opens `path` read-write; a missing file is an error, never created. Tools get a
    /// write handle through `WriteDb::open`, which refuses in read-only mode first.
    pub(crate) fn open_path(path: &Path) -> Result<Self, ToolError> {
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| unavailable(path, e))?;
        Ok(Self { conn })
    }
}

impl Deref for ReadDb {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        &self.conn
    }
}

impl Deref for WriteDb {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        &self.conn
    }
}

/// Percent-encodes the characters that would end the path part of an SQLite URI.
fn uri_path(path: &Path) -> String {
    path.to_string_lossy()
        .replace('%', "%25")
        .replace('?', "%3f")
        .replace('#', "%23")
}

fn unavailable(path: &Path, error: rusqlite::Error) -> ToolError {
    tracing::warn!(path = %path.display(), %error, "database unavailable");
    let why = if path.exists() {
        "it could not be opened"
    } else {
        "the file does not exist (guard's handles never create one)"
    };
    ToolError::new(
        Code::Unavailable,
        format!(
            "The database is unavailable: {why}. Nothing was changed; ask the operator to check the server's database path."
        ),
    )
}

impl From<rusqlite::Error> for ToolError {
    /// The engine's refusal to write through a read-only handle gets a stable code; any
    /// other database error is internal (logged with a trace id, not shown).
    fn from(error: rusqlite::Error) -> Self {
        if crate::store::sqlite::kind(&error) == Kind::ReadOnly {
            tracing::warn!(%error, "write refused by a read-only database handle");
            ToolError::new(
                Code::ReadOnly,
                "The database refused to write: this tool's connection is read-only, so nothing was changed.",
            )
        } else {
            ToolError::internal(error)
        }
    }
}

/// Where a guard's tools find their SQLite database.
#[derive(Debug, Clone)]
pub struct SqliteDatabase {
    path: PathBuf,
}

impl SqliteDatabase {
    /// The database at `path` (opened per handle, not here).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }

    /// Where the database file is.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

// A read handle is a read handle wherever it comes from: a parameter or an extension a
// layer put in the request.
impl Sealed for ReadDb {}
impl ReadHandle for ReadDb {}
impl Sealed for Extension<ReadDb> {}
impl ReadHandle for Extension<ReadDb> {}
