//! The log's checkpoints in the store: signing one under the log's lock, the witnesses'
//! cosignatures stored beside it, and the notes read back with them.

use super::{
    CheckpointSigner,
    log::AuditLog,
    merkle::{Hash, root},
};
use crate::store::{
    StoreError,
    lock::{self, Lock},
    now_ms,
};
use rmcp_guard_log::parse_hex;

/// The table of witness cosignatures: one row per cosignature line of a stored checkpoint.
pub(crate) const COSIGNATURES_TABLE: &str = "CREATE TABLE IF NOT EXISTS guard_audit_cosignatures (
    size      BIGINT NOT NULL,
    signature TEXT NOT NULL,
    at        BIGINT NOT NULL,
    PRIMARY KEY (size, signature)
)";

impl AuditLog {
    /// The origin the stored checkpoints carry (the largest one's), if any is stored: the
    /// name every later checkpoint of this log must carry too.
    pub async fn stored_origin(&self) -> Result<Option<String>, StoreError> {
        Ok(self
            .latest_checkpoint()
            .await?
            .and_then(|note| note.split('\n').next().map(str::to_owned)))
    }

    /// Signs the log as it stands, stores the checkpoint with the others and returns its
    /// text. Publish the text somewhere the database's writers cannot reach.
    ///
    /// A log has one name: a checkpoint is refused when the stored ones carry another
    /// origin, so that every checkpoint of the log extends the ones before it.
    pub async fn checkpoint(&self, signer: &CheckpointSigner) -> Result<String, StoreError> {
        Ok(self.sign_checkpoint(signer).await?.0)
    }

    /// [`checkpoint`](Self::checkpoint), with the leaf hashes it signed.
    pub(crate) async fn sign_checkpoint(
        &self,
        signer: &CheckpointSigner,
    ) -> Result<(String, Vec<Hash>), StoreError> {
        self.settle().await?;
        let mut tx = self.store.begin().await?;
        lock::hold(&mut tx, Lock::AuditAppend).await?;
        let latest = tx
            .query_opt(
                "SELECT note FROM guard_audit_checkpoints ORDER BY size DESC LIMIT 1",
                &[],
            )
            .await?;
        if let Some(row) = latest {
            let stored = row.text("note")?.split('\n').next().unwrap_or_default();
            if stored != &*self.origin {
                return Err(StoreError::Other(format!(
                    "this log's checkpoints are named `{stored}`, not `{}`: name the log `{stored}` (Operations::audit_origin, AuditLog::new) so its checkpoints extend each other",
                    self.origin
                )));
            }
        }
        let rows = tx
            .query("SELECT hash FROM guard_audit_log ORDER BY seq", &[])
            .await?;
        let leaves = rows
            .iter()
            .map(|row| {
                parse_hex(row.text("hash")?.as_bytes()).ok_or_else(|| {
                    StoreError::Column("guard_audit_log.hash is not a SHA-256; run guard-audit verify to find the record".into())
                })
            })
            .collect::<Result<Vec<Hash>, _>>()?;
        let text = signer.sign(&self.origin, leaves.len() as u64, &root(&leaves));
        tx.execute(
            "INSERT INTO guard_audit_checkpoints (size, note, at) VALUES ($1, $2, $3)
             ON CONFLICT (size) DO NOTHING",
            &[
                (leaves.len() as i64).into(),
                text.as_str().into(),
                now_ms().into(),
            ],
        )
        .await?;
        tx.commit().await?;
        Ok((text, leaves))
    }

    /// Stores witness cosignature lines of the stored checkpoint of `size` (lines already
    /// checked against the witness's key; a repeated line is kept once).
    #[cfg(feature = "witness")]
    pub(crate) async fn add_cosignatures(
        &self,
        size: u64,
        lines: &[String],
    ) -> Result<(), StoreError> {
        let mut tx = self.store.begin().await?;
        for line in lines {
            tx.execute(
                "INSERT INTO guard_audit_cosignatures (size, signature, at) VALUES ($1, $2, $3)
                 ON CONFLICT (size, signature) DO NOTHING",
                &[(size as i64).into(), line.as_str().into(), now_ms().into()],
            )
            .await?;
        }
        tx.commit().await
    }

    /// Every stored checkpoint, smallest first, each with the witness cosignatures stored
    /// for it appended to its note.
    pub async fn checkpoints(&self) -> Result<Vec<String>, StoreError> {
        self.notes("").await
    }

    /// The largest checkpoint stored, with its cosignatures, if any.
    pub async fn latest_checkpoint(&self) -> Result<Option<String>, StoreError> {
        Ok(self.notes(" DESC LIMIT 1").await?.pop())
    }

    async fn notes(&self, order: &str) -> Result<Vec<String>, StoreError> {
        let mut tx = self.store.begin().await?;
        let notes = tx
            .query(
                &format!("SELECT size, note FROM guard_audit_checkpoints ORDER BY size{order}"),
                &[],
            )
            .await;
        let cosignatures = tx
            .query(
                "SELECT size, signature FROM guard_audit_cosignatures ORDER BY size, at, signature",
                &[],
            )
            .await;
        tx.rollback().await?;
        let cosignatures = cosignatures?;
        notes?
            .iter()
            .map(|row| {
                let size = row.int("size")?;
                let mut note = row.text("note")?.to_owned();
                for cosignature in &cosignatures {
                    if cosignature.int("size")? == size {
                        note.push_str(cosignature.text("signature")?);
                    }
                }
                Ok(note)
            })
            .collect()
    }
}
