//! Reading the log: its records, in whole or by time or call, their leaf hashes, its size,
//! and the entries still pending.

use rmcp_guard_log::{Pending, Record, parse_hex};

use super::{head::LAST, log::AuditLog, merkle::Hash};
use crate::store::{SqlValue, StoreError};

impl AuditLog {
    /// The entries committed but not yet sequenced, oldest first.
    pub async fn pending(&self) -> Result<Vec<Pending>, StoreError> {
        self.queued("", &[]).await
    }

    /// The pending entries of one call.
    pub async fn pending_of(&self, trace_id: &str) -> Result<Vec<Pending>, StoreError> {
        self.queued(" WHERE trace_id = $1", &[trace_id.into()])
            .await
    }

    async fn queued(&self, filter: &str, params: &[SqlValue]) -> Result<Vec<Pending>, StoreError> {
        self.read(
            &format!(
                "SELECT trace_id, tool, outcome, at FROM guard_audit_queue{filter} ORDER BY id"
            ),
            params,
        )
        .await?
        .iter()
        .map(|row| {
            Ok(Pending {
                trace_id: row.text("trace_id")?.to_owned(),
                tool: row.text("tool")?.to_owned(),
                outcome: row.text("outcome")?.to_owned(),
                at: row.int("at")?,
            })
        })
        .collect()
    }

    /// Every entry, in sequence order.
    pub async fn records(&self) -> Result<Vec<Record>, StoreError> {
        self.select("", &[]).await
    }

    /// The entries recorded at or after `at` (ms since the epoch).
    pub async fn since(&self, at: i64) -> Result<Vec<Record>, StoreError> {
        self.select(" WHERE at >= $1", &[at.into()]).await
    }

    /// The leaf hash of every entry, in sequence order, as stored: verify the log before
    /// building proofs from them.
    pub async fn leaves(&self) -> Result<Vec<Hash>, StoreError> {
        self.records()
            .await?
            .iter()
            .map(|r| {
                parse_hex(r.hash.as_bytes()).ok_or_else(|| {
                    StoreError::Column(format!(
                        "the hash of audit record {} is not a SHA-256; run guard-audit verify",
                        r.seq
                    ))
                })
            })
            .collect()
    }

    /// The entries of one call.
    pub async fn by_trace(&self, trace_id: &str) -> Result<Vec<Record>, StoreError> {
        self.select(" WHERE trace_id = $1", &[trace_id.into()])
            .await
    }

    async fn select(&self, filter: &str, params: &[SqlValue]) -> Result<Vec<Record>, StoreError> {
        self.settle().await?;
        self.read(
            &format!("SELECT seq, hash, entry FROM guard_audit_log{filter} ORDER BY seq"),
            params,
        )
        .await?
        .iter()
        .map(|row| {
            Ok(Record {
                seq: u64::try_from(row.int("seq")?).unwrap_or(u64::MAX),
                hash: row.text("hash")?.to_owned(),
                entry: row.text("entry")?.to_owned(),
            })
        })
        .collect()
    }

    /// How many records the log holds.
    pub async fn size(&self) -> Result<u64, StoreError> {
        self.settle().await?;
        let mut tx = self.store.begin().await?;
        let last = tx.query_opt(LAST, &[]).await;
        tx.rollback().await?;
        Ok(last?
            .map(|row| row.int("seq"))
            .transpose()?
            .map_or(0, |seq| seq as u64 + 1))
    }
}
