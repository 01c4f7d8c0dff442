//! What SQLite's errors mean to guard, read once from their result codes.

use rusqlite::ErrorCode;

use crate::store::sql::{Kind, StoreError};

/// What a SQLite error means: the one reading of SQLite's errors, for the store and for
/// the tools' handles. Result codes first; the text only where SQLite reports a refused
/// write without one (a `query_only` connection, an `ATTACH` past the limit of zero).
pub(crate) fn kind(error: &rusqlite::Error) -> Kind {
    if let rusqlite::Error::SqliteFailure(e, _) = error {
        match e.code {
            ErrorCode::ConstraintViolation
                if matches!(
                    e.extended_code,
                    rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE
                        | rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY
                ) =>
            {
                return Kind::Unique;
            }
            ErrorCode::ConstraintViolation => return Kind::Constraint,
            ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked => return Kind::Busy,
            ErrorCode::ReadOnly => return Kind::ReadOnly,
            _ if e.extended_code == rusqlite::ffi::SQLITE_READONLY => return Kind::ReadOnly,
            _ => {}
        }
    }
    let text = error.to_string();
    if text.contains("readonly") || text.contains("too many attached databases") {
        Kind::ReadOnly
    } else {
        Kind::Other
    }
}

pub(super) fn store_error(error: rusqlite::Error) -> StoreError {
    kind(&error).store_error(error.to_string())
}

#[cfg(test)]
mod tests {
    use rusqlite::Connection;

    use super::{Kind, kind};

    fn error_of(connection: &Connection, sql: &str) -> rusqlite::Error {
        connection.execute_batch(sql).unwrap_err()
    }

    #[test]
    fn constraint_errors_are_read_by_code_whatever_the_table_is_called() {
        let connection = Connection::open_in_memory().unwrap();
        connection
            .execute_batch(
                "CREATE TABLE readonly_items (id INTEGER PRIMARY KEY, n INTEGER NOT NULL);
                 INSERT INTO readonly_items VALUES (1, 1);",
            )
            .unwrap();
        let duplicate = error_of(&connection, "INSERT INTO readonly_items VALUES (1, 2)");
        assert_eq!(kind(&duplicate), Kind::Unique, "{duplicate}");
        let missing = error_of(&connection, "INSERT INTO readonly_items VALUES (2, NULL)");
        assert_eq!(kind(&missing), Kind::Constraint, "{missing}");
        // What a tool's handle shows the model: not a refused write.
        let shown = crate::error::ToolError::from(duplicate);
        assert_eq!(shown.code(), crate::error::Code::Internal);
    }

    #[test]
    fn a_refused_write_is_read_only() {
        let connection = Connection::open_in_memory().unwrap();
        connection
            .execute_batch("CREATE TABLE t (n INTEGER)")
            .unwrap();
        connection.pragma_update(None, "query_only", true).unwrap();
        let refused = error_of(&connection, "INSERT INTO t VALUES (1)");
        assert_eq!(kind(&refused), Kind::ReadOnly, "{refused}");
        let shown = crate::error::ToolError::from(refused);
        assert_eq!(shown.code(), crate::error::Code::ReadOnly);
        let other = error_of(&connection, "SELECT * FROM no_such_table");
        assert_eq!(kind(&other), Kind::Other, "{other}");
    }
}
