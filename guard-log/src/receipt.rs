//! Receipts: a record of the log with everything needed to check offline that it is in the
//! log, as a C2SP `tlog-proof` (`c2sp.org/tlog-proof@v1`). The record's entry travels in
//! the `extra` line (its leaf hash is `SHA-256(0x00 || entry)`), then its index, the
//! inclusion proof, a blank line and the checkpoint with its cosignatures:
//!
//! ```text
//! c2sp.org/tlog-proof@v1
//! extra <base64 of the entry's canonical JSON>
//! index 17
//! <base64 hash>
//! ...
//!
//! <checkpoint note, its signatures and cosignatures>
//! ```
//!
//! Whoever trusts the policy's keys can check it with nothing else: no database, no server.

use base64::{Engine, engine::general_purpose::STANDARD as B64};

use super::{
    merkle::{self, Hash, leaf_hash},
    policy::{Policy, PolicyError, Witnessed},
};

const HEADER: &str = "c2sp.org/tlog-proof@v1";

/// A record and its proof of inclusion under a checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Receipt {
    /// The entry's bytes (canonical JSON).
    pub entry: Vec<u8>,
    /// Its place in the log.
    pub index: u64,
    /// The inclusion proof, from the leaf's sibling up.
    pub proof: Vec<Hash>,
    /// The checkpoint note the proof leads to.
    pub checkpoint: String,
}

/// Why a receipt does not hold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReceiptError {
    /// The text is not a tlog-proof.
    #[error("not a receipt ({0}); write one with `guard-audit receipt`")]
    Malformed(&'static str),
    /// The checkpoint does not meet the policy.
    #[error("the receipt's checkpoint: {0}")]
    Checkpoint(#[from] PolicyError),
    /// The checkpoint is another log's: one key may sign several logs, so a receipt is
    /// checked as a proof of a record of one named log.
    #[error(
        "the receipt's checkpoint is of the log `{found}`, not `{expected}`: it proves nothing about `{expected}`; ask that log for a receipt, or name the log it should come from"
    )]
    OtherLog {
        /// The origin the receipt's checkpoint carries.
        found: String,
        /// The origin it was checked for.
        expected: String,
    },
    /// The entry is not under the checkpoint's root at that index.
    #[error(
        "the record is not in the checkpointed log at index {index}: the entry, the index or the proof was altered"
    )]
    NotIncluded {
        /// The index the receipt claims.
        index: u64,
    },
}

impl Receipt {
    /// The proof for entry `entry` at `index` in the tree over `leaves`, under `checkpoint`
    /// (whose size is `leaves.len()`).
    pub fn new(entry: &[u8], index: u64, leaves: &[Hash], checkpoint: &str) -> Option<Self> {
        let path = merkle::inclusion_proof(usize::try_from(index).ok()?, leaves)?;
        Some(Self {
            entry: entry.to_vec(),
            index,
            proof: path,
            checkpoint: checkpoint.to_owned(),
        })
    }

    /// The tlog-proof text.
    pub fn encode(&self) -> String {
        format!(
            "{HEADER}\nextra {}\nindex {}\n{}\n{}",
            B64.encode(&self.entry),
            self.index,
            merkle::hash_lines(&self.proof),
            self.checkpoint
        )
    }

    /// Reads a tlog-proof text (every value in its one spelling).
    pub fn parse(text: &str) -> Result<Self, ReceiptError> {
        let (head, checkpoint) = text.split_once("\n\n").ok_or(ReceiptError::Malformed(
            "no blank line before the checkpoint",
        ))?;
        let mut lines = head.split('\n');
        if lines.next() != Some(HEADER) {
            return Err(ReceiptError::Malformed(
                "the first line is not c2sp.org/tlog-proof@v1",
            ));
        }
        let entry = lines
            .next()
            .and_then(|l| l.strip_prefix("extra "))
            .and_then(|text| B64.decode(text).ok().filter(|b| B64.encode(b) == text))
            .ok_or(ReceiptError::Malformed(
                "no `extra` line with the entry in base64",
            ))?;
        let index = lines
            .next()
            .and_then(|l| l.strip_prefix("index "))
            .and_then(|n| n.parse::<u64>().ok().filter(|v| v.to_string() == n))
            .ok_or(ReceiptError::Malformed("no `index N` line"))?;
        let proof = lines
            .map(merkle::parse_hash_line)
            .collect::<Option<Vec<Hash>>>()
            .ok_or(ReceiptError::Malformed(
                "a proof line is not a base64 SHA-256 hash",
            ))?;
        Ok(Self {
            entry,
            index,
            proof,
            checkpoint: checkpoint.to_owned(),
        })
    }

    /// Checks the receipt as a record of the log named `origin` (its checkpoints' first
    /// line): its checkpoint names that log and meets `policy`, and the entry is in it at its
    /// index. The origin pins the log: a key that signs several logs vouches for each.
    pub fn verify(&self, policy: &Policy, origin: &str) -> Result<Witnessed, ReceiptError> {
        let witnessed = policy.open(&self.checkpoint)?;
        let head = &witnessed.checkpoint;
        if head.origin != origin {
            return Err(ReceiptError::OtherLog {
                found: head.origin.clone(),
                expected: origin.to_owned(),
            });
        }
        if !merkle::verify_inclusion(
            self.index,
            head.size,
            &leaf_hash(&self.entry),
            &self.proof,
            &head.root,
        ) {
            return Err(ReceiptError::NotIncluded { index: self.index });
        }
        Ok(witnessed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::CheckpointSigner;

    #[test]
    fn a_receipt_round_trips_and_any_changed_byte_fails() {
        let signer = CheckpointSigner::generate("log").unwrap();
        let policy = Policy::log_only(signer.verifier());
        let entries: Vec<String> = (0..7).map(|i| format!("{{\"seq\":{i}}}")).collect();
        let leaves: Vec<Hash> = entries.iter().map(|e| leaf_hash(e.as_bytes())).collect();
        let note = signer.sign("log", 7, &merkle::root(&leaves));
        let receipt = Receipt::new(entries[5].as_bytes(), 5, &leaves, &note).unwrap();
        let text = receipt.encode();
        assert_eq!(Receipt::parse(&text).unwrap(), receipt);
        assert_eq!(receipt.verify(&policy, "log").unwrap().checkpoint.size, 7);
        // The same key's receipt for another log is not one of this log's.
        assert!(matches!(
            receipt.verify(&policy, "another log"),
            Err(ReceiptError::OtherLog { .. })
        ));
        for i in 0..text.len() {
            let mut bytes = text.clone().into_bytes();
            bytes[i] ^= 1;
            let Ok(changed) = String::from_utf8(bytes) else {
                continue;
            };
            let held = Receipt::parse(&changed).and_then(|r| r.verify(&policy, "log"));
            assert!(
                held.is_err(),
                "byte {i} changed and the receipt still holds"
            );
        }
    }
}
