//! Proofs a log holder hands to someone who kept only checkpoints: that a record is in the
//! log a checkpoint signs (inclusion), and that a newer checkpoint extends an older one
//! (consistency). Both check against signed heads, so a holder who altered the leaves
//! cannot make them pass.

use super::{
    checkpoint::Checkpoint,
    merkle::{self, Hash},
};

/// Why a proof could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProofError {
    /// The record or size is beyond the log.
    #[error("the log has {have} records, not {want}: prove against a checkpoint of this log")]
    TooShort {
        /// Records the log has.
        have: u64,
        /// Records the proof needs.
        want: u64,
    },
    /// The older checkpoint is larger than the newer one.
    #[error(
        "the first checkpoint ({first}) is larger than the second ({second}): give the older one first"
    )]
    Backwards {
        /// The first size.
        first: u64,
        /// The second size.
        second: u64,
    },
}

/// Record `seq` is leaf `seq` of the tree of `size`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InclusionProof {
    /// The record's sequence number.
    pub seq: u64,
    /// The tree size the proof is for.
    pub size: u64,
    /// The record's leaf hash.
    pub leaf: Hash,
    /// The audit path.
    pub path: Vec<Hash>,
}

impl InclusionProof {
    /// Builds the proof for `seq` in the first `size` of `leaves`.
    pub fn new(leaves: &[Hash], seq: u64, size: u64) -> Result<Self, ProofError> {
        let have = leaves.len() as u64;
        if size > have || seq >= size {
            return Err(ProofError::TooShort {
                have,
                want: size.max(seq + 1),
            });
        }
        let tree = &leaves[..size as usize];
        Ok(Self {
            seq,
            size,
            leaf: tree[seq as usize],
            path: merkle::inclusion_proof(seq as usize, tree).unwrap_or_default(),
        })
    }

    /// Whether the proof holds for `checkpoint`.
    pub fn verify(&self, checkpoint: &Checkpoint) -> bool {
        self.size == checkpoint.size
            && merkle::verify_inclusion(
                self.seq,
                self.size,
                &self.leaf,
                &self.path,
                &checkpoint.root,
            )
    }
}

/// The tree of `first` is a prefix of the tree of `second`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsistencyProof {
    /// The older size.
    pub first: u64,
    /// The newer size.
    pub second: u64,
    /// The proof's hashes.
    pub path: Vec<Hash>,
}

impl ConsistencyProof {
    /// Builds the proof between the first `first` and the first `second` of `leaves`.
    pub fn new(leaves: &[Hash], first: u64, second: u64) -> Result<Self, ProofError> {
        let have = leaves.len() as u64;
        if first > second {
            return Err(ProofError::Backwards { first, second });
        }
        if second > have {
            return Err(ProofError::TooShort { have, want: second });
        }
        Ok(Self {
            first,
            second,
            path: merkle::consistency_proof(first as usize, &leaves[..second as usize])
                .unwrap_or_default(),
        })
    }

    /// Whether the proof holds between `old` and `new`.
    pub fn verify(&self, old: &Checkpoint, new: &Checkpoint) -> bool {
        self.first == old.size
            && self.second == new.size
            && old.origin == new.origin
            && merkle::verify_consistency(old.size, new.size, &old.root, &new.root, &self.path)
    }
}
