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

use std::{
    path::Path,
    sync::{Arc, Mutex},
    time::Duration,
};

use super::{AuditLog, CheckpointSigner, Policy, PolicyWitness, witness_client};
use crate::store::{StoreError, now_ms};

/// Signs the log's checkpoints and has them witnessed.
#[derive(Clone)]
pub struct Anchor {
    inner: Arc<Inner>,
}

struct Inner {
    log: AuditLog,
    signer: CheckpointSigner,
    witnesses: Vec<(PolicyWitness, String)>,
    status: Mutex<Vec<WitnessStatus>>,
    /// One checkpoint at a time.
    running: tokio::sync::Mutex<()>,
}

/// What the log knows of one witness.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WitnessStatus {
    /// The witness's name in the policy.
    pub witness: String,
    /// Where checkpoints are submitted.
    pub url: String,
    /// The size of the last checkpoint it cosigned for this log.
    pub cosigned: Option<u64>,
    /// When it last cosigned (ms since the epoch).
    pub last_cosigned_at: Option<i64>,
    /// Why the last submission failed, if it did; cleared by a success.
    pub error: Option<String>,
    /// Submissions failed in a row.
    pub failures: u32,
}

/// A checkpoint as the witnesses left it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Anchored {
    /// The checkpoint note with every cosignature received.
    pub note: String,
    /// The tree size.
    pub size: u64,
    /// The policy names of the witnesses that cosigned it.
    pub cosigned_by: Vec<String>,
}

impl Anchor {
    /// Checkpoints of `log` signed by `signer`, submitted to the witnesses of `policy` that
    /// have a URL. The policy must trust `signer`'s key, or no checkpoint could meet it.
    pub fn new(log: AuditLog, signer: CheckpointSigner, policy: &Policy) -> Result<Self, String> {
        if !policy.logs().contains(&signer.verifier()) {
            return Err(format!(
                "the policy does not list the log key {}: add `log {}` to it",
                signer.verifier().name(),
                signer.verifier().to_text()
            ));
        }
        let witnesses: Vec<(PolicyWitness, String)> = policy
            .witnesses()
            .iter()
            .filter_map(|w| w.url.clone().map(|url| (w.clone(), url)))
            .collect();
        let status = witnesses
            .iter()
            .map(|(w, url)| WitnessStatus {
                witness: w.name.clone(),
                url: url.clone(),
                cosigned: None,
                last_cosigned_at: None,
                error: None,
                failures: 0,
            })
            .collect();
        Ok(Self {
            inner: Arc::new(Inner {
                log,
                signer,
                witnesses,
                status: Mutex::new(status),
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
        self.inner
            .status
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Signs a checkpoint of the log as it stands, stores it, submits it to every witness
    /// and stores the cosignatures that verify. A witness's failure is in the status and
    /// the log, not an error: the checkpoint stands without its cosignature.
    pub async fn checkpoint(&self) -> Result<Anchored, StoreError> {
        let _one = self.inner.running.lock().await;
        let (note, leaves) = self.inner.log.sign_checkpoint(&self.inner.signer).await?;
        let size = leaves.len() as u64;
        let known: Vec<u64> = self
            .status()
            .iter()
            .map(|s| s.cosigned.unwrap_or(0))
            .collect();
        let mut tasks = tokio::task::JoinSet::new();
        for (i, ((witness, url), old)) in self.inner.witnesses.iter().zip(known).enumerate() {
            let (witness, url, note, leaves) =
                (witness.clone(), url.clone(), note.clone(), leaves.clone());
            tasks.spawn(async move {
                let result = witness_client::submit(&witness, &url, &note, &leaves, old).await;
                (i, result)
            });
        }
        let mut results = Vec::with_capacity(self.inner.witnesses.len());
        while let Some(joined) = tasks.join_next().await {
            results.extend(joined.ok());
        }
        let lines: Vec<String> = results
            .iter()
            .filter_map(|(_, result)| result.as_ref().ok())
            .flatten()
            .cloned()
            .collect();
        // Stored before the status says so, so a reader who sees the status finds them.
        self.inner.log.add_cosignatures(size, &lines).await?;
        let mut cosigned_by = Vec::new();
        let mut status = self.inner.status.lock().unwrap_or_else(|p| p.into_inner());
        for (i, result) in results {
            let entry = &mut status[i];
            match result {
                Ok(_) => {
                    cosigned_by.push(entry.witness.clone());
                    entry.cosigned = Some(size);
                    entry.last_cosigned_at = Some(now_ms());
                    entry.error = None;
                    entry.failures = 0;
                }
                Err(error) => {
                    entry.failures += 1;
                    tracing::warn!(
                        target: "guard::audit",
                        witness = %entry.witness,
                        url = %entry.url,
                        size,
                        failures = entry.failures,
                        %error,
                        "a witness did not cosign the audit log's checkpoint"
                    );
                    entry.error = Some(error);
                }
            }
        }
        drop(status);
        Ok(Anchored {
            note: format!("{note}{}", lines.concat()),
            size,
            cosigned_by,
        })
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
