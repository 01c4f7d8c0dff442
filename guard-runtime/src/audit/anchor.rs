//! Anchoring the log outside the operator's reach: checkpoints signed as the log grows and
//! submitted to the witnesses of a [`Policy`], their cosignatures stored with the
//! checkpoints.
//!
//! An [`Anchor`] runs beside the server, never in a tool call's path: [`Anchor::spawn`]
//! wakes every interval and, when the log grew (or a witness is behind), signs one
//! checkpoint over everything appended since and sends it to every witness at once, each
//! exchange bounded in time. A witness that is down costs nothing but its cosignature: the
//! failure is logged (`guard::audit` target, at warn) and kept in [`Anchor::status`], and
//! the next round tries again with the newest checkpoint.

use std::{path::Path, sync::Arc, time::Duration};

use rmcp_guard_log::{Anchored, Cosigners, WitnessStatus};

use super::{AuditLog, CheckpointSigner, Policy};
use crate::store::{StoreError, now_ms};

/// Signs the log's checkpoints and has them witnessed.
#[derive(Clone)]
pub struct Anchor {
    inner: Arc<Inner>,
}

struct Inner {
    log: AuditLog,
    signer: CheckpointSigner,
    witnesses: Cosigners,
    /// One checkpoint at a time.
    running: tokio::sync::Mutex<()>,
}

impl Anchor {
    /// Checkpoints of `log` signed by `signer`, submitted to the witnesses of `policy` that
    /// have a URL. The policy must trust `signer`'s key, or no checkpoint could meet it.
    pub fn new(log: AuditLog, signer: CheckpointSigner, policy: &Policy) -> Result<Self, String> {
        let witnesses = Cosigners::new(policy, &signer.verifier())?;
        Ok(Self {
            inner: Arc::new(Inner {
                log,
                signer,
                witnesses,
                running: tokio::sync::Mutex::new(()),
            }),
        })
    }

    /// An anchor from the two files an operator keeps away from the database: the log's
    /// signer key (the `PRIVATE+KEY+` line `guard-audit keygen NAME --for log` prints
    /// first), readable by its owner only, and a C2SP tlog-policy naming the log's key and
    /// the witnesses with the URLs checkpoints are submitted to. Every refusal says which
    /// file and how to fix it.
    pub fn from_files(log: AuditLog, key: &Path, policy: &Path) -> Result<Self, String> {
        let signer = CheckpointSigner::from_file(key)?;
        let policy_text = std::fs::read_to_string(policy)
            .map_err(|e| format!("cannot read the witness policy {}: {e}", policy.display()))?;
        let parsed =
            Policy::parse(&policy_text).map_err(|e| format!("{}: {e}", policy.display()))?;
        if parsed.witnesses().iter().all(|w| w.url.is_none()) {
            return Err(format!(
                "{} names no witness with a URL, so no checkpoint could be witnessed: add `witness NAME VKEY URL` for each witness, with its quorum",
                policy.display()
            ));
        }
        Self::new(log, signer, &parsed).map_err(|e| format!("{}: {e}", policy.display()))
    }

    /// Each witness as of the last submission.
    pub fn status(&self) -> Vec<WitnessStatus> {
        self.inner.witnesses.status()
    }

    /// Signs a checkpoint of the log as it stands, stores it, submits it to every witness
    /// and stores the cosignatures that verify. A witness's failure is in the status and
    /// the log, not an error: the checkpoint stands without its cosignature.
    pub async fn checkpoint(&self) -> Result<Anchored, StoreError> {
        let _one = self.inner.running.lock().await;
        let (note, leaves) = self.inner.log.sign_checkpoint(&self.inner.signer).await?;
        let round = self.inner.witnesses.submit(&note, &leaves).await;
        self.inner
            .log
            .add_cosignatures(leaves.len() as u64, &round.lines())
            .await?;
        Ok(self.inner.witnesses.close(round, now_ms()))
    }

    /// Checkpoints the log every `every` while it grows (or a witness has not cosigned the
    /// latest size), on the current tokio runtime. Abort the handle to stop.
    pub fn spawn(&self, every: Duration) -> tokio::task::JoinHandle<()> {
        let anchor = self.clone();
        tokio::spawn(async move {
            let mut last = None;
            loop {
                tokio::time::sleep(every).await;
                let size = match anchor.inner.log.size().await {
                    Ok(size) => size,
                    Err(error) => {
                        tracing::warn!(target: "guard::audit", %error, "cannot read the audit log's size");
                        continue;
                    }
                };
                let behind = anchor.status().iter().any(|s| s.cosigned != Some(size));
                if last == Some(size) && !behind {
                    continue;
                }
                match anchor.checkpoint().await {
                    Ok(anchored) => last = Some(anchored.size),
                    Err(error) => {
                        tracing::warn!(target: "guard::audit", %error, "cannot checkpoint the audit log");
                    }
                }
            }
        })
    }
}

impl std::fmt::Debug for Anchor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Anchor")
            .field("log", &self.inner.log)
            .field("status", &self.status())
            .finish_non_exhaustive()
    }
}
