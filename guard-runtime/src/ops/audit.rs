//! The audit interface: one record per operation call, written inside the call's own
//! transaction, so the record commits exactly when the effect does. Kept to one method so a
//! chained or signed log can implement it later.

use super::sql::{BoxFuture, StoreError, Tx};

/// What happened in one operation call. No token, header or raw argument is kept: only the
/// author's one-line summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditRecord {
    /// The trace id the model's answer carries.
    pub trace_id: String,
    /// Empty when the caller could not be identified.
    pub tenant: String,
    /// The user; empty when the caller could not be identified.
    pub user: String,
    /// The tool called.
    pub tool: &'static str,
    /// The operation (`op = ...`).
    pub op: &'static str,
    /// The intent, once there is one.
    pub operation_id: Option<String>,
    /// The target, once known.
    pub target: Option<String>,
    /// The author's one-line summary.
    pub summary: Option<String>,
    /// `PREPARED`, `SUBMITTED`, `ALREADY_PROCESSED`, or the error code the model got.
    pub outcome: &'static str,
    /// Milliseconds since the Unix epoch.
    pub at: i64,
}

/// Where audit records go. `record` runs inside the call's transaction: if it fails, the
/// effect rolls back with it.
pub trait AuditSink: Send + Sync + 'static {
    /// Writes `record` inside `tx`.
    fn record<'a>(
        &'a self,
        tx: &'a mut Tx,
        record: &'a AuditRecord,
    ) -> BoxFuture<'a, Result<(), StoreError>>;
}

impl<T: AuditSink + ?Sized> AuditSink for std::sync::Arc<T> {
    fn record<'a>(
        &'a self,
        tx: &'a mut Tx,
        record: &'a AuditRecord,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        (**self).record(tx, record)
    }
}

/// The default sink: the store's `guard_audit` table.
#[derive(Debug, Clone, Copy, Default)]
pub struct AuditTable;

impl AuditSink for AuditTable {
    fn record<'a>(
        &'a self,
        tx: &'a mut Tx,
        r: &'a AuditRecord,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            tx.execute(
                "INSERT INTO guard_audit
                    (trace_id, tenant, user_id, tool, op, operation_id, target, summary, outcome, at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
                &[
                    r.trace_id.as_str().into(),
                    r.tenant.as_str().into(),
                    r.user.as_str().into(),
                    r.tool.into(),
                    r.op.into(),
                    r.operation_id.clone().into(),
                    r.target.clone().into(),
                    r.summary.clone().into(),
                    r.outcome.into(),
                    r.at.into(),
                ],
            )
            .await
            .map(drop)
        })
    }
}
