//! What PostgreSQL's errors mean to guard, read once from their SQLSTATEs.

use tokio_postgres::error::SqlState;

use crate::store::sql::{Kind, StoreError};

/// What a PostgreSQL error means: the one reading of its SQLSTATEs, for the store and for
/// the tools' read handle.
pub(crate) fn kind(error: &tokio_postgres::Error) -> Kind {
    let Some(code) = error.code() else {
        return Kind::Other;
    };
    if *code == SqlState::UNIQUE_VIOLATION {
        Kind::Unique
    } else if code.code().starts_with("23") {
        // Class 23: integrity constraint violation (foreign key, check, not null, exclusion).
        Kind::Constraint
    } else if *code == SqlState::T_R_SERIALIZATION_FAILURE
        || *code == SqlState::T_R_DEADLOCK_DETECTED
        || *code == SqlState::LOCK_NOT_AVAILABLE
    {
        Kind::Busy
    } else if *code == SqlState::READ_ONLY_SQL_TRANSACTION {
        Kind::ReadOnly
    } else if *code == SqlState::SYNTAX_ERROR
        && error
            .as_db_error()
            .is_some_and(|e| e.message().contains("multiple commands"))
    {
        Kind::MultipleStatements
    } else {
        Kind::Other
    }
}

pub(super) fn pg_error(error: tokio_postgres::Error) -> StoreError {
    let kind = kind(&error);
    let text = match (kind, error.as_db_error()) {
        (Kind::Unique | Kind::Constraint | Kind::Busy, _) | (_, None) => error.to_string(),
        (_, Some(db)) => format!("{}: {}", db.code().code(), db.message()),
    };
    kind.store_error(text)
}
