//! The audit table from before the log, folded into it once by a schema step.

use super::{Event, head::lock_head};
use crate::store::{Dialect, StoreError, Tx};

/// The audit table from before this log, which [`migrate_legacy`] folds into it.
pub(crate) const LEGACY_TABLE: &str = "guard_audit";

/// Moves the rows of the table the operation store used before this log, `guard_audit`,
/// into the log (oldest first, marked `legacy`) and drops it, so no second, unverifiable
/// trail remains. Runs inside the caller's transaction; a store without it is unchanged.
pub(crate) async fn migrate_legacy(tx: &mut Tx) -> Result<(), StoreError> {
    let exists = match tx.dialect() {
        Dialect::Sqlite => {
            "SELECT COUNT(*) AS n FROM sqlite_master WHERE type = 'table' AND name = 'guard_audit'"
        }
        Dialect::Postgres => {
            "SELECT COUNT(*) AS n FROM pg_catalog.pg_tables
             WHERE tablename = 'guard_audit' AND schemaname = current_schema()"
        }
    };
    if tx
        .query_opt(exists, &[])
        .await?
        .map_or(0, |r| r.int("n").unwrap_or(0))
        == 0
    {
        return Ok(());
    }
    let rows = tx
        .query(
            "SELECT trace_id, tenant, user_id, tool, op, operation_id, target, summary, outcome, at
             FROM guard_audit ORDER BY audit_id",
            &[],
        )
        .await?;
    let mut head = lock_head(tx).await?;
    let mut entries = Vec::with_capacity(rows.len());
    for row in rows {
        let mut event = Event::new(
            row.text("tool")?,
            row.text("outcome")?,
            row.text("trace_id")?,
        )
        .at(row.int("at")?)
        .field("legacy", true);
        for (column, field) in [
            ("tenant", "tenant"),
            ("user_id", "user"),
            ("op", "op"),
            ("operation_id", "operation_id"),
            ("target", "target"),
            ("summary", "summary"),
        ] {
            if let Some(value) = row.opt_text(column)?.filter(|v| !v.is_empty()) {
                event = event.field(field, value);
            }
        }
        entries.push(head.next(&event));
    }
    tx.pipeline(&entries).await?;
    tx.execute("DROP TABLE guard_audit", &[]).await?;
    Ok(())
}
