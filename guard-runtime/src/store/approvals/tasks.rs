//! The tasks step: `guard_approval_tasks`, approvals answered as MCP Tasks, with the call
//! they run and how each ended (once, by the ledger's rules).

use crate::store::{BoxFuture, StoreError, Tx};

/// The tasks step's table, the same on both engines.
const TASKS: &str = "CREATE TABLE IF NOT EXISTS guard_approval_tasks (
        approval_id TEXT PRIMARY KEY REFERENCES guard_approvals (approval_id) ON DELETE CASCADE,
        arguments   TEXT NOT NULL,
        runner      TEXT,
        run_at      BIGINT,
        ended       TEXT CHECK (ended IN ('completed', 'failed', 'cancelled')),
        result      TEXT,
        CHECK ((ended IS NULL) = (result IS NULL))
    )";

/// The tasks step: approvals answered as MCP Tasks, and how each ended.
pub(crate) fn tasks(tx: &mut Tx) -> BoxFuture<'_, Result<(), StoreError>> {
    Box::pin(tx.batch(TASKS))
}
