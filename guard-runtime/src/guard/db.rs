//! The SQLite handles tools take as parameters, opened from the server's guard: a write
//! handle only outside read-only mode, and only for the database the guard names.

use rmcp::handler::server::{common::FromContextPart, tool::ToolCallContext};

use super::{Guard, Guarded};
use crate::{
    db::{ReadDb, SqliteDatabase, WriteDb},
    error::{Code, ToolError},
};

impl WriteDb {
    /// Opens the database configured with [`Guard::with_sqlite`] for writing. Refused in
    /// read-only mode ([`crate::Exposure::read_only`]), before any file is touched, and when
    /// the file does not exist (a write handle never creates one).
    pub fn open(guard: &Guard) -> Result<Self, ToolError> {
        if guard.exposure().is_some_and(|e| e.is_read_only()) {
            tracing::warn!("read-only mode: a write handle was asked for and refused");
            return Err(ToolError::new(
                Code::ReadOnly,
                "The server runs in read-only mode, so no write handle is opened and nothing was changed. To write, restart the server without read-only mode (without --read-only and GUARD_READ_ONLY); a tool that only reads takes `ReadDb`.",
            ));
        }
        let db = guard.sqlite().ok_or_else(|| {
            ToolError::new(
                Code::Unavailable,
                "This server has no database configured; nothing was changed. Ask the operator to configure one (Guard::with_sqlite).",
            )
        })?;
        WriteDb::open_path(db.path())
    }
}

fn database<S: Guarded>(server: &S) -> Result<&SqliteDatabase, rmcp::ErrorData> {
    server.guard().sqlite().ok_or_else(|| {
        rmcp::ErrorData::internal_error(
            "this server gives tools no database handle: configure one with Guard::with_sqlite",
            None,
        )
    })
}

impl<S: Guarded> FromContextPart<ToolCallContext<'_, S>> for ReadDb {
    fn from_context_part(context: &mut ToolCallContext<'_, S>) -> Result<Self, rmcp::ErrorData> {
        let db = database(context.service)?;
        ReadDb::open(db.path()).map_err(|e| rmcp::ErrorData::internal_error(e.to_string(), None))
    }
}

impl<S: Guarded> FromContextPart<ToolCallContext<'_, S>> for WriteDb {
    fn from_context_part(context: &mut ToolCallContext<'_, S>) -> Result<Self, rmcp::ErrorData> {
        WriteDb::open(context.service.guard())
            .map_err(|e| rmcp::ErrorData::internal_error(e.to_string(), None))
    }
}
