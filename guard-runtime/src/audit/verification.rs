//! Verifying the log as the store holds it: the rows read in one transaction, checked by
//! the log crate's [`verify_rows`] (the chain, the checkpoint, the indexed columns).

use rmcp_guard_log::{Fault, Row, Verified, verify_rows};

use super::{Checkpoint, log::AuditLog};
use crate::store::StoreError;

/// What a verification of the store found wrong, or the store failing.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    /// The log is not what was written.
    #[error("{0}")]
    Fault(Fault),
    /// The store could not be read.
    #[error("{0}")]
    Store(#[from] StoreError),
}

impl AuditLog {
    /// Verifies the stored log (against `checkpoint` when given): each row's indexed
    /// columns must agree with its entry, and the entries must form one chain with the
    /// checkpoint's root.
    pub async fn verify(&self, checkpoint: Option<&Checkpoint>) -> Result<Verified, VerifyError> {
        self.verify_against(checkpoint, &[]).await
    }

    /// [`verify`](Self::verify), with `older` checkpoints of the log (checked by the caller)
    /// to name a rewrite from the first record none of them vouches for. The first bad
    /// record is named, whether its fault is in the chain or in an indexed column.
    pub async fn verify_against(
        &self,
        checkpoint: Option<&Checkpoint>,
        older: &[Checkpoint],
    ) -> Result<Verified, VerifyError> {
        self.settle().await?;
        let mut tx = self.store.begin().await?;
        let rows = tx
            .query(
                "SELECT seq, hash, entry, trace_id, tool, outcome, tenant, user_id, operation_id, at
                 FROM guard_audit_log ORDER BY seq",
                &[],
            )
            .await;
        tx.rollback().await?;
        let rows = rows?
            .iter()
            .map(|row| {
                Ok(Row {
                    seq: row.int("seq")?,
                    hash: row.text("hash")?.to_owned(),
                    entry: row.text("entry")?.to_owned(),
                    trace_id: row.text("trace_id")?.to_owned(),
                    tool: row.text("tool")?.to_owned(),
                    outcome: row.text("outcome")?.to_owned(),
                    tenant: row.opt_text("tenant")?.map(str::to_owned),
                    user_id: row.opt_text("user_id")?.map(str::to_owned),
                    operation_id: row.opt_text("operation_id")?.map(str::to_owned),
                    at: row.int("at")?,
                })
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        verify_rows(&rows, checkpoint, older).map_err(VerifyError::Fault)
    }
}
