//! guard's values as SQLite's and back; a blob reads back as text, as `SqlValue` has no bytes.

use rusqlite::types::ValueRef;

use crate::store::sql::SqlValue;

/// A statement's text and values, owned, to send to the connection's thread.
pub(super) fn owned(sql: &str, params: &[SqlValue]) -> (String, Vec<rusqlite::types::Value>) {
    (sql.to_owned(), params.iter().map(to_sqlite).collect())
}

pub(super) fn to_sqlite(value: &SqlValue) -> rusqlite::types::Value {
    use rusqlite::types::Value;
    match value {
        SqlValue::Null => Value::Null,
        SqlValue::Int(v) => Value::Integer(*v),
        SqlValue::Real(v) => Value::Real(*v),
        SqlValue::Text(v) => Value::Text(v.clone()),
    }
}

pub(super) fn from_sqlite(value: ValueRef<'_>) -> SqlValue {
    match value {
        ValueRef::Null => SqlValue::Null,
        ValueRef::Integer(v) => SqlValue::Int(v),
        ValueRef::Real(v) => SqlValue::Real(v),
        ValueRef::Text(v) | ValueRef::Blob(v) => {
            SqlValue::Text(String::from_utf8_lossy(v).into_owned())
        }
    }
}
