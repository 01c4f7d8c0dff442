//! The witnesses of a [`Policy`] a log submits its checkpoints to, and what the log knows of
//! each: one round sends a checkpoint to every witness at once, each exchange bounded in
//! time, and keeps the cosignature lines that verify. A witness that is down costs nothing
//! but its cosignature: the failure is logged (`guard::audit` target, at warn) and kept in
//! its [`WitnessStatus`], and the next round tries again. The server's `Anchor` and
//! `guard-audit checkpoint --policy` both witness their checkpoints through it.

use std::sync::Mutex;

use crate::{
    checkpoint::CheckpointVerifier,
    merkle::Hash,
    policy::{Policy, PolicyWitness},
};

use super::client;

/// The witnesses with a URL in a policy, and their status.
#[derive(Debug)]
pub struct Cosigners {
    witnesses: Vec<(PolicyWitness, String)>,
    status: Mutex<Vec<WitnessStatus>>,
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

/// The answers of one round: each witness's cosignature lines or why it gave none.
#[derive(Debug)]
pub struct Round {
    note: String,
    size: u64,
    results: Vec<(usize, Result<Vec<String>, String>)>,
}

impl Round {
    /// Every cosignature line received, to store with the checkpoint.
    pub fn lines(&self) -> Vec<String> {
        self.results
            .iter()
            .filter_map(|(_, result)| result.as_ref().ok())
            .flatten()
            .cloned()
            .collect()
    }
}

impl Cosigners {
    /// The witnesses of `policy` that have a URL, for the log whose key is `log_key`. The
    /// policy must trust that key, or no checkpoint could meet it.
    pub fn new(policy: &Policy, log_key: &CheckpointVerifier) -> Result<Self, String> {
        if !policy.logs().contains(log_key) {
            return Err(format!(
                "the policy does not list the log key {}: add `log {}` to it",
                log_key.name(),
                log_key.to_text()
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
            witnesses,
            status: Mutex::new(status),
        })
    }

    /// Each witness as of the last round.
    pub fn status(&self) -> Vec<WitnessStatus> {
        self.status
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Submits `note`, the checkpoint of the tree over `leaves`, to every witness at once,
    /// each from the size it last cosigned as far as this log knows. Store
    /// [`Round::lines`], then [`close`](Self::close) the round.
    pub async fn submit(&self, note: &str, leaves: &[Hash]) -> Round {
        let known: Vec<u64> = self
            .status()
            .iter()
            .map(|s| s.cosigned.unwrap_or(0))
            .collect();
        let mut tasks = tokio::task::JoinSet::new();
        for (i, ((witness, url), old)) in self.witnesses.iter().zip(known).enumerate() {
            let (witness, url, note, leaves) = (
                witness.clone(),
                url.clone(),
                note.to_owned(),
                leaves.to_vec(),
            );
            tasks.spawn(async move {
                let result = client::submit(&witness, &url, &note, &leaves, old).await;
                (i, result)
            });
        }
        let mut results = Vec::with_capacity(self.witnesses.len());
        while let Some(joined) = tasks.join_next().await {
            results.extend(joined.ok());
        }
        Round {
            note: note.to_owned(),
            size: leaves.len() as u64,
            results,
        }
    }

    /// Updates each witness's status from `round`, once its lines are stored (so a reader
    /// who sees the status finds them); `now` is the time in ms since the epoch.
    pub fn close(&self, round: Round, now: i64) -> Anchored {
        let lines = round.lines();
        let size = round.size;
        let mut cosigned_by = Vec::new();
        let mut status = self.status.lock().unwrap_or_else(|p| p.into_inner());
        for (i, result) in round.results {
            let entry = &mut status[i];
            match result {
                Ok(_) => {
                    cosigned_by.push(entry.witness.clone());
                    entry.cosigned = Some(size);
                    entry.last_cosigned_at = Some(now);
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
        Anchored {
            note: format!("{}{}", round.note, lines.concat()),
            size,
            cosigned_by,
        }
    }
}
